"""What the store remembers about a command or a file: the queries behind the
tool hooks (hooks/tool.py), before a tool runs and after a command fails.

Each takes the live store (``stages/store/read.py``) and returns plain rows;
the hook decides what is worth a line. Light imports only, and those lazily:
the hooks import this module on every tool call.
"""

from __future__ import annotations

import os

CANDIDATES_MAX = 4000  # past this many command records holding the words, scan instead
NOT_FOUND = "command not found"


def past_runs(live, norm: str) -> list[tuple]:
    """Every recorded run of exactly this command: (session_key, seq, text, ts
    in epoch ms, project root, record_id), newest first. The postings name the command records holding its
    words, so only those records are read; a records scan cost most of the hook."""
    if not live.has("records"):
        return []
    from deja.stages.roles import ROLE_CODES
    from deja.stages.tokenize import bucket_of, query_terms, tokenize

    from deja.stages.store.duck import inline, sql_list

    exact, failed = "$ " + norm, "$ " + norm + "  → exit"
    cols = "SELECT session_key, seq, text, epoch_ms(ts) AS ts, project_root, record_id FROM {} WHERE role = 'command'"
    words = sorted(set(query_terms(norm)))
    files = live.postings_for_buckets({bucket_of(t) for t in words}) if words else []
    rows = None
    if files:
        # a run of exactly this command holds its tokens and at most "exit" and
        # a status beside them: the record's length in tokens rules the rest out
        n = len(tokenize(norm))
        if live.hot:  # a warm process joins with the docs it keeps as arrays
            hits = _command_hits(live, files, words, n, ROLE_CODES["command"])
        else:
            hits = live.con.execute(inline(
                "SELECT p.record_id, any_value(d.session) FROM read_parquet($files) p JOIN docs d USING (record_id) "
                "WHERE d.role = ? AND p.token IN (SELECT unnest($words)) AND d.rec_len BETWEEN ? AND ? "
                "GROUP BY p.record_id HAVING count(DISTINCT p.token) = ?",
                files=files, words=words), [ROLE_CODES["command"], n, n + 2, len(words)]).fetchall()
        if not hits:
            return []
        if len(hits) <= CANDIDATES_MAX:
            # only the parts holding those sessions' records are opened, and the
            # literal range lets DuckDB skip row groups outside it; the text is
            # compared here, where it costs nothing per row
            ids = [h[0] for h in hits]
            keys = [] if live.in_memory("command") else [k for (k,) in live.con.execute(
                f"SELECT session_key FROM sessions WHERE ord IN (SELECT unnest({sql_list(sorted({h[1] for h in hits}))}))"
            ).fetchall()]
            rows = live.con.execute(cols.format(live.records_of(keys, role="command")) + f" AND record_id BETWEEN {min(ids)} AND "
                                    f"{max(ids)} AND record_id IN (SELECT unnest({sql_list(ids)}))").fetchall()
    if rows is None:
        rows = live.con.execute(cols.format("records") + " AND (lower(text) = ? OR starts_with(lower(text), ?))",
                                [exact, failed]).fetchall()
    rows = [r for r in rows if r[2] and (r[2].lower() == exact or r[2].lower().startswith(failed))]
    rows.sort(key=lambda r: r[3] or 0, reverse=True)
    return rows


