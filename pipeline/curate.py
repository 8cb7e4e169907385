"""Curating memory by hand: remember, promote, forget (behind deja.pipeline.api).

Primary data lives outside the cache and is only ever appended to by these
(notes.jsonl) or kept as one line per entry (tombstones); the index is rebuilt
from it like from any agent's store:

* ``remember`` appends a note to notes.jsonl;
* ``promote`` appends a curated note with provenance (``harness:id``, state,
  why) and records the lifecycle state in the catalog's ``lifecycle`` table,
  which every later search hit of that session carries;
* ``forget`` writes tombstones (catalog and ``~/.config/deja/tombstones``) and
  removes the sessions from the live store; every index run skips them.

The files and catalog tables are written by deja.stages.store.memory.
"""

from __future__ import annotations

import os
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Iterable, Mapping

from deja.pipeline import access
from deja.pipeline.errors import Fail
from deja.queries.stats import rfc3339
from deja.stages.display import local_day
from deja.stages.store import config
from deja.stages.store import memory

STATES = ("accepted", "rejected", "superseded", "stale")
MAX_TAGS = 8


def _notes():
    from deja.stages.sources import notes

    return notes


def _store(env: Mapping[str, str]):
    from deja.stages.store.catalog import Store

    return Store(config.index_dir(env))


def _now_utc() -> datetime:
    return datetime.now(timezone.utc)


def cwd_project(cwd: str | None = None) -> str:
    """The project of a folder, as a session run there has it: its root (stages/sources/projects.py)."""
    from deja.stages.sources.projects import project_root

    return project_root(str(Path(cwd or os.getcwd()).resolve())) or "notes"


def clean_tags(tags: Iterable[str] | None, notice=None) -> list[str]:
    out: list[str] = []
    for t in tags or []:
        t = t.strip().lstrip("#").strip().lower()
        if t and t not in out:
            out.append(t)
    if len(out) > MAX_TAGS:
        access.tell(notice, f"deja: only the first {MAX_TAGS} tags are kept")
    return out[:MAX_TAGS]


def _catalog_write(fn, env: Mapping[str, str], notice):
    """``fn(con)`` on the catalog under the writer lock; a busy writer is a Fail."""
    from deja.stages.store.catalog import Busy

    try:
        return memory.catalog_write(_store(env), fn, config.lock_wait_seconds(env), access.as_deja_lines(notice))
    except Busy as exc:
        raise Fail(f"{exc}; try again when it finishes")


def parse_before(value: str) -> datetime:
    """--before: a duration (7d, 12h, 90m) back from now, or a date (YYYY-MM-DD, local midnight)."""
    v = value.strip()
    try:
        d = date.fromisoformat(v)
        return datetime(d.year, d.month, d.day).astimezone(timezone.utc)
    except ValueError:
        pass
    try:
        return datetime.fromtimestamp(access.since_ms(v) / 1000, timezone.utc)
    except Fail:
        raise Fail(f"--before takes a duration like 30d or 12h, or a date like 2026-01-31, not {value!r}")


# --------------------------------------------------------------------------- remember, promote


def _scrubbed(text: str, notice) -> str:
    """What a person or an agent asks deja to keep, redacted before it is
    written: notes.jsonl is primary data that outlives the index, and an
    agent may note a secret it saw."""
    from deja.stages.redact import redact

    out, counts = redact(text)
    if counts:
        n = sum(counts.values())
        access.tell(notice, f"deja: {n} secret{'s' if n != 1 else ''} redacted before saving "
                            f"({', '.join(sorted(counts))})")
    return out


def remember(body: str, project, tags, cwd, reindex_now: bool, env: Mapping[str, str], notice) -> dict:
    if not body:
        raise Fail("remember needs the note's text")
    body = _scrubbed(body, notice)
    proj = (project or "").strip() or cwd_project(cwd)
    now = _now_utc()
    rec = {"ts": rfc3339(now), "project": proj, "text": body}
    tags = clean_tags(tags, notice)
    if tags:
        rec["tags"] = tags
    path = memory.append_json_line(_notes().notes_path(env), rec)
    sid = _notes().note_session_id(proj, int(now.timestamp() * 1000))
    if reindex_now:
        access.reindex("the note", env, notice)
    return {"session": f"deja:{sid}", "project": proj, "path": str(path)}


