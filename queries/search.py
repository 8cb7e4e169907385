"""Search: the session that holds the answer, first.

The ladder of cli-contract §5.2. Each rung runs only when the ones before it
found nothing:

  exact     every query word in one record (quoted phrases contiguous)
  close     a word with no posting at all matches as a substring of indexed words
  stemmed   word forms (rotation ↔ rotated); when a session holds every word,
            only not in one message, straight on to relevance
  fuzzy     close spellings (edit distance 1, 2 for long words) — tier "close"
            then one or two of the commonest words may be dropped
  error     a pasted error line, matched by its signature (numbers and ids ignored)
  relevance nothing matched: the sessions nearest the question's informative words

Time words ("in March", "two weeks ago") are no words to match: they name a
window, and sessions active in it are lifted a little (``time_windows``).

Every rung is the same primitive: BM25 at session level over *term groups*
(a query word plus the spellings or forms it may match), computed in DuckDB
from postings alone (``sql/score_groups.sql``): term frequency damped by each
record's length, what was said and what tools printed saturating apart.
Records are read only for the snippets of the hits that are served. Ranking
signals beyond BM25 are bounded multipliers: none can outrank relevance.
"""

from __future__ import annotations

import functools
import math
import re
import time

from deja.stages.store import duck
from deja.stages.roles import ROLE_CODES
from deja.stages.stems import stem
from deja.stages.tokenize import _BIGRAM_BLOCKS, bucket_of, query_terms

from .session_obj import demote_rejected, session_rows, session_object
from .sqlfiles import load as load_sql
from deja.stages.store.read import LiveStore

# The contract's filler list (§5.1) drives the exact rung; relevance also drops
# other function words, which otherwise decide natural-language questions: a
# word like "after", "only" or "still" is rare in transcripts, so its IDF is
# high, yet it says nothing about what a session is about. English is the
# Snowball stop list plus the words people wrap a question in ("remind me",
# "what happened"); time words are read by ``time_windows``, not matched.
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
# summaries are the harness's digest of turns it compacted away: served only by --role summary
SPEECH = (0, 1, 2, 4)
RELEVANCE_TOP = 50
THIN_AND = 10  # fewer strict matches than this (in a store of more than 50) → merge relevance
FUZZY_COMMON = 200  # a word this common matches only itself
_ERROR_WORDS = re.compile(
    r"error|exception|traceback|failed|failure|panic|fatal|cannot|can't|undefined|not found|refused|denied|"
    r"timed? ?out|segmentation|E\d{4}|ERR!|errno|abort|invalid|unexpected|no such|permission",
    re.I,
)


class Query:
    """What to search for and how (plain class: dataclasses cost a search ~12 ms to import)."""

    __slots__ = ("text", "limit", "all", "harness", "project", "since_ms", "role", "session", "regex")

    def __init__(self, text: str, limit: int = 15, all: bool = False, harness: str | None = None,
                 project: str | None = None, since_ms: int | None = None, role: str | None = None,
                 session: str | None = None, regex: bool = False):
        self.text, self.limit, self.all, self.harness, self.project = text, limit, all, harness, project
        self.since_ms, self.role, self.session, self.regex = since_ms, role, session, regex


class Ranked:
    __slots__ = ("ord", "score", "matched", "nrec", "updated", "best")

    def __init__(self, ord: int, score: float, matched: int, nrec: int, updated: int, best: list[int] | None = None):
        self.ord, self.score, self.matched, self.nrec, self.updated = ord, score, matched, nrec, updated
        self.best = best  # the records to show as snippets, when the ranking chose them (role << 40 | id)


def parse_query(text: str) -> tuple[list[str], list[str], list[str]]:
    """(content terms, quoted phrases, terms outside the quotes)."""
    phrases = [p.strip() for p in re.findall(r'"([^"]+)"', text) if p.strip()]
    outside = re.sub(r'"[^"]*"', " ", text)
    terms = query_terms(text)
    content = [t for t in terms if t not in STOP_WORDS] or terms
    return content, phrases, [t for t in query_terms(outside) if t not in FILLER]


