"""Reading a search query: the words that carry it, its quoted phrases, how
many words were typed, a pasted error line's signature words, and the
``--role`` filter. Pure text work; ``queries/search.py`` runs the ladder on it.
"""

from __future__ import annotations

import functools
import re

from deja.stages.roles import ROLE_CODES
from deja.stages.tokenize import BIGRAM_BLOCKS, query_terms

# The contract's filler list (§5.1) drives the exact rung; relevance also drops
# other function words, which otherwise decide natural-language questions: a
# word like "after", "only" or "still" is rare in transcripts, so its IDF is
# high, yet it says nothing about what a session is about. English is the
# Snowball stop list plus the words people wrap a question in ("remind me",
# "what happened"); time words are read by ``time_words.time_windows``, not matched.
STOP_WORDS = frozenset(
    "a an and are as at be before but by did do does for from dealt have how in is it of on or that the this "
    "to was we what when where which who with и в во не что он на я с со как а то все она так его но да ты к у "
    "же вы за бы по только ее мне было вот от меня еще нет о из ему".split()
)
FILLER = STOP_WORDS | frozenset(
    # Snowball English stop words (the contractions' stems as the tokenizer leaves them: didn, couldn, …)
    "i me my myself our ours ourselves you your yours yourself yourselves he him his himself she her hers herself "
    "its itself they them their theirs themselves whom these those am were been being has had having doing "
    "if because until while about against between into through during after above below up down out off over "
    "under again further then once here there why all any both each few more most other some such no nor not "
    "only own same so than too very can will just don should now ll re ve ain aren couldn didn doesn hadn hasn "
    "haven isn ma mightn mustn needn shan shouldn wasn weren won wouldn "
    # question wrappers and hedges
    "could would might must shall may us it's also still even yet ever already really actually exactly maybe "
    "perhaps please remind remember recall tell know think thought find show said say happened happen happens "
    "anything something everything nothing someone anyone everyone somebody anybody whatever however whether "
    "though although else done get got make made use used using way thing things one ones yes onto "
    # time words (expressions with a date are read by time_windows)
    "ago last month months week weeks year years yesterday today recently lately earlier back time times day days "
    # Russian, Spanish, German function words
    "что почему когда где как какой какая какие мы это был была были "
    "que por qué cómo cuando donde el la los las un una de del en y es fue "
    "der die das ein eine und ist war wie warum wann wo mit von zu auf für".split()
)
ROLE_ALIASES = {"tool": "tool-output"}
ROLE_CODE = ROLE_CODES
# summaries are the harness's digest of turns it compacted away: served only by --role summary;
# a session's names (8, title) are searched with what was said
SPEECH = (0, 1, 2, 4, 8)
_ERROR_SOURCE = (
    r"error|exception|traceback|failed|failure|panic|fatal|cannot|can't|undefined|not found|refused|denied|"
    r"timed? ?out|segmentation|E\d{4}|ERR!|errno|abort|invalid|unexpected|no such|permission"
)


@functools.cache
def _error_re() -> re.Pattern:
    # compiled on first use: only the error rung needs it, and compiling it
    # cost every search process (and every hook importing FILLER) at import
    return re.compile(_ERROR_SOURCE, re.I)


def parse_query(text: str) -> tuple[list[str], list[str], list[str]]:
    """(content terms, quoted phrases, terms outside the quotes)."""
    phrases = [p.strip() for p in re.findall(r'"([^"]+)"', text) if p.strip()]
    outside = re.sub(r'"[^"]*"', " ", text)
    terms = query_terms(text)
    content = [t for t in terms if t not in STOP_WORDS] or terms
    return content, phrases, [t for t in query_terms(outside) if t not in FILLER]


def typed_words(text: str) -> int:
    """Whitespace-separated words of a query that carry an informative token.
    Chinese and Japanese are written without spaces: there each indexed
    character pair counts, so a whole question is not taken for one word."""
    n = 0
    for w in text.split():
        toks = [t for t in query_terms(w) if t not in FILLER]
        pairs = sum(1 for t in toks if _unspaced(t))
        n += pairs + (1 if len(toks) > pairs else 0)
    return n


def _unspaced(token: str) -> bool:
    c = ord(token[0])
    return any(lo <= c <= hi for lo, hi in BIGRAM_BLOCKS)


def error_words(text: str) -> list[str]:
    """A pasted error line's signature: its words without the numbers, ids and
    paths that change from one run to the next (up to 12; none when fewer than
    two remain, or no line reads like an error)."""
    error_re = _error_re()
    lines = [ln for ln in text.splitlines() if error_re.search(ln)]
    if not lines and len(text.split()) >= 3 and error_re.search(text):
        lines = [text]
    sig: list[str] = []
    for ln in lines[:3]:
        for t in query_terms(ln):
            if any(c.isdigit() for c in t) or len(t) < 3 or t in FILLER:
                continue
            if t not in sig:
                sig.append(t)
    return sig[:12] if len(sig) >= 2 else []


def role_codes(role: str | None) -> tuple[int, ...]:
    """The record roles a search reads: what was said, or the one ``--role`` names."""
    if not role:
        return SPEECH
    return (ROLE_CODE[ROLE_ALIASES.get(role, role)],)


def role_name(code: int) -> str:
    return next(k for k, v in ROLE_CODE.items() if v == code)
