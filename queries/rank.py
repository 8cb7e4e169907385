"""Ranking sessions: BM25 at session level over *term groups* (a query word
plus the spellings or forms it may match), computed in DuckDB from postings
alone (``sql/score_groups.sql``, over the tables ``sql/search_tables.sql``
fills): term frequency damped by each record's length, what was said and what
tools printed saturating apart. Signals beyond BM25 are bounded multipliers:
none can outrank relevance.
"""

from __future__ import annotations

import bisect
import math
import os
import time

from deja.stages.store import duck
from deja.stages.store.read import LiveStore
from deja.stages.tokenize import bucket_of

from . import project_match
from .sqlfiles import load as load_sql
from .time_words import in_windows

# a session active in a window the question names (time_words.time_windows)
TIME_LIFT = 1.25
# "worn": a session agents keep recalling (the usage log's `recall` and `mcp`
# events of the last WORN_DAYS) is lifted on a log2 curve, capped so that
# popularity never outranks relevance (cli-contract §5.3)
WORN_STEP, WORN_CAP, WORN_DAYS = 0.10, 1.5, 14
# an event line as metric.log writes it: compact JSON, "t" (20 characters) then "kind"
_WORN_KINDS = (b'","kind":"recall",', b'","kind":"mcp",')
_ID_MASK = (1 << 40) - 1  # score_groups packs a best record as role << 40 | record_id


class Ranked:
    __slots__ = ("ord", "score", "matched", "nrec", "updated", "best")

    def __init__(self, ord: int, score: float, matched: int, nrec: int, updated: int, best: list[int] | None = None):
        self.ord, self.score, self.matched, self.nrec, self.updated = ord, score, matched, nrec, updated
        self.best = best  # the records to show as snippets, when the ranking chose them (role << 40 | id)


def best_records(ranked: list[Ranked]) -> list[tuple[int, int, int]]:
    """(session ord, record id, role code) of the records the ranking chose to show."""
    return [(r.ord, v & _ID_MASK, v >> 40) for r in ranked for v in r.best]


# what a session settled (§5.3): a decision lifts, giving up damps, a note lifts
DECIDED, GAVE_UP, NOTE = 1.3, 0.6, 1.25
# a session whose title holds the question's words (§5.3): × (1 + TITLE_LIFT ×
# the share of its groups the title holds), on the first TITLED a rung ranks (a
# lift of at most 1.4 moves a session up, not from past there)
TITLE_LIFT, TITLED = 0.4, 200


def signals(decided: bool, gave_up: bool, note: bool) -> float:
    """Bounded lifts and damps from what a session settled (§5.3), read with
    the scores (score_groups.sql) rather than in a query of their own."""
    m = 1.0
    if decided:
        m *= DECIDED
    if gave_up:
        m *= GAVE_UP
    if note:
        m *= NOTE
    return m


def _word_in(word: str, text: str) -> bool:
    """``word`` (a query token, lower case) is a word of ``text`` (lower case):
    found with no letter or digit against it, as the tokenizer would cut it
    (``checkout`` in ``checkout_service``, not in ``checkouts``). A token in
    letters that are not spaced (a Chinese character pair) is found anywhere.
    (Not the tokenizer itself: its Unicode tables cost a search 7 ms to
    compile, for a title with one curly quote.)"""
    if not word.isascii():
        return word in text
    at = text.find(word)
    while at >= 0:
        end = at + len(word)
        if (at == 0 or not text[at - 1].isalnum()) and (end == len(text) or not text[end].isalnum()):
            return True
        at = text.find(word, at + 1)
    return False


# The formulas of a session's score, for one session or (numpy) every session at once.
def _idf(n_sessions: int, df: int) -> float:
    """A group's IDF over the admitted sessions, ``df`` of which hold it."""
    return math.log(1 + (n_sessions - df + 0.5) / (df + 0.5))


def _norm(dl, avgdl: float):
    """BM25's length normalisation of a session ``dl`` words long."""
    return 1.2 * (0.7 + 0.3 * dl / avgdl)


def _bm25(idf: float, said, printed, norm):
    """One group's BM25: what was said and what tools printed saturate apart, the printed at half weight."""
    return idf * (said * 2.2 / (said + norm) + 0.5 * printed * 2.2 / (printed + norm))


def _proximity(best_ng, k: int):
    """Proximity at record granularity: the words of a question meeting in one
    short message say more than the same words scattered over a session
    (best_ng shrinks with the length of that message)."""
    return 1.0 + 0.5 * (best_ng - 1) / (k - 1)