def promote(ident: str, state: str, note, tags, to, harness, reindex_now: bool, env: Mapping[str, str],
            notice) -> dict:
    from deja.queries import show as sh

    state = state.strip().lower()
    if state not in STATES:
        raise Fail(f"--state takes one of {', '.join(STATES)}, not {state!r}")
    access.check_harness(harness)
    named, ident = access.split_id(ident)
    harness = harness or named
    live = access.open_store(env, notice)
    try:
        try:
            res = sh.resolve(live, ident, harness)
        except sh.ShowError as exc:
            raise Fail(str(exc))
        row = res.row
        key = row["session_key"]
        covered = sh.accepted_alongside(live, row["project"], key) if state == "accepted" and row.get("project") else []
    finally:
        live.close()
    if res.notice:
        access.tell(notice, f"deja: {res.notice}")
    if covered:
        access.tell(notice, f"deja: note: {len(covered)} other accepted session(s) in {row['project']} may cover the "
                         "same ground: " + ", ".join(covered[:3]))
    now = _now_utc()
    title = " ".join((row.get("title") or "").split()) or key
    why = _scrubbed((note or "").strip(), notice)
    lines = [title]
    if why:
        lines.append(f"Why: {why}")
    if row.get("decision"):
        lines.append(f"Decision: {row['decision']}")
    lines.append(f"[{state}] distilled from {key}")
    rec = {"ts": rfc3339(now), "project": row.get("project") or "", "text": "\n".join(lines),
           "kind": "promoted", "session": key, "state": state, "title": title}
    src = row.get("updated") or row.get("started")
    if isinstance(src, datetime):
        rec["src_ts"] = rfc3339(src)
    if why:
        rec["note"] = why
    tags = clean_tags(tags, notice)
    if tags:
        rec["tags"] = tags
    memory.append_json_line(_notes().notes_path(env), rec)
    note_key = "deja:" + _notes().promoted_session_id(key)
    at = now.replace(tzinfo=None)
    rows = [[key, state, why or None, at]]
    if note_key != key:
        rows.append([note_key, state, why or None, at])
    _catalog_write(lambda con: memory.record_lifecycle(con, rows), env, notice)
    if to is not None:
        to = Path(to)
        block = [f"\n## {title} [{state}]\n", f"- session: `{key}`" + (f" ({local_day(src)})" if src else "")]
        if why:
            block.append(f"- why: {why}")
        if row.get("decision"):
            block.append(f"- decision: {row['decision']}")
        block.append(f"- recorded: {rfc3339(now)} by `deja promote`\n")
        to.parent.mkdir(parents=True, exist_ok=True)
        with open(to, "a", encoding="utf-8") as fh:
            fh.write("\n".join(block))
    if reindex_now:
        access.reindex("the promoted note", env, notice)
    return {"session": key, "state": state, "note": why}


# --------------------------------------------------------------------------- forget


def tombstones(env: Mapping[str, str]) -> list[dict]:
    """The primary file's entries, with what the catalog knows of them, sorted."""
    known: dict[str, tuple] = {}
    for k, p, c, r in memory.tombstone_rows(_store(env)):
        known[k] = (k, p or "", local_day(c) if c else "", r or "")
    rows = {k: known.get(k, (k, "", "", "")) for k in _notes().file_tombstones(env)}
    for k, v in known.items():
        rows.setdefault(k, v)
    return [{"session": k, "project": p, "created": c, "reason": r} for k, p, c, r in sorted(rows.values())]


def forget_reason(session, project, before) -> str:
    return "deja forget " + " ".join(f"{f} {v}" for f, v in (("--session", session), ("--project", project),
                                                                ("--before", before)) if v)


def forget_plan(session, project, before, all_matches: bool, env: Mapping[str, str], notice) -> dict:
    """``{sessions, packets}`` a forget with these filters would remove."""
    if not (session or project or before):
        raise Fail("forget needs --session, --project or --before (or --list, --unforget)")
    cutoff = parse_before(before) if before else None
    packets = _packet_matches(session, project, cutoff, env)
    try:
        matches, said = _session_matches(session, project, cutoff, all_matches, env, notice)
    except Fail:
        if not packets:  # a session known only by its recovery packet is still forgettable
            raise
        matches, said = [], ""
    if said:
        access.tell(notice, f"deja: {said}")
    return {"sessions": matches, "packets": packets}