def _command_hits(live, files: list[str], words: list[str], n: int, role: int) -> list[tuple[int, int]]:
    """(a warm process) past_runs' candidates, (record id, session ord): the
    command records holding every word, of n to n + 2 tokens. The postings come
    as arrays and meet the docs the warm store keeps as arrays
    (queries/score_arrays.py), from the parts the process holds (store/hot.py):
    the join in SQL was two thirds of a Bash hook."""
    import numpy as np

    from .score_arrays import docs_of, held_postings

    docs = docs_of(live)
    t, rid, _ = held_postings(live.con, files, words)
    at, found = docs.find(rid)
    ok = found & (docs.role[at] == role) & (docs.rec_len[at] >= n) & (docs.rec_len[at] <= n + 2)
    pairs = np.unique(rid[ok] * len(words) + t[ok])  # each (record, word) once
    records, held = np.unique(pairs // len(words), return_counts=True)
    records = records[held == len(words)]
    return list(zip(records.tolist(), docs.session[np.searchsorted(docs.record_id, records)].tolist()))


def latest_decision(live, keys: list[str]) -> str:
    """The decision line of the most recently updated of these sessions that has
    one and did not back out of its approach, or ""."""
    from deja.stages.store.duck import sql_list

    row = live.con.execute(
        f"SELECT session_key, decision, title FROM sessions WHERE session_key IN (SELECT unnest({sql_list(keys)})) "
        "AND decision <> '' AND NOT coalesce(gave_up, false) ORDER BY updated DESC"
    ).fetchone()
    return row[1] if row else ""


def not_found_sightings(live, prog: str) -> tuple[int, object]:
    """(sessions whose tool output says ``prog: command not found``, the last
    time it did); (0, None) without records."""
    if not live.has("records"):
        return 0, None
    row = live.con.execute(
        "SELECT count(DISTINCT session_key), max(ts) FROM records WHERE role = 'tool-output' "
        "AND contains(text, ?) AND (contains(text, ?) OR contains(text, ?))",
        [NOT_FOUND, prog + ": " + NOT_FOUND, NOT_FOUND + ": " + prog],
    ).fetchone()
    return int(row[0] or 0), row[1]


def output_after(live, session_key: str, seq: int, record_id: int) -> str:
    """The tool output that followed a command record in its session, or ""."""
    # a session's records carry consecutive ids: the output is just after the command
    row = live.con.execute(
        f"SELECT text FROM {live.records_of([session_key])} WHERE record_id BETWEEN {record_id + 1} AND "
        f"{record_id + 64} AND session_key = ? AND role = 'tool-output' AND seq > ? ORDER BY seq LIMIT 1",
        [session_key, seq],
    ).fetchone()
    return row[0] if row else ""


def file_sessions(live, path: str, project: str) -> list[tuple]:
    """(session_key, updated, decision, gave_up) of the agent sessions that
    touched ``path``, or, in the project whose root is ``project``, a file of the same name; newest first."""
    base = os.path.basename(path)
    return live.con.execute(
        "SELECT session_key, updated, decision, gave_up FROM sessions WHERE harness <> 'deja' AND ("
        "list_contains(touched, ?) OR (project_root = ? AND len(list_filter(touched, lambda x: x = ? OR ends_with(x, ?))) > 0)) "
        "ORDER BY updated DESC NULLS LAST",
        [path, project, base, "/" + base],
    ).fetchall()


def failures_with_fix(live, words: list[str], sid: str) -> list[tuple]:
    """(failure text, the next command of its session that did not fail, when)
    of the failures holding every one of ``words``, outside session ``sid``;
    the 20 newest.

    A failure is a command record with exit_code > 0 or an error-marked tool
    output.
    """
    if not live.has("records"):
        return []
    conds = " AND ".join(["contains(lower(f.text), ?)"] * len(words))
    return live.con.execute(
        f"""
        WITH f AS (
            SELECT session_key, seq, text, ts FROM records f
            WHERE (f.role = 'tool-output' AND coalesce(f.is_error, false) OR f.role = 'command' AND f.exit_code > 0)
              AND f.session_id <> ? AND {conds}
        )
        SELECT f.text, arg_min(ok.text, ok.seq), f.ts FROM f
        JOIN records ok ON ok.session_key = f.session_key AND ok.seq > f.seq AND ok.role = 'command'
             AND coalesce(ok.exit_code, 0) = 0 AND NOT contains(ok.text, '→ exit')
        GROUP BY f.session_key, f.seq, f.text, f.ts
        ORDER BY f.ts DESC LIMIT 20
        """,
        [sid, *words],
    ).fetchall()