def _coverage(matched, k: int):
    """A session holding more of the question's words."""
    return 0.5 + 0.5 * (matched / k)


def _recency(age_days):
    return 0.8 + 0.2 / (1.0 + age_days / 30.0)


def worn_lift(n: int) -> float:
    """× min(1.5, 1 + 0.10 · log2(1 + n)) for a session served to agents ``n`` times recently."""
    return min(WORN_CAP, 1.0 + WORN_STEP * math.log2(1 + n)) if n > 0 else 1.0


def worn_counts(root, now: float | None = None) -> dict[str, int]:
    """Session key → how often recall served it to an agent in the last WORN_DAYS,
    read from the usage log beside the index (a bounded file): in one pass,
    or in a process that keeps the store open, only what was appended since."""
    from deja.stages.store.config import usage_log
    from deja.stages.store.read import keeping

    horizon = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime((now or time.time()) - WORN_DAYS * 86400)).encode()
    tail = _worn_tail(usage_log(root), keeping())
    return tail.counts_since(horizon) if tail is not None else {}


class _WornTail:
    """The worn events of a usage log read so far, in time order, and the
    counts of those since the horizon: a warm process adds what was appended
    and drops what the horizon passed, instead of counting the whole log (a
    full log, ~2,000 events, cost a warm recall ~3 ms) on every search."""

    def __init__(self, seen: tuple) -> None:
        self.seen, self.offset = seen, 0  # which file (inode, first bytes); the bytes read
        self.times: list[bytes] = []  # the events' times, in order
        self.keys: list[list[str]] = []  # each event's session keys
        self.start = 0  # the first event counted: those before it are past the horizon
        self.counts: dict[str, int] = {}

    def add(self, t: bytes, keys: list[str]) -> None:
        at = len(self.times)
        if at and t < self.times[-1]:  # (hooks of two agents append out of order by a moment)
            at = bisect.bisect_right(self.times, t)
        self.times.insert(at, t)
        self.keys.insert(at, keys)
        if at < self.start:  # (already past the horizon)
            self.start += 1
            return
        for k in keys:
            self.counts[k] = self.counts.get(k, 0) + 1

    def counts_since(self, horizon: bytes) -> dict[str, int]:
        while self.start < len(self.times) and self.times[self.start] < horizon:
            for k in self.keys[self.start]:
                n = self.counts[k] - 1
                if n:
                    self.counts[k] = n
                else:
                    del self.counts[k]
            self.start += 1
        if self.start > 1024 and self.start * 2 > len(self.times):  # (the passed ones go, now and then)
            del self.times[:self.start], self.keys[:self.start]
            self.start = 0
        return dict(self.counts)


# a warm process's usage log as read so far: path → _WornTail
_TAIL: dict[str, _WornTail] = {}


def _worn_tail(path, incremental: bool) -> _WornTail | None:
    """The log's recall and MCP events as read to its last whole line. Fixed
    offsets and bytes, no JSON parse (an event names each session once: the
    hooks and the MCP server log distinct keys). ``incremental``: keep what
    was read, and read only the lines appended since (the log is only appended
    to; a rewrite or a rotation, seen as another inode or another first line,
    starts over)."""
    try:
        with open(path, "rb") as fh:
            seen = (os.fstat(fh.fileno()).st_ino, fh.read(64))  # which file: its inode and first bytes
            tail = _TAIL.get(str(path)) if incremental else None
            if tail is None or tail.seen != seen:
                tail = _WornTail(seen)
            fh.seek(tail.offset)
            data = fh.read()
    except OSError:
        return None
    end = data.rfind(b"\n") + 1  # a line still being written is read next time
    for line in data[:end].splitlines():
        if line.startswith(_WORN_KINDS, 26):
            keys = line.rpartition(b'"sessions":"')[2].partition(b'"')[0]
            tail.add(line[6:25], keys.decode("utf-8", "replace").split())
    tail.offset += end
    if incremental:
        _TAIL[str(path)] = tail
    return tail


def freshness(updated_ms: int | None, now_ms: float) -> float:
    """Gentle: a year-old session keeps 80% of its score; time is a hint, not a filter."""
    if not updated_ms:
        return 0.8
    return _recency(max(0.0, (now_ms - updated_ms) / 86_400_000))


