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
window, and sessions active in it are lifted a little (``time_words.py``).

Every rung is the same primitive, ``rank.py``: BM25 at session level over
*term groups* (a query word plus the spellings or forms it may match, which
``vocab.py`` finds), computed in DuckDB from postings alone. Records are read
only for the snippets of the hits that are served (``snippets.py``). What a
query's text says (its words, phrases, a pasted error's signature, the role
filter) is read by ``query_parse.py``.
"""

from __future__ import annotations

import math
import os
import time

from deja.stages.stems import stem
from deja.stages.store import duck
from deja.stages.store.read import LiveStore

# FILLER, ROLE_ALIASES, ROLE_CODE: imported from here by the hooks, the CLI and work_answers
from .query_parse import FILLER, ROLE_ALIASES, ROLE_CODE, error_words, parse_query, role_codes, role_name, typed_words
from .rank import Ranked, SessionRanker, best_records
from .session_obj import demote_rejected, session_object, session_rows
from .snippets import snippets
from .time_words import time_windows
from .vocab import Vocabulary

__all__ = ["Query", "Searcher", "search", "recall", "check_regex", "time_windows", "typed_words",
           "FILLER", "ROLE_ALIASES", "ROLE_CODE"]

RELEVANCE_TOP = 50
THIN_AND = 10  # fewer strict matches than this (in a store of more than 50) → merge relevance


class Query:
    """What to search for and how (a plain class: importing dataclasses costs a search noticeably)."""

    __slots__ = ("text", "limit", "all", "harness", "project", "since_ms", "role", "session", "regex", "embed")

    def __init__(self, text: str, limit: int = 15, all: bool = False, harness: str | None = None,
                 project: str | None = None, since_ms: int | None = None, role: str | None = None,
                 session: str | None = None, regex: bool = False, embed: bool | str = True):
        self.text, self.limit, self.all, self.harness, self.project = text, limit, all, harness, project
        self.since_ms, self.role, self.session, self.regex = since_ms, role, session, regex
        # semantic recall (semantic.py) where the store has vectors: True, False
        # (--no-embed), or "warm": only in a process that keeps the model loaded
        # (a hook started cold has no time to load it)
        self.embed = embed


class Searcher:
    def __init__(self, store: LiveStore, q: Query):
        self.store = store
        self.q = q
        self.roles = role_codes(q.role)
        self.notes: list[str] = []  # said on stderr: dropped words, variants
        self.variants: dict[str, list[str]] = {}  # a word → the close spellings searched for it
        self.text = q.text  # the query without its time words
        self.windows: list[tuple[float, float]] = []  # the times it names
        self.vocab = Vocabulary(store)
        self.ranker = SessionRanker(store, q, self.roles)
        self._cosine: dict[int, float] | None = None  # each session's nearest passage, when the vectors took part
        self._asked = None  # the question's vector, asked for early (ask_meaning)

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
        if not phrases:  # (a quoted query is literal: meaning takes no part)
            self.ask_meaning()
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
        vocab = self.vocab_for(self._content)  # every content word at once: relevance needs them next
        missing = [t for t in terms if t not in vocab["exact"]]
        if missing:
            self.vocab.scan(missing, terms, vocab)
            close = [[t] if t in vocab["exact"] else self.vocab.substring_variants(t) for t in terms]
            if all(close):
                yield "close", close
        stemmed = [sorted({t, *vocab["stems"].get(stem(t), ())}) for t in terms]
        yield "stemmed", stemmed
        fuzzy = []
        for t, grp in zip(terms, stemmed):
            variants = self.vocab.fuzzy_variants(t, terms, vocab)
            if variants:
                self.notes.append(f"{t}: also matching {', '.join(variants)}")
                self.variants[t] = list(variants)
            fuzzy.append(sorted(set(grp) | set(variants)))
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
        postings = [sum(self.vocab.counts.get(t, 0) for t in g) for g in groups]
        order = sorted(range(n), key=lambda i: (self.vocab.viable(groups[i]), -postings[i]))
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
        # the merged list is labelled relevance (cli-contract §5.2); a hit that
        # holds every word still says so in its own tier
        return self.serve(order[:RELEVANCE_TOP], "relevance", [self.forms(t) for t in informative],
                          total=len(rel), keep_order=True, strict=(tier, strict))

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
        sig = error_words(self.q.text)
        if not sig:
            return None
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

    # ---- the primitive and the vocabulary (rank.py, vocab.py) -------------
    def rank(self, groups: list[list[str]], need_and: bool, min_groups: int = 1, and_min: int | None = None,
             whole: bool = False) -> list[Ranked]:
        """Sessions scored over term groups (``SessionRanker.rank``); the time
        words the query named stand in for recency."""
        return self.ranker.rank(groups, need_and, min_groups, and_min, whole,
                                viable=self.vocab.viable, windows=self.windows)

    def vocab_for(self, terms: list[str]) -> dict:
        return self.vocab.lookup(terms)

    def forms(self, term: str) -> list[str]:
        return self.vocab.forms(term)

    # ---- phrases, regex -----------------------------------------------------
    def keep_phrases(self, ranked: list[Ranked], phrases: list[str]) -> list[Ranked]:
        if not ranked or not self.store.has("records"):
            return []
        needles = [p.lower() for p in phrases]
        rows = self.store.con.execute(
            f"SELECT DISTINCT s.ord FROM {self.store.records_source()} r JOIN sessions s ON r.session_key = s.session_key "
            "WHERE s.ord IN (SELECT unnest(?)) AND list_bool_and([contains(lower(r.text), ph) FOR ph IN ?]) "
            "AND r.record_id NOT IN (SELECT record_id FROM deletes) AND r.role IN (SELECT unnest(?))",
            [[r.ord for r in ranked], needles, [role_name(c) for c in self.roles]],
        ).fetchall()
        keep = {r[0] for r in rows}
        return [r for r in ranked if r.ord in keep]

    def regex_scan(self) -> dict:
        if not self.store.has("records"):
            return {"schema_version": 2, "tier": "exact", "total": 0, "hits": []}
        check_regex(self.store.con, self.q.text)
        self.ranker.load([])  # (the search's session table: which sessions every filter admits)
        rows = self.store.con.execute(
            f"SELECT s.ord, count(*) AS n, max(epoch_ms(s.updated)) AS updated FROM {self.store.records_source()} r "
            "JOIN sessions s ON r.session_key = s.session_key "
            "WHERE regexp_matches(r.text, ?) AND r.role IN (SELECT unnest(?)) "
            "AND r.record_id NOT IN (SELECT record_id FROM deletes) "
            "AND s.ord IN (SELECT ord FROM q_sessions WHERE admitted) "
            "GROUP BY s.ord ORDER BY updated DESC",
            [self.q.text, [role_name(c) for c in self.roles]],
        ).fetchall()
        ranked = [Ranked(o, float(n), 1, n, u or 0) for o, n, u in rows]
        return self.serve(ranked, "exact", [], regex=self.q.text, keep_order=True)

    # ---- serving ------------------------------------------------------------
    def serve(self, ranked: list[Ranked], tier: str, groups: list[list[str]], phrases: list[str] | None = None,
              total: int | None = None, keep_order: bool = False, force_cap: bool = False, regex: str | None = None,
              snippets_for: int | None = None, strict: tuple[str, set[int]] | None = None) -> dict:
        only_vector: set[int] = set()
        if self.q.embed and not phrases and not regex and tier != "error":
            fused = self.fuse(ranked, keep_order, len(groups))
            if fused is not None:
                lexical_total = len(ranked) if total is None else total
                ranked, only_vector = fused
                keep_order = True
                total = lexical_total + len(only_vector)
                if only_vector and len(only_vector) == len(ranked):
                    tier = SEMANTIC_TIER  # nothing matched by words
                    self.notes.append("no lexical match, semantic results:")
        if not keep_order:
            ranked = sorted(ranked, key=lambda r: (-r.score, -r.updated, r.ord))
        ranked = demote_rejected(self.store.con, ranked, self.store.any_rejected)  # deja promote --state rejected: below the rest (§5.3)
        total = len(ranked) if total is None else total
        cap = len(ranked) if (self.q.all and not force_cap) else min(self.q.limit, len(ranked))
        if force_cap and not self.q.all:
            cap = min(self.q.limit, len(ranked))
        served = ranked[:cap]
        # (a warm store keeps the rows it served: it is a new store once the catalog changes)
        memo = self.store.memo.setdefault("session_rows", {}) if self.store.hot else None
        rows = self.served_rows = session_rows(self.store.con, [r.ord for r in served], self.store.any_lifecycle,
                                               memo)
        wanted = served if snippets_for is None else served[:snippets_for]  # records are the costly read
        found = snippets(self.store, self.roles, [r.ord for r in wanted], groups, phrases or [], regex,
                         [rows[r.ord]["session_key"] if r.ord in rows else "" for r in wanted],
                         None if phrases or regex or any(r.best is None for r in wanted) else best_records(wanted))
        hits = []
        worn = self.ranker.worn()
        # (the contract's tier_detail of a close hit: the spellings it was found by)
        spelled = "; ".join(f"{t} → {', '.join(v)}" for t, v in self.variants.items())
        for r in served:
            row = rows.get(r.ord)
            if row is None:
                continue
            snips = found.get(r.ord, [])
            if row.get("decision") and tier != "error":
                snips = [row["decision"]] + [s for s in snips if s != row["decision"]][:2]
            hit = {
                "session": session_object(row),
                "count": int(r.nrec or r.matched),
                "snippets": snips,
                "score": round(r.score, 4),
                "tier": SEMANTIC_TIER if r.ord in only_vector else strict[0] if strict and r.ord in strict[1] else tier,
            }
            if r.ord in only_vector:
                hit["tier_detail"] = f"cosine {self._cosine.get(r.ord, 0.0):.3f}"
            elif hit["tier"] == "close" and spelled:
                hit["tier_detail"] = spelled
            if worn.get(r.ord):
                hit["reused"] = worn[r.ord]  # recent agent recalls that served it (cli-contract §3.2)
            hits.append(hit)
        env = {"schema_version": 2, "tier": tier, "total": total}
        if self._cosine is not None:
            env["semantic"] = True  # (the contract's flag: the vectors took part)
        if total > len(hits):
            env["capped"] = True
        env["hits"] = hits
        if tier == "close" and self.variants:
            env["fuzzy"] = True
            env["variants"] = sorted({v for vs in self.variants.values() for v in vs})
        return env

    # ---- meaning (semantic.py) ---------------------------------------------
    def meaning_roles(self) -> tuple[int, ...]:
        """The embedded roles this search asks for; none when meaning takes no
        part: embedding off, a hook's search in a cold process, a store
        without vectors, a pasted error (matched by its signature)."""
        if not self.q.embed or (self.q.embed == "warm" and not self.store.hot):
            return ()
        if not has_vectors(self.store):  # (a stat: a store without vectors imports nothing more)
            return ()
        from . import semantic

        if semantic.pasted_error(self.q.text):
            return ()
        return tuple(r for r in self.roles if r in semantic.SPEECH_CODES)

    def asks_model(self, model: str, unread: frozenset[str], say: bool = False) -> bool:
        """The query is put to this model: a question in letters the model
        does not read is left to its words (its vector would be noise:
        stages/writing_systems.py)."""
        if unread:
            from deja.stages.writing_systems import letters, written_in

            system = written_in(self.text)
            if system in unread:
                if say:
                    self.notes.append(f"semantic recall skipped: {model} does not read {letters([system])}; "
                                      "lexical order")
                return False
        return True

    def embed_wait(self) -> float:
        from deja.stages.embedders import HOOK_TIMEOUT_S, QUERY_TIMEOUT_S

        return HOOK_TIMEOUT_S if self.q.embed == "warm" else QUERY_TIMEOUT_S

    def ask_meaning(self) -> None:
        """Start the question's vector before the words are ranked, when the
        search will want it (semantic.Asked): it is ready, or nearly, when the
        fusion needs it."""
        if not self.meaning_roles():
            return
        from deja.stages.store import vectors

        from . import semantic

        meta = vectors.read_meta(self.store.root)
        if meta is None:
            return
        if self.asks_model(meta["model"], vectors.unread(meta)):
            self._asked = semantic.Asked(meta["model"], self.text, self.embed_wait())

    def fuse(self, ranked: list[Ranked], keep_order: bool, n_groups: int) -> tuple[list[Ranked], set[int]] | None:
        """The lexical ranking and the nearest sessions by meaning as one
        ranking (semantic.py); the ords only the vectors found. None when the
        store has no vectors, the query asks for no role that is embedded,
        or its vector cannot be had (said once: the lexical order stands)."""
        roles = self.meaning_roles()
        if not roles:
            return None
        from . import semantic

        try:
            sp = semantic.space(self.store)
            if sp is None or not self.asks_model(sp.model, sp.unread, say=True):
                return None
            early = self._asked
            if early is not None and early.text == self.text and early.model == sp.model:
                qv = early.vector(sp, self.embed_wait())
            else:
                qv = semantic.query_vector(sp, self.text, timeout=self.embed_wait())
        except semantic.Unavailable as exc:
            self.notes.append(f"semantic recall unavailable: {exc}; lexical order")
            return None
        self.ranker.load([])  # (the search's session table: which sessions its filters admit, their signals)
        admitted = None
        if self.ranker._filtered():
            admitted = {o for (o,) in self.store.con.execute("SELECT ord FROM q_sessions WHERE admitted").fetchall()}
        cos, found = sp.nearest(qv, roles, admitted)
        self._cosine = cos
        order = ranked if keep_order else sorted(ranked, key=lambda r: (-r.score, -r.updated, r.ord))
        pool, rest = order[:semantic.POOL], order[semantic.POOL:]
        if keep_order:  # (an order the scores do not say, as a thin AND's: its places are the score)
            lexical = [(r.ord, 1.0 - i / len(pool)) for i, r in enumerate(pool)]
            coverage = 1.0  # (its strict matches hold every word)
        else:
            top = max((r.score for r in pool), default=0.0) or 1.0
            lexical = [(r.ord, max(0.0, r.score) / top) for r in pool]
            # how much of the question the words found: the less, the more meaning counts
            coverage = max((r.matched for r in pool), default=0) / n_groups if n_groups else 0.0
        # a lexical score carries the bounded signals already; the sessions only
        # the vectors found get theirs here, so every session has them once
        in_lexical = {o for o, _ in lexical}
        if self.q.embed == "warm":
            # a hook puts what it finds into the agent's context unasked: a session
            # only the vectors found must be near, not merely the nearest there is
            near = semantic.hook_min_cosine()
            found = [f for f in found if f[0] in in_lexical or cos.get(f[0], 0.0) >= near]
        signal = semantic.session_signals(self.store.con, sorted({o for o, _, _ in found} - in_lexical))
        if os.environ.get("DEJA_FUSE_TRACE"):  # (bench/quality: the pool, to replay the fusion over)
            semantic.trace(os.environ["DEJA_FUSE_TRACE"], self.store.con, self.text, lexical, cos,
                           [o for o, _, _ in found], coverage, sp.calib)
        by_ord = {r.ord: r for r in pool}
        best = {o: (rid, role) for o, rid, role in found}
        out, only = [], set()
        for o, score, vector_only in semantic.fuse(lexical, cos, [o for o, _, _ in found], signal,
                                                        coverage=coverage, calib=sp.calib):
            if vector_only:
                rid, role = best[o]
                out.append(Ranked(o, score, 0, 0, 0, [role << 40 | rid]))
                only.add(o)
            else:
                r = by_ord[o]
                out.append(Ranked(o, score, r.matched, r.nrec, r.updated, r.best))
        last = out[-1].score if out else 0.0
        for i, r in enumerate(rest):  # below the pool, in their order
            out.append(Ranked(r.ord, last * (1.0 - (i + 1) / (len(rest) + 1)), r.matched, r.nrec, r.updated, r.best))
        return out, only

    def session_count(self) -> int:
        if not hasattr(self, "_n_sessions"):
            self._n_sessions = self.store.con.execute("SELECT count(*) FROM sessions").fetchone()[0]
        return self._n_sessions


SEMANTIC_TIER = "semantic"  # a hit only the vectors found (semantic.py)


MATCH_TIERS = ("exact", "close", "stemmed")  # a hit of these holds every word of the question


def held_whole(answer: dict, hits: list | None = None) -> int:
    """How many of a relevance answer's hits (``hits``: the ones shown) hold
    every word: the few the thin-AND merge puts first (cli-contract §5.2)."""
    if answer.get("tier") != "relevance":
        return 0
    return sum(h.get("tier") in MATCH_TIERS for h in (answer["hits"] if hits is None else hits))


def has_vectors(store: LiveStore) -> bool:
    """The store has vectors (`deja embed`) and embedding is not turned off:
    a stat, so a search of a store without them costs nothing more."""
    import os

    from deja.stages.embedders import disabled

    return not disabled() and os.path.exists(os.path.join(str(store.root), "vectors", "meta.json"))


def check_regex(con, pattern: str) -> None:
    """A --re pattern DuckDB's RE2 compiles (linear time, so no pattern can
    hang a search), else a one-line error: RE2 has no backreferences or
    lookarounds, which is what makes it linear."""
    try:
        con.execute("SELECT regexp_matches('', ?)", [pattern]).fetchone()
    except duck.Error as exc:
        why = " ".join(str(exc).split()).removeprefix("Invalid Input Error: ")
        raise ValueError(f"--re: {why} (RE2 syntax: no backreferences or lookarounds)") from None


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
    s = Searcher(store, Query(text=" ".join(terms), limit=limit, project=project, embed="warm"))
    s.ask_meaning()
    s.vocab_for(terms)
    groups = [s.forms(t) for t in terms]
    ranked = s.rank(groups, need_and=False, min_groups=2 if len(groups) >= 2 else 1)
    if not ranked and not (store.hot and has_vectors(store)):
        return {"schema_version": 2, "tier": "relevance", "total": 0, "hits": []}
    tier = "exact" if ranked and ranked[0].matched == len(groups) else "relevance"
    # a weak match is shown as a pointer (titles only): its snippets would go unread
    env = s.serve(ranked[:RELEVANCE_TOP], tier, groups, total=len(ranked), force_cap=True,
                  snippets_for=0 if tier == "relevance" else 3)
    if rows is not None:
        rows.update((r["session_key"], r) for r in s.served_rows.values())
    return env
