"""opencode's SQLite store, ``<data>/opencode/opencode.db`` (harness-formats
section 6; the schema checked against sst/opencode's ``session.sql.ts``), and
the same store of each other build channel, ``opencode-<channel>.db``, and of
``OPENCODE_DB`` (``locate.opencode_dbs``). A session is keyed by its id alone:
opencode's ids carry the time and 14 random characters, so two databases never
give two sessions one id; the same id in two is one session copied (a
database copied to another channel's name, a JSON store imported into each).

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
file.

Before the database, opencode kept the same records as one JSON file each
(checked against the importer that moves them into the database,
``json-migration.ts``): ``storage/session/<projectID>/<sessionID>.json``
(``{id, directory, title, parentID, time}``), ``storage/message/<sessionID>/
<messageID>.json`` (``message.data`` with its ids) and ``storage/part/
<messageID>/<partID>.json``. Each session file is one source: read whole
with its messages and parts, through the same ``build`` as the database's
rows, so both generations give the same records. Kilo's CLI, an opencode
fork, keeps both generations too (``kilo.py`` reads them through here).
"""

from __future__ import annotations

import os
from typing import Iterable, Mapping

import orjson

from deja.stages import work_records as work
from deja.stages.sources import sqlite_store
from deja.stages.sources.base import Message, ReadResult, SessionPart, SourceFile
from deja.stages.sources.dialect import Dialect, first_text
from deja.stages.sources.jsonl import clip, json_cell, parse_ts, read_whole_document
from deja.stages.sources.locate import opencode_db, opencode_dbs, opencode_files

HARNESS = "opencode"

# opencode's own tool names and argument keys (its ``tool/*.ts``); ZCode's CLI
# keeps this store with Claude Code's names instead (zcode.py).
DIALECT = Dialect(
    file_tools=frozenset(("read", "edit", "write")),
    shell_tools=frozenset(("bash",)),
    path_keys=("filePath",),
    old_keys=("oldString",),
    command_keys=("command",),
)


def roots(env: Mapping[str, str]) -> list[str]:
    return opencode_dbs(env) or [opencode_db(env)]


def discover(env: Mapping[str, str]) -> list[SourceFile]:
    return [SourceFile(p, HARNESS) for p in opencode_files(env)]


def read(path: str, start: int = 0) -> ReadResult:
    return read_as(path, HARNESS)


def read_as(path: str, harness: str) -> ReadResult:
    """A database, or a session file of the JSON store, as ``harness``'s sessions."""
    if path.endswith(".json"):
        return read_whole_document(path, 0, lambda p, doc, _mtime: _read_json(p, doc, harness), harness)
    return sqlite_store.read_store(path, lambda snap: _read_db(snap, harness), harness)


def _read_db(snap, harness: str) -> ReadResult:
    tables = snap.tables()
    if not {"session", "message", "part"} <= tables:
        return ReadResult(error=f"schema changed: no session/message/part tables ({harness} store of another version)")
    cols = snap.columns("session")
    pick = ", ".join(c if c in cols else f"NULL AS {c}" for c in ("id", "directory", "title", "parent_id"))
    sql = ("SELECT m.session_id, m.id, m.time_created, m.data, p.data FROM message m "
           "LEFT JOIN part p ON p.message_id = m.id ORDER BY m.session_id, m.time_created, m.id, p.id")
    return build(snap.rows(f"SELECT {pick} FROM session ORDER BY id"), snap.rows(sql), harness, snap.check)


def _read_json(path: str, doc, harness: str) -> ReadResult:
    """One session file of the JSON store, with its messages and parts beside it."""
    if not isinstance(doc, dict):
        return ReadResult(malformed=1, faults=[(0, f"session document is a {type(doc).__name__}, not an object")])
    storage = os.path.dirname(os.path.dirname(os.path.dirname(path)))
    sid = doc.get("id") if isinstance(doc.get("id"), str) else os.path.basename(path)[:-5]
    bad = [0]
    messages = []
    for raw in _documents(os.path.join(storage, "message", sid), bad):
        try:
            info = orjson.loads(raw)
        except orjson.JSONDecodeError:
            bad[0] += 1
            continue
        if not isinstance(info, dict) or not isinstance(info.get("id"), str):
            bad[0] += 1
            continue
        t = info.get("time")
        created = t.get("created") if isinstance(t, dict) else None
        messages.append((created if type(created) in (int, float) else 0, info["id"], info))
    messages.sort(key=lambda m: (m[0], m[1]))

    def rows():
        for created, mid, info in messages:
            parts = _documents(os.path.join(storage, "part", mid), bad)
            for raw in parts or [None]:
                yield sid, mid, created or None, info, raw

    session = (sid, doc.get("directory"), doc.get("title"), doc.get("parentID"))
    res = build([session], rows(), harness)
    res.malformed += bad[0]
    return res


