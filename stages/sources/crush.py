"""Crush (charmbracelet/crush): one SQLite store per project,
``<project>/.crush/crush.db``, every project listed in
``<global data>/projects.json`` (harness-formats section 15; the schema and
part encoding checked against charmbracelet/crush ``internal/db/migrations``
and ``internal/message``).

``sessions(id, parent_session_id, title, created_at, updated_at, …)`` and
``messages(id, session_id, role, parts, created_at, …)``. ``parts`` is a
JSON list of ``{type, data}``: ``text`` (``data.text``), ``reasoning``
(left out), ``tool_call`` (``data.name``, ``data.input`` a JSON *string*),
``tool_result`` (``data.content``, ``data.is_error``; in ``tool``-role
messages), ``shell_command`` (a command the person ran: ``command``,
``output``, ``exit_code``). Times are Unix seconds (early versions wrote
milliseconds: parse_ts tells them apart).

The dialect is Claude's: ``bash`` runs ``command`` (its result ends with
``Exit code N`` when the command failed, which the command record takes); ``view``/``write``/
``edit``/``multiedit`` name ``file_path``; ``edit`` removes ``old_string``
and ``multiedit`` each ``edits[].old_string``. The project is the folder
holding ``.crush`` (or the project a custom data folder is listed under). A
session with ``parent_session_id`` is a sub-agent (Crush's agent tool).
Resume: ``crush --session <id>`` in the project folder.

Read through ``sqlite_store``: a snapshot of the database, never the live file.
"""

from __future__ import annotations

import os
from typing import Mapping

import orjson

from deja.stages import work_records as work
from deja.stages.sources import sqlite_store
from deja.stages.sources.base import Message, ReadResult, SessionPart, SourceFile
from deja.stages.sources.jsonl import clip, speech, json_cell, parse_ts
from deja.stages.sources.locate import crush_data_dir, crush_files, crush_projects, include_subagents

HARNESS = "crush"
_FILE_TOOLS = frozenset(("view", "write", "edit", "multiedit"))


def roots(env: Mapping[str, str]) -> list[str]:
    return [os.path.join(crush_data_dir(env), "projects.json")]


def discover(env: Mapping[str, str]) -> list[SourceFile]:
    return [SourceFile(p, HARNESS) for p in crush_files(env)]


def read(path: str, start: int = 0) -> ReadResult:
    return sqlite_store.read_store(path, lambda snap: _read(snap, project_dir(path)), "crush")


def project_dir(db: str) -> str:
    """The folder a store belongs to: the one holding ``.crush``, else the
    project Crush listed this data folder under."""
    data = os.path.dirname(os.path.abspath(db))
    if os.path.basename(data) == ".crush":
        return os.path.dirname(data)
    for project, data_dir in crush_projects(os.environ):
        if project and os.path.abspath(data_dir) == data:
            return project
    return ""


def _read(snap, cwd: str) -> ReadResult:
    res = ReadResult()
    if not {"sessions", "messages"} <= snap.tables():
        return ReadResult(error="schema changed: no sessions/messages tables (Crush store of another version)")
    cols = snap.columns("sessions")
    pick = ", ".join(c if c in cols else f"NULL AS {c}" for c in ("id", "title", "parent_session_id"))
    parts: dict[str, SessionPart] = {}
    skipped: set[str] = set()
    with_sub = include_subagents(os.environ)
    for sid, title, parent in snap.rows(f"SELECT {pick} FROM sessions"):
        if not isinstance(sid, str):
            res.malformed += 1
            continue
        if isinstance(parent, str) and parent and not with_sub:
            skipped.add(sid)
            continue
        p = parts[sid] = SessionPart(harness=HARNESS, session_id=sid, cwd=cwd)
        if isinstance(title, str) and title.strip():
            p.title, p.title_rank = title.strip(), 1
        if isinstance(parent, str) and parent:
            p.kind, p.parent, p.spawned = "subagent", parent, True
    mcols = snap.columns("messages")
    if not {"session_id", "role", "parts"} <= mcols:
        return ReadResult(error="schema changed: messages has no session_id/role/parts (Crush store of another version)")
    created = "created_at" if "created_at" in mcols else "NULL"
    summary = "is_summary_message" if "is_summary_message" in mcols else "0"
    flags = {f: work.enabled(f) for f in ("PATHS", "COMMANDS", "EDITS", "TOOL_OUTPUT")}
    runs: dict[str, tuple[Message, str]] = {}  # a bash call's id → its command record and command
    sql = (f"SELECT session_id, role, parts, {created}, {summary} FROM messages "
           f"ORDER BY session_id, {created}, rowid")
    for n, (sid, role, raw, ts, is_summary) in enumerate(snap.rows(sql)):
        if n % 256 == 0:
            snap.check()
        if not isinstance(sid, str) or sid in skipped:
            continue
        part = parts.get(sid)
        if part is None:  # a message whose session row is gone
            part = parts[sid] = SessionPart(harness=HARNESS, session_id=sid, cwd=cwd)
        if is_summary:
            continue  # Crush's own summary of the session so far, not something said
        items = json_cell(raw, res, list)
        if items is None:
            continue
        part.messages.extend(_message(role, items, parse_ts(ts), n, flags, res, runs))
    res.sessions = [p for p in parts.values() if p.messages]
    return res


