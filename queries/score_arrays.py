"""``sql/score_groups.sql``'s rows, computed with numpy from the search's
postings: what a warm process (``deja serve``, ``deja mcp``) ranks with.

DuckDB plans and runs that query in ~8 ms over a common word's ten thousand
postings, once per rung of the ladder; the same aggregates over arrays take
about one. The postings themselves come straight from Parquet into arrays and
meet the store's docs (each record's session, role and length, kept as arrays
while the catalog stands) by binary search, where the SQL path fills and joins
two temp tables. A cold process keeps the SQL: importing numpy would cost it
more than it saves. The SQL files say what each column means; this module
computes the very same rows (``tests/test_score_arrays.py`` holds the two to
each other).
"""

from __future__ import annotations

import numpy as np

# what was said weighs by who said it (score_groups.sql's CASE): user and notes
# ×1.3, assistant ×1, role 3 ×0.5; tool output (2) is printed, not said
_SAID_WEIGHT = np.full(128, 1.3)
_SAID_WEIGHT[1], _SAID_WEIGHT[3] = 1.0, 0.5
_TOOL = 2
_ROLE_BIT, _NG_BIT = 1 << 40, 1 << 41  # best: role << 40 | record id; ordered by groups, said, id


class Docs:
    """The store's docs rows (sorted by record id) and which are deleted: kept
    by a warm store for as long as its catalog stands."""

    def __init__(self, con) -> None:
        cols = con.execute("SELECT d.record_id, d.session, d.role, d.rec_len, x.record_id IS NULL AS alive "
                           "FROM docs d LEFT JOIN (SELECT DISTINCT record_id FROM deletes) x USING (record_id) "
                           "ORDER BY d.record_id").fetchnumpy()
        self.record_id = np.asarray(cols["record_id"], np.int64)
        self.session = np.asarray(cols["session"], np.int64)
        self.role = np.asarray(cols["role"], np.int64)
        self.rec_len = np.asarray(cols["rec_len"], np.float64)
        self.alive = np.asarray(cols["alive"], bool)
        # record ids count up from 0, nearly without gaps: each id's row by
        # indexing, where a binary search per posting cost a common word's
        # postings a millisecond (ids too sparse for that: the binary search)
        self.row_of = None
        top = int(self.record_id[-1]) if len(self.record_id) else -1
        if 0 <= top < 4 * len(self.record_id) + (1 << 20) and self.record_id[0] >= 0:
            self.row_of = np.full(top + 1, -1, np.int64)
            self.row_of[self.record_id] = np.arange(len(self.record_id))

    def find(self, record_id: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each record id's docs row, and whether it has one."""
        if not len(self.record_id):
            return np.zeros(len(record_id), np.int64), np.zeros(len(record_id), bool)
        if self.row_of is not None:
            inside = (record_id >= 0) & (record_id < len(self.row_of))
            at = self.row_of[np.where(inside, record_id, 0)]
            found = inside & (at >= 0)
            return np.where(found, at, 0), found
        at = np.minimum(np.searchsorted(self.record_id, record_id), len(self.record_id) - 1)
        return at, self.record_id[at] == record_id

    def admits(self, roles, sessions: set[int] | None) -> np.ndarray:
        """Which docs rows a search ranks: of its roles, not deleted, and of the
        sessions its filters admit (``None``: every session)."""
        keep = self.alive & np.isin(self.role, list(roles))
        if sessions is not None:
            keep &= np.isin(self.session, np.fromiter(sessions, np.int64, len(sessions)))
        return keep


def read_postings(con, files: list[str], tokens: list[str], *columns: str) -> dict[str, np.ndarray]:
    """These tokens' postings in these parts: ``t``, each one's token as its
    position in ``tokens``, ``record_id``, and ``columns``. A literal IN list:
    the Parquet reader filters by it directly (a subquery became a semi join)."""
    from deja.stages.store import duck

    cols = con.execute(duck.inline(
        f"SELECT list_position($tokens, token)::INTEGER - 1 AS t, {', '.join(('record_id', *columns))} "
        f"FROM read_parquet($files) WHERE token IN ({duck.sql_list(tokens)[1:-1]})",
        tokens=tokens, files=files)).fetchnumpy()
    return {name: np.asarray(values) for name, values in cols.items()}


def held_postings(con, files: list[str], tokens: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(a warm process) These tokens' postings in these parts: each one's
    token (its position in ``tokens``), record id and tf; from the parts the
    process holds in memory (``store/hot.py``), the rest from Parquet."""
    from deja.stages.store import hot

    t, rid, tf = [], [], []
    cold = []
    for f in files:
        part = hot.postings(con, f)
        if part is None:
            cold.append(f)
            continue
        for i, token in enumerate(tokens):
            lo, hi = part.run(token)
            if hi > lo:
                t.append(np.full(hi - lo, i, np.int64))
                rid.append(part.columns["record_id"][lo:hi])
                tf.append(part.columns["tf"][lo:hi])
    if cold:
        cols = read_postings(con, cold, tokens, "tf")
        t.append(cols["t"])
        rid.append(cols["record_id"])
        tf.append(cols["tf"])
    if not t:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    return (np.concatenate(t).astype(np.int64), np.concatenate(rid).astype(np.int64),
            np.concatenate(tf).astype(np.float64))


def docs_of(store) -> Docs:
    """A warm store's docs as arrays, read once for as long as its catalog stands
    (the memo is the live store's: a new catalog, a new store)."""
    docs = store.memo.get("docs_arrays")
    if docs is None:
        docs = store.memo["docs_arrays"] = Docs(store.con)
    return docs


class Postings:
    """The search's postings so far, by token: what ``q_postings`` holds on the SQL path."""

    def __init__(self) -> None:
        self.by_token: dict[str, tuple[np.ndarray, ...]] = {}  # record_id, session, tf, role, rec_len

    def read(self, con, files: list[str], tokens: list[str], docs: Docs, keep: np.ndarray) -> None:
        """These tokens' postings from these parts, of the records ``keep`` admits."""
        t, rid, tf = held_postings(con, files, tokens)
        at, found = docs.find(rid)
        ok = found & keep[at]
        t, rid, tf, at = t[ok], rid[ok], tf[ok], at[ok]
        for i, token in enumerate(tokens):
            mine = t == i
            row = at[mine]
            self.add(token, rid[mine], docs.session[row], tf[mine], docs.role[row], docs.rec_len[row], row)

    def add(self, token: str, record_id, session, tf, role, rec_len, row) -> None:
        """``row``: each posting's record's row in the docs arrays (their order is the records')."""
        self.by_token[token] = (np.asarray(record_id, np.int64), np.asarray(session, np.int64),
                                np.asarray(tf, np.float64), np.asarray(role, np.int64),
                                np.asarray(rec_len, np.float64), np.asarray(row, np.int64))


class Sessions:
    """``q_sessions``' admitted rows as arrays indexed by session ord: what a
    row of score_groups carries of its session."""

    def __init__(self, con) -> None:
        cols = con.execute("SELECT ord, dl, coalesce(updated, 0) AS updated, coalesce(started, 0) AS started, "
                           "coalesce(decided, false) AS decided, coalesce(gave_up, false) AS gave_up, "
                           "coalesce(note, false) AS note FROM q_sessions WHERE admitted").fetchnumpy()
        ords = np.asarray(cols["ord"], np.int64)
        size = int(ords.max()) + 1 if len(ords) else 0
        self.admitted = np.zeros(size, bool)
        self.admitted[ords] = True
        self.dl, self.updated, self.started = (np.zeros(size, dt) for dt in (np.float64, np.int64, np.int64))
        self.decided, self.gave_up, self.note = (np.zeros(size, bool) for _ in range(3))
        for name in ("dl", "updated", "started", "decided", "gave_up", "note"):
            getattr(self, name)[ords] = np.asarray(cols[name])


class Scored:
    """score_groups.sql's rows as columns, one entry per admitted session that
    holds any of the words: its ord and session facts, ``nrec`` (records
    holding ``and_min`` groups), ``best_ng`` (1 + the proximity of its best
    record), per group what was said and what was printed (``said``,
    ``printed``: sessions × groups), and the records to show (``bests``)."""

    def __init__(self, ords, sessions: Sessions, nrec, best_ng, said, printed, value, starts, ends) -> None:
        self.ord, self.nrec, self.best_ng, self.said, self.printed = ords, nrec, best_ng, said, printed
        self.dl, self.updated, self.started = sessions.dl[ords], sessions.updated[ords], sessions.started[ords]
        self.decided, self.gave_up, self.note = sessions.decided[ords], sessions.gave_up[ords], sessions.note[ords]
        self._value, self._starts, self._ends = value, starts, ends

    def __len__(self) -> int:
        return len(self.ord)

    def bests(self, rows: np.ndarray) -> list[list[int]]:
        """Each of these rows' records to show (role << 40 | record id; a slice
        of a list each: a numpy slice each cost more)."""
        value = self._value.tolist()
        return [value[a:b] for a, b in zip(self._starts[rows].tolist(), self._ends[rows].tolist())]

    def rows(self) -> list[tuple]:
        """The columns as score_groups.sql's rows (what the tests hold the two to)."""
        cols = [self.ord, self.dl, self.updated, self.started, self.decided, self.gave_up, self.note, self.nrec,
                self.best_ng]
        out = []
        bests = self.bests(np.arange(len(self)))
        for i, r in enumerate(zip(*(c.tolist() for c in cols))):
            sums = [x for pair in zip(self.said[i].tolist(), self.printed[i].tolist()) for x in pair]
            out.append((*r[:2], r[2] or None, r[3] or None, *r[4:], bests[i], *sums))
        return out


def score_rows(postings: Postings, sessions: Sessions, tokens: list[str], gids: list[int], k: int,
               and_min: int) -> Scored | None:
    """score_groups.sql's rows for these (token, group) pairs, as columns; None when none."""
    held = [(postings.by_token[t], g) for t, g in zip(tokens, gids)
            if t in postings.by_token and len(postings.by_token[t][0])]
    if not held:
        return None
    record_id, session, tf, role, rec_len, row = (np.concatenate([cols[c] for cols, _ in held]) for c in range(6))
    gid = np.concatenate([np.full(len(cols[0]), g, np.int64) for cols, g in held])
    # each record's term frequencies, damped by its length against its role's mean (never raised)
    n_role = np.bincount(role, minlength=128)
    mean_len = np.bincount(role, weights=rec_len, minlength=128)[role] / n_role[role]
    w = tf / np.maximum(1.0, 0.25 + 0.75 * rec_len / np.maximum(mean_len, 1.0))

    # per record: its session, role, length, how many groups it holds, and w summed per group
    # (the records in id order by their docs rows, marked: a sort of the postings cost more)
    rows, rec = _distinct(row)
    n = len(rows)
    records, r_session, r_role, r_len = (np.empty(n, a.dtype) for a in (record_id, session, role, rec_len))
    records[rec], r_session[rec], r_role[rec], r_len[rec] = record_id, session, role, rec_len
    held_groups = np.zeros(n * k, bool)
    held_groups[rec * k + gid] = True
    ng = held_groups.reshape(n, k).sum(axis=1)
    w_by_group = [np.bincount(rec, weights=np.where(gid == i, w, 0.0), minlength=n) for i in range(k)]

    # per session
    ords, ses = _distinct(r_session)
    m = len(ords)
    nrec = np.bincount(ses, weights=ng >= and_min, minlength=m)
    best_ng = np.full(m, -np.inf)
    np.maximum.at(best_ng, ses, (ng - 1) * 200.0 / (200 + r_len))
    said_w = np.where(r_role != _TOOL, _SAID_WEIGHT[r_role], 0.0)
    printed = r_role == _TOOL
    said_sums = np.empty((m, k))
    printed_sums = np.empty((m, k))
    for i in range(k):
        said_sums[:, i] = np.bincount(ses, weights=w_by_group[i] * said_w, minlength=m)
        printed_sums[:, i] = np.bincount(ses, weights=np.where(printed, w_by_group[i], 0.0), minlength=m)
    # the three records to show: most groups, then said before printed, then newest
    key = ng * _NG_BIT + (r_role != _TOOL) * _ROLE_BIT + records
    order = np.lexsort((-key, ses))
    starts = np.searchsorted(ses[order], np.arange(m))
    value = (r_role * _ROLE_BIT + records)[order]
    ends = np.minimum(starts + 3, np.append(starts[1:], n))

    # only the sessions the query's filters admit
    admitted = np.zeros(m, bool)
    inside = ords < len(sessions.admitted)
    admitted[inside] = sessions.admitted[ords[inside]]
    if not admitted.any():
        return None
    return Scored(ords[admitted], sessions, nrec[admitted].astype(np.int64), 1.0 + best_ng[admitted],
                  said_sums[admitted], printed_sums[admitted], value, starts[admitted], ends[admitted])


def _distinct(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)`` for small non-negative
    integers (docs rows, session ords): marked in an array as long as the
    largest, instead of sorted."""
    seen = np.zeros(int(values.max()) + 1, bool)
    seen[values] = True
    distinct = np.flatnonzero(seen)
    return distinct, np.searchsorted(distinct, values)
