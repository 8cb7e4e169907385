r"""Credential redaction: secret values become ``[redacted:<kind>]`` before indexing.

The rules, their order, the gates and the conformance tables live in
``redaction-rules.md`` (sections 2-4); this module ports the upstream (Go,
RE2) redactor and reproduces its output, including the known limits of 4.3.
``sanitize_display`` (section 3.4) is separate: it makes text safe to print.

Speed. Python's regex engine costs ~10 ns per character just to scan, so
running ten patterns over every message is far too slow for the index path.
Two layers keep the exact Python rules off most text, neither changing what
is redacted:

* Per text (``redact``): each rule runs a literal pre-check, then tries its
  regex only where a match can *begin* (occurrences of its keyword or prefix,
  found with C-speed ``str.find``; ``_anchored_sub``). ``regex.sub`` takes the
  leftmost position where the pattern matches after the previous match, so if
  every possible start is an anchor, trying anchors in order gives the same
  matches and groups (``match(text, pos)`` still sees the character before
  ``pos`` for ``\b``). Case-insensitive rules take anchors from
  ``text.lower()``, position-aligned with ``text`` unless it holds U+0130
  (whose lowercase is two code points); then the rule uses plain
  ``regex.sub``, the same reference path ``anchored=False`` selects for the
  differential tests.
* Per batch (``redact_many``): rule by rule, polars runs a prefilter over the
  whole batch with Rust's regex engine, a pattern that matches every text on
  which the rule could change anything; the Python rule then runs only on the
  flagged texts.
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable

__all__ = ["MARKER", "redact", "redact_many", "sanitize_display"]

MARKER = "[redacted:"

# No rule can match fewer code points than this ("a://:b@c" is the shortest
# url-credentials hit), so shorter texts skip every rule.
_MIN_MATCH_LEN = 8

# RE2's \s is [\t\n\f\r ] (no \v); spelled out so whitespace matches upstream
# exactly rather than Python's wider ASCII \s.
_S = r"[\t\n\f\r ]"
_NS = r"[^\t\n\f\r ]"

_Counts = dict[str, int]
# A replacement builder returns (replacement text, kind to count).
_Build = Callable[[re.Match[str]], tuple[str, str]]


def _bump(counts: _Counts, kind: str, n: int = 1) -> None:
    counts[kind] = counts.get(kind, 0) + n


def _marker(kind: str) -> str:
    return f"{MARKER}{kind}]"


def _find_all(hay: str, needle: str, out: list[int]) -> None:
    """Append every (overlapping) index of ``needle`` in ``hay``."""
    i = hay.find(needle)
    while i != -1:
        out.append(i)
        i = hay.find(needle, i + 1)


def _anchored_sub(
    text: str, regex: re.Pattern[str], starts: Iterable[int], build: _Build, counts: _Counts
) -> str:
    """``regex.sub(build, text)`` for a regex whose matches can only begin at ``starts``."""
    pieces: list[str] = []
    last = 0  # end of the previous match; the next one cannot start before it
    for s in sorted(set(starts)):
        if s < last:
            continue
        m = regex.match(text, s)
        if m is None:
            continue
        replacement, kind = build(m)
        pieces.append(text[last:s])
        pieces.append(replacement)
        _bump(counts, kind)
        last = m.end()
    if not pieces:
        return text
    pieces.append(text[last:])
    return "".join(pieces)


def _full_sub(text: str, regex: re.Pattern[str], build: _Build, counts: _Counts) -> str:
    """Plain ``regex.sub``: the reference semantics the anchored path must equal."""

    def repl(m: re.Match[str]) -> str:
        replacement, kind = build(m)
        _bump(counts, kind)
        return replacement

    return regex.sub(repl, text)


def _aligned(text: str, lower: str) -> bool:
    # lower() maps every character to one character except U+0130.
    return len(lower) == len(text)


def _literal_anchors(hay: str, literals: Iterable[str]) -> list[int]:
    starts: list[int] = []
    for lit in literals:
        _find_all(hay, lit, starts)
    return starts


# ── rule 1: private-key ─────────────────────────────────────────────────────

_PEM_BEGIN = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY[A-Z0-9 ]*-----")
_PEM_END = re.compile(r"-----END [A-Z0-9 ]*PRIVATE KEY[A-Z0-9 ]*-----")
# The one-regex form (reference path). `.*?` before a literal is quadratic in
# Python when many headers lack an END, hence the two-step scan below.
_PEM_RE = re.compile(_PEM_BEGIN.pattern + r".*?" + _PEM_END.pattern, re.S)


def _private_key(text: str, lower: str, counts: _Counts, anchored: bool) -> str:
    if "-----BEGIN" not in text:
        return text
    if not anchored:
        return _full_sub(text, _PEM_RE, lambda m: (_marker("private-key"), "private-key"), counts)
    # A header's end is fixed ([A-Z0-9 ] cannot contain '-'), and the shortest
    # body is "up to the first END at or after it". If a header has no END
    # after it, no later header does either, so the scan can stop.
    pieces: list[str] = []
    last = 0
    while (head := _PEM_BEGIN.search(text, last)) is not None:
        end = _PEM_END.search(text, head.end())
        if end is None:
            break
        pieces += (text[last : head.start()], _marker("private-key"))
        _bump(counts, "private-key")
        last = end.end()
    if not pieces:
        return text
    pieces.append(text[last:])
    return "".join(pieces)


# ── rule 2: url-credentials ─────────────────────────────────────────────────

# The password is greedy so "user:p@ss@host" splits on the last '@' and the
# whole password goes (R35); the cost is L11.
_URL_RE = re.compile(
    rf"\b([A-Za-z][A-Za-z0-9+.-]*://)([^\t\n\f\r /@:]*):({_NS}+)@({_NS}+)", re.ASCII
)
_SCHEME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+.-")
_LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_WORD = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


def _build_url(m: re.Match[str]) -> tuple[str, str]:
    return f"{m[1]}{m[2]}:{_marker('url-credentials')}@{m[4]}", "url-credentials"


def _url_starts(text: str) -> list[int]:
    """Every position a scheme could start at: a letter at a word boundary
    inside the run of scheme characters that ends at a '://'."""
    starts: list[int] = []
    sep = text.find("://")
    while sep != -1:
        run = sep
        while run > 0 and text[run - 1] in _SCHEME_CHARS:
            run -= 1
        for i in range(run, sep):
            if text[i] in _LETTERS and (i == 0 or text[i - 1] not in _WORD):
                starts.append(i)
        sep = text.find("://", sep + 1)
    return starts


def _url_credentials(text: str, lower: str, counts: _Counts, anchored: bool) -> str:
    if "://" not in text or "@" not in text:
        return text
    if not anchored:
        return _full_sub(text, _URL_RE, _build_url, counts)
    return _anchored_sub(text, _URL_RE, _url_starts(text), _build_url, counts)


# ── rules 3 and 4: aws-secret, aws-access-key ───────────────────────────────

_AWS_SECRET_RE = re.compile(
    rf"\b(aws[_-]?secret[_-]?access[_-]?key)({_S}*['\"]?{_S}*[:=]{_S}*)(['\"]?)"
    r"([A-Za-z0-9/+=_-]{32,})(['\"]?)",
    re.ASCII | re.IGNORECASE,
)
_AWS_ACCESS_RE = re.compile(r"A(?:KIA|SIA)[0-9A-Z]{16}")


def _closing(opening: str, closing: str) -> str:
    # A closing quote is given back only if the value had an opening one.
    return closing if opening else ""


def _build_assignment(kind: str) -> _Build:
    """Keep key, delimiter and quotes; replace the value (groups 1-5)."""
    marker = _marker(kind)

    def build(m: re.Match[str]) -> tuple[str, str]:
        return f"{m[1]}{m[2]}{m[3]}{marker}{_closing(m[3], m[5])}", kind

    return build


_build_aws_secret = _build_assignment("aws-secret")


def _aws_secret(text: str, lower: str, counts: _Counts, anchored: bool) -> str:
    # "secret" is implied by the key and makes the check much rarer than "aws".
    if "aws" not in lower or "secret" not in lower:
        return text
    if not (anchored and _aligned(text, lower)):
        return _full_sub(text, _AWS_SECRET_RE, _build_aws_secret, counts)
    starts = _literal_anchors(lower, ["aws"])
    return _anchored_sub(text, _AWS_SECRET_RE, starts, _build_aws_secret, counts)


def _aws_access_key(text: str, lower: str, counts: _Counts, anchored: bool) -> str:
    if "AKIA" not in text and "ASIA" not in text:
        return text
    build: _Build = lambda m: (_marker("aws-access-key"), "aws-access-key")  # noqa: E731
    if not anchored:
        return _full_sub(text, _AWS_ACCESS_RE, build, counts)
    starts = _literal_anchors(text, ["AKIA", "ASIA"])
    return _anchored_sub(text, _AWS_ACCESS_RE, starts, build, counts)


# ── rule 5: quoted-secret ───────────────────────────────────────────────────

_QUOTED_RE = re.compile(
    rf"\b(password|passwd|pwd|secret|token|api[_-]?key)({_S}+(?:is{_S}+|was{_S}+|for{_S}+)?)"
    r"([\"'`])([^\"'`\n]{6,80})([\"'`])",
    re.ASCII | re.IGNORECASE,
)
# The spec's pre-check lists "api key", which the pattern cannot match, and
# omits "api-key", which it can; the literals here are exactly the keywords.
_QUOTED_WORDS = ("password", "passwd", "pwd", "secret", "token", "api_key", "api-key", "apikey")


def _build_quoted(m: re.Match[str]) -> tuple[str, str]:
    return f"{m[1]}{m[2]}{m[3]}{_marker('quoted-secret')}{m[5]}", "quoted-secret"


def _quoted_secret(text: str, lower: str, counts: _Counts, anchored: bool) -> str:
    if not any(w in lower for w in _QUOTED_WORDS):
        return text
    if not (anchored and _aligned(text, lower)):
        return _full_sub(text, _QUOTED_RE, _build_quoted, counts)
    starts = _literal_anchors(lower, _QUOTED_WORDS)
    return _anchored_sub(text, _QUOTED_RE, starts, _build_quoted, counts)


# ── rule 6: bearer-token ────────────────────────────────────────────────────

_BEARER_RE = re.compile(
    rf"\b(Bearer|Basic)({_S}+)([A-Za-z0-9._~+/=-]{{16,}})", re.ASCII | re.IGNORECASE
)


def _build_bearer(m: re.Match[str]) -> tuple[str, str]:
    return f"{m[1]}{m[2]}{_marker('bearer-token')}", "bearer-token"


def _bearer_token(text: str, lower: str, counts: _Counts, anchored: bool) -> str:
    # The spec's pre-check is "basic " with a space; "basic" is used because
    # the pattern also accepts a tab or newline after the scheme word.
    if "bearer" not in lower and "basic" not in lower:
        return text
    if not (anchored and _aligned(text, lower)):
        return _full_sub(text, _BEARER_RE, _build_bearer, counts)
    starts = _literal_anchors(lower, ["bearer", "basic"])
    return _anchored_sub(text, _BEARER_RE, starts, _build_bearer, counts)


# ── rule 7: jwt ─────────────────────────────────────────────────────────────

_JWT_RE = re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\b", re.ASCII)


def _jwt(text: str, lower: str, counts: _Counts, anchored: bool) -> str:
    if "eyJ" not in text:
        return text
    build: _Build = lambda m: (_marker("jwt"), "jwt")  # noqa: E731
    if not anchored:
        return _full_sub(text, _JWT_RE, build, counts)
    return _anchored_sub(text, _JWT_RE, _literal_anchors(text, ["eyJ"]), build, counts)


# ── rule 8: credential (generic and international key = value) ──────────────

# Delimiter and value shared by both patterns: groups 2-5 of the match.
_KV_TAIL = rf"({_S}*['\"]?{_S}*[:=]{_S}*)(['\"]?)([A-Za-z0-9/+=._-]{{16,}})(['\"]?)"
_KV_WORDS = r"api[_-]?key|secret|token|passwd|password|authorization"
_KV_RE = re.compile(rf"\b([\w.-]{{0,64}}?(?:{_KV_WORDS})){_KV_TAIL}", re.ASCII | re.IGNORECASE)
# No \b: RE2's \b is ASCII-only, so it could never sit before a Cyrillic or
# CJK word. Only the key words fold case (Unicode folding, as RE2's (?i)).
_KV_INTL_RE = re.compile(
    r"((?i:парол[ьяею]|токен[ауы]?|секрет[ауы]?|ключ[аеиуом]?|contraseña|senha|passwort"
    rf"|密码|密碼|パスワード|비밀번호)){_KV_TAIL}"
)
_KV_TAIL_RE = re.compile(_KV_TAIL)
# Literal spellings of _KV_WORDS, to find where a key word ends.
_KV_LITERALS = (
    "api_key", "api-key", "apikey", "secret", "token", "passwd", "password", "authorization",
)  # fmt: skip
_KEY_PREFIX_CHARS = _WORD | {".", "-"}

# Section 3.1 hint words, split by the pattern they can lead to. "passw"
# covers "passwort" (international) as well as the English spellings;
# "mot de passe" is a hint upstream but no pattern uses it (L5).
_HINTS_EN = ("key", "secret", "token", "passw", "authorization")
_HINTS_INTL = (
    "passw", "пароль", "парол", "токен", "секрет", "ключ",
    "contraseña", "senha", "mot de passe", "密码", "密碼", "パスワード", "비밀번호",
)  # fmt: skip
# From the end of a hint: the rest of an identifier (ASCII word chars, any
# non-ASCII, '.', '-'), whitespace and quotes, then ':' or '='. The value
# floor (optional quote, 16 value chars) is checked too: both patterns need
# it, so the gate stays a necessary condition and passes far less often.
_GATE_AFTER_HINT = re.compile(
    r"[\w.\-\u0080-\U0010ffff]*[\t\n\v\f\r '\"]*[:=][\t\n\v\f\r ]*['\"]?[A-Za-z0-9/+=._-]{16}",
    re.ASCII,
)


def _assignment_gate(lower: str, hints: Iterable[str]) -> bool:
    """Section 3.1: some hint word is followed by an assignment."""
    for hint in hints:
        i = lower.find(hint)
        while i != -1:
            if _GATE_AFTER_HINT.match(lower, i + len(hint)):
                return True
            i = lower.find(hint, i + 1)
    return False


def _kv_starts(text: str, lower: str) -> list[int]:
    """Every position a generic credential match can start at.

    A match needs a key word at k directly followed by the delimiter/value
    tail, and starts at a word boundary s with k-64 <= s <= k and only
    [A-Za-z0-9_.-] between s and k (the lazy identifier prefix).
    """
    starts: list[int] = []
    for lit in _KV_LITERALS:
        k = lower.find(lit)
        while k != -1:
            if _KV_TAIL_RE.match(text, k + len(lit)):
                lo, floor = k, max(0, k - 64)
                while lo > floor and text[lo - 1] in _KEY_PREFIX_CHARS:
                    lo -= 1
                for s in range(lo, k + 1):
                    before = s > 0 and text[s - 1] in _WORD
                    if before != (text[s] in _WORD):
                        starts.append(s)
            k = lower.find(lit, k + 1)
    return starts


_build_credential = _build_assignment("credential")


def _credential(text: str, lower: str, counts: _Counts, anchored: bool) -> str:
    if _assignment_gate(lower, _HINTS_EN):
        if anchored and _aligned(text, lower):
            out = _anchored_sub(text, _KV_RE, _kv_starts(text, lower), _build_credential, counts)
        else:
            out = _full_sub(text, _KV_RE, _build_credential, counts)
        if out is not text:
            text, lower = out, out.lower()
    # Python's re folds case more widely than lower() does ('ſ' matches 's',
    # 'ᲂ' matches 'о'); casefold() covers those, so the gate stays a
    # necessary condition. (Upstream's ToLower gate misses them.) For ASCII
    # text the two are the same.
    folded = lower if text.isascii() else text.casefold()
    if _assignment_gate(folded, _HINTS_INTL):
        # Rare (a non-English key word with an assignment): plain regex.
        text = _full_sub(text, _KV_INTL_RE, _build_credential, counts)
    return text


# ── rule 9: provider prefixes ───────────────────────────────────────────────

# One named group per kind, in upstream's alternation order.
_PROVIDER_RE = re.compile(
    r"\b(?:"
    r"(?P<github>gh[opsur]_[A-Za-z0-9_]{20,}|github_pat_[A-Za-z0-9_]{20,})"
    r"|(?P<gitlab>glpat-[A-Za-z0-9_-]{20,})"
    r"|(?P<stripe>(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,})"
    # Internal hyphens allowed (sk-proj-, sk-ant-…), but it must end in 20
    # alphanumerics so kebab-case slugs survive (N29).
    r"|(?P<sk>sk-[A-Za-z0-9_-]*[A-Za-z0-9]{20,})"
    r"|(?P<groq>gsk_[A-Za-z0-9]{20,})"
    r"|(?P<xai>xai-[A-Za-z0-9]{20,})"
    r"|(?P<hf>hf_[A-Za-z0-9]{20,})"
    r"|(?P<npm>npm_[A-Za-z0-9]{30,})"
    r"|(?P<slack>xox[bpcs]-[A-Za-z0-9-]{10,})"
    r"|(?P<google>AIza[0-9A-Za-z_-]{30,})"
    r")\b",
    re.ASCII,
)
_PROVIDER_KINDS = {
    "github": "github-token",
    "gitlab": "gitlab-token",
    "stripe": "stripe-key",
    "groq": "groq-key",
    "xai": "xai-key",
    "hf": "huggingface-token",
    "npm": "npm-token",
    "slack": "slack-token",
    "google": "google-api-key",
}
# Every alternative starts with one of these. Bare "gh" is not a hint: it is
# inside "through", "right", "enough".
_PROVIDER_HINTS = (
    "ghp_", "gho_", "ghs_", "ghu_", "ghr_", "github_pat_",
    "glpat-", "sk_", "rk_", "sk-", "gsk_", "xai-", "hf_", "npm_", "xox", "AIza",
)  # fmt: skip


def _build_provider(m: re.Match[str]) -> tuple[str, str]:
    group = m.lastgroup
    if group == "sk":
        kind = "anthropic-key" if m[0].startswith("sk-ant-") else "openai-key"
    else:
        kind = _PROVIDER_KINDS[group]  # type: ignore[index]
    return _marker(kind), kind


def _provider(text: str, lower: str, counts: _Counts, anchored: bool) -> str:
    starts = _literal_anchors(text, _PROVIDER_HINTS)
    if not starts:
        return text
    if not anchored:
        return _full_sub(text, _PROVIDER_RE, _build_provider, counts)
    return _anchored_sub(text, _PROVIDER_RE, starts, _build_provider, counts)


# ── rule 10: entropy (last resort) ──────────────────────────────────────────

# Works on the UTF-8 bytes of the text, as upstream: runs, keys and blanks are
# all ASCII, and entropy is defined over bytes. Lone surrogates round-trip
# through "surrogatepass".
_ENTROPY_MIN_BITS = 4.5
_ENTROPY_MIN_ASSIGN = 20
_ENTROPY_MIN_STANDALONE = 28
_ENTROPY_MAX_LEN = 256
# Entropy is at most log2(number of distinct bytes), so 4.5 bits needs 23
# distinct bytes: a shorter token, or a run (padding adds at most '=') of
# fewer than 22 characters, can never qualify. Skipping them changes nothing.
_ENTROPY_MIN_TOKEN = 23
_ENTROPY_MIN_RUN = 22
_ENTROPY_MIN_DISTINCT = 23

# Reference scan: every run, as the spec words it.
_ENTROPY_RUN = re.compile(rb"[A-Za-z0-9+/_-]{20,}={0,2}")
_HEXISH = re.compile(rb"[0-9a-fA-F-]+")
_DIGIT = re.compile(rb"[0-9]")
_ASSIGN_PAD = frozenset(b"\"' \t")
_DELIMS = frozenset(b"=:")
_ENTROPY_KEY_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_LINE_PAD = frozenset(b" \t\r")
_NEWLINE = ord("\n")
_PAD_BYTE = ord("=")


def _entropy_table() -> bytes:
    """Byte classes for the fast scan of section 3.3 positions."""
    table = bytearray(b"." * 256)  # anything else
    for c in b"ghijklmnopqrstuvwxyzGHIJKLMNOPQRSTUVWXYZ+/_":
        table[c] = ord("a")  # run byte that is not hex-ish
    for c in b"0123456789abcdefABCDEF-":
        table[c] = ord("h")  # hex-ish run byte
    table[ord("=")] = table[ord(":")] = ord("=")
    table[ord("\n")] = ord("n")
    table[ord(" ")] = table[ord("\t")] = ord(" ")
    table[ord('"')] = table[ord("'")] = ord("q")
    table[ord("\r")] = ord("r")
    return bytes(table)


_ENTROPY_TABLE = _entropy_table()


def _spot_run(min_len: int) -> bytes:
    # A run long enough to qualify that is not all hex-ish (digests, SHAs,
    # UUIDs), unless '=' padding follows, which makes the token not hex-ish.
    return rb"(?=[ah]{%d})h*a[ah]*|h{%d,}(?==)" % (min_len, min_len)


# Over the translated bytes. Assignment: '=' or ':', quotes/blanks, the run.
# Standalone: a line holding only blanks, the run and its padding. Both start
# with a literal so the regex engine can skip ahead with a fast byte search.
_ASSIGN_SPOT = re.compile(rb"=[q ]*+(" + _spot_run(_ENTROPY_MIN_RUN) + rb")")
_LINE_BODY = rb"[ r]*+(" + _spot_run(_ENTROPY_MIN_STANDALONE - 2) + rb")=?=?[ r]*+(?=n|\Z)"
_LINE_SPOT = re.compile(rb"n" + _LINE_BODY)
_FIRST_LINE_SPOT = re.compile(_LINE_BODY)


# Keys that are prose, not names: "copied from: <blob>", "moved to: <hash>".
_STOP_WORDS_EN = frozenset(
    "a an and are as at be before but by did do does for from dealt have how in is it of on or "
    "that the this to was we what when where which who with".split()
)
# Russian filler words. Keys are ASCII by construction ([A-Za-z0-9_.-]), so
# these can only matter if the key class ever widens; kept for parity with
# upstream's shared stop list.
_STOP_WORDS_RU = frozenset(
    "и в во на с со к у о об от до из за по при для без под над про как что это то так там тут "
    "где когда если или но а же ли бы да нет не ни уже еще ещё вот был была было были".split()
)
_STOP_WORDS = frozenset(w.encode() for w in _STOP_WORDS_EN | _STOP_WORDS_RU)


def _assignment_value(buf: bytes, start: int) -> bool:
    """The run at ``start`` is the value of ``key = …`` / ``key: …``."""
    i = start - 1
    while i >= 0 and buf[i] in _ASSIGN_PAD:
        i -= 1
    if i < 0 or buf[i] not in _DELIMS:
        return False
    i -= 1
    while i >= 0 and buf[i] in _ASSIGN_PAD:
        i -= 1
    end = i + 1
    while i >= 0 and buf[i] in _ENTROPY_KEY_CHARS:
        i -= 1
    key = buf[i + 1 : end]
    if key.isdigit() or not key:
        # Telegram bot tokens are "<bot id>:<secret>": a numeric key counts
        # only when it is id-sized.
        return len(key) >= 6
    return len(key) >= 3 and key.lower() not in _STOP_WORDS


def _standalone_line(buf: bytes, start: int, end: int) -> bool:
    """Only blanks between the run and the surrounding newlines: a pasted key."""
    i = start - 1
    while i >= 0 and buf[i] != _NEWLINE:
        if buf[i] not in _LINE_PAD:
            return False
        i -= 1
    j, n = end, len(buf)
    while j < n and buf[j] != _NEWLINE:
        if buf[j] not in _LINE_PAD:
            return False
        j += 1
    return True


def _shannon_bits(tok: bytes) -> float:
    n = len(tok)
    return -sum(c / n * math.log2(c / n) for c in Counter(tok).values())


def _high_entropy(tok: bytes) -> bool:
    # Entropy is at most log2(distinct bytes): a set() rules out most
    # tokens (hashes with a prefix, words) before counting.
    return len(set(tok)) >= _ENTROPY_MIN_DISTINCT and _shannon_bits(tok) >= _ENTROPY_MIN_BITS


def _looks_like_path(tok: bytes) -> bool:
    # Rooted, at least two separators, and none of the '=' / ':' that a
    # credential or URL brings along.
    return (
        tok.startswith((b"/", b"~/", b"./", b"../"))
        and tok.count(b"/") >= 2
        and b"=" not in tok
        and b":" not in tok
    )


def _entropy_candidate(tok: bytes) -> bool:
    """Section 3.3 candidate conditions 1-6, cheapest first."""
    if not _ENTROPY_MIN_TOKEN <= len(tok) <= _ENTROPY_MAX_LEN or _HEXISH.fullmatch(tok):
        return False  # cannot reach 4.5 bits, too long, or a digest / git SHA / UUID
    lower = tok.lower()
    classes = (
        (tok != lower)  # has upper
        + (tok != tok.upper())  # has lower
        + (_DIGIT.search(tok) is not None)
        + (not tok.isalnum())  # '+', '/', '_', '-', '='
    )
    if classes < 3:
        return False
    if b"/" in tok and tok == lower:
        return False  # lower-case path segments; base64 with slashes mixes case
    if _looks_like_path(tok):
        return False
    return _high_entropy(tok)


def _secret_shaped(buf: bytes, start: int, end: int) -> bool:
    """Position (assignment value or standalone line), then candidate.

    Position goes first: it rejects most runs after a byte or two. A run can
    never contain the marker ('[' and ':' are not run bytes), so the spec's
    "skip runs holding a marker" needs no check.
    """
    in_position = _assignment_value(buf, start) or (
        end - start >= _ENTROPY_MIN_STANDALONE and _standalone_line(buf, start, end)
    )
    return in_position and _entropy_candidate(buf[start:end])


def _with_padding(buf: bytes, run_end: int) -> int:
    """A token is its run plus up to two trailing '=' (base64 padding)."""
    end = run_end
    while end < len(buf) and end - run_end < 2 and buf[end] == _PAD_BYTE:
        end += 1
    return end


def _entropy_spans(buf: bytes, anchored: bool) -> list[tuple[int, int]]:
    if not anchored:
        return [m.span() for m in _ENTROPY_RUN.finditer(buf)]
    # Fast path: only runs in a secret-shaped position, and not runs that
    # cannot pass the candidate test (too short, all hex-ish). The spans are
    # maximal runs, as in the reference scan; the exact checks still follow.
    tr = buf.translate(_ENTROPY_TABLE)
    runs = [m.span(1) for m in _ASSIGN_SPOT.finditer(tr)]
    first = _FIRST_LINE_SPOT.match(tr)
    if first:
        runs.append(first.span(1))
    runs += [m.span(1) for m in _LINE_SPOT.finditer(tr)]
    # An assignment value is never alone on its line, so the lists are
    # disjoint; sorting restores text order.
    runs.sort()
    return [(start, _with_padding(buf, run_end)) for start, run_end in runs]


def _entropy(text: str, lower: str, counts: _Counts, anchored: bool) -> str:
    if len(text) < _ENTROPY_MIN_ASSIGN:
        return text
    buf = text.encode("utf-8", "surrogatepass")
    pieces: list[bytes] = []
    last = 0
    for start, end in _entropy_spans(buf, anchored):
        if not _secret_shaped(buf, start, end):
            continue
        pieces += (buf[last:start], b"[redacted:entropy]")
        _bump(counts, "entropy")
        last = end
    if not pieces:
        return text
    pieces.append(buf[last:])
    return b"".join(pieces).decode("utf-8", "surrogatepass")


# Batch prefilter for the entropy rule (see redact_many). A run in either
# secret-shaped position, in Rust regex syntax: after '=' or ':' and
# quotes/blanks, or after a line start and blanks. Runs, keys and blanks are
# ASCII, so matching on characters here equals matching on bytes.
_ENTROPY_BATCH_SPOTS = r"(?:[=:][\"' \t]*|(?m:^)[ \t\r]*)[A-Za-z0-9+/_-]{%d,}" % _ENTROPY_MIN_RUN
# A token needs 23 distinct bytes and padding adds at most one ('=').
_ENTROPY_MIN_RUN_DISTINCT = _ENTROPY_MIN_DISTINCT - 1


def _entropy_batch_prefilter(series) -> list[int]:  # noqa: ANN001 (a polars Series)
    """Indices of texts with a positioned run varied enough to reach 4.5 bits.

    Extraction is leftmost and non-overlapping, and never consumes the
    character after a run, so every positioned run is extracted whole. The
    distinct count includes the lead characters, which only lets more through.
    """
    flagged = []
    for i, spots in enumerate(series.str.extract_all(_ENTROPY_BATCH_SPOTS).to_list()):
        for spot in spots or ():
            if len(set(spot)) >= _ENTROPY_MIN_RUN_DISTINCT:
                flagged.append(i)
                break
    return flagged


# ── driver ──────────────────────────────────────────────────────────────────

# Section 2 order: the first rule that matches decides the kind. Each rule is
# paired with a batch prefilter (Rust regex syntax, run by polars over a
# whole batch in redact_many): a pattern that matches every text on which the
# rule could change anything, so texts it rejects skip the rule.
_S_RS = r"[\t\n\f\r ]"
_RS_TAIL = rf"{_S_RS}*['\"]?{_S_RS}*[:=]{_S_RS}*['\"]?[A-Za-z0-9/+=._-]{{16}}"
_Rule = Callable[[str, str, _Counts, bool], str]
# A prefilter is a pattern, several patterns (any may match), or a function
# from the batch Series to the flagged indices.
_Prefilter = str | tuple[str, ...] | Callable[..., list[int]]
_RULES: tuple[tuple[_Rule, _Prefilter], ...] = (
    (_private_key, r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY"),
    (_url_credentials, r"://[^\t\n\f\r /@:]*:[^\t\n\f\r ]+@"),
    (_aws_secret, r"(?i)aws[_-]?secret[_-]?access[_-]?key"),
    (_aws_access_key, r"A(?:KIA|SIA)[0-9A-Z]{16}"),
    (
        _quoted_secret,
        rf"(?i)(?:password|passwd|pwd|secret|token|api[_-]?key)"
        rf"{_S_RS}+(?:(?:is|was|for){_S_RS}+)?[\"'`]",
    ),
    (_bearer_token, rf"(?i)(?:bearer|basic){_S_RS}+[A-Za-z0-9._~+/=-]{{16}}"),
    (_jwt, r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4}"),
    (
        _credential,
        # Two patterns: Rust's Unicode case folding makes the Cyrillic words
        # costly, and alone they are cheap to rule out. (?i) in Rust folds
        # case at least as widely as Python's re does for these words, so the
        # prefilter never rejects a real match.
        (
            rf"(?i)(?:api[_-]?key|secret|token|passwd|password|authorization|senha|passwort)"
            rf"{_RS_TAIL}",
            rf"(?i)(?:парол[ьяею]|токен[ауы]?|секрет[ауы]?|ключ[аеиуом]?|contraseña"
            rf"|密码|密碼|パスワード|비밀번호){_RS_TAIL}",
        ),
    ),
    (
        _provider,
        r"(?:gh[opsur]_|github_pat_)[A-Za-z0-9_]{20}|glpat-[A-Za-z0-9_-]{20}"
        r"|[sr]k_(?:live|test)_[A-Za-z0-9]{16}|sk-[A-Za-z0-9_-]*[A-Za-z0-9]{20}"
        r"|(?:gsk_|xai-|hf_)[A-Za-z0-9]{20}|npm_[A-Za-z0-9]{30}|xox[bpcs]-[A-Za-z0-9-]{10}"
        r"|AIza[0-9A-Za-z_-]{30}",
    ),
    (_entropy, _entropy_batch_prefilter),
)


def _redact_text(text: str, counts: _Counts, anchored: bool = True) -> str:
    """Run every rule in order; each sees the previous rules' output."""
    if len(text) < _MIN_MATCH_LEN:
        return text
    lower = text.lower()
    for rule, _ in _RULES:
        out = rule(text, lower, counts, anchored)
        if out is not text:
            text, lower = out, out.lower()
    return text