class Searcher:
    def __init__(self, store: LiveStore, q: Query):
        self.store = store
        self.q = q
        self.roles = role_codes(q.role)
        self.notes: list[str] = []  # said on stderr: dropped words, variants
        self._fuzzy_terms: list[str] = []
        self.text = q.text  # the query without its time words
        self.windows: list[tuple[float, float]] = []  # the times it names

    # ---- the ladder ------------------------------------------------------
    def run(self) -> dict:
        q = self.q
        if q.regex:
            return self.regex_scan()
        terms, phrases, outside = parse_query(q.text)
        if not phrases:  # a quoted query is literal
            rest, windows = time_windows(q.text, time.time() * 1000)
            kept = parse_query(rest)[0] if windows else []
            if any(t not in FILLER for t in kept):  # "yesterday" alone is still a word to find
                terms, self.text, self.windows = kept, rest, windows
        empty = {"schema_version": 2, "tier": "exact", "total": 0, "hits": []}
        if not terms or not self.store.has("postings"):
            return empty
        drive = terms[:8]  # the first 8 content terms drive the intersection (§5.1)
        self._content = [t for t in terms if t not in FILLER] + drive
        self.vocab_for(self._content)  # one lookup: rungs that cannot match are skipped unread
        exact = self.rank([[t] for t in drive], need_and=True)
        if phrases:
            exact = self.keep_phrases(exact, phrases)
            if exact:
                return self.serve(exact, "exact", [[t] for t in drive], phrases)
            # a pasted error line quotes paths and names (File "x.py"): its quotes are
            # part of the paste, not a phrase operator
            err = self.error_rung()
            if err is not None:
                return err
            if len(outside) >= 2:  # the words outside the quotes still carry the question
                return self.relevance(outside, label="relevance")
            return empty
        if exact:
            return self.thin_and(exact, "exact", [[t] for t in drive], terms)
        informative = [t for t in terms if t not in FILLER] or terms
        widest, widest_tier = None, "stemmed"
        for tier, groups in self.loosened(drive):
            # The word-forms pass also reports sessions that hold every word
            # across their messages. Then the words are right, only not in one
            # message: guessing other spellings or dropping a word would answer
            # another question, so the ladder goes on to relevance (which ranks
            # those sessions by what they hold).
            ranked = self.rank(groups, need_and=True, whole=tier == "stemmed")
            strict = [r for r in ranked if r.nrec]
            if strict:
                return self.thin_and(strict, tier, groups, terms)
            if ranked:
                widest = None
                break
            if tier != "close" or widest is not None:  # the close (substring) rung is not a superset
                widest, widest_tier = groups, tier
        # every spelling and form tried: let the words that hold the rest back go
        dropped = self.drop_terms(widest, drive) if widest else None
        if dropped:
            return self.thin_and(dropped[0], widest_tier, dropped[1], terms)
        err = self.error_rung()
        if err is not None:
            return err
        return self.relevance(informative)

    def loosened(self, terms: list[str]):
        """close → stemmed → fuzzy: each yields one group of variants per term."""
        self._fuzzy_terms = terms
        vocab = self.vocab_for(self._content)  # every content word at once: relevance needs them next
        missing = [t for t in terms if t not in vocab["exact"]]
        if missing:
            self._scan_vocab(missing, terms, vocab)
            close = [[t] if t in vocab["exact"] else self.substring_variants(t) for t in terms]
            if all(close):
                yield "close", close
        stemmed = [sorted({t, *vocab["stems"].get(stem(t), ())}) for t in terms]
        yield "stemmed", stemmed
        fuzzy = []
        for t, grp in zip(terms, stemmed):
            fuzzy.append(sorted(set(grp) | set(self.fuzzy_variants(t, vocab))))
        if fuzzy != stemmed:
            yield "close", fuzzy

    def drop_terms(self, groups: list[list[str]], words: list[str]):
        """With ≥3 anchored words one may go (≥4: two): a word the store has
        never seen first, then the commonest. A word in many sessions tells
        least about which one is meant, so the rarest words are the last kept
        (dropping the shortest first used to throw away `csv` or `cent`)."""
        n = len(groups)
        if n < 3:
            return None
        postings = [sum(self._counts.get(t, 0) for t in g) for g in groups]
        order = sorted(range(n), key=lambda i: (self._viable(groups[i]), -postings[i]))
        for k in (1, 2) if n >= 4 else (1,):
            drop = set(order[:k])
            kept = [g for i, g in enumerate(groups) if i not in drop]
            ranked = self.rank(kept, need_and=True)
            if ranked:
                names = ", ".join(words[i] for i in sorted(drop))
                self.notes.append(f"ignoring {names} — no session matches it together with the rest")
                return ranked, kept
        return None

    def thin_and(self, ranked: list[Ranked], tier: str, groups: list[list[str]], terms: list[str]) -> dict:
        """Few strict matches in a big store: the relevance ranking is merged in,
        strict matches moved up ten places (§5.2). A one-word query keeps its
        strict answer; words are counted as typed, so `handle_stripe_event` is
        one word, not the four tokens it indexes as."""
        informative = [t for t in terms if t not in FILLER]
        if len(ranked) >= THIN_AND or typed_words(self.text) < 2 or self.session_count() <= 50:
            return self.serve(ranked, tier, groups)
        self.vocab_for(informative)  # one lookup for every word's forms
        rel = self.rank([self.forms(t) for t in informative], need_and=False, min_groups=2)
        if not rel:
            return self.serve(ranked, tier, groups)
        strict = {r.ord for r in ranked}
        pos = {r.ord: i for i, r in enumerate(rel)}
        merged = {r.ord: r for r in rel}
        for r in ranked:
            merged.setdefault(r.ord, r)
            pos.setdefault(r.ord, len(rel))
        order = sorted(merged.values(), key=lambda r: (pos[r.ord] - (THIN_AND + 0.5 if r.ord in strict else 0), -r.score))
        return self.serve(order[:RELEVANCE_TOP], "relevance", [self.forms(t) for t in informative],
                          total=len(rel), keep_order=True)

    def relevance(self, informative: list[str], label: str = "relevance") -> dict:
        if not informative:
            return {"schema_version": 2, "tier": label, "total": 0, "hits": []}
        self.vocab_for(informative)
        groups = [self.forms(t) for t in informative]
        ranked = self.rank(groups, need_and=False, min_groups=2 if len(groups) >= 2 else 1)
        if not ranked and len(groups) >= 2 and typed_words(self.text) >= 2:
            # no session holds two of the words the person typed: one will do
            ranked = self.rank(groups, need_and=False, min_groups=1)
        return self.serve(ranked[:RELEVANCE_TOP], label, groups, total=len(ranked), force_cap=True)

    def error_rung(self) -> dict | None:
        """A pasted error line matched by its signature: its words without the
        numbers, ids and paths that change from one run to the next."""
        lines = [ln for ln in self.q.text.splitlines() if _ERROR_WORDS.search(ln)]
        if not lines and len(self.q.text.split()) >= 3 and _ERROR_WORDS.search(self.q.text):
            lines = [self.q.text]
        if not lines:
            return None
        sig = []
        for ln in lines[:3]:
            for t in query_terms(ln):
                if any(c.isdigit() for c in t) or len(t) < 3 or t in FILLER:
                    continue
                if t not in sig:
                    sig.append(t)
        if len(sig) < 2:
            return None
        sig = sig[:12]
        vocab = self.vocab_for(sig)
        sig = [t for t in sig if t in vocab["exact"]]  # a changed id or path word cannot match: leave it out
        if len(sig) < 2:
            return None
        groups = [[t] for t in sig]
        need = max(2, math.ceil(0.75 * len(groups)))
        ranked = self.rank(groups, need_and=True, and_min=need)
        if not ranked:
            return None
        ranked.sort(key=lambda r: (-r.matched, -r.score))
        return self.serve(ranked[:RELEVANCE_TOP], "error", groups, total=len(ranked), keep_order=True)

    # ---- the primitive ----------------------------------------------------
    def rank(self, groups: list[list[str]], need_and: bool, min_groups: int = 1, and_min: int | None = None,
             whole: bool = False) -> list[Ranked]:
        """Sessions scored over term groups. With ``whole``, an AND also admits
        sessions that hold every group across their messages (``nrec`` 0)."""
        groups = [g for g in groups if g]
        if not groups:
            return []
        # a group none of whose words has a posting cannot match: an AND fails
        # unread, and the others go to DuckDB without it
        viable = [g for g in groups if self._viable(g)]
        need = (and_min or len(groups)) if need_and else min_groups
        if len(viable) < need:
            return []
        if need_and and and_min is None:
            and_min = len(groups)
        groups = viable
        tokens, gids = [], []
        for gid, g in enumerate(groups):
            for t in g:
                tokens.append(t)
                gids.append(gid)
        n_sessions, avgdl = self.load(tokens)
        k = len(groups)
        sql = load_sql("score_groups").replace("$record_sums", ", ".join(
            f"sum(w) FILTER (WHERE gid = {i}) AS w{i}" for i in range(k))).replace("$session_sums", ", ".join(
            f"coalesce(sum(w{i} * CASE role WHEN 0 THEN 1.3 WHEN 1 THEN 1.0 WHEN 3 THEN 0.5 ELSE 1.3 END) "
            f"FILTER (WHERE role <> 2), 0)::DOUBLE, coalesce(sum(w{i}) FILTER (WHERE role = 2), 0)::DOUBLE"
            for i in range(k)))
        if k > 62:  # past a BIGINT's bits (a pasted page of words): count the groups instead
            sql = sql.replace("bit_count(bit_or(1::BIGINT << gid))", "count(DISTINCT gid)")
        and_min = and_min or k
        # rungs that rank the same groups (word forms, then relevance) share one
        # aggregation: only which sessions qualify differs, decided below
        cache = self.__dict__.setdefault("_aggregates", {})
        key = (tuple(tuple(g) for g in groups), and_min)
        rows = cache.get(key)
        if rows is None:
            rows = cache[key] = self.store.con.execute(
                duck.inline(sql, tokens=tokens, gids=gids), {"and_min": and_min}).fetchall()
        if not rows:
            return []
        # IDF of each group over the admitted sessions that hold it
        df = [0] * k
        for r in rows:
            for i in range(k):
                if r[10 + 2 * i] or r[11 + 2 * i]:
                    df[i] += 1
        idf = [math.log(1 + (n_sessions - d + 0.5) / (d + 0.5)) for d in df]
        now = time.time() * 1000
        out = []
        for r in rows:
            ord_, dl, updated, started, decided, gave_up, note, nrec, best_ng, best = r[:10]
            # what was said and what tools printed saturate apart, the printed at half weight
            norm = 1.2 * (0.7 + 0.3 * dl / avgdl)
            bm25, matched = 0.0, 0
            for i in range(k):
                said, printed = r[10 + 2 * i], r[11 + 2 * i]
                if said or printed:
                    matched += 1
                    bm25 += idf[i] * (said * 2.2 / (said + norm) + 0.5 * printed * 2.2 / (printed + norm))
            if need_and:
                if not nrec and not (whole and matched >= and_min):
                    continue
            elif matched < min_groups:
                continue
            score = bm25 * signals(decided, gave_up, note)
            if self.windows:  # the time the question names stands in for recency
                score *= TIME_LIFT if in_windows(started, updated, self.windows) else 1.0
            else:
                score *= freshness(updated, now)
            if k > 1:
                # proximity at record granularity: the words of a question meeting in
                # one short message say more than the same words scattered over a
                # session (best_ng shrinks with the length of that message)
                score *= 1.0 + 0.5 * (best_ng - 1) / (k - 1)
                # coverage: a session holding more of the question's words
                score *= 0.5 + 0.5 * (matched / k)
            out.append(Ranked(ord_, score, matched, nrec, updated or 0, best))
        out.sort(key=lambda r: (-r.score, -r.updated, r.ord))
        return out

    def load(self, tokens: list[str]) -> tuple[int, float]:
        """Fill the search's tables (``sql/search_tables.sql``) for these words:
        each rung of the ladder then ranks from memory, and Parquet is read once
        per word, not once per rung. Returns the corpus statistics (sessions,
        their mean length)."""
        con = self.store.con
        if not hasattr(self, "_loaded"):
            q = self.q
            # a part read twice in a search (a bucket by two rungs, a records
            # part by two roles' snippets) parses its footer once
            con.execute("SET parquet_metadata_cache = true")
            made, fill = load_sql("search_tables").split(";\n", 1)
            con.execute(made, {"harness": q.harness, "project": q.project, "since": q.since_ms, "session": q.session})
            con.execute(fill)
            self._loaded: set[str] = set()
            n, avgdl = con.execute("SELECT count(*), avg(dl) FROM q_sessions").fetchone()
            self._stats = (n, float(avgdl or 20.0))
        new = sorted(set(tokens) - self._loaded)
        if new:
            self._loaded.update(new)
            files = self.store.postings_for_buckets({bucket_of(t) for t in new})
            if files:
                q = self.q
                # with a filter, only the admitted sessions' postings (a hook's
                # project): the ranking then aggregates a fraction of the rows
                admitted = (" AND session IN (SELECT ord FROM q_sessions WHERE admitted)"
                            if q.harness or q.project or q.since_ms or q.session else "")
                con.execute(duck.inline(
                    "INSERT INTO q_postings SELECT token, record_id, session, tf, role, rec_len "
                    "FROM read_parquet($files) WHERE token IN (SELECT unnest($tokens)) "
                    "AND role IN (SELECT unnest($roles)) AND record_id NOT IN (SELECT record_id FROM deletes)"
                    + admitted, files=files, tokens=new, roles=list(self.roles)))
        return self._stats

    # ---- vocabulary expansions ---------------------------------------------
    def _viable(self, group: list[str]) -> bool:
        """False only when the vocabulary was consulted and holds none of the group's words."""
        counts = getattr(self, "_counts", None)
        if counts is None or not self.store.has("vocab"):
            return True
        for t in group:
            if t in counts or stem(t) not in self._vocab:
                return True
        return False

    def vocab_for(self, terms: list[str]) -> dict:
        """What the store holds of these words and their forms: one lookup per
        search, by stem (a word's own stem finds the word too), cached."""
        if not hasattr(self, "_vocab"):
            self._vocab: dict[str, tuple[int, list[str]]] = {}  # stem → (unused, tokens)
            self._counts: dict[str, int] = {}
        todo = sorted({stem(t) for t in terms} - set(self._vocab))
        if todo and self.store.has("vocab"):
            # a literal IN list: DuckDB skips the sorted vocabulary's row groups by it
            rows = self.store.con.execute(
                f"SELECT token, stem, sum(n) FROM vocab WHERE stem IN ({duck.sql_list(todo)[1:-1]}) "
                "GROUP BY token, stem").fetchall()
            for t, st, n in rows:
                self._vocab.setdefault(st, (0, []))[1].append(t)
                self._counts[t] = n
        for st in todo:
            self._vocab.setdefault(st, (0, []))
        return {
            "exact": {t: self._counts[t] for t in terms if t in self._counts},
            "stems": {st: toks for st, (_, toks) in self._vocab.items()},
            "n": self._counts,
        }

    def forms(self, term: str) -> list[str]:
        """A word and the indexed words that share its stem (relevance groups)."""
        v = self.vocab_for([term])
        return sorted({term, *v["stems"].get(stem(term), ())})[:16]

    def _scan_vocab(self, missing: list[str], terms: list[str], vocab: dict) -> None:
        """The indexed words holding each missing word (the close rung) and the
        close-spelling candidates of every eligible word (the fuzzy rung), in one
        pass over the vocabulary: a word the store lacks needs a full scan for
        its substrings anyway, and a second scan for spellings cost as much."""
        want = self._fuzzy_want(terms, vocab)
        subs = [t for t in missing if len(t) >= 3]
        if not self.store.has("vocab") or not (subs or want):
            return
        conds, params = [], []
        for t in subs:
            conds.append("contains(token, ?)")
            params.append(t)
        for t in want:
            k = _fuzzy_k(t)
            conds.append("(starts_with(token, ?) AND length(token) BETWEEN ? AND ?)")
            params += [t[0], len(t) - k, len(t) + k]
        counts: dict[str, int] = {}
        for tok, n in self.store.con.execute(f"SELECT token, n FROM vocab WHERE {' OR '.join(conds)}", params).fetchall():
            counts[tok] = counts.get(tok, 0) + n  # (a token repeats across vocabulary parts)
        self._substr = {t: [tok for tok, _ in sorted(((tok, n) for tok, n in counts.items() if t in tok),
                                                     key=lambda x: (-x[1], x[0]))[:8]] for t in subs}
        for toks in self._substr.values():
            self._counts.update((tok, counts[tok]) for tok in toks)
        self._fuzzy = self._nearest(want, [(tok, n) for tok, n in counts.items()])

    def substring_variants(self, term: str) -> list[str]:
        """Indexed words holding a word the store lacks, commonest first (found by
        ``_scan_vocab``, which loosened() runs first for every missing word)."""
        return getattr(self, "_substr", {}).get(term, [])

    def fuzzy_variants(self, term: str, vocab: dict) -> list[str]:
        if not hasattr(self, "_fuzzy"):
            self._fuzzy = self._fuzzy_all(self._fuzzy_terms, vocab)
        variants = self._fuzzy.get(term, [])
        if variants:
            self.notes.append(f"{term}: also matching {', '.join(variants)}")
        return variants

    def _fuzzy_all(self, terms: list[str], vocab: dict) -> dict[str, list[str]]:
        """Close spellings of every eligible word in one scan of the vocabulary:
        ≥4 characters, edit distance 1 (2 from 8 characters), up to 8 each; a word
        the store already holds often matches only itself. Candidates share the
        first letter: a slip there is rare, and comparing every word of similar
        length cost most of a search's budget."""
        want = self._fuzzy_want(terms, vocab)
        if not want or not self.store.has("vocab"):
            return {}
        # The vocabulary is sorted by stem, and a stem keeps its word's first
        # letter: a literal range per first letter lets DuckDB skip every row
        # group of the other letters. The distances are computed here, in
        # rapidfuzz's C++: DuckDB's damerau_levenshtein cost most of a search.
        parts, params = [], []
        for term in want:
            k = _fuzzy_k(term)
            parts.append("SELECT token, n FROM vocab WHERE stem >= ? AND stem < ? "
                         "AND starts_with(token, ?) AND length(token) BETWEEN ? AND ?")
            params += [term[0], chr(ord(term[0]) + 1), term[0], len(term) - k, len(term) + k]
        # no GROUP BY: hashing the strings cost more than summing the few
        # tokens that repeat across vocabulary parts here (_nearest sums them)
        return self._nearest(want, self.store.con.execute(" UNION ALL ".join(parts), params).fetchall())

    @staticmethod
    def _fuzzy_want(terms: list[str], vocab: dict) -> list[str]:
        """Words that get close spellings: ≥4 characters, and not already common."""
        return [t for t in terms if len(t) >= 4 and vocab["n"].get(t, 0) < FUZZY_COMMON]

    def _nearest(self, want: list[str], rows) -> dict[str, list[str]]:
        """For each word, the candidate tokens within its edit distance, up to 8, commonest first."""
        from rapidfuzz.distance import DamerauLevenshtein

        near: dict[str, dict[str, int]] = {}
        for tok, n in rows:
            for term in want:
                k = _fuzzy_k(term)
                if tok != term and tok[:1] == term[0] and abs(len(tok) - len(term)) <= k \
                        and DamerauLevenshtein.distance(tok, term, score_cutoff=k) <= k:
                    got = near.setdefault(term, {})
                    got[tok] = got.get(tok, 0) + n
        out: dict[str, list[str]] = {}
        for term, cands in near.items():
            for tok, n in sorted(cands.items(), key=lambda x: (-x[1], x[0]))[:8]:
                out.setdefault(term, []).append(tok)
                self._counts[tok] = n
        return out

    # ---- phrases, regex -----------------------------------------------------
    def keep_phrases(self, ranked: list[Ranked], phrases: list[str]) -> list[Ranked]:
        if not ranked or not self.store.has("records"):
            return []
        needles = [p.lower() for p in phrases]
        rows = self.store.con.execute(
            f"SELECT DISTINCT s.ord FROM {self.store.records_source()} r JOIN sessions s ON r.session_key = s.session_key "
            "WHERE s.ord IN (SELECT unnest(?)) AND list_bool_and([contains(lower(r.text), ph) FOR ph IN ?]) "
            "AND r.record_id NOT IN (SELECT record_id FROM deletes) AND r.role IN (SELECT unnest(?))",
            [[r.ord for r in ranked], needles, [_role_name(c) for c in self.roles]],
        ).fetchall()
        keep = {r[0] for r in rows}
        return [r for r in ranked if r.ord in keep]

    def regex_scan(self) -> dict:
        if not self.store.has("records"):
            return {"schema_version": 2, "tier": "exact", "total": 0, "hits": []}
        check_regex(self.store.con, self.q.text)
        rows = self.store.con.execute(
            f"SELECT s.ord, count(*) AS n, max(epoch_ms(s.updated)) AS updated FROM {self.store.records_source()} r "
            "JOIN sessions s ON r.session_key = s.session_key "
            "WHERE regexp_matches(r.text, ?) AND r.role IN (SELECT unnest(?)) "
            "AND r.record_id NOT IN (SELECT record_id FROM deletes) "
            "AND (? IS NULL OR s.harness = ?) AND (? IS NULL OR contains(lower(s.project), lower(?))) "
            "GROUP BY s.ord ORDER BY updated DESC",
            [self.q.text, [_role_name(c) for c in self.roles], self.q.harness, self.q.harness,
             self.q.project, self.q.project],
        ).fetchall()
        ranked = [Ranked(o, float(n), 1, n, u or 0) for o, n, u in rows]
        return self.serve(ranked, "exact", [], regex=self.q.text, keep_order=True)

    # ---- serving ------------------------------------------------------------
    def serve(self, ranked: list[Ranked], tier: str, groups: list[list[str]], phrases: list[str] | None = None,
              total: int | None = None, keep_order: bool = False, force_cap: bool = False, regex: str | None = None,
              snippets_for: int | None = None) -> dict:
        if not keep_order:
            ranked = sorted(ranked, key=lambda r: (-r.score, -r.updated, r.ord))
        ranked = demote_rejected(self.store.con, ranked, self.store.any_rejected)  # deja promote --state rejected: below the rest (§5.3)
        total = len(ranked) if total is None else total
        cap = len(ranked) if (self.q.all and not force_cap) else min(self.q.limit, len(ranked))
        if force_cap and not self.q.all:
            cap = min(self.q.limit, len(ranked))
        served = ranked[:cap]
        rows = self.served_rows = session_rows(self.store.con, [r.ord for r in served], self.store.any_lifecycle)
        wanted = served if snippets_for is None else served[:snippets_for]  # records are the costly read
        snippets = self.snippets([r.ord for r in wanted], groups, phrases or [], regex,
                                 [rows[r.ord]["session_key"] if r.ord in rows else "" for r in wanted],
                                 None if phrases or regex or any(r.best is None for r in wanted)
                                 else [(r.ord, v & _ID_MASK, v >> 40) for r in wanted for v in r.best])
        hits = []
        for r in served:
            row = rows.get(r.ord)
            if row is None:
                continue
            snips = snippets.get(r.ord, [])
            if row.get("decision") and tier != "error":
                snips = [row["decision"]] + [s for s in snips if s != row["decision"]][:2]
            hits.append({
                "session": session_object(row),
                "count": int(r.nrec or r.matched),
                "snippets": snips,
                "score": round(r.score, 4),
                "tier": tier,
            })
        env = {"schema_version": 2, "tier": tier, "total": total}
        if total > len(hits):
            env["capped"] = True
        env["hits"] = hits
        if tier == "close" and any("also matching" in n for n in self.notes):
            env["fuzzy"] = True
        return env

    def snippets(self, ords: list[int], groups: list[list[str]], phrases: list[str], regex: str | None,
                 keys: list[str], best: list[tuple[int, int, int]] | None = None) -> dict[int, list[str]]:
        """The matched lines of each session's best records (``best``: the
        (ord, record id, role) the ranking chose, else chosen here)."""
        if not ords or not self.store.has("records"):
            return {}
        needles = [p.lower() for p in phrases] or sorted({t for g in groups for t in g})
        source = self.store.records_of(keys)
        if regex:
            # RE2 finds the match and the text before it (a lazy prefix, so the
            # leftmost match): the line around it is cut here without a second,
            # backtracking engine. A few records a session are enough for 3 lines.
            rows = self.store.con.execute(
                "SELECT ord, text, regexp_extract(text, ?, ['pre', 'hit']) FROM ("
                f"SELECT s.ord, r.record_id, r.text FROM {source} r JOIN sessions s ON r.session_key = s.session_key "
                "WHERE s.ord IN (SELECT unnest(?)) AND regexp_matches(r.text, ?) "
                "QUALIFY row_number() OVER (PARTITION BY s.ord ORDER BY r.record_id DESC) <= 8) "
                "ORDER BY record_id DESC",
                ["^((?s:.*?))(" + regex + ")", ords, regex],
            ).fetchall()
            return _collect([(o, (text, m)) for o, text, m in rows], lambda tm: _line_of_match(*tm))
        if best is None:
            tokens, gids = [], []
            for gid, g in enumerate(groups):
                for t in g:
                    tokens.append(t)
                    gids.append(gid)
            if not tokens:
                return {}
            best = [(r[0], r[1], None) for r in self.store.con.execute(
                load_sql("best_records"),
                {"files": self.store.postings_for_buckets({bucket_of(t) for t in tokens}), "tokens": tokens,
                 "gids": gids, "ords": ords, "roles": list(self.roles), "per_session": 3},
            ).fetchall()]
        if not best:
            return {}
        order = {rid: (o, i) for i, (o, rid, _) in enumerate(best)}
        texts = self.store.con.execute(self._texts_sql(best, keys, ords)).fetchall()
        texts.sort(key=lambda r: order[r[0]])
        return _collect([(order[rid][0], text) for rid, text in texts], lambda text: best_line(text, needles))

    def _texts_sql(self, best: list[tuple[int, int, int | None]], keys: list[str], ords: list[int]) -> str:
        """The query for the best records' texts. Parts keep each role in row
        groups of their own: with the records' roles (the ranking returns
        them), each role is read only from the parts of the sessions whose
        best records have it, so a part whose best record was said does not
        decompress its tool output."""
        if any(role is None for _, _, role in best):
            return duck.inline(f"SELECT record_id, text FROM {self.store.records_of(keys)} "
                               "WHERE record_id IN (SELECT unnest($ids))", ids=[rid for _, rid, _ in best])
        key_of = dict(zip(ords, keys))
        per_role: dict[int, tuple[list[int], set[str]]] = {}
        for o, rid, role in best:
            got = per_role.setdefault(role, ([], set()))
            got[0].append(rid)
            got[1].add(key_of.get(o, ""))
        return " UNION ALL ".join(
            duck.inline(f"SELECT record_id, text FROM {self.store.records_of(sessions)} "
                        f"WHERE role = '{_role_name(role)}' AND record_id IN (SELECT unnest($ids))", ids=rids)
            for role, (rids, sessions) in sorted(per_role.items()))

    def session_count(self) -> int:
        if not hasattr(self, "_n_sessions"):
            self._n_sessions = self.store.con.execute("SELECT count(*) FROM sessions").fetchone()[0]
        return self._n_sessions


