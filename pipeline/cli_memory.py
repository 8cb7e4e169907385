"""Curating memory and looking at it whole: remember, promote, forget, stats, view.

Primary data lives outside the cache and is only ever appended to by these
commands (notes.jsonl) or kept as one line per entry (tombstones); the index
is rebuilt from it like from any agent's store:

* ``remember`` appends a note to notes.jsonl and refreshes the index;
* ``promote`` appends a curated note with provenance (``harness:id``, state,
  why) and records the lifecycle state in the catalog's ``lifecycle`` table,
  which every later search hit of that session carries;
* ``forget`` writes tombstones (catalog and ``~/.config/deja/tombstones``) and
  removes the sessions from the live store; every index run skips them;
* ``stats`` and ``view`` read the live store and render it: JSON, a terminal
  heatmap and card, a self-contained SVG card, HTML timeline and memory view.
"""

from __future__ import annotations

import html
import json
import os
import re
import sys
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Optional

import typer

from deja.stages.store import config
from deja.pipeline.cli import _check_harness, _elide, _live_or_fail, _since_ms, _term_width, app
from deja.pipeline.console import Fail, _err, _out_json

STATES = ("accepted", "rejected", "superseded", "stale")
MAX_TAGS = 8
VIEW_MESSAGES_PER_SESSION = 40  # `deja view`: messages kept per session (the file stays openable)
VIEW_TEXT_CAP = 2000  # characters kept per message in `deja view`
SPARK = "▁▂▃▄▅▆▇█"


# --------------------------------------------------------------------------- shared helpers


def _notes():
    from deja.stages.sources import notes

    return notes


def _now_utc() -> datetime:
    return datetime.now(timezone.utc)


def _rfc3339(dt: datetime) -> str:
    return dt.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def cwd_project(cwd: str | None = None) -> str:
    """The Claude-style project name of a folder: its last two path segments."""
    parts = [p for p in Path(cwd or os.getcwd()).resolve().parts if p not in ("/", "\\")]
    return "/".join(parts[-2:]) if parts else "notes"


def clean_tags(tags: list[str] | None) -> list[str]:
    out: list[str] = []
    for t in tags or []:
        t = t.strip().lstrip("#").strip().lower()
        if t and t not in out:
            out.append(t)
    if len(out) > MAX_TAGS:
        _err(f"only the first {MAX_TAGS} tags are kept")
    return out[:MAX_TAGS]


def append_note(rec: dict) -> Path:
    """One line onto notes.jsonl (never rewritten); a torn last line gets its newline first."""
    path = _notes().notes_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps(rec, ensure_ascii=False) + "\n"
    with open(path, "a+b") as fh:
        fh.seek(0, os.SEEK_END)
        if fh.tell():
            fh.seek(-1, os.SEEK_END)
            if fh.read(1) != b"\n":
                line = "\n" + line
        fh.seek(0, os.SEEK_END)
        fh.write(line.encode("utf-8"))
    return path


def _refresh_index(what: str) -> None:
    """Bring the index up to date in the foreground; a busy writer only defers it."""
    from deja.pipeline.run import run_index
    from deja.stages.store.catalog import Busy

    try:
        run_index(notice=_err, lock_wait=min(config.lock_wait_seconds(), 30.0))
    except Busy:
        _err(f"{what} is saved; the index is busy and picks it up on its next run")


def _store():
    from deja.stages.store.catalog import Store

    return Store(config.index_dir())


def _catalog_write(fn):
    """Run ``fn(con)`` on the catalog under the writer lock (no index run in between)."""
    from deja.stages.store.catalog import Busy

    store = _store()
    try:
        with store.writer_lock(config.lock_wait_seconds(), notice=_err):
            store.init()
            con = store.connect(retries=100)
            try:
                return fn(con)
            finally:
                con.close()
    except Busy as exc:
        raise Fail(f"{exc}; try again when it finishes")


def _parse_before(value: str) -> datetime:
    """--before: a duration (7d, 12h, 90m) back from now, or a date (YYYY-MM-DD, local midnight)."""
    v = value.strip()
    try:
        d = date.fromisoformat(v)
        return datetime(d.year, d.month, d.day).astimezone(timezone.utc)
    except ValueError:
        pass
    try:
        return datetime.fromtimestamp(_since_ms(v) / 1000, timezone.utc)
    except Fail:
        raise Fail(f"--before takes a duration like 30d or 12h, or a date like 2026-01-31, not {value!r}")


def _day(dt) -> str:
    if dt is None:
        return ""
    if isinstance(dt, datetime):
        return dt.astimezone().strftime("%Y-%m-%d")
    return str(dt)[:10]


# --------------------------------------------------------------------------- remember


@app.command("remember")
def remember_cmd(
    text: list[str] = typer.Argument(..., metavar="TEXT", help="The note."),
    project: Optional[str] = typer.Option(None, "--project", help="Default: this folder's project name."),
    tag: Optional[list[str]] = typer.Option(None, "--tag", help="Repeatable; searchable as #tag."),
) -> None:
    """Append a durable note to your memory (notes.jsonl) and index it."""
    body = " ".join(text or []).strip()
    if not body:
        raise Fail("remember needs the note's text")
    proj = (project or "").strip() or cwd_project()
    rec = {"ts": _rfc3339(_now_utc()), "project": proj, "text": body}
    tags = clean_tags(tag)
    if tags:
        rec["tags"] = tags
    path = append_note(rec)
    n = _notes()
    sid = n.note_session_id(proj, int(_now_utc().timestamp() * 1000))
    print(f"deja:{sid}")
    _err(f"noted for {proj} in {path}")
    _refresh_index("the note")