def forget_apply(plan: dict, reason: str, env: Mapping[str, str], notice) -> None:
    packets, matches = plan["packets"], plan["sessions"]
    if packets:
        _forget_packets(packets, reason, env, notice)
        access.tell(notice, f"deja: removed {len(packets)} compaction-recovery packet{'s' if len(packets) != 1 else ''}")
    if not matches:
        return
    keys = {m["key"] for m in matches}
    _write_tombstones(matches, reason, env, notice)
    try:
        _remove_sessions(keys, env, notice)
    except Exception as exc:
        from deja.stages.store.catalog import Busy

        if isinstance(exc, Busy):
            raise Fail(f"tombstones written; {exc}: the sessions leave the index on its next run")
        raise
    access.tell(notice, f"deja: forgot {len(keys)} session{'s' if len(keys) != 1 else ''}; "
                     f"tombstones in {_notes().tombstones_path(env)}")
    from deja.pipeline import embed

    try:  # their vectors (`deja embed`) go with them
        embed.forget(_store(env).root, keys)
    except Fail as exc:
        access.tell(notice, f"deja: their vectors stay until `deja embed` runs again ({exc})")
    # what this machine published of them to a team store leaves it too (deja team)
    from deja.pipeline import team

    own = [tuple(k.split(":", 1)) for k in sorted(keys) if ":imported-" not in k]
    if own and team.configured(env):
        gone = team.retract(own, env=env, notice=notice)
        if gone:
            access.tell(notice, "deja: removed them from the team store too")


def _session_matches(session, project, cutoff, all_matches, env, notice) -> tuple[list[dict], str]:
    from deja.queries import show as sh

    live = access.open_store(env, notice)
    said = ""
    try:
        if not live.has("sessions"):
            return [], ""
        keys = None
        if session:
            named, ident = access.split_id(session)
            cands = sh.candidates(live, ident, named)
            if not cands:
                raise Fail(f"no session matches id {ident!r}")
            exact = [c for c in cands if c["session_id"].lower() == ident.lower()]
            if not all_matches:
                pick = (exact or cands)[:1]
                if len(exact or cands) > 1:
                    said = (f"id {ident!r} matches {len(exact or cands)} sessions; forgetting the most recent, "
                            f"{pick[0]['session_key']} (--all-matches forgets every one)")
                cands = pick
            keys = [c["session_key"] for c in cands]
        return sh.sessions_where(live, keys, project, cutoff), said
    finally:
        live.close()


def _packet_matches(session, project, cutoff, env) -> list[dict]:
    """Recovery packets of the sessions being forgotten, indexed or not yet."""
    from deja.stages.policy import project_excluded

    ident = (session or "").strip().strip("'\"`").lower()
    out = []
    for harness, sid, ws, created in memory.packet_rows(_store(env)):
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


def _forget_packets(packets: list[dict], reason: str, env, notice) -> None:
    """Remove the packets and tombstone their sessions, so no later capture keeps them again."""
    from deja.hooks.packet import store as pstore

    _write_tombstones(packets, reason, env, notice)
    root = _store(env).root
    _catalog_write(lambda con: pstore.remove(con, root, [(p["session_id"], p["workspace"]) for p in packets]),
                   env, notice)


def _write_tombstones(matches: list[dict], reason: str, env, notice) -> None:
    n = _notes()
    memory.add_tombstone_lines(n.tombstones_path(env), [m["key"] for m in matches], set(n.file_tombstones(env)))
    now = _now_utc().replace(tzinfo=None)
    rows = [[m["key"], m["project"] or "", now, reason] for m in matches]
    _catalog_write(lambda con: memory.write_tombstones(con, rows), env, notice)


def _remove_sessions(keys: set[str], env, notice) -> None:
    """Remove sessions from the live store: a commit of the index run without reads."""
    from deja.pipeline.run import Run

    class ForgetRun(Run):
        def execute(self):
            self.load_state()  # drops tombstoned sessions from file_sessions (pipeline/run.py)
            self.commit(set(), [])
            memory.forget_file_sessions(self.store)

        def purge_records(self, purge, pairs=frozenset()):
            return super().purge_records(keys, column="session_key")

    store = _store(env)
    with store.writer_lock(config.lock_wait_seconds(env), notice=access.as_deja_lines(notice)):
        store.init()
        ForgetRun(store, env, False, None).execute()


def unforget(key: str, reindex_now: bool, env: Mapping[str, str], notice) -> str:
    if ":" not in key:
        raise Fail("--unforget takes harness:id, as `deja forget --list` prints it")
    if key not in {t["session"] for t in tombstones(env)}:
        raise Fail(f"no tombstone for {key} (see `deja forget --list`)")
    memory.remove_tombstone_line(_notes().tombstones_path(env), key)
    harness = key.split(":", 1)[0]
    _catalog_write(lambda con: memory.lift_tombstone(con, key, harness), env, notice)
    if reindex_now:
        access.reindex("the change", env, notice)
    return key
