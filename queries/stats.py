"""What the memory holds, as numbers (cli-contract §3.6 / §6): sessions,
messages, activity per day and month, projects, commands, files, recall.

Plain data for `deja stats --json` and the renderings in
deja.pipeline.stats_view. The hooks' usage log and the compaction-recovery
metric are read by the caller (deja.pipeline.api) and handed in: they belong
to the hooks, a floor above this one.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

from deja.stages.display import local_day

from . import project_match

SPARK = "▁▂▃▄▅▆▇█"
VIEW_MESSAGES_PER_SESSION = 40  # `deja view`: messages kept per session (the file stays openable)
VIEW_TEXT_CAP = 2000  # characters kept per message in `deja view`


def rfc3339(dt: datetime) -> str:
    return dt.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _filters(harness, project, since_ms) -> tuple[str, list]:
    where, params = ["true"], []
    if harness:
        where.append("harness = ?")
        params.append(harness)
    if project:
        in_project, project_params = project_match.positional(project)
        where.append(in_project)
        params.extend(project_params)
    if since_ms is not None:
        where.append("coalesce(updated, started) >= ?")
        params.append(datetime.fromtimestamp(since_ms / 1000, timezone.utc))
    return " AND ".join(where), params


_QUESTION_START = re.compile(
    r"^(what|why|how|when|where|which|who|whose|did|does|do|is|are|was|were|can|should|would|"
    r"что|почему|как|когда|где|какой|какая|какие|кто|чей|можно|нужно|зачем)\b", re.I)


def _stem(text: str) -> str:
    return " ".join(re.sub(r"[^\w\-]+", " ", text.lower()).split())


def collect_stats(live, harness=None, project=None, since_ms=None, usage=(), recovery=None) -> dict:
    """The numbers of cli-contract §3.6 / §6 that the store can answer, plus the
    text-mode extras (keys starting with ``_``; public_stats drops them).

    ``usage``: (t, kind, bytes, sessions, empty) rows from the hooks' usage log;
    ``recovery``: the compaction-recovery metric's summary. The sessions counted
    stay in the temp table ``_keys`` for ``timeline``."""
    con = live.con
    where, params = _filters(harness, project, since_ms)
    st: dict = {"schema_version": 2}
    if not live.has("sessions"):
        sess = []
    else:
        sess = con.execute(
            f"SELECT session_key, harness, session_id, project, title, messages, started, updated "
            f"FROM sessions WHERE {where}", params).fetchall()
    con.execute("CREATE OR REPLACE TEMP TABLE _keys AS SELECT unnest(?::VARCHAR[]) AS k", [[s[0] for s in sess]])
    st["total_sessions"] = len(sess)
    st["total_messages"] = int(sum(s[5] or 0 for s in sess))
    h: dict[str, list[int]] = {}
    p: dict[str, int] = {}
    for s in sess:
        e = h.setdefault(s[1], [0, 0])
        e[0] += 1
        e[1] += s[5] or 0
        if s[3]:
            p[s[3]] = p.get(s[3], 0) + 1
    st["harnesses"] = [{"harness": k, "sessions": v[0], "messages": v[1]}
                       for k, v in sorted(h.items(), key=lambda kv: (-kv[1][0], kv[0]))]
    st["top_projects"] = [{"project": k, "sessions": v} for k, v in sorted(p.items(), key=lambda kv: (-kv[1], kv[0]))[:10]]
    # messages per local day, from UTC hour bins (exact in any zone, small)
    hours = []
    if live.has("records") and sess:
        hours = con.execute(
            "SELECT epoch_ms(ts) // 3600000 AS h, count(*) FROM records WHERE role IN ('user', 'assistant') AND ts IS NOT NULL "
            "AND session_key IN (SELECT k FROM _keys) GROUP BY h").fetchall()
    days: dict[str, int] = {}
    for hour, n in hours:
        d = datetime.fromtimestamp(hour * 3600).strftime("%Y-%m-%d")
        days[d] = days.get(d, 0) + n
    months: dict[str, int] = {}
    for d, n in days.items():
        months[d[:7]] = months.get(d[:7], 0) + n
    st["monthly"] = [{"month": m, "messages": months[m]} for m in sorted(months)]
    st["sparkline"] = sparkline([months[m] for m in sorted(months)])
    if days:
        st["date_range"] = {"start": min(days), "end": max(days)}
        bd = max(sorted(days), key=lambda d: days[d])
        st["busiest_day"] = {"date": bd, "messages": days[bd]}
    elif sess:
        stamps = [x for s in sess for x in (s[6], s[7]) if x is not None]
        if stamps:
            st["date_range"] = {"start": local_day(min(stamps)), "end": local_day(max(stamps))}
    if sess:
        ls = max(sess, key=lambda s: (s[5] or 0, str(s[7] or ""), s[2]))
        st["longest_session"] = {"id": ls[2], "harness": ls[1], "project": ls[3] or "", "title": ls[4] or "",
                                 "messages": int(ls[5] or 0)}
    extras = _record_stats(live, bool(sess))
    rq = extras.pop("repeat_questions", 0)
    if rq:
        st["repeat_questions"] = rq
    if extras.get("spans"):
        st["spans"], st["span_files"] = extras["spans"], extras["span_files"]
    st.update(_recall_stats(usage))
    st["recovery"] = recovery if recovery is not None else {}
    st["agent_credits"] = extras.get("agent_credits", 0)
    st["week_agent_credits"] = extras.get("week_agent_credits", 0)
    side = Path(str(live.root) + ".vectors.bin")
    if side.exists() and side.stat().st_size:
        st["sidecar_size"] = side.stat().st_size
    # text-mode extras (not part of the JSON contract)
    st["_days"] = days
    st["_commands"] = extras.get("commands", [])
    st["_files"] = extras.get("files", [])
    return st


def _record_stats(live, any_sessions: bool) -> dict:
    out: dict = {}
    if not (live.has("records") and any_sessions):
        return out
    con = live.con
    base = "FROM records WHERE session_key IN (SELECT k FROM _keys)"
    # every command is stored; the top ten are of those that did something, not `ls` or `cat x`
    from deja.stages.work_records import inspects

    ranked = con.execute(
        f"SELECT regexp_replace(split_part(text, chr(10), 1), '\\s+→ exit -?\\d+$', '') AS c, count(*) AS n {base} "
        f"AND role = 'command' GROUP BY c ORDER BY n DESC, c LIMIT 500").fetchall()
    out["commands"] = [r for r in ranked if not inspects(r[0].removeprefix("$ "))][:10]
    out["files"] = con.execute(
        f"SELECT f, count(*) AS n FROM (SELECT unnest(string_split(text, chr(10))) AS f {base} AND role = 'files') "
        f"WHERE trim(f) <> '' GROUP BY f ORDER BY n DESC, f LIMIT 10").fetchall()
    spans, span_files = con.execute(
        f"SELECT count(*), count(DISTINCT split_part(text, chr(10), 1)) {base} AND role = 'edit'").fetchone()
    out["spans"], out["span_files"] = int(spans), int(span_files)
    week_start = _week_start_ms()
    credits = con.execute(
        f"SELECT count(*), count(*) FILTER (WHERE ts >= ?) {base} AND role = 'assistant' "
        f"AND contains(lower(text), 'deja-vu recalled')", [datetime.fromtimestamp(week_start / 1000, timezone.utc)]).fetchone()
    out["agent_credits"], out["week_agent_credits"] = int(credits[0]), int(credits[1])
    # repeat questions (§6): a person's question stems asked in ≥2 sessions
    qs = con.execute(
        f"SELECT session_key, text {base} AND role = 'user' AND length(text) <= 240 "
        f"AND NOT starts_with(text, '<')").fetchall()
    seen: dict[str, set] = {}
    for key, text in qs:
        t = text.strip()
        if not (t.endswith(("?", "？")) or _QUESTION_START.match(t)):
            continue
        stem = _stem(t)
        words = stem.split()
        cjk = sum(1 for ch in stem if "\u4e00" <= ch <= "\u9fff")
        if len(words) < 4 and cjk < 4:
            continue
        seen.setdefault(stem, set()).add(key)
    out["repeat_questions"] = sum(1 for v in seen.values() if len(v) >= 2)
    return out


def _week_start_ms() -> int:
    today = datetime.now().astimezone()
    monday = (today - timedelta(days=today.weekday())).replace(hour=0, minute=0, second=0, microsecond=0)
    return int(monday.timestamp() * 1000)


def _recall_stats(rows) -> dict:
    """From the catalog's usage table (≤14 days): kinds `recall` (served to an agent by a hook),
    `mcp` (served through the MCP server's recall tools: recalls too, counted apart as
    ``mcp_calls``), `inject` (session-start injection), `dejavu` (a prompt matched prior
    work), `handoff`."""
    recall = {"recalls_served": 0, "injections": 0, "recall_sessions": 0, "injected_sessions": 0,
              "bytes": 0, "injected_bytes": 0, "dejavu_moments": 0, "empty_result_rate": 0.0, "mcp_calls": 0}
    out = {"recall": recall, "week_recalls": 0, "week_bytes": 0, "week_injected": 0, "handoffs_received": 0}
    week = datetime.fromtimestamp(_week_start_ms() / 1000, timezone.utc).replace(tzinfo=None)
    horizon = datetime.now(timezone.utc).replace(tzinfo=None) - timedelta(days=14)
    rsess, isess = set(), set()
    recalls = empties = 0
    oldest = None
    for t, kind, nbytes, sessions, empty in rows:
        if kind == "handoff":
            out["handoffs_received"] += 1
        if t is None or t < horizon:
            continue
        oldest = t if oldest is None or t < oldest else oldest
        if kind in ("recall", "mcp"):
            recall["mcp_calls"] += kind == "mcp"
            recalls += 1
            empties += bool(empty)
            if not empty:
                recall["recalls_served"] += 1
                recall["bytes"] += nbytes or 0
                rsess.update(sessions or [])
                if t >= week:
                    out["week_recalls"] += 1
                    out["week_bytes"] += nbytes or 0
        elif kind == "inject":
            recall["injections"] += 1
            recall["injected_bytes"] += nbytes or 0
            isess.update(sessions or [])
            if t >= week:
                out["week_injected"] += 1
        elif kind == "dejavu":
            recall["dejavu_moments"] += 1
    recall["recall_sessions"], recall["injected_sessions"] = len(rsess), len(isess)
    recall["empty_result_rate"] = round(empties / recalls, 3) if recalls else 0.0
    if oldest is not None:
        recall["since"] = rfc3339(oldest.replace(tzinfo=timezone.utc))
    return out


def sparkline(values: list[int]) -> str:
    if not values:
        return ""
    top = max(values) or 1
    return "".join(SPARK[min(len(SPARK) - 1, int(v * (len(SPARK) - 1) / top + 0.5))] if v else SPARK[0] for v in values)


def public_stats(st: dict) -> dict:
    return {k: v for k, v in st.items() if not k.startswith("_")}


def timeline(live) -> list[tuple]:
    """(harness, session_id, project, title, messages, last active) of the sessions
    collect_stats counted (its ``_keys``), newest first."""
    if not live.has("sessions"):
        return []
    return live.con.execute(
        "SELECT harness, session_id, project, title, messages, coalesce(updated, started) AS t FROM sessions "
        "WHERE session_key IN (SELECT k FROM _keys) ORDER BY t DESC NULLS LAST, session_id").fetchall()


def view_sessions(live) -> list[dict]:
    """Every session for `deja view`, newest first, with its first user and
    assistant messages (display-safe, cut at VIEW_TEXT_CAP)."""
    from deja.queries.session_obj import COLUMNS
    from deja.stages.display import sanitize_display
    from deja.stages.shown import shown_head

    sessions = []
    if live.has("sessions"):
        cur = live.con.execute(f"SELECT {COLUMNS} FROM sessions ORDER BY coalesce(updated, started) DESC "
                               "NULLS LAST, session_id")
        names = [d[0] for d in cur.description]
        rows = [dict(zip(names, r)) for r in cur.fetchall()]
        msgs: dict[str, list] = {}
        if live.has("records"):
            for key, role, text, n in live.con.execute(
                "SELECT session_key, role, text, count(*) OVER (PARTITION BY session_key) FROM ("
                "  SELECT session_key, role, text, seq, row_number() OVER (PARTITION BY session_key ORDER BY seq) AS rn "
                "  FROM records WHERE role IN ('user', 'assistant')) "
                "QUALIFY rn <= ? ORDER BY session_key, seq", [VIEW_MESSAGES_PER_SESSION]).fetchall():
                text = shown_head(text, VIEW_TEXT_CAP)  # before the cut (deja.stages.shown)
                msgs.setdefault(key, []).append([role, sanitize_display(text[:VIEW_TEXT_CAP])
                                                 + ("…" if len(text) > VIEW_TEXT_CAP else "")])
        for r in rows:
            lc = r.get("lifecycle") or {}
            shown = msgs.get(r["session_key"], [])
            total = int(r.get("messages") or 0)
            sessions.append({
                "harness": r["harness"], "id": r["session_id"], "project": r.get("project") or "",
                "title": sanitize_display(" ".join((r.get("title") or "").split())),
                "date": local_day(r.get("updated") or r.get("started")), "messages": total,
                "lifecycle": lc.get("state") or "", "lifecycle_note": lc.get("note") or "",
                "m": shown, "more": max(0, total - len(shown)),
            })
    return sessions