# --------------------------------------------------------------------------- promote


@app.command("promote")
def promote_cmd(
    ident: str = typer.Argument(..., metavar="ID-PREFIX", help="The session's id, or the start of it."),
    state: str = typer.Option("accepted", "--state", help="accepted | rejected | superseded | stale"),
    note: Optional[str] = typer.Option(None, "--note", help="Why: kept with the state and shown with every hit."),
    tag: Optional[list[str]] = typer.Option(None, "--tag"),
    to: Optional[Path] = typer.Option(None, "--to", help="Also append a Markdown block to this file."),
    harness: Optional[str] = typer.Option(None, "--harness"),
) -> None:
    """Distil a session into a curated note with provenance and a lifecycle state."""
    from deja.queries import show as sh
    from deja.stages.sources import harnesses

    state = state.strip().lower()
    if state not in STATES:
        raise Fail(f"--state takes one of {', '.join(STATES)}, not {state!r}")
    _check_harness(harness)
    named, ident = sh.split_harness(sh.clean_id(ident), harnesses())
    harness = harness or named
    live = _live_or_fail()
    try:
        try:
            res = sh.resolve(live, ident, harness)
        except sh.ShowError as exc:
            raise Fail(str(exc))
        row = res.row
        key = row["session_key"]
        covered = []
        if state == "accepted" and row.get("project"):
            covered = live.con.execute(
                "SELECT s.harness || ':' || s.session_id FROM sessions s JOIN lifecycle l ON l.session_key = s.session_key "
                "WHERE l.state = 'accepted' AND s.project = ? AND s.session_key <> ? AND s.harness <> 'deja'",
                [row["project"], key],
            ).fetchall()
    finally:
        live.close()
    if res.notice:
        _err(res.notice)
    if covered:
        _err(f"note: {len(covered)} other accepted session(s) in {row['project']} may cover the same ground: "
             + ", ".join(c[0] for c in covered[:3]))
    now = _now_utc()
    title = " ".join((row.get("title") or "").split()) or key
    why = (note or "").strip()
    lines = [title]
    if why:
        lines.append(f"Why: {why}")
    if row.get("decision"):
        lines.append(f"Decision: {row['decision']}")
    lines.append(f"[{state}] distilled from {key}")
    rec = {"ts": _rfc3339(now), "project": row.get("project") or "", "text": "\n".join(lines),
           "kind": "promoted", "session": key, "state": state, "title": title}
    src = row.get("updated") or row.get("started")
    if isinstance(src, datetime):
        rec["src_ts"] = _rfc3339(src)
    if why:
        rec["note"] = why
    tags = clean_tags(tag)
    if tags:
        rec["tags"] = tags
    append_note(rec)
    note_key = "deja:" + _notes().promoted_session_id(key)
    at = now.replace(tzinfo=None)

    def record(con):
        rows = [[key, state, why or None, at]]
        if note_key != key:
            rows.append([note_key, state, why or None, at])
        con.executemany('INSERT INTO lifecycle (session_key, state, note, "at") VALUES (?, ?, ?, ?)', rows)

    _catalog_write(record)
    if to is not None:
        block = [f"\n## {title} [{state}]\n", f"- session: `{key}`" + (f" ({_day(src)})" if src else "")]
        if why:
            block.append(f"- why: {why}")
        if row.get("decision"):
            block.append(f"- decision: {row['decision']}")
        block.append(f"- recorded: {_rfc3339(now)} by `deja promote`\n")
        to.parent.mkdir(parents=True, exist_ok=True)
        with open(to, "a", encoding="utf-8") as fh:
            fh.write("\n".join(block))
    print(f"{key} marked {state}" + (f": {why}" if why else ""))
    _refresh_index("the promoted note")


# --------------------------------------------------------------------------- forget


def _tombstone_rows() -> list[tuple[str, str, str, str]]:
    """(key, project, created, reason): the primary file's entries, with what the catalog knows."""
    n = _notes()
    known: dict[str, tuple] = {}
    store = _store()
    if store.exists():
        try:
            con = store.connect(read_only=True, retries=20)
            try:
                for k, p, c, r in con.execute("SELECT session_key, project, created, reason FROM tombstones").fetchall():
                    known[k] = (k, p or "", _day(c) if c else "", r or "")
            finally:
                con.close()
        except Exception:
            pass
    rows = {k: known.get(k, (k, "", "", "")) for k in n.file_tombstones()}
    for k, v in known.items():
        rows.setdefault(k, v)
    return sorted(rows.values())


class _Forget:
    """Remove sessions from the live store: a commit of the index run without reads."""

    @staticmethod
    def run(keys: set[str]) -> None:
        from deja.pipeline.run import Run

        class ForgetRun(Run):
            def execute(self):
                self.load_state()  # drops tombstoned sessions from file_sessions (pipeline/run.py)
                self.commit(set(), [])
                con = self.store.connect(retries=100)
                try:
                    con.execute("DELETE FROM file_sessions WHERE session_key IN (SELECT session_key FROM tombstones)")
                finally:
                    con.close()

            def purge_records(self, purge):
                return super().purge_records(keys, column="session_key")

        store = _store()
        with store.writer_lock(config.lock_wait_seconds(), notice=_err):
            store.init()
            ForgetRun(store, os.environ, False, None).execute()


