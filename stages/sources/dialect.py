"""Tool calls to work records, by a per-harness table (harness-formats 1.2).

Most harnesses write a tool call as ``(name, arguments dict)``; only the
vocabulary differs. A reader declares its ``Dialect`` (which tools name a
file, which run a shell command, the argument keys) and feeds every call of
one message to a ``Turn``, which returns the message's command, edit and
files records. The record texts themselves come from ``work_records``.
"""

from __future__ import annotations

from dataclasses import dataclass

import orjson

from deja.stages import work_records as work
from deja.stages.sources.base import Message


@dataclass(frozen=True, slots=True)
class Dialect:
    file_tools: frozenset[str]  # calls whose path argument names a file the turn opened or edited
    shell_tools: frozenset[str]
    path_keys: tuple[str, ...] = ("path", "file_path", "filepath")
    old_keys: tuple[str, ...] = ("old_string", "old_str")
    command_keys: tuple[str, ...] = ("command", "cmd")
    edits_key: str = "edits"  # a list of {old_string} spans (MultiEdit-style)


def flags() -> dict:
    return {f: work.enabled(f) for f in ("PATHS", "COMMANDS", "EDITS", "TOOL_OUTPUT")}


def arguments(args):
    """A call's arguments as a dict: some harnesses keep them as a JSON string."""
    if isinstance(args, str):
        try:
            args = orjson.loads(args)
        except orjson.JSONDecodeError:
            return {}
    return args if isinstance(args, dict) else {}


def first_text(args: dict, keys) -> str:
    for k in keys:
        v = args.get(k)
        if isinstance(v, str) and v:
            return v
    return ""


class Turn:
    """The work records of one message, collected call by call."""

    def __init__(self, dialect: Dialect, flag: dict):
        self.d, self.flags = dialect, flag
        self.paths: list[str] = []
        self.records: list[tuple[str, str, str]] = []  # (role, text, tool)

    def call(self, name, args) -> None:
        if not isinstance(name, str) or not name:
            return
        args = arguments(args)
        if name in self.d.shell_tools:
            cmd = first_text(args, self.d.command_keys)
            rec = work.command_record(cmd) if cmd and self.flags["COMMANDS"] else None
            if rec:
                self.records.append(("command", rec, name))
            return
        path = first_text(args, self.d.path_keys)
        if not path:
            return
        if name in self.d.file_tools:
            self.paths.append(path)
        if not self.flags["EDITS"]:
            return
        spans = [first_text(args, self.d.old_keys)]
        edits = args.get(self.d.edits_key)
        if isinstance(edits, list):
            spans.extend(first_text(e, self.d.old_keys) for e in edits if isinstance(e, dict))
        for old in spans:
            rec = work.edit_record(path, old) if old else None
            if rec:
                self.records.append(("edit", rec, name))

    def messages(self, ts, offset: int) -> list[Message]:
        out = [Message(r, t, ts, tool=tool, byte_offset=offset) for r, t, tool in self.records]
        files = work.files_record(self.paths) if self.flags["PATHS"] else None
        if files:
            out.append(Message("files", files, ts, byte_offset=offset))
        return out


def block_text(content) -> str:
    """The text of a message body: a string, or the ``text`` blocks of a list."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = [b["text"] for b in content
             if isinstance(b, dict) and b.get("type", "text") == "text" and isinstance(b.get("text"), str)]
    return "\n\n".join(p for p in parts if p.strip())