def search(store: LiveStore, q: Query, notes=None) -> dict:
    s = Searcher(store, q)
    env = s.run()
    if notes is not None:
        notes.extend(s.notes)
    return env


def recall(store: LiveStore, terms: list[str], project: str | None = None, limit: int = 8,
           rows: dict | None = None) -> dict:
    """One IDF-weighted pass for the prompt hook (hooks-contract §5.4): the
    project's sessions ranked by the terms and their word forms, no ladder. A
    hook has a few hundred milliseconds, and a prompt is a question, not a
    query: the tier says "exact" only when the best session holds every term.
    ``rows``: filled with the served sessions' rows by session key (their
    decision and gave_up, which the session object leaves out)."""
    s = Searcher(store, Query(text=" ".join(terms), limit=limit, project=project))
    s.vocab_for(terms)
    groups = [s.forms(t) for t in terms]
    ranked = s.rank(groups, need_and=False, min_groups=2 if len(groups) >= 2 else 1)
    if not ranked:
        return {"schema_version": 2, "tier": "relevance", "total": 0, "hits": []}
    tier = "exact" if ranked[0].matched == len(groups) else "relevance"
    # a weak match is shown as a pointer (titles only): its snippets would go unread
    env = s.serve(ranked[:RELEVANCE_TOP], tier, groups, total=len(ranked), force_cap=True,
                  snippets_for=0 if tier == "relevance" else 3)
    if rows is not None:
        rows.update((r["session_key"], r) for r in s.served_rows.values())
    return env