@app.command("forget")
def forget_cmd(
    session: Optional[str] = typer.Option(None, "--session", help="A session id (prefix); harness:id works too."),
    project: Optional[str] = typer.Option(None, "--project", help="Every session whose project contains this."),
    before: Optional[str] = typer.Option(None, "--before", help="Only sessions last active before this (30d, or a date)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="List what would be forgotten; change nothing."),
    all_matches: bool = typer.Option(False, "--all-matches", help="An ambiguous --session prefix forgets every match."),
    list_: bool = typer.Option(False, "--list", help="Show the tombstones."),
    unforget: Optional[str] = typer.Option(None, "--unforget", metavar="HARNESS:ID", help="Lift one tombstone."),
) -> None:
    """Remove sessions from the index and write tombstones so re-indexing cannot bring them back."""
    if list_:
        rows = _tombstone_rows()
        for k, p, c, r in rows:
            print("  ".join(x for x in (k, p, c, r) if x))
        if not rows:
            _err("no tombstones: nothing has been forgotten")
        return
    if unforget:
        _unforget(unforget.strip().strip("'\"`"))
        return
    if not (session or project or before):
        raise Fail("forget needs --session, --project or --before (or --list, --unforget)")
    cutoff = _parse_before(before) if before else None
    packets = _packet_matches(session, project, cutoff)
    try:
        matches, notice = _forget_matches(session, project, cutoff, all_matches)
    except Fail:
        if not packets:  # a session known only by its recovery packet is still forgettable
            raise
        matches, notice = [], ""
    if notice:
        _err(notice)
    if not matches and not packets:
        _err("no session matches; nothing forgotten")
        return
    for m in matches:
        print(f"{m['key']}  {_day(m['updated'] or m['started'])}  {m['project'] or ''}  "
              f"{_elide(' '.join((m['title'] or '').split()), 60)}".rstrip())
    for p in packets:
        print(f"{p['key']}  {_day(p['created'])}  {p['workspace']}  (compaction-recovery packet)")
    if dry_run:
        n = len(matches) + len(packets)
        _err(f"would forget {n} session{'s' if n != 1 else ''} or packet{'s' if n != 1 else ''} "
             "(dry run: nothing changed)")
        return
    reason = "deja forget " + " ".join(f"{f} {v}" for f, v in (("--session", session), ("--project", project),
                                                                 ("--before", before)) if v)
    if packets:
        _forget_packets(packets, reason)
        _err(f"removed {len(packets)} compaction-recovery packet{'s' if len(packets) != 1 else ''}")
    if not matches:
        return
    keys = {m["key"] for m in matches}
    _write_tombstones(matches, reason)
    try:
        _Forget.run(keys)
    except Exception as exc:
        from deja.stages.store.catalog import Busy

        if isinstance(exc, Busy):
            raise Fail(f"tombstones written; {exc}: the sessions leave the index on its next run")
        raise
    _err(f"forgot {len(keys)} session{'s' if len(keys) != 1 else ''}; tombstones in {_notes().tombstones_path()}")


def _forget_matches(session, project, cutoff, all_matches) -> tuple[list[dict], str]:
    from deja.queries import show as sh
    from deja.stages.sources import harnesses

    live = _live_or_fail()
    notice = ""
    try:
        if not live.has("sessions"):
            return [], ""
        where, params = ["true"], []
        if session:
            named, ident = sh.split_harness(sh.clean_id(session), harnesses())
            cands = sh.candidates(live, ident, named)
            if not cands:
                raise Fail(f"no session matches id {ident!r}")
            exact = [c for c in cands if c["session_id"].lower() == ident.lower()]
            if not all_matches:
                pick = (exact or cands)[:1]
                if len(exact or cands) > 1:
                    notice = (f"id {ident!r} matches {len(exact or cands)} sessions; forgetting the most recent, "
                              f"{pick[0]['session_key']} (--all-matches forgets every one)")
                cands = pick
            where.append("session_key IN (SELECT unnest(?))")
            params.append([c["session_key"] for c in cands])
        if project:
            # notes are primary data: a project-wide forget leaves them (forget one by --session)
            where.append("contains(lower(project), lower(?)) AND harness <> 'deja'")
            params.append(project)
        if cutoff is not None:
            where.append("coalesce(updated, started) < ?")
            params.append(cutoff)
        rows = live.con.execute(
            f"SELECT session_key AS key, harness, session_id, project, title, started, updated FROM sessions "
            f"WHERE {' AND '.join(where)} ORDER BY updated DESC NULLS LAST, session_key", params).fetchall()
        names = ["key", "harness", "session_id", "project", "title", "started", "updated"]
        return [dict(zip(names, r)) for r in rows], notice
    finally:
        live.close()


def _packet_matches(session, project, cutoff) -> list[dict]:
    """Recovery packets of the sessions being forgotten, indexed or not yet."""
    store = _store()
    if not store.exists():
        return []
    try:
        con = store.connect(read_only=True, retries=20)
        try:
            rows = con.execute("SELECT harness, session_id, workspace, created FROM packets").fetchall()
        finally:
            con.close()
    except Exception:
        return []
    from deja.stages.policy import project_excluded

    ident = (session or "").strip().strip("'\"`").lower()
    out = []
    for harness, sid, ws, created in rows:
        key = f"{harness}:{sid}"
        if ident and not (sid.lower().startswith(ident) or key.lower().startswith(ident)):
            continue
        if project and not project_excluded(ws, [project]):
            continue
        if cutoff is not None and created is not None and created.replace(tzinfo=timezone.utc) >= cutoff:
            continue
        out.append({"key": key, "harness": harness, "session_id": sid, "workspace": ws, "created": created,
                    "project": ws})
    return out


def _forget_packets(packets: list[dict], reason: str) -> None:
    """Remove the packets and tombstone their sessions, so no later capture keeps them again."""
    from deja.hooks.packet import store as pstore

    _write_tombstones(packets, reason)

    def drop(con):
        pstore.remove(con, _store().root, [(p["session_id"], p["workspace"]) for p in packets])

    _catalog_write(drop)


def _write_tombstones(matches: list[dict], reason: str) -> None:
    n = _notes()
    path = n.tombstones_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    have = set(n.file_tombstones())
    new = [m["key"] for m in matches if m["key"] not in have]
    if new:
        with open(path, "a", encoding="utf-8") as fh:
            if path.stat().st_size and not path.read_bytes().endswith(b"\n"):
                fh.write("\n")
            fh.write("".join(k + "\n" for k in new))
    now = _now_utc().replace(tzinfo=None)

    def record(con):
        con.executemany("INSERT OR REPLACE INTO tombstones VALUES (?, ?, ?, ?)",
                        [[m["key"], m["project"] or "", now, reason] for m in matches])

    _catalog_write(record)


def _unforget(key: str) -> None:
    n = _notes()
    if ":" not in key:
        raise Fail("--unforget takes harness:id, as `deja forget --list` prints it")
    listed = {r[0] for r in _tombstone_rows()}
    if key not in listed:
        raise Fail(f"no tombstone for {key} (see `deja forget --list`)")
    path = n.tombstones_path()
    if path.exists():
        kept = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip() != key]
        tmp = path.with_suffix(".tmp")
        tmp.write_text("".join(ln + "\n" for ln in kept), encoding="utf-8")
        os.replace(tmp, path)
    harness = key.split(":", 1)[0]

    def lift(con):
        con.execute("DELETE FROM tombstones WHERE session_key = ?", [key])
        # its files were read while it was tombstoned: read that harness's files again
        con.execute("UPDATE manifest SET content_version = -1 WHERE harness = ?", [harness])

    _catalog_write(lift)
    print(f"{key} unforgotten")
    _err(f"re-reading the {harness} store to bring it back")
    _refresh_index("the change")