def _message(role, items: list, ts, at: int, flags: dict, res: ReadResult,
             runs: dict[str, tuple[Message, str]]) -> list[Message]:
    texts, paths, out = [], [], []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("data"), dict):
            continue
        kind, data = item.get("type"), item["data"]
        if kind == "text" and isinstance(data.get("text"), str):
            texts.append(data["text"])
        elif kind == "tool_call":
            out.extend(_call(data, ts, at, flags, paths, res, runs))
        elif kind == "tool_result" and isinstance(data.get("content"), str):
            code = _exit_code(data["content"]) if data.get("tool_call_id") in runs else None
            if code is not None:  # Crush's bash tool ends a failed command's output with it
                rec, command = runs.pop(data["tool_call_id"])
                rec.text, rec.exit_code = work.command_record(command, code) or rec.text, code
            if flags["TOOL_OUTPUT"] and data["content"].strip():
                out.append(Message("tool-output", clip(data["content"])[0], ts, tool=data.get("name") or None,
                                   is_error=bool(data.get("is_error")), byte_offset=at))
        elif kind == "shell_command" and isinstance(data.get("command"), str):
            code = data.get("exit_code") if type(data.get("exit_code")) is int else None
            rec = work.command_record(data["command"], code) if flags["COMMANDS"] else None
            if rec:
                out.append(Message("command", rec, ts, tool="shell", exit_code=code, byte_offset=at))
            output = data.get("output")
            if flags["TOOL_OUTPUT"] and isinstance(output, str) and output.strip():
                out.append(Message("tool-output", clip(output)[0], ts, tool="shell", exit_code=code,
                                   is_error=code not in (None, 0), byte_offset=at))
    said = speech(role, texts, ts, at, res) if role in ("user", "assistant") else []
    files = work.files_record(paths) if flags["PATHS"] else None
    if files:
        out.append(Message("files", files, ts, byte_offset=at))
    return said + out


def _exit_code(output: str) -> int | None:
    """The code on the last line of a bash result, ``Exit code N``
    (``internal/agent/tools/bash.go``: only a command that failed has one)."""
    last = output.rstrip().rsplit("\n", 1)[-1]
    if last.startswith("Exit code "):
        try:
            return int(last[len("Exit code "):])
        except ValueError:
            return None
    return None


def _call(data: dict, ts, at: int, flags: dict, paths: list[str], res: ReadResult,
          runs: dict[str, tuple[Message, str]]) -> list[Message]:
    name = data.get("name")
    raw = data.get("input")
    if not isinstance(name, str) or not isinstance(raw, str) or not raw.strip():
        return []
    try:
        args = orjson.loads(raw)
    except orjson.JSONDecodeError:
        if data.get("finished", True):
            res.malformed += 1  # a finished call whose input is not JSON (an unfinished one may be cut)
        return []
    if not isinstance(args, dict):
        return []
    if name == "bash" and isinstance(args.get("command"), str):
        rec = work.command_record(args["command"]) if flags["COMMANDS"] else None
        if not rec:
            return []
        msg = Message("command", rec, ts, tool=name, byte_offset=at)
        if isinstance(data.get("id"), str):
            runs[data["id"]] = (msg, args["command"])
        return [msg]
    path = args.get("file_path")
    if name not in _FILE_TOOLS or not isinstance(path, str) or not path:
        return []
    paths.append(path)
    if not flags["EDITS"]:
        return []
    olds = [args.get("old_string")] if name == "edit" else []
    if name == "multiedit" and isinstance(args.get("edits"), list):
        olds = [e.get("old_string") for e in args["edits"] if isinstance(e, dict)]
    out = []
    for old in olds:
        rec = work.edit_record(path, old) if isinstance(old, str) else None
        if rec:
            out.append(Message("edit", rec, ts, tool=name, byte_offset=at))
    return out