_ID_MASK = (1 << 40) - 1  # score_groups packs a best record as role << 40 | record_id


def _fuzzy_k(term: str) -> int:
    """Edit distance allowed for a word: 1, 2 from 8 characters."""
    return 2 if len(term) >= 8 else 1


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
    return any(lo <= c <= hi for lo, hi in _BIGRAM_BLOCKS)


def role_codes(role: str | None) -> tuple[int, ...]:
    if not role:
        return SPEECH
    return (ROLE_CODE[ROLE_ALIASES.get(role, role)],)


def _role_name(code: int) -> str:
    return next(k for k, v in ROLE_CODE.items() if v == code)


def signals(decided: bool, gave_up: bool, note: bool) -> float:
    """Bounded lifts and damps from what a session settled (§5.3), read with
    the scores (score_groups.sql) rather than in a query of their own."""
    m = 1.0
    if decided:
        m *= 1.3
    if gave_up:
        m *= 0.6
    if note:
        m *= 1.25
    return m


def freshness(updated_ms: int | None, now_ms: float) -> float:
    """Gentle: a year-old session keeps 80% of its score; time is a hint, not a filter."""
    if not updated_ms:
        return 0.8
    age_days = max(0.0, (now_ms - updated_ms) / 86_400_000)
    return 0.8 + 0.2 / (1.0 + age_days / 30.0)