# --------------------------------------------------------------------------- stats


def _filters(harness, project, since) -> tuple[str, list]:
    where, params = ["true"], []
    if harness:
        where.append("harness = ?")
        params.append(harness)
    if project:
        where.append("contains(lower(project), lower(?))")
        params.append(project)
    if since:
        where.append("coalesce(updated, started) >= ?")
        params.append(datetime.fromtimestamp(_since_ms(since) / 1000, timezone.utc))
    return " AND ".join(where), params


_QUESTION_START = re.compile(
    r"^(what|why|how|when|where|which|who|whose|did|does|do|is|are|was|were|can|should|would|"
    r"что|почему|как|когда|где|какой|какая|какие|кто|чей|можно|нужно|зачем)\b", re.I)


def _stem(text: str) -> str:
    return " ".join(re.sub(r"[^\w\-]+", " ", text.lower()).split())


def collect_stats(live, harness=None, project=None, since=None) -> dict:
    """The numbers of cli-contract §3.6 / §6 that the store can answer, plus the text-mode extras."""
    con = live.con
    where, params = _filters(harness, project, since)
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
            st["date_range"] = {"start": _day(min(stamps)), "end": _day(max(stamps))}
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
    st.update(_recall_stats(live))
    st["recovery"] = _recovery_stats(live)
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
    out["commands"] = con.execute(
        f"SELECT regexp_replace(split_part(text, chr(10), 1), '\\s+→ exit -?\\d+$', '') AS c, count(*) AS n {base} "
        f"AND role = 'command' GROUP BY c ORDER BY n DESC, c LIMIT 10").fetchall()
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


def _recall_stats(live) -> dict:
    """From the catalog's usage table (≤14 days): kinds `recall` (served to an agent), `inject`
    (session-start injection), `dejavu` (a prompt matched prior work), `handoff`."""
    recall = {"recalls_served": 0, "injections": 0, "recall_sessions": 0, "injected_sessions": 0,
              "bytes": 0, "injected_bytes": 0, "dejavu_moments": 0, "empty_result_rate": 0.0}
    out = {"recall": recall, "week_recalls": 0, "week_bytes": 0, "week_injected": 0, "handoffs_received": 0}
    rows = _usage_rows(live)
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
        if kind == "recall":
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
        recall["since"] = _rfc3339(oldest.replace(tzinfo=timezone.utc))
    return out


def _usage_rows(live) -> list[tuple]:
    """(t, kind, bytes, sessions, empty) from the hooks' bounded usage log
    (``<index>.usage``, hooks/packet/metric.py)."""
    from deja.hooks.packet import metric

    rows = []
    for ev in metric.events(live.root, ("recall", "inject", "dejavu", "handoff")):
        try:
            t = datetime.strptime(str(ev.get("t", ""))[:19], "%Y-%m-%dT%H:%M:%S")
        except ValueError:
            continue
        keys = [k for k in str(ev.get("sessions") or "").split() if k]
        rows.append((t, ev.get("kind"), int(ev.get("bytes") or 0), keys, not ev.get("n")))
    return rows


