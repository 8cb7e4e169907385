"""Goose (block/goose): the JSONL sessions before 1.10 and the SQLite store
since (harness-formats section 13).

* ``<data>/sessions/<id>.jsonl`` (legacy): line 1 is the session's metadata
  (no ``role``: ``{description, working_dir, …}``), every later line a
  message ``{role, created (Unix s), content: [blocks]}``. Appended to: the
  offset path (a read from an offset takes the metadata from the head).
* ``<data>/sessions/sessions.db``: ``sessions(id, name, description,
  user_set_name, session_type, working_dir, …)`` and ``messages(session_id,
  role, content_json, created_timestamp, …)``, read through ``sqlite_store``
  (a snapshot; the live file is never opened). Only ``session_type`` null,
  empty, ``user``, ``acp``, ``terminal`` or ``gateway`` rows are people's
  sessions: sub-agent, hidden and scheduled recipe runs share the table and
  are kept only with DEJA_INCLUDE_SUBAGENTS=1, as ``spawned`` sessions.

A message's speech is its ``text`` blocks. Its work is its ``toolRequest``
blocks, ``toolCall.value = {name, arguments}`` with the extension prefixed
(``developer__shell``): ``shell`` runs ``arguments.command``;
``text_editor`` names ``arguments.path`` and its ``str_replace`` removes
``old_str``. ``toolResponse`` blocks (in the ``user`` message after) carry the
output, ``toolResult.value`` a list of ``{type: text, text}``; an ``error``
status is a failed result. The title is the session's ``description``
(``name`` in the SQLite store, a person's when ``user_set_name``).
"""

from __future__ import annotations

import os
from typing import Mapping

import orjson

from deja.stages import work_records as work
from deja.stages.sources import sqlite_store
from deja.stages.sources.base import Message, ReadResult, SessionPart, SourceFile
from deja.stages.sources.jsonl import Lines, clip, speech, is_regular_file, parse_ts, read_head
from deja.stages.sources.locate import goose_data_dir, goose_db, goose_files, include_subagents

HARNESS = "goose"
# session_type of a session a person ran: ``acp`` a chat from an ACP client (Zed),
# ``terminal`` ``goose term``, ``gateway`` a messaging gateway's chat. The rest
# (``sub_agent``, ``scheduled``, ``hidden``, and a kind not known yet) an agent or a
# schedule ran: kept only with DEJA_INCLUDE_SUBAGENTS=1
_PEOPLE = (None, "", "user", "acp", "terminal", "gateway")


def roots(env: Mapping[str, str]) -> list[str]:
    return [os.path.join(goose_data_dir(env), "sessions"), goose_db(env)]


def discover(env: Mapping[str, str]) -> list[SourceFile]:
    return [SourceFile(p, HARNESS) for p in goose_files(env)]


def read(path: str, start: int = 0) -> ReadResult:
    if not is_regular_file(path):
        return ReadResult(safe_offset=start, error=f"not a readable regular file: {path}")
    try:
        if path.endswith(".jsonl"):
            return _read_jsonl(path, start)
        with sqlite_store.snapshot(path) as snap:
            return _read_db(snap)
    except sqlite_store.Empty:
        return ReadResult()
    except sqlite_store.Unreadable as exc:
        return ReadResult(error=str(exc))
    except OSError as exc:
        return ReadResult(safe_offset=start, error=f"{type(exc).__name__}: {exc}")
    except Exception as exc:  # one bad store costs that store, never the run
        return ReadResult(safe_offset=start, error=f"goose reader failed: {type(exc).__name__}: {exc}")


# --------------------------------------------------------------------------- blocks


def _flags() -> dict:
    return {f: work.enabled(f) for f in ("PATHS", "COMMANDS", "EDITS", "TOOL_OUTPUT")}


def _messages(role, content, ts, at: int, flags: dict, res: ReadResult) -> list[Message]:
    """The records of one Goose message: its text, then the work its blocks did."""
    if role not in ("user", "assistant"):
        return []
    if isinstance(content, str):  # content_json stored as a JSON string of the list
        try:
            content = orjson.loads(content)
        except orjson.JSONDecodeError:
            res.malformed += 1
            return []
    if not isinstance(content, list):
        res.malformed += 1
        return []
    out: list[Message] = []
    texts, paths = [], []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind == "toolRequest":
            out.extend(_request(block, ts, at, flags, paths))
        elif kind == "toolResponse" and flags["TOOL_OUTPUT"]:
            out.extend(_response(block, ts, at))
    said = speech(role, texts, ts, at, res)
    files = work.files_record(paths) if flags["PATHS"] else None
    if files:
        out.append(Message("files", files, ts, byte_offset=at))
    return said + out


