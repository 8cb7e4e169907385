"""The grok CLI's SQLite store, ``~/.grok/grok.db`` (harness-formats "Grok
Build"; the schema checked against superagent-ai/grok-cli
``src/storage/migrations.ts`` and ``transcript.ts``). A separate program
from Grok Build's ``sessions/`` folders, sharing ``~/.grok``; read under the
same harness, ``grok``.

``sessions(id, workspace_id, title, recap_text, model, mode, cwd_at_start,
cwd_last, status, created_at, updated_at)`` and ``messages(session_id, seq,
role, message_json, created_at)``, times ISO-8601 text. ``message_json`` is
an AI SDK ``ModelMessage``: ``content`` a string or typed parts. A ``user``
message's ``text`` parts are what the person said (``image``/``file`` parts
are attachments, left out); an ``assistant`` message's ``text`` parts are its
answer and its ``tool-call`` parts (``toolName``, ``input``) the work; a
``tool`` message's ``tool-result`` parts (``output`` ``{type: json|text|
error-text, value}``, ``json`` holding ``{success, output, error}``) are tool
output. ``system`` messages are the CLI's notices, left out.

The dialect: ``bash`` runs ``command``; ``read_file``/``write_file``/
``edit_file`` name ``path`` (relative to the session's folder, joined to
it); ``edit_file`` removes ``old_string``. The project is ``cwd_last``, else
``cwd_at_start``. Read through ``sqlite_store``: a snapshot, never the live
file.
"""

from __future__ import annotations

import os


from deja.stages import work_records as work
from deja.stages.sources import sqlite_store
from deja.stages.sources.base import Message, ReadResult, SessionPart
from deja.stages.sources.dialect import Dialect, Turn, flags as work_flags
from deja.stages.sources.jsonl import clip, speech, json_cell, parse_ts
from deja.stages.sources.values import Faults

HARNESS = "grok"
DIALECT = Dialect(file_tools=frozenset(("read_file", "write_file", "edit_file")), shell_tools=frozenset(("bash",)),
                  path_keys=("path",), old_keys=("old_string",), command_keys=("command",))


def read(path: str) -> ReadResult:
    return sqlite_store.read_store(path, _read, "grok")


def _read(snap) -> ReadResult:
    res = ReadResult()
    if not {"sessions", "messages"} <= snap.tables():
        return ReadResult(error="schema changed: no sessions/messages tables (grok.db of another version)")
    cols = snap.columns("sessions")
    pick = ", ".join(c if c in cols else f"NULL AS {c}" for c in ("id", "title", "cwd_last", "cwd_at_start"))
    parts: dict[str, SessionPart] = {}
    for sid, title, cwd_last, cwd_start in snap.rows(f"SELECT {pick} FROM sessions"):
        if not isinstance(sid, str) or not sid:
            res.malformed += 1
            continue
        cwd = next((c for c in (cwd_last, cwd_start) if isinstance(c, str) and c), "")
        p = parts[sid] = SessionPart(harness=HARNESS, session_id=sid, cwd=cwd)
        if isinstance(title, str) and title.strip():
            p.title, p.title_rank = title.strip(), 1
    mcols = snap.columns("messages")
    if not {"session_id", "message_json"} <= mcols:
        return ReadResult(error="schema changed: messages has no session_id/message_json (grok.db of another version)")
    created = "created_at" if "created_at" in mcols else "NULL"
    seq = "seq" if "seq" in mcols else "rowid"
    flags = work_flags()
    faults = Faults()
    sql = f"SELECT session_id, message_json, {created} FROM messages ORDER BY session_id, {seq}, rowid"
    for n, (sid, raw, ts) in enumerate(snap.rows(sql)):
        if n % 256 == 0:
            snap.check()
        if not isinstance(sid, str) or not sid:
            res.malformed += 1
            continue
        part = parts.get(sid)
        if part is None:  # a message whose session row is gone
            part = parts[sid] = SessionPart(harness=HARNESS, session_id=sid)
        msg = json_cell(raw, res, dict)
        if msg is None:
            continue
        part.messages.extend(_message(msg, parse_ts(ts), n, part.cwd, flags, res, faults))
    res.sessions = [p for p in parts.values() if p.messages]
    res.malformed += faults.count
    res.faults = faults.first
    return res


def _message(msg: dict, ts, at: int, cwd: str, flags: dict, res: ReadResult, faults: Faults) -> list[Message]:
    role, content = faults.text(at, "role", msg.get("role")), msg.get("content")
    items = [{"type": "text", "text": content}] if isinstance(content, str) else content
    if not isinstance(items, list):
        return []
    texts: list[str] = []
    out: list[Message] = []
    turn = Turn(DIALECT, flags)
    for item in items:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind == "text" and isinstance(item.get("text"), str):
            texts.append(item["text"])
        elif kind == "tool-call" and role == "assistant" and isinstance(item.get("input"), dict):
            args = item["input"]
            path = args.get("path")
            if cwd and isinstance(path, str) and path.strip() and not work.is_absolute(path):
                args = dict(args, path=os.path.join(cwd, path))  # (the CLI resolves them against its cwd)
            turn.call(faults.text(at, "toolName", item.get("toolName")), args)
        elif kind == "tool-result" and role == "tool" and flags["TOOL_OUTPUT"]:
            text, failed = _result(item.get("output"))
            if text.strip():
                text, cut = clip(text)
                res.clipped += cut
                tool = faults.text(at, "toolName", item.get("toolName"))
                out.append(Message("tool-output", text, ts, tool=tool, is_error=failed, byte_offset=at))
    said = speech(role, texts, ts, at, res) if role in ("user", "assistant") else []
    return said + turn.messages(ts, at) + out


def _result(output) -> tuple[str, bool | None]:
    """(text, failed) of a tool-result's ``output`` as the CLI stores it."""
    if not isinstance(output, dict):
        return "", None
    kind, value = output.get("type"), output.get("value")
    if kind == "json" and isinstance(value, dict):
        output, kind = value, None
    if kind in ("text", "error-text") and isinstance(value, str):
        return value, kind == "error-text"
    if "success" in output:
        failed = not output.get("success")
        text = output.get("error") if failed and isinstance(output.get("error"), str) else output.get("output")
        return (text if isinstance(text, str) else ""), failed
    return "", None