# ---- time words -------------------------------------------------------------
# "in March", "last month", "two weeks ago", "over the summer": when, not what.
# They are taken out of the words a session must hold and become windows of
# time; a session active inside one is lifted a little (TIME_LIFT), never
# filtered (§5.1: --since is the hard cut). Months and seasons without a year
# are the latest ones not after today; a bare "may", "march" or "fall" is a
# word first and counts as a date only after a preposition, "early/mid/late"
# or before a year.
TIME_LIFT = 1.25
_MONTHS = {m: i + 1 for i, m in enumerate(
    "january february march april may june july august september october november december".split())}
_MONTHS.update({"jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9,
                "oct": 10, "nov": 11, "dec": 12})
_PLAIN_MONTHS = frozenset("january february april june july august september october november december".split())
_SEASONS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}
_COUNTS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
           "nine": 9, "ten": 10, "couple": 2, "few": 3, "several": 3}
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30.4, "year": 365}
# Compiled on first use, and only for a query holding one of the words every
# time expression needs (~2 ms of a search otherwise).
_TIME_WORDS = frozenset(_MONTHS) | frozenset(_SEASONS) | frozenset(
    "ago back earlier last this past previous other yesterday today holidays".split())
_TIME_SOURCE = (
    r"\b(?:"
    r"(?P<month>(?:(?:in|during|since|around|by|until|till|over|from|back in|sometime in|about)\s+)?"
    r"(?:(?P<part>early|mid|late|(?:the\s+)?(?:start|beginning|middle|end)\s+of)[\s-]+)?"
    r"(?P<mname>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?(?:\s+(?P<myear>(?:19|20)\d\d))?)"
    r"|(?P<season>(?:(?:in|during|over|through)\s+)?(?:the|this|last|past)\s+(?:(?:early|late)\s+)?"
    r"(?P<sname>spring|summer|autumn|fall|winter)(?!\s+(?:of|back|through|off|over)\b)(?:\s+(?P<syear>(?:19|20)\d\d))?)"
    r"|(?P<ago>(?P<n>\d{1,3}|an?|one|two|three|four|five|six|seven|eight|nine|ten|(?:a\s+)?couple(?:\s+of)?|"
    r"(?:a\s+)?few|several)\s+(?P<unit>day|week|month|year)s?\s+(?:ago|back|earlier))"
    r"|(?P<rel>(?:(?P<edge>early|late)\s+)?(?P<which>last|this|past|previous|the\s+other)\s+"
    r"(?P<runit>day|week|weekend|month|quarter|year))"
    r"|(?P<yesterday>yesterday|today)"
    r"|(?P<holidays>the\s+(?:christmas\s+|winter\s+)?holidays)"
    r")\b"
)


