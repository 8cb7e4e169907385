"""Command Code (Langbase's ``cmd``): one JSONL file per session,
``${COMMAND_CODE_HOME:-~/.commandcode}/projects/<slug>/<sessionId>.jsonl``, with
sidecars beside it (``.meta.json`` holds the title; ``.checkpoints.jsonl``,
``.prompts.jsonl`` and ``.share.json`` are not transcripts). Harness-formats
section 15 and codeburn's Command Code provider notes, taken from real
(redacted) transcripts; Command Code's own source is not public.

Two line shapes:

* session format v3: a first line ``{type: "session", id, timestamp, cwd,
  parentSession?}``, then ``{type: "message", id, timestamp, message: {role,
  content}}`` with ``content`` a string or Anthropic-shaped blocks (``text``,
  ``thinking``, ``tool_use {name, input}``, ``tool_result {content, is_error}``);
* the older lines ``{id, sessionId, timestamp, role, content: [{type: text |
  tool-call | tool-result, text, toolName, input, output}], gitBranch}``.

Appended as the agent works: read from the last offset, the header re-read
from the head.
"""

from __future__ import annotations

import os
from typing import Mapping

import orjson

from deja.stages.sources.base import Message, ReadResult, SessionPart, SourceFile
from deja.stages.sources.dialect import Dialect, Turn, block_text, flags
from deja.stages.sources.jsonl import Lines, clip, read_document, read_guarded, read_head
from deja.stages.sources.locate import commandcode_files, commandcode_home

HARNESS = "commandcode"

# Not confirmed in Command Code's source (closed): the names its transcripts are reported to use,
# in both the Claude-like and the snake_case spellings.
DIALECT = Dialect(
    file_tools=frozenset(("Read", "Write", "Edit", "MultiEdit", "read_file", "write_file", "edit_file",
                          "read", "write", "edit")),
    shell_tools=frozenset(("Bash", "bash", "shell", "run_command", "execute_command", "shell_command")),
    path_keys=("file_path", "path", "filePath", "filepath"),
    old_keys=("old_string", "old_str", "oldString"),
)


def roots(env: Mapping[str, str]) -> list[str]:
    return [os.path.join(commandcode_home(env), "projects")]


def discover(env: Mapping[str, str]) -> list[SourceFile]:
    return [SourceFile(p, HARNESS) for p in commandcode_files(env)]


def read(path: str, start: int = 0) -> ReadResult:
    return read_as(path, start, HARNESS)


def read_as(path: str, start: int, harness: str) -> ReadResult:
    """A transcript of this flat shape as ``harness``'s session (ZCode writes it too)."""
    return read_guarded(path, start, lambda p, s: _read(p, s, harness), harness)


def _title(path: str) -> str:
    try:
        meta = read_document(path[: -len(".jsonl")] + ".meta.json")
    except (OSError, ValueError):
        return ""
    t = meta.get("title") if isinstance(meta, dict) else None
    return t.strip() if isinstance(t, str) else ""


def _text_of(value) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return block_text(value)
    return orjson.dumps(value).decode() if value is not None else ""


def _read(path: str, start: int, harness: str = HARNESS) -> ReadResult:
    part = SessionPart(harness=harness, session_id=os.path.basename(path)[: -len(".jsonl")])
    if start:
        for obj in read_head(path, 16 << 10):
            _header(part, obj)
            break
    part.title = _title(path)
    part.title_rank = 1 if part.title else 0
    flag = flags()
    lines = Lines(path, start)
    bad = 0
    for offset, obj in lines:
        kind = obj.get("type")
        if kind == "session":
            _header(part, obj)
            continue
        msg = obj.get("message") if kind == "message" else obj
        if not isinstance(msg, dict):
            bad += 1
            lines.faults.keep(offset, "message is not an object")
            continue
        if kind != "message" and isinstance(obj.get("sessionId"), str) and obj["sessionId"]:
            part.session_id = obj["sessionId"]  # the older lines name their session on each line
        if not part.cwd and isinstance(obj.get("cwd"), str):
            part.cwd = obj["cwd"]
        if not part.branch and isinstance(obj.get("gitBranch"), str):
            part.branch = obj["gitBranch"]
        ts = obj.get("timestamp")
        role, content = msg.get("role"), msg.get("content")
        if role not in ("user", "assistant"):
            continue
        text = block_text(content)
        if text.strip():
            text, cut = clip(text)
            part.messages.append(Message(role, text, ts, byte_offset=offset))
        turn = Turn(DIALECT, flag)
        for b in content if isinstance(content, list) else []:
            if not isinstance(b, dict):
                continue
            t = b.get("type")
            if t in ("tool_use", "tool-call"):
                turn.call(b.get("name") or b.get("toolName"), b.get("input") or b.get("args"))
            elif t in ("tool_result", "tool-result") and flag["TOOL_OUTPUT"]:
                out = _text_of(b.get("content") if "content" in b else b.get("output", b.get("result")))
                if out.strip():
                    part.messages.append(Message("tool-output", clip(out)[0], ts,
                                                 is_error=True if b.get("is_error") or b.get("isError") else None,
                                                 byte_offset=offset))
        part.messages.extend(turn.messages(ts, offset))
    return ReadResult(sessions=[part] if part.messages else [], safe_offset=lines.end,
                      malformed=lines.malformed + bad + lines.faults.count, faults=lines.faults.first)


def _header(part: SessionPart, obj: dict) -> None:
    """The v3 first line: the session's id, folder and the session it continues."""
    if obj.get("type") != "session":
        return
    if isinstance(obj.get("id"), str) and obj["id"]:
        part.session_id = obj["id"]
    if isinstance(obj.get("cwd"), str):
        part.cwd = obj["cwd"]
    if isinstance(obj.get("parentSession"), str) and obj["parentSession"]:
        part.parent = obj["parentSession"]