def _documents(folder: str, bad: list[int]) -> list[bytes]:
    """The ``*.json`` files of one folder, in name order (opencode's ids sort by
    time); a folder that is absent is none, a file that vanished is counted."""
    try:
        with os.scandir(folder) as it:
            names = sorted(e.name for e in it if e.name.endswith(".json"))
    except OSError:
        return []
    out = []
    for name in names:
        try:
            with open(os.path.join(folder, name), "rb") as fh:
                out.append(fh.read())
        except OSError:
            bad[0] += 1
    return out


def build(sessions: Iterable[tuple], rows: Iterable[tuple], harness: str, check=None,
          dialect: Dialect = DIALECT) -> ReadResult:
    """The sessions of an opencode-shaped store, from its session rows ``(id,
    directory, title, parent_id)`` and its message rows joined to their parts
    ``(session_id, message_id, created, message data, part data)``, ordered by
    session, message time, message id, part id. Data is JSON text or decoded;
    tool parts are named in ``dialect``."""
    res = ReadResult()
    parts: dict[str, SessionPart] = {}
    for sid, directory, title, parent in sessions:
        if not isinstance(sid, str):
            res.malformed += 1
            continue
        p = parts[sid] = SessionPart(harness=harness, session_id=sid,
                                     cwd=directory if isinstance(directory, str) else "")
        if isinstance(title, str) and title.strip():
            p.title, p.title_rank = title.strip(), 1
        if isinstance(parent, str) and parent:
            p.kind, p.parent, p.spawned = "subagent", parent, True
    flags = {f: work.enabled(f) for f in ("PATHS", "COMMANDS", "EDITS", "TOOL_OUTPUT")}
    current, role, msg_ts, paths, n = None, "", None, [], 0
    seq = 0

    def flush():
        if current is not None and paths and flags["PATHS"]:
            files = work.files_record(paths)
            if files:
                parts[current[0]].messages.append(Message("files", files, msg_ts, byte_offset=seq))

    for sid, mid, created, mdata, pdata in rows:
        n += 1
        if check is not None and n % 256 == 0:
            check()
        if current != (sid, mid):
            flush()
            current, paths, seq = (sid, mid), [], seq + 1
            info = _json(mdata, res)
            role = info.get("role") if isinstance(info, dict) else None
            t = info.get("time") if isinstance(info, dict) else None
            msg_ts = parse_ts(t.get("created")) if isinstance(t, dict) else None
            msg_ts = msg_ts if msg_ts is not None else parse_ts(created)
            if sid not in parts:  # a message whose session row is gone
                parts[sid] = SessionPart(harness=harness, session_id=sid)
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
            session.messages.extend(_tool(part, session.cwd, msg_ts, seq, flags, paths, dialect))
    flush()
    res.sessions = [p for p in parts.values() if p.messages]
    return res


def _tool(part: dict, cwd: str, ts, seq: int, flags: dict, paths: list[str], d: Dialect) -> list[Message]:
    name = part.get("tool")
    state = part.get("state")
    if not isinstance(name, str) or not isinstance(state, dict):
        return []
    args = state.get("input") if isinstance(state.get("input"), dict) else {}
    out: list[Message] = []
    path = first_text(args, d.path_keys)
    if name in d.file_tools and path:
        paths.append(path)
    # an edit the harness refused (no match for the old text) changed nothing
    if name in d.file_tools and path and flags["EDITS"] and state.get("status") != "error":
        spans = [first_text(args, d.old_keys)]
        edits = args.get(d.edits_key)
        if isinstance(edits, list):
            spans.extend(first_text(e, d.old_keys) for e in edits if isinstance(e, dict))
        for old in spans:
            rec = work.edit_record(path, old) if old else None
            if rec:
                out.append(Message("edit", rec, ts, tool=name, byte_offset=seq))
    if isinstance(args.get("patchText"), str):
        files, edits = work.patch_records(args["patchText"], cwd)
        if files:
            paths.extend(files.split("\n"))
        if flags["EDITS"]:
            out.extend(Message("edit", e, ts, tool=name, byte_offset=seq) for e in edits)
    command = first_text(args, d.command_keys) if name in d.shell_tools else ""
    if command:
        meta = state.get("metadata") if isinstance(state.get("metadata"), dict) else {}
        code = meta.get("exit")
        code = code if type(code) is int else None
        rec = work.command_record(command, code) if flags["COMMANDS"] else None
        if rec:
            out.append(Message("command", rec, ts, tool=name, exit_code=code, byte_offset=seq))
        output = state.get("output")
        if isinstance(output, str) and output.strip() and flags["TOOL_OUTPUT"]:
            failed = state.get("status") == "error" or (code is not None and code != 0)
            out.append(Message("tool-output", clip(output)[0], ts, tool=name, exit_code=code,
                               is_error=failed, byte_offset=seq))
    return out


_json = json_cell
