"""Hermes Agent (Nous Research): a SQLite store per profile, ``state.db``
(harness-formats section 14 "Hermes"; the schema checked against
NousResearch/hermes-agent's ``hermes_state_common.SCHEMA_SQL``).

``sessions(id, source, cwd, git_branch, title, title_source,
parent_session_id, model_config, started_at, …)`` and a flat
``messages(id, session_id, role, content, tool_calls, tool_name, timestamp
REAL seconds, active, compacted, …)``. A message's role is ``user``,
``assistant``, ``tool`` or ``system``; an assistant's ``tool_calls`` is the
OpenAI list ``[{function: {name, arguments: "<JSON>"}}]`` in Hermes's tool
vocabulary: ``terminal`` (``command``), ``read_file`` / ``write_file``
(``path``), ``patch`` (``path`` + ``old_string``, or a V4A ``patch`` in
mode ``patch``). Rows a rewind took back (``active = 0`` and not
``compacted``) are not the conversation any more and are left out.

Older stores have no ``cwd`` column (columns are probed): their project is the
profile's name, or ``hermes`` for the root store, as the reference says. A
child session whose ``model_config`` names ``_delegate_from`` (or whose
source is ``tool``) is a subagent run, kept only with DEJA_INCLUDE_SUBAGENTS=1;
other children (compression continuations, branches) keep their parent edge.

The same tables may live in Postgres (``DEJA_HERMES_PG_DSN``): see
``hermes_pg``, which hands its rows to ``build`` here.
Read through ``sqlite_store``: a snapshot, never the live file.
"""

from __future__ import annotations

import os
from typing import Iterable, Mapping

import orjson

from deja.stages import work_records as work
from deja.stages.sources import sqlite_store
from deja.stages.sources.base import Message, ReadResult, SessionPart, SourceFile
from deja.stages.sources.jsonl import clip, json_cell, parse_ts
from deja.stages.sources.locate import REMOTE_PREFIX, hermes_files, hermes_home, hermes_profiles_root

HARNESS = "hermes"
PG_PREFIX = REMOTE_PREFIX + "hermes:"  # the pseudo-path of the Postgres store (hermes_pg)

# Hermes's dialect (harness-formats 1.2).
_FILE_TOOLS = frozenset(("read_file", "write_file", "patch"))
_SHELL_TOOLS = frozenset(("terminal",))
SESSION_COLUMNS = ("id", "cwd", "git_branch", "title", "title_source", "parent_session_id", "model_config", "source")
MESSAGE_COLUMNS = ("session_id", "id", "role", "content", "tool_calls", "tool_name", "timestamp", "active", "compacted")


def roots(env: Mapping[str, str]) -> list[str]:
    return [hermes_home(env), hermes_profiles_root(env)]


def discover(env: Mapping[str, str]) -> list[SourceFile]:
    return [SourceFile(p, HARNESS) for p in hermes_files(env)]


def profile_of(path: str) -> str:
    """``<profiles>/<name>/state.db`` → ``name``; the root store → ""."""
    folder = os.path.dirname(os.path.abspath(path))
    return os.path.basename(folder) if os.path.basename(os.path.dirname(folder)) == "profiles" else ""


def read(path: str, start: int = 0) -> ReadResult:
    if path.startswith(PG_PREFIX):
        from deja.stages.sources import hermes_pg

        return hermes_pg.read(path)
    return sqlite_store.read_store(path, lambda snap: _read(snap, profile_of(path)), "hermes")


def _select(table: str, have: set[str], want: tuple[str, ...]) -> str:
    return ", ".join(c if c in have else f"NULL AS {c}" for c in want)


def _read(snap, profile: str) -> ReadResult:
    tables = snap.tables()
    if not {"sessions", "messages"} <= tables:
        return ReadResult(error="schema changed: no sessions/messages tables (a Hermes store of another version)")
    scols, mcols = snap.columns("sessions"), snap.columns("messages")
    if not {"session_id", "role", "content"} <= mcols:
        return ReadResult(error="schema changed: messages has no session_id/role/content (a Hermes store of another version)")
    sessions = snap.rows(f"SELECT {_select('sessions', scols, SESSION_COLUMNS)} FROM sessions ORDER BY id")
    order = "session_id, timestamp, id" if {"timestamp", "id"} <= mcols else "session_id"
    messages = snap.rows(f"SELECT {_select('messages', mcols, MESSAGE_COLUMNS)} FROM messages ORDER BY {order}")
    return build(sessions, messages, profile, check=snap.check)