def _recovery_stats(live) -> dict:
    """Seed 000: raw tool calls between a capture and the first editing tool."""
    from deja.hooks.packet import metric

    metric.settle_pending(live.root)
    return metric.summary(live.root)


def sparkline(values: list[int]) -> str:
    if not values:
        return ""
    top = max(values) or 1
    return "".join(SPARK[min(len(SPARK) - 1, int(v * (len(SPARK) - 1) / top + 0.5))] if v else SPARK[0] for v in values)


def public_stats(st: dict) -> dict:
    return {k: v for k, v in st.items() if not k.startswith("_")}


def heat_grid(days: dict[str, int], today: date | None = None, weeks: int = 52) -> tuple[list[date], list[list[int]]]:
    """GitHub-style: columns are weeks (Monday first), oldest left; the last column holds today."""
    today = today or date.today()
    last_monday = today - timedelta(days=today.weekday())
    first = last_monday - timedelta(weeks=weeks - 1)
    cols = [first + timedelta(weeks=i) for i in range(weeks)]
    grid = [[-1] * weeks for _ in range(7)]
    for c, monday in enumerate(cols):
        for r in range(7):
            d = monday + timedelta(days=r)
            if d <= today:
                grid[r][c] = days.get(d.isoformat(), 0)
    return cols, grid


def _levels(grid: list[list[int]]) -> list[int]:
    vals = sorted(v for row in grid for v in row if v > 0)
    if not vals:
        return [1, 1, 1]
    q = lambda f: vals[min(len(vals) - 1, int(f * len(vals)))]  # noqa: E731
    return [q(0.25), q(0.5), q(0.75)]


def _level(v: int, cuts: list[int]) -> int:
    if v <= 0:
        return 0
    return 1 + sum(1 for c in cuts if v > c)


def heatmap_text(days: dict[str, int], color: bool, today: date | None = None) -> list[str]:
    cols, grid = heat_grid(days, today)
    cuts = _levels(grid)
    glyph = ["·", "░", "▒", "▓", "█"]
    shades = ["\033[38;5;240m", "\033[38;5;22m", "\033[38;5;28m", "\033[38;5;34m", "\033[38;5;46m"]
    head = [" "] * len(cols)
    last = None
    for i, monday in enumerate(cols):
        if monday.month != last and i + 3 <= len(cols):
            label = monday.strftime("%b")
            for j, ch in enumerate(label):
                if i + j < len(head):
                    head[i + j] = ch
            last = monday.month
    lines = ["    " + "".join(head)]
    for r, name in enumerate(["Mon", "", "Wed", "", "Fri", "", "Sun"]):
        cells = []
        for v in grid[r]:
            if v < 0:
                cells.append(" ")
                continue
            lv = _level(v, cuts)
            cells.append(f"{shades[lv]}{glyph[lv]}\033[0m" if color else glyph[lv])
        lines.append(f"{name:<4}" + "".join(cells))
    lines.append("    less " + " ".join(glyph) + " more")
    return lines


def _fmt(n: int) -> str:
    return f"{n:,}"


def stats_text(st: dict, color: bool) -> str:
    from deja.stages.display import sanitize_display

    width = _term_width()
    out = []
    dr = st.get("date_range")
    span = f", {dr['start']} → {dr['end']}" if dr else ""
    out.append(f"{_fmt(st['total_sessions'])} sessions, {_fmt(st['total_messages'])} messages{span}")
    if st["harnesses"]:
        out.append("  " + "  ".join(f"{h['harness']} {_fmt(h['sessions'])} sessions / {_fmt(h['messages'])} messages"
                                    for h in st["harnesses"]))
    out.append("")
    out.append("activity, last 52 weeks (messages per day)")
    out.extend(heatmap_text(st["_days"], color))
    out.append("")
    if st["monthly"]:
        out.append(f"monthly   {st['sparkline']}  ({st['monthly'][0]['month']} … {st['monthly'][-1]['month']})")
    if st.get("busiest_day"):
        out.append(f"busiest   {st['busiest_day']['date']} ({_fmt(st['busiest_day']['messages'])} messages)")
    ls = st.get("longest_session")
    if ls:
        title = sanitize_display(" ".join((ls["title"] or "").split())) or "(untitled)"
        out.append(_elide(f"longest   {ls['harness']} {ls['id'][:12]} {ls['project']} — {title} "
                          f"({_fmt(ls['messages'])} messages)", width))
    if st["top_projects"]:
        out.append("")
        out.append("top projects")
        for p in st["top_projects"][:5]:
            out.append(f"  {p['sessions']:>5}  {sanitize_display(p['project'])}")
    if st["_commands"]:
        out.append("")
        out.append("top commands")
        for c, n in st["_commands"]:
            out.append(_elide(f"  {n:>5}  {sanitize_display(c)}", width))
    if st["_files"]:
        out.append("")
        out.append("top files")
        for f, n in st["_files"]:
            out.append(_elide(f"  {n:>5}  {sanitize_display(f)}", width))
    r = st["recall"]
    out.append("")
    out.append(f"recall (14 days): {r['recalls_served']} recalls served, {r['injections']} injections, "
               f"{r['dejavu_moments']} déjà-vu moments")
    rc = st.get("recovery") or {}
    if rc.get("samples") or rc.get("pending") or rc.get("unmeasured"):
        measured = (f"median {rc['median']}, p75 {rc['p75']} raw tool calls from capture to the first edit "
                    f"({rc['samples']} sample{'s' if rc['samples'] != 1 else ''})" if rc.get("samples") else "no samples yet")
        out.append(f"compaction recovery: {measured}; {rc.get('pending', 0)} pending, "
                   f"{rc.get('unmeasured', 0)} unmeasured")
    if st.get("repeat_questions"):
        out.append(f"repeat questions: {st['repeat_questions']} asked in two or more sessions")
    return "\n".join(out) + "\n"