def _disabled() -> bool:
    return os.environ.get("DEJA_NO_REDACT") == "1"


def redact(text: str) -> tuple[str, dict[str, int]]:
    """Replace secret values in ``text``; return the new text and per-kind counts.

    ``DEJA_NO_REDACT=1`` (read at call time) returns the text unchanged.
    """
    counts: _Counts = {}
    if not text or _disabled():
        return text, counts
    return _redact_text(text, counts), counts


def redact_many(texts: list[str], vectorized: bool = True) -> tuple[list[str], dict[str, int]]:
    """Batch form of :func:`redact`: one output per input, counts summed.

    The output equals :func:`redact` applied to each text; large batches just
    get there faster through the polars prefilters (see the module notes).
    ``vectorized=False`` keeps polars out of the process (index worker
    processes, where its memory costs more than its speed gains).
    """
    counts: _Counts = {}
    if _disabled():
        return list(texts), counts
    if vectorized and sum(map(len, texts)) >= _BATCH_MIN_CHARS:
        try:
            import polars as pl
        except ImportError:
            pass
        else:
            return _redact_batch(pl, texts, counts), counts
    return [_redact_text(t, counts) if t else t for t in texts], counts


# ── batch path ──────────────────────────────────────────────────────────────

# Below this many characters (about ten typical messages) a batch is cheaper
# to redact text by text than to hand to polars.
_BATCH_MIN_CHARS = 32 * 1024
# Rules whose Python side wants the lower-cased text.
_NEEDS_LOWER = frozenset({_aws_secret, _quoted_secret, _bearer_token, _credential})