def build(sessions: Iterable[tuple], messages: Iterable[tuple], profile: str, check=None) -> ReadResult:
    """Sessions from rows in SESSION_COLUMNS / MESSAGE_COLUMNS order (SQLite or Postgres)."""
    res = ReadResult()
    parts: dict[str, SessionPart] = {}
    fallback = profile or "hermes"

    def new_part(sid: str) -> SessionPart:
        return SessionPart(harness=HARNESS, session_id=sid, project=fallback)

    for sid, cwd, branch, title, title_source, parent, model_config, source in sessions:
        if not isinstance(sid, str) or not sid:
            res.malformed += 1
            continue
        p = parts[sid] = new_part(sid)
        if isinstance(cwd, str) and cwd.strip():
            p.cwd, p.project = cwd.strip(), ""
        p.branch = branch if isinstance(branch, str) else ""
        if isinstance(title, str) and title.strip():
            p.title, p.title_rank = title.strip(), 2 if title_source == "user" else 1
        if isinstance(parent, str) and parent:
            p.parent = parent
            marks = _json(model_config, res) if isinstance(model_config, str) and model_config else None
            if source == "tool" or (isinstance(marks, dict) and marks.get("_delegate_from")):
                p.kind, p.spawned = "subagent", True
    flags = {f: work.enabled(f) for f in ("PATHS", "COMMANDS", "EDITS", "TOOL_OUTPUT")}
    n = 0
    for sid, mid, role, content, tool_calls, tool_name, stamp, active, compacted in messages:
        n += 1
        if check is not None and n % 256 == 0:
            check()
        if not isinstance(sid, str) or not sid:
            res.malformed += 1
            continue
        if active == 0 and not compacted:
            continue  # taken back by a rewind
        session = parts.get(sid)
        if session is None:  # a message whose session row is gone
            session = parts[sid] = new_part(sid)
        ts = parse_ts(stamp)
        seq = mid if type(mid) is int and mid >= 0 else n
        if role in ("user", "assistant") and isinstance(content, str) and content.strip():
            text, cut = clip(content)
            res.clipped += cut
            session.messages.append(Message(role, text, ts, byte_offset=seq))
        if role == "assistant" and tool_calls:
            session.messages.extend(_calls(tool_calls, session.cwd, ts, seq, flags, res))
        elif role == "tool" and flags["TOOL_OUTPUT"] and isinstance(content, str) and content.strip():
            session.messages.append(_output(content, tool_name, ts, seq))
    res.sessions = [p for p in parts.values() if p.messages]
    return res


def _calls(raw, cwd: str, ts, seq: int, flags: dict, res: ReadResult) -> list[Message]:
    calls = _json(raw, res) if isinstance(raw, (str, bytes)) else raw
    if not isinstance(calls, list):
        return []
    out: list[Message] = []
    paths: list[str] = []
    for call in calls:
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            continue
        name, args = fn["name"], fn.get("arguments")
        if isinstance(args, str):
            args = _json(args, res)
        if not isinstance(args, dict):
            continue
        if name in _SHELL_TOOLS:
            rec = work.command_record(args.get("command")) if flags["COMMANDS"] else None
            if rec:
                out.append(Message("command", rec, ts, tool=name, byte_offset=seq))
            continue
        path = args.get("path") if isinstance(args.get("path"), str) else ""
        if name in _FILE_TOOLS and path:
            paths.append(path)
        if name == "patch" and isinstance(args.get("patch"), str):
            files, edits = work.patch_records(args["patch"], cwd)
            if files:
                paths.extend(files.split("\n"))
            if flags["EDITS"]:
                out.extend(Message("edit", e, ts, tool=name, byte_offset=seq) for e in edits)
        elif name == "patch" and path and flags["EDITS"]:
            rec = work.edit_record(path, args.get("old_string"))
            if rec:
                out.append(Message("edit", rec, ts, tool=name, byte_offset=seq))
    files = work.files_record(paths) if flags["PATHS"] else None
    if files:
        out.append(Message("files", files, ts, byte_offset=seq))
    return out


def _output(content: str, tool_name, ts, seq: int) -> Message:
    """A tool row: Hermes stores the result as the JSON the model saw
    (``terminal``: ``{output, exit_code, error}``); the text is what it printed."""
    text, code, failed = content, None, None
    if content.lstrip().startswith("{"):
        try:
            doc = orjson.loads(content)
        except orjson.JSONDecodeError:
            doc = None
        if isinstance(doc, dict):
            code = doc.get("exit_code") if type(doc.get("exit_code")) is int else None
            body = next((doc[k] for k in ("output", "content") if isinstance(doc.get(k), str)), None)
            err = doc.get("error") if isinstance(doc.get("error"), str) and doc.get("error") else None
            if (body or err) and (body or err).strip():
                text = "\n".join(t for t in (body, err) if t)
            failed = bool(err) or (code is not None and code != 0)
    return Message("tool-output", clip(text)[0], ts, tool=tool_name if isinstance(tool_name, str) else None,
                   exit_code=code, is_error=failed, byte_offset=seq)


_json = json_cell
