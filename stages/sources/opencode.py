"""opencode's SQLite store, ``<data>/opencode/opencode.db`` (harness-formats
section 6; the schema checked against sst/opencode's ``session.sql.ts``).

``session(id, directory, title, parent_id, time_created, time_updated, …)``,
``message(id, session_id, time_created, data)`` and ``part(id, message_id,
data)``; ``data`` is JSON. A message's role is ``message.data.role``; its
speech is its ``text`` parts (``synthetic`` ones are opencode's own, left
out); its work is its ``tool`` parts: ``read`` names a file, ``bash`` runs a
command (exit code in ``state.metadata.exit``, output in ``state.output``),
``edit`` replaces ``oldString`` in ``filePath``, ``write`` writes one,
``apply_patch`` carries a patch. A session with ``parent_id`` is a subagent
(opencode's task tool), kept only with DEJA_INCLUDE_SUBAGENTS=1.

Read through ``sqlite_store``: a snapshot of the database, never the live
file. The older split-JSON store (``storage/{session,message,part}``) is
not read.
"""

from __future__ import annotations

from typing import Mapping

import orjson

from deja.stages import work_records as work
from deja.stages.sources import sqlite_store
from deja.stages.sources.base import Message, ReadResult, SessionPart, SourceFile
from deja.stages.sources.jsonl import clip, parse_ts
from deja.stages.sources.locate import opencode_db, opencode_files

HARNESS = "opencode"


def roots(env: Mapping[str, str]) -> list[str]:
    return [opencode_db(env)]


def discover(env: Mapping[str, str]) -> list[SourceFile]:
    return [SourceFile(p, HARNESS) for p in opencode_files(env)]


def read(path: str, start: int = 0) -> ReadResult:
    return sqlite_store.read_store(path, _read, "opencode")


def _read(snap) -> ReadResult:
    res = ReadResult()
    tables = snap.tables()
    if not {"session", "message", "part"} <= tables:
        return ReadResult(error="schema changed: no session/message/part tables (opencode store of another version)")
    cols = snap.columns("session")
    pick = ", ".join(c if c in cols else f"NULL AS {c}" for c in ("id", "directory", "title", "parent_id"))
    parts: dict[str, SessionPart] = {}
    for sid, directory, title, parent in snap.rows(f"SELECT {pick} FROM session ORDER BY id"):
        if not isinstance(sid, str):
            res.malformed += 1
            continue
        p = parts[sid] = SessionPart(harness=HARNESS, session_id=sid,
                                     cwd=directory if isinstance(directory, str) else "")
        if isinstance(title, str) and title.strip():
            p.title, p.title_rank = title.strip(), 1
        if isinstance(parent, str) and parent:
            p.kind, p.parent, p.spawned = "subagent", parent, True
    flags = {f: work.enabled(f) for f in ("PATHS", "COMMANDS", "EDITS", "TOOL_OUTPUT")}
    sql = ("SELECT m.session_id, m.id, m.time_created, m.data, p.data FROM message m "
           "LEFT JOIN part p ON p.message_id = m.id ORDER BY m.session_id, m.time_created, m.id, p.id")
    current, role, msg_ts, paths, n = None, "", None, [], 0
    seq = 0

    def flush():
        if current is not None and paths and flags["PATHS"]:
            files = work.files_record(paths)
            if files:
                parts[current[0]].messages.append(Message("files", files, msg_ts, byte_offset=seq))

    for sid, mid, created, mdata, pdata in snap.rows(sql):
        n += 1
        if n % 256 == 0:
            snap.check()
        if current != (sid, mid):
            flush()
            current, paths, seq = (sid, mid), [], seq + 1
            info = _json(mdata, res)
            role = info.get("role") if isinstance(info, dict) else None
            t = info.get("time") if isinstance(info, dict) else None
            msg_ts = parse_ts(t.get("created")) if isinstance(t, dict) else None
            msg_ts = msg_ts if msg_ts is not None else parse_ts(created)
            if sid not in parts:  # a message whose session row is gone
                parts[sid] = SessionPart(harness=HARNESS, session_id=sid)
        if role not in ("user", "assistant"):
            continue
        part = _json(pdata, res) if pdata is not None else None
        if not isinstance(part, dict):
            continue
        session = parts[sid]
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("text"), str) and not part.get("synthetic"):
            t = part.get("time")
            ts = parse_ts(t.get("start")) if isinstance(t, dict) else None
            text, cut = clip(part["text"])
            res.clipped += cut
            if text.strip():
                session.messages.append(Message(role, text, ts if ts is not None else msg_ts, byte_offset=seq))
        elif kind == "tool":
            session.messages.extend(_tool(part, session.cwd, msg_ts, seq, flags, paths))
    flush()
    res.sessions = [p for p in parts.values() if p.messages]
    return res


def _tool(part: dict, cwd: str, ts, seq: int, flags: dict, paths: list[str]) -> list[Message]:
    name = part.get("tool")
    state = part.get("state")
    if not isinstance(name, str) or not isinstance(state, dict):
        return []
    args = state.get("input") if isinstance(state.get("input"), dict) else {}
    out: list[Message] = []
    path = args.get("filePath") if isinstance(args.get("filePath"), str) else ""
    if name in ("read", "edit", "write") and path:
        paths.append(path)
    if name == "edit" and flags["EDITS"]:
        rec = work.edit_record(path, args.get("oldString"))
        if rec:
            out.append(Message("edit", rec, ts, tool=name, byte_offset=seq))
    if isinstance(args.get("patchText"), str):
        files, edits = work.patch_records(args["patchText"], cwd)
        if files:
            paths.extend(files.split("\n"))
        if flags["EDITS"]:
            out.extend(Message("edit", e, ts, tool=name, byte_offset=seq) for e in edits)
    if name == "bash" and isinstance(args.get("command"), str):
        meta = state.get("metadata") if isinstance(state.get("metadata"), dict) else {}
        code = meta.get("exit")
        code = code if type(code) is int else None
        rec = work.command_record(args["command"], code) if flags["COMMANDS"] else None
        if rec:
            out.append(Message("command", rec, ts, tool=name, exit_code=code, byte_offset=seq))
        output = state.get("output")
        if isinstance(output, str) and output.strip() and flags["TOOL_OUTPUT"]:
            failed = state.get("status") == "error" or (code is not None and code != 0)
            out.append(Message("tool-output", clip(output)[0], ts, tool=name, exit_code=code,
                               is_error=failed, byte_offset=seq))
    return out


def _json(value, res: ReadResult):
    try:
        return orjson.loads(value)
    except (orjson.JSONDecodeError, TypeError):
        res.malformed += 1
        return None