def _redact_batch(pl, texts: list[str], counts: _Counts) -> list[str]:  # noqa: ANN001
    """Rule by rule over the batch, so each prefilter sees the current texts
    (a redaction can create a match for a later rule: a PEM block inside a
    URL's password, for one)."""
    out = list(texts)
    scanned = out
    if not all(t.isascii() for t in out):
        # polars holds UTF-8, which lone surrogates are not: such texts take
        # the per-text path and are blanked in the scan.
        scanned = list(out)
        for i, t in enumerate(out):
            if not t.isascii() and _has_surrogate(t):
                out[i] = _redact_text(t, counts)
                scanned[i] = ""
    series = pl.Series(scanned, dtype=pl.String)
    for rule, prefilter in _RULES:
        changed: list[int] = []
        for i in _flagged(series, prefilter):
            text = out[i]
            if len(text) < _MIN_MATCH_LEN:
                continue
            new = rule(text, text.lower() if rule in _NEEDS_LOWER else "", counts, True)
            if new is not text:
                out[i] = new
                changed.append(i)
        if changed:
            series = series.scatter(changed, [out[i] for i in changed])
    return out


def _flagged(series, prefilter: _Prefilter) -> list[int]:  # noqa: ANN001
    """Indices of the texts a rule's prefilter lets through, in order."""
    if callable(prefilter):
        return prefilter(series)
    patterns = (prefilter,) if isinstance(prefilter, str) else prefilter
    hits: set[int] = set()
    for pattern in patterns:
        hits.update(series.str.contains(pattern).arg_true().to_list())
    return sorted(hits)


def _has_surrogate(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return True
    return False


# The display sanitiser (section 3.4) lives in stages/display.py, light enough
# for the hooks; re-exported here for callers that have redaction loaded anyway.
from .display import sanitize_display  # noqa: E402,F401