def card_lines(st: dict) -> list[tuple[str, str]]:
    """(label, value) rows shared by the terminal card and the SVG card."""
    dr = st.get("date_range")
    rows = [("sessions", _fmt(st["total_sessions"])), ("messages", _fmt(st["total_messages"]))]
    if dr:
        rows.append(("active", f"{dr['start']} → {dr['end']}"))
    if st["harnesses"]:
        rows.append(("agents", ", ".join(h["harness"] for h in st["harnesses"][:4])))
    if st["top_projects"]:
        rows.append(("top project", st["top_projects"][0]["project"]))
    if st.get("busiest_day"):
        rows.append(("busiest day", f"{st['busiest_day']['date']} ({_fmt(st['busiest_day']['messages'])})"))
    ls = st.get("longest_session")
    if ls:
        rows.append(("longest", f"{ls['messages']} messages ({ls['harness']})"))
    return rows


def card_text(st: dict) -> str:
    from deja.stages.display import sanitize_display

    rows = [(k, sanitize_display(v)) for k, v in card_lines(st)]
    inner = 44
    rows = [(k, _elide(v, inner - 16)) for k, v in rows]
    out = ["╭" + "─" * (inner + 2) + "╮", "│ " + "deja · memory".ljust(inner) + " │", "├" + "─" * (inner + 2) + "┤"]
    for k, v in rows:
        out.append("│ " + f"{k:<14}{v}".ljust(inner) + " │")
    if st["sparkline"]:
        out.append("│ " + ("monthly       " + st["sparkline"][-(inner - 14):]).ljust(inner) + " │")
    out.append("╰" + "─" * (inner + 2) + "╯")
    return "\n".join(out) + "\n"


def _x(s) -> str:
    return html.escape(str(s), quote=True)


def card_svg(st: dict) -> str:
    """A self-contained SVG card (no external fonts or images): numbers, sparkline bars, heat strip."""
    from deja.stages.display import sanitize_display

    W, pad = 480, 24
    rows = [(k, _elide(sanitize_display(v), 38)) for k, v in card_lines(st)]
    line_h = 22
    top = 64
    bars_y = top + line_h * len(rows) + 16
    bars_h = 40
    heat_y = bars_y + bars_h + 20
    cell = 7
    H = heat_y + 7 * cell + pad
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" role="img" '
        f'aria-label="deja memory stats">',
        "<title>deja memory stats</title>",
        f'<rect id="card" x="1" y="1" width="{W - 2}" height="{H - 2}" rx="12" fill="#0d1117" stroke="#30363d" stroke-width="2"/>',
        f'<text x="{pad}" y="40" font-family="system-ui, -apple-system, Segoe UI, sans-serif" font-size="20" '
        f'font-weight="700" fill="#e6edf3">deja · memory</text>',
    ]
    for i, (k, v) in enumerate(rows):
        y = top + i * line_h + 14
        parts.append(f'<text class="row" x="{pad}" y="{y}" font-family="system-ui, sans-serif" font-size="14" '
                     f'fill="#8b949e">{_x(k)}</text>')
        parts.append(f'<text class="row" x="{pad + 120}" y="{y}" font-family="system-ui, sans-serif" font-size="14" '
                     f'fill="#e6edf3">{_x(v)}</text>')
    monthly = [m["messages"] for m in st["monthly"]][-24:]
    if monthly:
        top_v = max(monthly) or 1
        bw = (W - 2 * pad) / len(monthly)
        for i, v in enumerate(monthly):
            h = max(2.0, bars_h * v / top_v) if v else 1.0
            parts.append(f'<rect x="{pad + i * bw + 1:.1f}" y="{bars_y + bars_h - h:.1f}" width="{max(1.0, bw - 2):.1f}" '
                         f'height="{h:.1f}" fill="#39d353"><title>{_x(st["monthly"][-len(monthly) + i]["month"])}: {v}</title></rect>')
    _, grid = heat_grid(st["_days"])
    cuts = _levels(grid)
    shades = ["#161b22", "#0e4429", "#006d32", "#26a641", "#39d353"]
    for c in range(len(grid[0])):
        for r in range(7):
            v = grid[r][c]
            if v < 0:
                continue
            parts.append(f'<rect x="{pad + c * (cell + 1.2):.1f}" y="{heat_y + r * cell}" width="{cell - 1}" '
                         f'height="{cell - 1}" fill="{shades[_level(v, cuts)]}"/>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


_PAGE_CSS = """
:root{color-scheme:light dark;--bg:#fff;--fg:#1f2328;--mute:#656d76;--line:#d0d7de;--acc:#0969da}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--mute:#8b949e;--line:#30363d;--acc:#58a6ff}}
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;background:var(--bg);color:var(--fg);margin:0;padding:1.5rem;max-width:70rem}
h1{font-size:1.4rem;margin:0 0 .3rem}.mute{color:var(--mute)}
.bar{display:flex;gap:.6rem;flex-wrap:wrap;align-items:center;margin:1rem 0;position:sticky;top:0;background:var(--bg);padding:.5rem 0;border-bottom:1px solid var(--line)}
input,select{font:inherit;padding:.3rem .5rem;border:1px solid var(--line);border-radius:6px;background:var(--bg);color:var(--fg)}
input[type=search]{flex:1;min-width:14rem}
.s{border:1px solid var(--line);border-radius:8px;margin:.6rem 0;padding:.2rem .8rem}
.s summary{cursor:pointer;padding:.4rem 0}.s summary b{font-weight:600}
.tag{font-size:.8rem;border:1px solid var(--line);border-radius:1rem;padding:0 .45rem;margin-right:.3rem;color:var(--mute)}
.lc-rejected{color:#cf222e}.lc-accepted{color:#1a7f37}
.m{border-top:1px dashed var(--line);padding:.4rem 0;white-space:pre-wrap;word-wrap:break-word;font-size:.9rem}
.m .r{font-weight:600;color:var(--acc);margin-right:.4rem}.note{font-size:.85rem}
.day h2{font-size:1rem;margin:1.2rem 0 .3rem;border-bottom:1px solid var(--line)}
"""


def _html_page(title: str, body: str, script: str = "") -> str:
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            # nothing on this page may reach the network: no external loads, no connections
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
            "script-src 'unsafe-inline'; img-src data:\">"
            f"<title>{_x(title)}</title><style>{_PAGE_CSS}</style></head><body>{body}"
            + (f"<script>{script}</script>" if script else "") + "</body></html>\n")