class SessionRanker:
    """The one primitive every rung of the search ladder runs, over one search's
    filters (``q``: a ``search.Query``) and record roles."""

    def __init__(self, store: LiveStore, q, roles: tuple[int, ...]):
        self.store, self.q, self.roles = store, q, roles
        self._loaded: set[str] | None = None  # words whose postings are in the search's tables
        self._stats = (0, 20.0)
        # rungs that rank the same groups (word forms, then relevance) share one
        # aggregation: only which sessions qualify differs, decided in rank()
        self._aggregates: dict = {}
        self._worn: dict[int, int] | None = None  # session ord → recent recalls (worn_counts)
        self._postings = None  # q_postings as arrays, in a warm process (score_arrays.Postings)
        # session ord → its title, lower case (titled): a warm store keeps them while its catalog stands
        self._titles: dict[int, str] = store.memo.setdefault("titles", {}) if store.hot else {}

    def worn(self) -> dict[int, int]:
        """Recent recalls per session ord: the usage log read once per search, and
        its keys looked up only when it names any."""
        if self._worn is None:
            self._worn = {}
            counts = worn_counts(self.store.root)
            if counts and self.store.has("sessions"):
                if self.store.hot:  # a warm store: every session's ord, once per catalog
                    ords = self.store.memo.get("key_ord")
                    if ords is None:
                        ords = self.store.memo["key_ord"] = dict(self.store.con.execute(
                            "SELECT session_key, ord FROM sessions").fetchall())
                    self._worn = {ords[k]: n for k, n in counts.items() if k in ords}
                else:
                    rows = self.store.con.execute(
                        "SELECT ord, session_key FROM sessions WHERE session_key IN (SELECT unnest(?::VARCHAR[]))",
                        [sorted(counts)]).fetchall()
                    self._worn = {o: counts[k] for o, k in rows}
        return self._worn

    def rank(self, groups: list[list[str]], need_and: bool, min_groups: int = 1, and_min: int | None = None,
             whole: bool = False, viable=None, windows: list[tuple[float, float]] = ()) -> list[Ranked]:
        """Sessions scored over term groups. With ``whole``, an AND also admits
        sessions that hold every group across their messages (``nrec`` 0).
        ``viable(group)``: False for a group the vocabulary shows cannot match;
        ``windows``: the times the question names (they stand in for recency)."""
        groups = [g for g in groups if g]
        if not groups:
            return []
        # a group none of whose words has a posting cannot match: an AND fails
        # unread, and the others go to DuckDB without it
        kept = [g for g in groups if viable(g)] if viable else groups
        need = (and_min or len(groups)) if need_and else min_groups
        if len(kept) < need:
            return []
        if need_and and and_min is None:
            and_min = len(groups)
        groups = kept
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
        key = (tuple(tuple(g) for g in groups), and_min)
        if self.store.hot:  # a warm process: the same rows as columns from arrays (score_arrays)
            if key not in self._aggregates:
                self._aggregates[key] = self._arrays(tokens, gids, k, and_min)
            scored = self._aggregates[key]
            return [] if scored is None else self.titled(self._rank_columns(
                scored, k, n_sessions, avgdl, need_and, min_groups, and_min, whole, windows, time.time() * 1000),
                groups)
        rows = self._aggregates.get(key)
        if rows is None:
            rows = self._aggregates[key] = self.store.con.execute(
                duck.inline(sql, tokens=tokens, gids=gids), {"and_min": and_min}).fetchall()
        return self.titled(self._rank_rows(rows, k, n_sessions, avgdl, need_and, min_groups, and_min, whole,
                                           windows, time.time() * 1000), groups)

    def titled(self, ranked: list[Ranked], groups: list[list[str]]) -> list[Ranked]:
        """The title signal (§5.3) on the first ``TITLED`` sessions, then
        their order again: a person names a session by what it was about (a
        /rename, an agent's own title), and asks for it in those words."""
        head = ranked[:TITLED]
        if len(head) < 2:  # (nothing to order)
            return ranked
        want = [r.ord for r in head if r.ord not in self._titles]
        if want:
            rows = self.store.con.execute(duck.inline(
                "SELECT ord, lower(title) FROM q_sessions WHERE ord IN (SELECT unnest($ords))", ords=want)).fetchall()
            self._titles.update((o, t or "") for o, t in rows)
        lifted = False
        for r in head:
            title = self._titles.get(r.ord)
            if title:
                hits = sum(1 for g in groups if any(_word_in(t, title) for t in g))
                if hits:
                    r.score *= 1.0 + TITLE_LIFT * hits / len(groups)
                    lifted = True
        if lifted:
            head.sort(key=lambda r: (-r.score, -r.updated, r.ord))
            ranked[:TITLED] = head
        return ranked

    def _rank_rows(self, rows: list[tuple], k: int, n_sessions: int, avgdl: float, need_and: bool,
                   min_groups: int, and_min: int, whole: bool, windows, now: float) -> list[Ranked]:
        """Each session of score_groups.sql's rows scored, those that qualify, best first."""
        if not rows:
            return []
        # IDF of each group over the admitted sessions that hold it
        df = [0] * k
        for r in rows:
            for i in range(k):
                if r[10 + 2 * i] or r[11 + 2 * i]:
                    df[i] += 1
        idf = [_idf(n_sessions, d) for d in df]
        worn = self.worn()
        out = []
        for r in rows:
            ord_, dl, updated, started, decided, gave_up, note, nrec, best_ng, best = r[:10]
            norm = _norm(dl, avgdl)
            bm25, matched = 0.0, 0
            for i in range(k):
                said, printed = r[10 + 2 * i], r[11 + 2 * i]
                if said or printed:
                    matched += 1
                    bm25 += _bm25(idf[i], said, printed, norm)
            if need_and:
                if not nrec and not (whole and matched >= and_min):
                    continue
            elif matched < min_groups:
                continue
            score = bm25 * signals(decided, gave_up, note)
            if worn:
                score *= worn_lift(worn.get(ord_, 0))
            if windows:  # the time the question names stands in for recency
                score *= TIME_LIFT if in_windows(started, updated, windows) else 1.0
            else:
                score *= freshness(updated, now)
            if k > 1:
                score *= _proximity(best_ng, k) * _coverage(matched, k)
            out.append(Ranked(ord_, score, matched, nrec, updated or 0, best))
        out.sort(key=lambda r: (-r.score, -r.updated, r.ord))
        return out

    def _rank_columns(self, s, k: int, n_sessions: int, avgdl: float, need_and: bool, min_groups: int,
                      and_min: int, whole: bool, windows, now: float) -> list[Ranked]:
        """``rank``'s loop over a warm process's columns (score_arrays.Scored),
        computed for every session at once: the same formulas, the same
        operations in the same order (so the same scores, to the bit)."""
        import numpy as np

        held = (s.said != 0) | (s.printed != 0)
        idf = [_idf(n_sessions, d) for d in held.sum(axis=0).tolist()]
        norm = _norm(s.dl, avgdl)
        bm25 = np.zeros(len(s))
        for i in range(k):  # (a group a session lacks adds an exact 0)
            bm25 = bm25 + _bm25(idf[i], s.said[:, i], s.printed[:, i], norm)
        matched = held.sum(axis=1)
        if need_and:
            keep = (s.nrec > 0) | (whole & (matched >= and_min))
        else:
            keep = matched >= min_groups
        score = bm25 * (np.where(s.decided, DECIDED, 1.0) * np.where(s.gave_up, GAVE_UP, 1.0)
                        * np.where(s.note, NOTE, 1.0))
        worn = self.worn()
        if worn:
            lift = np.ones(len(s))
            at = np.searchsorted(s.ord, list(worn))  # (ords ascending)
            for i, (o, n) in zip(at.tolist(), worn.items()):
                if i < len(s) and s.ord[i] == o:
                    lift[i] = worn_lift(n)
            score = score * lift
        if windows:
            first = np.where(s.started != 0, s.started, s.updated)
            inside = np.zeros(len(s), bool)
            for start, end in windows:
                inside |= (first <= end) & (s.updated >= start)
            score = score * np.where(inside & (s.updated != 0), TIME_LIFT, 1.0)
        else:
            score = score * np.where(s.updated != 0, _recency(np.maximum(0.0, (now - s.updated) / 86_400_000)), 0.8)
        if k > 1:
            score = score * (_proximity(s.best_ng, k) * _coverage(matched, k))
        rows = np.flatnonzero(keep)
        rows = rows[np.lexsort((s.ord[rows], -s.updated[rows], -score[rows]))]
        return [Ranked(o, sc, m, n, u, b) for o, sc, m, n, u, b in zip(
            s.ord[rows].tolist(), score[rows].tolist(), matched[rows].tolist(), s.nrec[rows].tolist(),
            s.updated[rows].tolist(), s.bests(rows))]

    def _filtered(self) -> bool:
        """The query admits only some sessions (q_sessions.admitted)."""
        q = self.q
        return bool(q.harness or q.project or q.since_ms or q.session)

    def _arrays(self, tokens: list[str], gids: list[int], k: int, and_min: int):
        from . import score_arrays

        if self._postings is None:  # (no postings part could hold the words)
            return []
        sessions = self.store.memo.get("q_session_rows")
        if sessions is None:  # (kept while the search's filters are: load() drops it with q_tables)
            sessions = self.store.memo["q_session_rows"] = score_arrays.Sessions(self.store.con)
        return score_arrays.score_rows(self._postings, sessions, tokens, gids, k, and_min)

    def _read_arrays(self, files: list[str], tokens: list[str]) -> None:
        """(a warm process) These words' postings from Parquet into arrays, each
        record's session, role and length from the store's docs arrays."""
        from . import score_arrays

        memo = self.store.memo
        docs = score_arrays.docs_of(self.store)
        keep = memo.get("q_keep")
        if keep is None:  # (kept with q_tables, while the search's roles and filters are)
            admitted = None
            if self._filtered():
                admitted = {o for (o,) in self.store.con.execute("SELECT ord FROM q_sessions WHERE admitted").fetchall()}
            keep = memo["q_keep"] = docs.admits(self.roles, admitted)
        if self._postings is None:
            self._postings = score_arrays.Postings()
        self._postings.read(self.store.con, files, tokens, docs, keep)

    def load(self, tokens: list[str]) -> tuple[int, float]:
        """Fill the search's tables (``sql/search_tables.sql``) for these words:
        each rung of the ladder then ranks from memory, and Parquet is read once
        per word, not once per rung. Returns the corpus statistics (sessions,
        their mean length)."""
        con = self.store.con
        q = self.q
        if self._loaded is None:
            made, fill = load_sql("search_tables").replace("$project_rule", project_match.named()).split(";\n", 1)
            # a warm server's store keeps the last search's session and record
            # tables while the next asks for the same roles and filters
            same = (self.roles, q.harness, q.project, q.since_ms, q.session)
            if self.store.hot and self.store.memo.get("q_tables") == same:
                # (q_postings stays as the last search left it: a warm store ranks from arrays)
                self._loaded = set()
                self._stats = self.store.memo["q_stats"]
                return self.load(tokens)
            for name in ("q_tables", "q_session_rows", "q_keep"):
                self.store.memo.pop(name, None)
            con.execute(made, {"harness": q.harness, **project_match.named_params(q.project), "since": q.since_ms,
                               "session": q.session})
            con.execute(fill)
            # the records the search may rank: of the roles searched, not
            # deleted, and with a filter only the admitted sessions' (a hook's
            # project), so the ranking aggregates a fraction of the rows
            # (a warm process keeps them as arrays instead: _read_arrays)
            admitted = " AND session IN (SELECT ord FROM q_sessions WHERE admitted)" if self._filtered() else ""
            if not self.store.hot:
                con.execute(duck.inline(
                    "CREATE OR REPLACE TEMP TABLE q_docs AS SELECT record_id, session, role, rec_len FROM docs "
                    "WHERE role IN (SELECT unnest($roles)) AND record_id NOT IN (SELECT record_id FROM deletes)"
                    + admitted, roles=list(self.roles)))
            self._loaded = set()
            n, avgdl = con.execute("SELECT count(*), avg(dl) FROM q_sessions").fetchone()
            self._stats = (n, float(avgdl or 20.0))
            if self.store.hot:
                self.store.memo.update(q_tables=same, q_stats=self._stats)
        new = sorted(set(tokens) - self._loaded)
        if new:
            self._loaded.update(new)
            files = self.store.postings_for_buckets({bucket_of(t) for t in new})
            if files and self.store.hot:
                self._read_arrays(files, new)
            elif files:
                # a literal IN list: the Parquet reader filters by it directly, where a
                # list bound as a subquery became a semi join (twice the time)
                con.execute(duck.inline(
                    "INSERT INTO q_postings SELECT p.token, p.record_id, d.session, p.tf, d.role, d.rec_len "
                    "FROM read_parquet($files) p JOIN q_docs d ON p.record_id = d.record_id "
                    f"WHERE p.token IN ({duck.sql_list(new)[1:-1]})", files=files))
        return self._stats