@functools.cache
def _time_re() -> re.Pattern:
    return re.compile(_TIME_SOURCE, re.I)


def time_windows(text: str, now_ms: float) -> tuple[str, list[tuple[float, float]]]:
    """The text without its time expressions, and the windows they name (ms)."""
    if _TIME_WORDS.isdisjoint(re.findall(r"[a-z]+", text.lower())):
        return text, []
    import datetime as dt

    utc = dt.timezone.utc
    now = dt.datetime.fromtimestamp(now_ms / 1000, utc)
    windows: list[tuple[float, float]] = []

    def month_span(year: int, month: int):
        return dt.datetime(year, month, 1, tzinfo=utc), dt.datetime(year + month // 12, month % 12 + 1, 1, tzinfo=utc)

    def latest(month: int, year: int | None):
        return month_span(year if year else (now.year if month <= now.month else now.year - 1), month)

    def read(m: re.Match) -> str:
        g = {k: (v.lower() if isinstance(v, str) else v) for k, v in m.groupdict().items()}
        day = dt.timedelta(days=1)
        if g["month"]:
            bare = g["month"].strip(". ") == g["mname"]
            if bare and g["mname"] not in _PLAIN_MONTHS and not g["myear"]:
                return m.group(0)  # "may", "march", "dec" on their own are words
            start, end = latest(_MONTHS[g["mname"]], int(g["myear"]) if g["myear"] else None)
            third = (end - start) / 3
            part = g["part"] or ""
            if part.startswith(("early", "start", "beginning", "the start", "the beginning")):
                start, end = start - 5 * day, start + third
            elif part.startswith(("mid", "middle", "the middle")):
                start, end = start + third, end - third
            elif part.startswith(("late", "end", "the end")):
                start, end = end - third, end + 5 * day
        elif g["season"]:
            first = _SEASONS[g["sname"]]
            year = int(g["syear"]) if g["syear"] else (now.year if first <= now.month else now.year - 1)
            start = dt.datetime(year, first, 1, tzinfo=utc)
            end = start + 92 * day
        elif g["ago"]:
            n = g["n"].replace("a ", "").replace(" of", "").strip()
            days = (int(n) if n.isdigit() else _COUNTS.get(n, 1)) * _UNIT_DAYS[g["unit"]]
            half = max(2.0, days / 2)
            start, end = now - (days + half) * day, now - (days - half) * day
        elif g["rel"]:
            which, unit = g["which"], g["runit"]
            this = which == "this"
            if unit in ("day", "weekend", "week"):
                start, end = now - (7 if this else 14) * day, now
            elif unit == "month":
                if this:
                    start, end = latest(now.month, now.year)
                else:
                    prev = now.replace(day=1) - day
                    start, end = latest(prev.month, prev.year)
                    start, end = start - 7 * day, end + 7 * day
            elif unit == "quarter":
                q0 = (now.month - 1) // 3 * 3 + 1
                start = dt.datetime(now.year, q0, 1, tzinfo=utc)
                if not this:
                    start = dt.datetime(now.year - (q0 == 1), (q0 - 4) % 12 + 1, 1, tzinfo=utc)
                end = start + 92 * day
            else:
                year = now.year if this else now.year - 1
                start, end = dt.datetime(year, 1, 1, tzinfo=utc), dt.datetime(year + 1, 1, 1, tzinfo=utc)
            if g["edge"] and unit in ("month", "quarter", "year"):
                third = (end - start) / 3
                start, end = (start, start + third) if g["edge"] == "early" else (end - third, end)
        elif g["yesterday"]:
            start, end = now - 3 * day, now
        else:  # the holidays: the latest turn of the year
            year = now.year if (now.month, now.day) >= (12, 15) else now.year - 1
            start = dt.datetime(year, 12, 1, tzinfo=utc)
            end = start + 40 * day
        windows.append((start.timestamp() * 1000, end.timestamp() * 1000))
        return " "

    return _time_re().sub(read, text), windows


def in_windows(started_ms: int | None, updated_ms: int | None, windows: list[tuple[float, float]]) -> bool:
    """Whether a session was active during any of the windows."""
    if not updated_ms:
        return False
    first = started_ms or updated_ms
    return any(first <= end and updated_ms >= start for start, end in windows)


def _collect(rows, pick) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for ord_, text in rows:
        lines = out.setdefault(ord_, [])
        if len(lines) >= 3:
            continue
        line = pick(text)
        if line and line not in lines:
            lines.append(line)
    return out


def best_line(text: str, needles: list[str], width: int = 220) -> str:
    """The line of a record holding the most query words, elided around them."""
    best, best_hits = "", -1
    for line in text.splitlines():
        low = line.lower()
        hits = sum(1 for n in needles if n in low)
        if hits > best_hits:
            best, best_hits = line, hits
            if hits == len(needles):
                break
    return _elide_around(" ".join(best.split()), needles, width)


def check_regex(con, pattern: str) -> None:
    """A --re pattern DuckDB's RE2 compiles (linear time, so no pattern can
    hang a search), else a one-line error: RE2 has no backreferences or
    lookarounds, which is what makes it linear."""
    try:
        con.execute("SELECT regexp_matches('', ?)", [pattern]).fetchone()
    except duck.Error as exc:
        why = " ".join(str(exc).split()).removeprefix("Invalid Input Error: ")
        raise ValueError(f"--re: {why} (RE2 syntax: no backreferences or lookarounds)") from None


def _line_of_match(text: str, found: dict) -> str:
    """The line where RE2's leftmost match starts (``found``: the text before
    it, and the match), elided around the match."""
    pre, hit = found["pre"], found["hit"]
    start = pre.rfind("\n") + 1
    end = text.find("\n", len(pre))
    line = text[start: end if end >= 0 else len(text)]
    return _elide_around(" ".join(line.split()), [" ".join(hit.split()).lower()], 220)


def _elide_around(line: str, needles: list[str], width: int) -> str:
    if len(line) <= width:
        return line
    low = line.lower()
    pos = min((low.find(n) for n in needles if n and n in low), default=0)
    start = max(0, pos - width // 3)
    return ("…" if start else "") + line[start : start + width].rstrip() + "…"
