"""`deja search --team` and `deja ctx --team`: answers straight from the team
store's tables (stages/store/lake.py), DuckDB over the data files the
catalog's current snapshot lists. There is no index over them: a record
matches by holding the query's words (a quoted phrase whole), a session
ranks by the most of them one of its records holds, then by how many of its
records match, then by how recent it is. What was said and the commands run
are searched; tool output is not (most of a history's bytes, and its row
groups are skipped by their role statistics: publish writes them apart).
"""

from __future__ import annotations

from .query_parse import parse_query
from .snippets import best_line



def needles_of(query: str) -> list[str]:
    content, phrases, _ = parse_query(query)
    return [p.lower() for p in phrases] or sorted({t.lower() for t in content})


def search(con, records: str, sessions: str | None, query: str, limit: int = 15) -> dict:
    """Hits in the contract's shape (session objects with ``source.origin``
    ``team`` and ``from``: the publishing machine). ``records``/``sessions``:
    FROM sources of the two tables (``read_parquet([...])`` or a registered
    Arrow table)."""
    needles = needles_of(query)
    if not needles:
        return {"schema_version": 2, "tier": "team", "total": 0, "hits": []}
    import re

    # RE2 without case: one pass for any of the words, a third cheaper than lower() and contains
    # on every record; which of them a matched record holds is counted on those alone
    any_re = "(?i)(?:" + "|".join(re.escape(n) for n in needles) + ")"
    hits_expr = " + ".join(f"regexp_matches(text, $w{i})::INT" for i in range(len(needles)))
    params = {f"w{i}": "(?i)" + re.escape(n) for i, n in enumerate(needles)}
    params.update(any=any_re, lim=limit)
    rows = con.execute(
        f"""
        WITH c AS (
            SELECT machine, harness, session_id, project, role, text, ts
            FROM {records}
            WHERE role IN ('user', 'assistant', 'summary', 'note', 'title', 'command') AND regexp_matches(text, $any)
        ), m AS (
            SELECT *, {hits_expr} AS hits FROM c
        ), s AS (
            SELECT machine, harness, session_id, any_value(project) AS project, max(hits) AS best,
                   count(*) AS n, max(ts) AS last,
                   arg_max(text, hits * 10 + CASE WHEN role IN ('user', 'assistant') THEN 1 ELSE 0 END) AS line
            FROM m GROUP BY ALL
        )
        SELECT machine, harness, session_id, project, best, n, epoch_ms(last), line, count(*) OVER () AS total
        FROM s ORDER BY best DESC, n DESC, last DESC NULLS LAST, machine, session_id
        LIMIT $lim
        """, params).fetchall()
    meta = _sessions(con, sessions, [(r[0], r[1], r[2]) for r in rows]) if sessions and rows else {}
    hits = []
    for machine_, harness, sid, project, best, n, last, line, _ in rows:
        m = meta.get((machine_, harness, sid), {})
        session = {"harness": harness, "id": sid, "project": project or "", "source": {"origin": "team"},
                   "from": machine_}
        for k in ("started", "updated"):
            if m.get(k):
                session[k] = _iso(m[k])
        if "updated" not in session and last:
            session["updated"] = _iso(last)
        if m.get("title"):
            session["title"] = m["title"]
        hits.append({"session": session, "count": int(n), "words": int(best), "snippets": [best_line(line, needles)]})
    return {"schema_version": 2, "tier": "team", "total": int(rows[0][8]) if rows else 0, "hits": hits}


def _sessions(con, sessions: str, keys: list[tuple]) -> dict:
    """Title and times of these (machine, harness, id) sessions from the sessions table."""
    rows = con.execute(
        f"""SELECT s.machine, s.harness, s.session_id, arg_max(s.title, s.published_at), min(epoch_ms(s.started)),
                   max(epoch_ms(s.updated))
            FROM {sessions} s
            JOIN (SELECT unnest($m) AS machine, unnest($h) AS harness, unnest($i) AS session_id) k
              USING (machine, harness, session_id)
            GROUP BY ALL""",
        {"m": [k[0] for k in keys], "h": [k[1] for k in keys], "i": [k[2] for k in keys]},
    ).fetchall()
    return {(a, b, c): {"title": t, "started": s, "updated": u} for a, b, c, t, s, u in rows}


def session_records(con, records: str, machine: str, harness: str, session_id: str) -> list[tuple]:
    """(role, text, epoch ms) of one team session, in time order."""
    return con.execute(
        f"""SELECT role, text, epoch_ms(ts) FROM {records}
            WHERE machine = $m AND harness = $h AND session_id = $i
            ORDER BY ts NULLS LAST""", {"m": machine, "h": harness, "i": session_id}).fetchall()


def brief(hit: dict, rows: list[tuple], budget: int = 6000) -> str:
    """A team session as the markdown `deja ctx` prints: where it ran, then the
    asks and answers one line each, newest last, within ``budget`` characters."""
    from deja.stages.display import one_line

    s = hit["session"]
    head = [f"# {s.get('title') or '(untitled)'}", "",
            f"{s['harness']} session `{s['id']}` from {s['from']} (team store) · project {s.get('project') or '?'}"
            + (f" · {s['started'][:16].replace('T', ' ')} UTC" if s.get("started") else "")
            + (f" → {s['updated'][:16].replace('T', ' ')} UTC" if s.get("updated") else ""), ""]
    turns = [f"- **{role}**: {one_line(text)[:300]}" for role, text, _ in rows if role in ("user", "assistant") and text]
    body: list[str] = []
    used = sum(len(x) + 1 for x in head) + 20
    for t in reversed(turns):  # the end of a session is where it landed
        if used + len(t) + 1 > budget:
            break
        body.append(t)
        used += len(t) + 1
    body.reverse()
    if len(body) < len(turns):
        body.insert(0, f"- … {len(turns) - len(body)} earlier turns")
    return "\n".join(head + ["## Conversation", ""] + body) + "\n"


def _iso(ms: int) -> str:
    import time

    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ms / 1000))