def _request(block: dict, ts, at: int, flags: dict, paths: list[str]) -> list[Message]:
    call = block.get("toolCall")
    value = call.get("value") if isinstance(call, dict) else None
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        return []
    name = value["name"]
    tool = name.rsplit("__", 1)[-1]  # "developer__shell": the extension, then the tool
    args = value.get("arguments") if isinstance(value.get("arguments"), dict) else {}
    if tool == "shell" and isinstance(args.get("command"), str):
        rec = work.command_record(args["command"]) if flags["COMMANDS"] else None
        return [Message("command", rec, ts, tool=name, byte_offset=at)] if rec else []
    if tool == "text_editor" and isinstance(args.get("path"), str) and args["path"]:
        paths.append(args["path"])
        if args.get("command") == "str_replace" and flags["EDITS"]:
            rec = work.edit_record(args["path"], args.get("old_str"))
            if rec:
                return [Message("edit", rec, ts, tool=name, byte_offset=at)]
    return []


def _response(block: dict, ts, at: int) -> list[Message]:
    result = block.get("toolResult")
    if not isinstance(result, dict):
        return []
    value = result.get("value")
    failed = result.get("status") == "error"
    if failed and isinstance(result.get("error"), str):
        text = result["error"]
    elif isinstance(value, list):
        text = "\n".join(v["text"] for v in value
                         if isinstance(v, dict) and v.get("type") == "text" and isinstance(v.get("text"), str))
    else:
        return []
    if not text.strip():
        return []
    return [Message("tool-output", clip(text)[0], ts, is_error=failed, byte_offset=at)]


def _title(part: SessionPart, title, person: bool) -> None:
    if isinstance(title, str) and title.strip():
        part.title, part.title_rank = title.strip(), 2 if person else 1


# --------------------------------------------------------------------------- legacy JSONL


def _read_jsonl(path: str, start: int) -> ReadResult:
    sid = os.path.basename(path)[: -len(".jsonl")]
    part = SessionPart(harness=HARNESS, session_id=sid)
    meta = None
    if start:
        meta = next(iter(read_head(path)), None)
    lines = Lines(path, start)
    flags = _flags()
    res = ReadResult()
    for offset, obj in lines:
        if "role" not in obj:
            if offset == 0:
                meta = obj
            continue
        ts = parse_ts(obj.get("created"))
        part.messages.extend(_messages(obj.get("role"), obj.get("content"), ts, offset, flags, res))
    if isinstance(meta, dict):
        if isinstance(meta.get("working_dir"), str):
            part.cwd = meta["working_dir"]
        _title(part, meta.get("description"), False)
    res.safe_offset, res.malformed = lines.end, res.malformed + lines.malformed
    res.sessions = [part] if part.messages else []
    return res


# --------------------------------------------------------------------------- SQLite


def _read_db(snap) -> ReadResult:
    res = ReadResult()
    if not {"sessions", "messages"} <= snap.tables():
        return ReadResult(error="schema changed: no sessions/messages tables (Goose store of another version)")
    cols = snap.columns("sessions")
    want = ("id", "name", "description", "user_set_name", "session_type", "working_dir")
    pick = ", ".join(c if c in cols else f"NULL AS {c}" for c in want)
    parts: dict[str, SessionPart] = {}
    skipped: set[str] = set()
    with_sub = include_subagents(os.environ)
    for sid, name, description, user_set, kind, cwd in snap.rows(f"SELECT {pick} FROM sessions"):
        if not isinstance(sid, str):
            res.malformed += 1
            continue
        if kind not in _PEOPLE and not with_sub:
            skipped.add(sid)
            continue
        p = parts[sid] = SessionPart(harness=HARNESS, session_id=sid, cwd=cwd if isinstance(cwd, str) else "")
        if kind not in _PEOPLE:
            p.kind, p.spawned = str(kind), True
        _title(p, name if user_set else (description or name), bool(user_set))
    mcols = snap.columns("messages")
    ts_col = "created_timestamp" if "created_timestamp" in mcols else ("timestamp" if "timestamp" in mcols else "NULL")
    order = "id" if "id" in mcols else "rowid"
    if not {"session_id", "role", "content_json"} <= mcols:
        return ReadResult(error="schema changed: messages has no session_id/role/content_json (Goose store of another version)")
    flags = _flags()
    sql = f"SELECT session_id, role, content_json, {ts_col} FROM messages ORDER BY session_id, {ts_col}, {order}"
    for n, (sid, role, content, created) in enumerate(snap.rows(sql)):
        if n % 256 == 0:
            snap.check()
        if sid in skipped or not isinstance(sid, str):
            continue
        part = parts.get(sid)
        if part is None:  # a message whose session row is gone
            part = parts[sid] = SessionPart(harness=HARNESS, session_id=sid)
        part.messages.extend(_messages(role, content, parse_ts(created), n, flags, res))
    res.sessions = [p for p in parts.values() if p.messages]
    return res
