"""What the store's vocabulary holds of a search's words: their indexed forms
(one lookup by stem), the indexed words containing a word the store lacks
(the close rung) and the close spellings of a word (the fuzzy rung).

One ``Vocabulary`` per search; it caches what it looked up, so the rungs of
the ladder (``queries/search.py``) ask again for free.
"""

from __future__ import annotations

import bisect

from deja.stages.stems import stem
from deja.stages.store import duck
from deja.stages.store.read import LiveStore

FUZZY_COMMON = 200  # a word this common matches only itself


def _fuzzy_k(term: str) -> int:
    """Edit distance allowed for a word: 1, 2 from 8 characters."""
    return 2 if len(term) >= 8 else 1


def _fuzzy_want(terms: list[str], vocab: dict) -> list[str]:
    """Words that get close spellings: ≥4 characters, and not already common."""
    return [t for t in terms if len(t) >= 4 and vocab["n"].get(t, 0) < FUZZY_COMMON]


def _between_marks(marks: tuple[list[str], int] | None, stems: list[str]) -> str:
    """``AND (rowid BETWEEN …)`` over the rows that can hold these stems, from
    a hot vocabulary's marks (read.VOCAB_MARK: the stem of every n-th row of a
    table in stem order, and how many rows they cover: rows added since, by an
    appended turn's run, are read whole); '' without marks."""
    if not marks:
        return ""
    from deja.stages.store.read import VOCAB_MARK

    stems_at, covered = marks
    spans = []
    for s in stems:
        # from the last mark before the stem to the first mark after it (a stem may span marks)
        lo, hi = max(bisect.bisect_left(stems_at, s) - 1, 0), bisect.bisect_right(stems_at, s)
        spans.append(f"rowid BETWEEN {lo * VOCAB_MARK} AND {hi * VOCAB_MARK}")
    spans.append(f"rowid >= {covered}")
    return f"AND ({' OR '.join(spans)}) "


class Vocabulary:
    def __init__(self, store: LiveStore):
        self.store = store
        self.stems: dict[str, list[str]] = {}  # stem → the indexed tokens with it
        self.counts: dict[str, int] = {}  # token → postings, for every token looked up or found
        self._substr: dict[str, list[str]] = {}
        self._fuzzy: dict[str, list[str]] | None = None

    def lookup(self, terms: list[str]) -> dict:
        """What the store holds of these words and their forms: one lookup per
        search, by stem (a word's own stem finds the word too), cached.
        ``exact``: the words indexed as typed, with their counts; ``stems``:
        stem → tokens; ``n``: every count known so far."""
        todo = sorted({stem(t) for t in terms} - set(self.stems))
        # (a warm process: from the parts it holds in memory, when it holds them all)
        if todo and self.store.has("vocab") and not (self.store.hot and self._held(todo)):
            # a literal IN list: DuckDB skips the sorted vocabulary's row groups by it;
            # a warm store's table in memory, by the rows between its marks
            rows = self.store.con.execute(
                f"SELECT token, stem, sum(n) FROM vocab WHERE stem IN ({duck.sql_list(todo)[1:-1]}) "
                f"{_between_marks(self.store.vocab_marks, todo)}GROUP BY token, stem").fetchall()
            for t, st, n in rows:
                self.stems.setdefault(st, []).append(t)
                self.counts[t] = n
        for st in todo:
            self.stems.setdefault(st, [])
        return {
            "exact": {t: self.counts[t] for t in terms if t in self.counts},
            "stems": dict(self.stems),
            "n": self.counts,
        }

    def _held(self, stems: list[str]) -> bool:
        """``lookup``'s rows from the vocabulary parts held in memory (``store/hot.py``):
        a token's count summed over the parts, as the SQL's GROUP BY does.
        False when a part is not held (past the budget): the query reads them all."""
        from deja.stages.store import hot

        parts = [hot.vocab(self.store.con, path) for path in self.store.files["vocab"]]
        if any(part is None for part in parts):
            return False
        found: dict[str, dict[str, int]] = {}
        for part in parts:
            tokens, n = part.columns["words"], part.columns["n"]
            for st in stems:
                lo, hi = part.run(st)
                if hi > lo:
                    got = found.setdefault(st, {})
                    for t, c in zip(tokens.between(lo, hi), n[lo:hi].tolist()):
                        got[t] = got.get(t, 0) + c
        for st, got in found.items():
            for t, c in got.items():
                self.stems.setdefault(st, []).append(t)
                self.counts[t] = c
        return True

    def viable(self, group: list[str]) -> bool:
        """False only when the vocabulary was consulted and holds none of the group's words."""
        if not self.store.has("vocab"):
            return True
        for t in group:
            if t in self.counts or stem(t) not in self.stems:
                return True
        return False

    def forms(self, term: str) -> list[str]:
        """A word and the indexed words that share its stem (relevance groups)."""
        v = self.lookup([term])
        return sorted({term, *v["stems"].get(stem(term), ())})[:16]

    def scan(self, missing: list[str], terms: list[str], vocab: dict) -> None:
        """The indexed words holding each missing word (the close rung) and the
        close-spelling candidates of every eligible word (the fuzzy rung), in one
        pass over the vocabulary: a word the store lacks needs a full scan for
        its substrings anyway, and a second scan for spellings cost as much."""
        want = _fuzzy_want(terms, vocab)
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
            self.counts.update((tok, counts[tok]) for tok in toks)
        self._fuzzy = self._nearest(want, [(tok, n) for tok, n in counts.items()])

    def substring_variants(self, term: str) -> list[str]:
        """Indexed words holding a word the store lacks, commonest first (found by
        ``scan``, which the close rung runs first for every missing word)."""
        return self._substr.get(term, [])

    def fuzzy_variants(self, term: str, terms: list[str], vocab: dict) -> list[str]:
        """Close spellings of ``term``, one of the ``terms`` the fuzzy rung loosens
        (all of them are found at once, by ``scan`` or on the first call)."""
        if self._fuzzy is None:
            self._fuzzy = self._fuzzy_all(terms, vocab)
        return self._fuzzy.get(term, [])

    def _fuzzy_all(self, terms: list[str], vocab: dict) -> dict[str, list[str]]:
        """Close spellings of every eligible word in one scan of the vocabulary:
        ≥4 characters, edit distance 1 (2 from 8 characters), up to 8 each; a word
        the store already holds often matches only itself. Candidates share the
        first letter: a slip there is rare, and comparing every word of similar
        length cost most of a search's budget."""
        want = _fuzzy_want(terms, vocab)
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
                self.counts[tok] = n
        return out