def stats_html(live, st: dict) -> str:
    """A browsable timeline: the card, then sessions day by day, newest first."""
    from deja.stages.display import sanitize_display

    rows = []
    if live.has("sessions"):
        rows = live.con.execute(
            "SELECT harness, session_id, project, title, messages, coalesce(updated, started) AS t FROM sessions "
            "WHERE session_key IN (SELECT k FROM _keys) ORDER BY t DESC NULLS LAST, session_id").fetchall()
    body = [f"<h1>deja · timeline</h1><p class=\"mute\">{_fmt(st['total_sessions'])} sessions, "
            f"{_fmt(st['total_messages'])} messages</p>",
            f"<figure id=\"card\">{card_svg(st)}</figure>"]
    day = None
    for h, sid, proj, title, n, t in rows:
        d = _day(t) or "undated"
        if d != day:
            if day is not None:
                body.append("</ul></section>")
            body.append(f"<section class=\"day\"><h2>{_x(d)}</h2><ul>")
            day = d
        body.append(f"<li><span class=\"tag\">{_x(h)}</span><b>{_x(sanitize_display(title or '(untitled)'))}</b> "
                    f"<span class=\"mute\">{_x(proj or '')} · {int(n or 0)} messages · {_x(sid)}</span></li>")
    if day is not None:
        body.append("</ul></section>")
    return _html_page("deja timeline", "".join(body))


@app.command("stats")
def stats_cmd(
    as_json: bool = typer.Option(False, "--json"),
    harness: Optional[str] = typer.Option(None, "--harness"),
    project: Optional[str] = typer.Option(None, "--project", help="Project name contains this."),
    since: Optional[str] = typer.Option(None, "--since", help="Active within this long (30d, 12h)."),
    card_file: Optional[Path] = typer.Argument(None, metavar="[FILE.svg]", help="With --card: write the card here as SVG."),
    card: bool = typer.Option(False, "--card", help="Draw a card in the terminal; `--card FILE.svg` writes it as SVG."),
    html_out: Optional[Path] = typer.Option(None, "--html", metavar="FILE", help="Write a browsable timeline (HTML)."),
) -> None:
    """What your memory holds: sessions, messages, activity, projects, recall."""
    _check_harness(harness)
    if since:
        _since_ms(since)
    if card_file is not None and not card:
        raise Fail(f"stats takes no argument {str(card_file)!r}; `--card FILE.svg` writes the card")
    live = _live_or_fail()
    try:
        st = collect_stats(live, harness, project, since)
        page = stats_html(live, st) if html_out else None
    finally:
        live.close()
    if html_out:
        html_out.parent.mkdir(parents=True, exist_ok=True)
        html_out.write_text(page, encoding="utf-8")
        _err(f"timeline written to {html_out}")
    if card:
        if card_file is None:
            sys.stdout.write(card_text(st))
        else:
            out = card_file
            if out.suffix.lower() != ".svg":
                raise Fail("--card FILE writes SVG: give it a name ending in .svg")
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(card_svg(st), encoding="utf-8")
            _err(f"card written to {out}")
        if not as_json:
            return
    if as_json:
        _out_json(public_stats(st))
    elif not html_out:
        sys.stdout.write(stats_text(st, color=sys.stdout.isatty()))
    if not st["total_sessions"]:
        filters = [f"{k} {v}" for k, v in (("--harness", harness), ("--project", project), ("--since", since)) if v]
        _err("no session matches " + ", ".join(filters) if filters else "the index holds no sessions yet; run `deja index`")


# --------------------------------------------------------------------------- view


