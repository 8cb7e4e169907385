"""Kiro (AWS): the IDE's workspace sessions and the CLI's session logs
(harness-formats section 15). Kiro is closed source; the shapes are from
published third-party readers (codeburn's Kiro provider and its tests), so
they are read defensively and anything else is counted, not guessed at.

* IDE: ``<User>/globalStorage/kiro.kiroagent/workspace-sessions/<folder>/<id>.json``,
  ``<folder>`` the workspace path in base64 (``=`` padding written as ``_``).
  A document ``{sessionId, title, workspaceDirectory, history: [{message:
  {role, content}, executionId?}]}`` (Kiro's agent descends from Continue).
  Replies done by an agent execution are kept in execution files this reader
  does not read; their stub text ("On it.") is not memory. No message times:
  the ``sessions.json`` index beside it dates the session (``dateCreated``),
  else the file's mtime. Rewritten in place: read whole.
* CLI: ``~/.kiro/sessions/cli/<id>.jsonl``, one ``{version, kind, data}`` event
  a line (``Prompt``, ``AssistantMessage``, ``ToolResults``, ``Clear``), content
  items ``{kind: text|toolUse, data}``; beside it ``<id>.json`` with
  ``{session_id, cwd, created_at, title}``. Appended: read from the last offset.
* CLI database: ``<local data>/kiro-cli/data.sqlite3`` (and Amazon Q
  Developer CLI's ``amazon-q/data.sqlite3``), read by ``kiro_db``.
"""

from __future__ import annotations

import base64
import binascii
import os
from typing import Mapping

import orjson

from deja.stages.sources.continue_dev import session_index  # Kiro keeps Continue's sessions.json index
from deja.stages.sources.base import Message, ReadResult, SessionPart, SourceFile
from deja.stages.sources.dialect import Dialect, Turn, block_text, flags
from deja.stages.sources.jsonl import Lines, clip, file_uri_path, is_regular_file, parse_ts, read_document
from deja.stages.sources.locate import kiro_cli_dbs, kiro_cli_home, kiro_files, kiro_user_dir

HARNESS = "kiro"

# The CLI's built-in tools, current names and the Amazon Q-era aliases.
DIALECT = Dialect(
    file_tools=frozenset(("read", "write", "fs_read", "fs_write")),
    shell_tools=frozenset(("shell", "execute_bash", "execute_cmd")),
    path_keys=("path", "file_path"),
    old_keys=("old_str", "old_string"),
    command_keys=("command",),
)
_STUB = "On it."


def roots(env: Mapping[str, str]) -> list[str]:
    return [os.path.join(kiro_user_dir(env), "globalStorage", "kiro.kiroagent", "workspace-sessions"),
            os.path.join(kiro_cli_home(env), "sessions", "cli"), *kiro_cli_dbs(env)]


def discover(env: Mapping[str, str]) -> list[SourceFile]:
    return [SourceFile(p, HARNESS) for p in kiro_files(env)]


def read(path: str, start: int = 0) -> ReadResult:
    if not is_regular_file(path):
        return ReadResult(safe_offset=start, error=f"not a readable regular file: {path}")
    if path.endswith(".sqlite3"):
        from deja.stages.sources import kiro_db

        return kiro_db.read(path)
    try:
        if path.endswith(".jsonl"):
            return _read_cli(path, start)
        return _read_workspace_session(path)
    except OSError as exc:
        return ReadResult(safe_offset=start, error=f"{type(exc).__name__}: {exc}")
    except Exception as exc:  # one bad file costs that file, never the run
        return ReadResult(safe_offset=start, error=f"kiro reader failed: {type(exc).__name__}: {exc}")


def workspace_folder(name: str) -> str:
    """The workspace path a ``workspace-sessions/<name>`` folder encodes, or ""."""
    s = name.replace("_", "=").rstrip("=")
    s += "=" * (-len(s) % 4)
    for decode in (base64.b64decode, base64.urlsafe_b64decode):
        try:
            p = decode(s).decode("utf-8")
        except (binascii.Error, ValueError):
            continue
        if p.startswith(("/", "\\", "~")) or (len(p) > 2 and p[1] == ":"):
            return p
    return ""


# ------------------------------------------------------------------- IDE sessions