_VIEW_JS = r"""
const data = JSON.parse(document.getElementById('deja-data').textContent);
const $ = (s) => document.querySelector(s);
const list = $('#sessions'), q = $('#q'), fh = $('#harness'), fp = $('#project'), count = $('#count');
function opt(sel, values) { for (const v of values) { const o = document.createElement('option'); o.value = v; o.textContent = v; sel.appendChild(o); } }
opt(fh, [...new Set(data.sessions.map(s => s.harness))].sort());
opt(fp, [...new Set(data.sessions.map(s => s.project).filter(Boolean))].sort());
function el(tag, cls, text) { const e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined) e.textContent = text; return e; }
function card(s) {
  const d = el('details', 's'); d.dataset.key = s.harness + ':' + s.id;
  const sum = el('summary'); sum.appendChild(el('span', 'tag', s.harness)); sum.appendChild(el('b', '', s.title || '(untitled)'));
  sum.appendChild(el('span', 'mute', '  ' + [s.project, s.date, s.messages + ' messages', s.id].filter(Boolean).join(' · ')));
  if (s.lifecycle) sum.appendChild(el('span', 'lc-' + s.lifecycle, '  [' + s.lifecycle + (s.lifecycle_note ? ': ' + s.lifecycle_note : '') + ']'));
  d.appendChild(sum);
  for (const m of s.m) { const p = el('div', 'm'); p.appendChild(el('span', 'r', m[0])); p.appendChild(document.createTextNode(m[1])); d.appendChild(p); }
  if (s.more) d.appendChild(el('p', 'mute note', s.more + ' more messages not included here (deja show ' + s.harness + ':' + s.id + ' prints them all)'));
  return d;
}
function render() {
  const words = q.value.toLowerCase().split(/\s+/).filter(Boolean), h = fh.value, p = fp.value;
  list.textContent = ''; let n = 0;
  for (const s of data.sessions) {
    if (h && s.harness !== h) continue;
    if (p && s.project !== p) continue;
    if (words.length && !words.every(w => s.hay.includes(w))) continue;
    if (n < 500) list.appendChild(card(s));
    n++;
  }
  count.textContent = n + ' of ' + data.sessions.length + ' sessions' + (n > 500 ? ' (first 500 shown; narrow the search)' : '');
}
for (const s of data.sessions) s.hay = [s.title, s.project, s.id, s.harness, ...s.m.map(m => m[1])].join('\n').toLowerCase();
// a link can carry a filter: view.html#q=words&harness=claude&project=src/shop
const hp = new URLSearchParams(location.hash.slice(1));
if (hp.get('q')) q.value = hp.get('q'); if (hp.get('harness')) fh.value = hp.get('harness'); if (hp.get('project')) fp.value = hp.get('project');
q.addEventListener('input', render); fh.addEventListener('change', render); fp.addEventListener('change', render);
render();
"""


def view_html(live) -> str:
    """The whole memory as one self-contained HTML file: data inline as JSON, rendered by inline JS."""
    from deja.queries.session_obj import COLUMNS
    from deja.stages.display import sanitize_display

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
                msgs.setdefault(key, []).append([role, sanitize_display(text[:VIEW_TEXT_CAP])
                                                 + ("…" if len(text) > VIEW_TEXT_CAP else "")])
        for r in rows:
            lc = r.get("lifecycle") or {}
            shown = msgs.get(r["session_key"], [])
            total = int(r.get("messages") or 0)
            sessions.append({
                "harness": r["harness"], "id": r["session_id"], "project": r.get("project") or "",
                "title": sanitize_display(" ".join((r.get("title") or "").split())),
                "date": _day(r.get("updated") or r.get("started")), "messages": total,
                "lifecycle": lc.get("state") or "", "lifecycle_note": lc.get("note") or "",
                "m": shown, "more": max(0, total - len(shown)),
            })
    payload = json.dumps({"sessions": sessions}, ensure_ascii=False)
    payload = payload.replace("</", "<\\/").replace("<!--", "<\\!--")  # safe inside <script>
    body = (
        "<h1>deja · memory</h1>"
        f"<p class=\"mute\">{len(sessions)} sessions from this machine's agent transcripts and notes. "
        f"Up to {VIEW_MESSAGES_PER_SESSION} messages per session are included (each cut at {VIEW_TEXT_CAP} "
        "characters); commands, files and tool output are left out. This file makes no network requests.</p>"
        "<div class=\"bar\"><input id=\"q\" type=\"search\" placeholder=\"search titles, projects, messages…\" autofocus>"
        "<select id=\"harness\"><option value=\"\">all harnesses</option></select>"
        "<select id=\"project\"><option value=\"\">all projects</option></select>"
        "<span id=\"count\" class=\"mute\"></span></div><main id=\"sessions\"></main>"
        f"<script type=\"application/json\" id=\"deja-data\">{payload}</script>"
        "<noscript><p>Turn on JavaScript to browse; the data is in the deja-data block of this file.</p></noscript>"
    )
    return _html_page("deja memory", body, _VIEW_JS)


@app.command("view")
def view_cmd(
    out: Optional[Path] = typer.Option(None, "--out", help="Where to write the HTML (default: beside the index)."),
    no_open: bool = typer.Option(False, "--no-open", help="Do not open it in a browser."),
) -> None:
    """The whole memory as one self-contained local HTML file."""
    live = _live_or_fail()
    try:
        page = view_html(live)
    finally:
        live.close()
    target = out or (config.index_dir() / "view.html")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(page, encoding="utf-8")
    os.replace(tmp, target)
    print(str(target))
    if no_open or not (sys.stdout.isatty() and sys.stdin.isatty()):
        return
    import webbrowser

    try:
        if not webbrowser.open(target.resolve().as_uri()):
            _err("no browser found; open the file yourself")
    except Exception:
        _err("could not open a browser; open the file yourself")