def _read_workspace_session(path: str) -> ReadResult:
    try:
        doc = read_document(path)
    except ValueError as exc:
        return ReadResult(malformed=1, faults=[(0, str(exc))])
    res = ReadResult()
    history = doc.get("history") if isinstance(doc, dict) else None
    if not isinstance(history, list):
        res.malformed, res.faults = 1, [(0, "not a Kiro session (no history list)")]
        return res
    sid = doc.get("sessionId") if isinstance(doc.get("sessionId"), str) and doc.get("sessionId") else \
        os.path.basename(path)[:-5]
    cwd = doc.get("workspaceDirectory") if isinstance(doc.get("workspaceDirectory"), str) else ""
    cwd = file_uri_path(cwd) or workspace_folder(os.path.basename(os.path.dirname(path)))
    part = SessionPart(harness=HARNESS, session_id=sid, cwd=cwd)
    if isinstance(doc.get("title"), str) and doc["title"].strip():
        part.title, part.title_rank = doc["title"].strip(), 1
    meta = session_index(os.path.dirname(path)).get(sid, {})
    ts = parse_ts(meta.get("dateCreated")) or parse_ts(os.stat(path).st_mtime_ns // 1_000_000)
    for n, item in enumerate(history):
        msg = item.get("message") if isinstance(item, dict) else None
        if not isinstance(msg, dict):
            res.malformed += 1
            continue
        role, text = msg.get("role"), block_text(msg.get("content")).strip()
        if role in ("user", "assistant") and text and not (role == "assistant" and text == _STUB):
            text, cut = clip(text)
            res.clipped += cut
            part.messages.append(Message(role, text, ts, byte_offset=n))
    res.sessions = [part] if part.messages else []
    return res


# ----------------------------------------------------------------------- CLI logs


def _cli_meta(path: str) -> dict:
    try:
        doc = read_document(path[: -len(".jsonl")] + ".json")
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _items(data) -> list[dict]:
    content = data.get("content") if isinstance(data, dict) else None
    return [c for c in content if isinstance(c, dict)] if isinstance(content, list) else []


def _item_text(items: list[dict]) -> str:
    out = []
    for c in items:
        d = c.get("data")
        if c.get("kind") == "text" and isinstance(d, str):
            out.append(d)
        elif c.get("kind") == "json" and d is not None:
            out.append(d if isinstance(d, str) else orjson.dumps(d).decode())
    return "\n\n".join(t for t in out if t.strip())


def call(turn: Turn, name, args) -> None:
    """One tool call of Kiro's dialect into ``turn``; ``fs_read`` may carry a list of reads."""
    turn.call(name, args)
    ops = args.get("operations") if isinstance(args, dict) else None
    for op in ops if isinstance(ops, list) else []:
        turn.call(name, op)


def _read_cli(path: str, start: int) -> ReadResult:
    meta = _cli_meta(path)
    sid = meta.get("session_id") if isinstance(meta.get("session_id"), str) and meta.get("session_id") else \
        os.path.basename(path)[: -len(".jsonl")]
    part = SessionPart(harness=HARNESS, session_id=sid, cwd=meta.get("cwd") if isinstance(meta.get("cwd"), str) else "")
    if isinstance(meta.get("title"), str) and meta["title"].strip():
        part.title, part.title_rank = meta["title"].strip(), 1
    ts = parse_ts(meta.get("created_at")) or parse_ts(os.stat(path).st_mtime_ns // 1_000_000)
    flag = flags()
    lines = Lines(path, start)
    bad = 0
    for offset, obj in lines:
        kind, data = obj.get("kind"), obj.get("data")
        if kind not in ("Prompt", "AssistantMessage", "ToolResults"):
            continue
        if not isinstance(data, dict):
            bad += 1
            lines.faults.keep(offset, f"{kind} without a data object")
            continue
        m = data.get("meta")
        ts = (parse_ts(m.get("timestamp")) if isinstance(m, dict) else None) or ts
        items = _items(data)
        text = _item_text(items)
        if kind == "ToolResults":
            if text and flag["TOOL_OUTPUT"]:
                part.messages.append(Message("tool-output", clip(text)[0], ts, byte_offset=offset))
            continue
        role = "user" if kind == "Prompt" else "assistant"
        if text:
            text, cut = clip(text)
            part.messages.append(Message(role, text, ts, byte_offset=offset))
        turn = Turn(DIALECT, flag)
        for c in items:
            d = c.get("data")
            if c.get("kind") == "toolUse" and isinstance(d, dict):
                call(turn, d.get("name"), d.get("input") if isinstance(d.get("input"), dict) else d.get("args"))
        part.messages.extend(turn.messages(ts, offset))
    return ReadResult(sessions=[part] if part.messages else [], safe_offset=lines.end,
                      malformed=lines.malformed + bad + lines.faults.count, faults=lines.faults.first)
