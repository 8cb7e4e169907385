"""The pi session format, shared by pi, omp (Oh My Pi) and OpenClaw
(harness-formats section 10; confirmed against the session manager and the
tools in pi's source, github badlogic/pi-mono, and omp's session storage
documentation in can1357/oh-my-pi).

One append-only JSONL file per session. Line 1 is the header
``{"type":"session", "id", "timestamp", "cwd", "title"? (omp), "parentSession"?}``;
every other line is an entry ``{"type", "id", "parentId", "timestamp", …}``:

* ``message`` holds an agent message: ``user`` (content a string or text
  blocks), ``assistant`` (``text``, ``thinking`` and ``toolCall`` blocks:
  ``{type:"toolCall", id, name, arguments}``), ``toolResult`` (``toolCallId``,
  ``toolName``, text blocks, ``isError``), ``bashExecution`` (a person's
  ``!command``: ``command``, ``output``, ``exitCode``); ``custom``,
  ``branchSummary`` and ``compactionSummary`` messages are the harness's own.
* ``compaction`` and ``branch_summary`` carry a ``summary`` (kept as summary).
* ``session_info`` carries the name a person gave the session (the title).
* The rest (``model_change``, ``thinking_level_change``, ``label``, ``custom``,
  ``custom_message``, omp's ``ttsr_injection``, ``session_init``, ``mode_change``)
  is plumbing.

``parentId`` forms a tree (branches inside one file); file order is kept, as
every branch is history the person lived through. A forked session's header
names its parent in ``parentSession`` (a path or an id): that is the one edge
the harness writes, kept as kind ``fork``.

The tool dialect (pi's own tools, which omp and OpenClaw inherit): ``bash``
(OpenClaw also ``exec``) with ``command``; ``read``/``edit``/``write`` with
``path``; ``edit`` replaces ``oldText`` (also an ``edits[]`` list of them).
A bash result that failed ends ``Command exited with code N``.

Each harness module gives its own roots and, for a session without a cwd,
its own project hint.
"""

from __future__ import annotations

import os
import re

from deja.stages import work_records as work
from deja.stages.sources.base import Message, ReadResult, SessionPart
from deja.stages.sources.jsonl import Lines, clip, is_regular_file, read_head

_HEAD = 64 << 10
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_EXIT = re.compile(r"Command exited with code (-?\d+)\s*$")

SHELL_TOOLS = frozenset(("bash", "exec"))
FILE_TOOLS = frozenset(("read", "edit", "write"))
_OLD_KEYS = ("oldText", "old_text", "oldString", "old_string")


def filename_id(path: str) -> str:
    """The session id in ``<ISO-ts>_<id>.jsonl`` (pi, omp) or ``<id>.jsonl`` (OpenClaw)."""
    name = os.path.basename(path)
    stem = name[:-6] if name.endswith(".jsonl") else name
    m = _UUID.search(stem)
    if m:
        return m.group(0)
    return stem.rsplit("_", 1)[-1]


def parent_id(value) -> str:
    """``parentSession`` is a session file path or a bare id (omp writes either)."""
    if not isinstance(value, str) or not value.strip():
        return ""
    v = value.strip()
    if "/" in v or "\\" in v or v.endswith(".jsonl"):
        return filename_id(re.split(r"[/\\]", v)[-1])
    return v


def read_file(path: str, start: int, harness: str, hint: str = "") -> ReadResult:
    """One pi-format session file from ``start``. ``hint``: the project name a
    harness gives when the header records no cwd."""
    if not is_regular_file(path):
        return ReadResult(safe_offset=start, error=f"not a readable regular file: {path}")
    try:
        f = _PiFile(path, harness)
        if start > 0:  # the header (id, cwd, title, parent) lies before the offset
            for obj in read_head(path, min(start, _HEAD)):
                if obj.get("type") == "session":
                    f.header(obj)
                    break
        lines = Lines(path, start)
        f.bad += lines.each(f.step)
        res = f.result(lines.end, lines.malformed + lines.faults.count, hint)
        res.faults = lines.faults.first
        return res
    except OSError as exc:
        return ReadResult(safe_offset=start, error=f"{type(exc).__name__}: {exc}")
    except Exception as exc:  # one bad file costs that file, never the run
        return ReadResult(safe_offset=start, error=f"{harness} reader failed: {type(exc).__name__}: {exc}")


class _PiFile:
    def __init__(self, path: str, harness: str):
        self.part = SessionPart(harness=harness, session_id=filename_id(path))
        self.seen_header = False
        self.bad = 0
        self.clipped = 0
        self.ts: int | None = None
        self.pending: dict[str, tuple[Message, str]] = {}  # toolCall id -> (command record, command)
        self.want = {f: work.enabled(f) for f in ("PATHS", "COMMANDS", "EDITS", "TOOL_OUTPUT")}

    # ---- lines

    def header(self, obj: dict) -> None:
        if self.seen_header:
            return  # pi once wrote the header twice; the first is the session's
        self.seen_header = True
        p = self.part
        if isinstance(obj.get("id"), str) and obj["id"].strip():
            p.session_id = obj["id"].strip()
        if isinstance(obj.get("cwd"), str):
            p.cwd = obj["cwd"]
        if isinstance(obj.get("title"), str) and obj["title"].strip():
            p.title, p.title_rank = obj["title"].strip(), 1
        parent = parent_id(obj.get("parentSession"))
        if parent:
            p.kind, p.parent = "fork", parent

    def step(self, offset: int, obj: dict) -> None:
        t = obj.get("type")
        ts = obj.get("timestamp")  # Lines made it epoch ms or None
        if ts is not None:
            self.ts = ts
        if t == "session":
            self.header(obj)
        elif t == "message":
            m = obj.get("message")
            if isinstance(m, dict):
                self.message(m, offset)
        elif t in ("compaction", "branch_summary"):
            s = obj.get("summary")
            if isinstance(s, str) and s.strip():
                self.emit("summary", s.strip(), offset)
        elif t == "session_info":
            name = obj.get("name")
            if isinstance(name, str) and name.strip():
                self.part.title, self.part.title_rank = name.strip(), 2

    def message(self, m: dict, offset: int) -> None:
        role = m.get("role")
        if role == "user":
            self.emit("user", content_text(m.get("content")), offset)
        elif role == "assistant":
            content = m.get("content")
            self.emit("assistant", content_text(content), offset)
            if isinstance(content, list):
                self.tools([b for b in content if isinstance(b, dict) and b.get("type") == "toolCall"], offset)
        elif role == "toolResult":
            self.result_of(m, offset)
        elif role == "bashExecution":
            cmd = m.get("command")
            code = m.get("exitCode") if type(m.get("exitCode")) is int else None
            if self.want["COMMANDS"] and isinstance(cmd, str):
                rec = work.command_record(cmd, code)
                if rec:
                    self.emit("command", rec, offset, tool="bash", exit_code=code)
            out = m.get("output")
            if self.want["TOOL_OUTPUT"] and isinstance(out, str) and out.strip():
                self.emit("tool-output", out.strip(), offset, tool="bash", exit_code=code,
                          is_error=None if code is None else code != 0)

    def tools(self, calls: list[dict], offset: int) -> None:
        """Work records of one assistant message's tool calls: commands, one files record, edits."""
        cwd = self.part.cwd
        paths: list[str] = []
        edits: list[tuple[str, str]] = []
        path_tool = None
        for c in calls:
            name, args = c.get("name"), c.get("arguments")
            if not isinstance(args, dict) or not isinstance(name, str):
                continue
            if name in SHELL_TOOLS:
                cmd = args.get("command")
                rec = work.command_record(cmd) if self.want["COMMANDS"] else None
                if rec:
                    msg = self.emit("command", rec, offset, tool=name)
                    if msg is not None and isinstance(c.get("id"), str):
                        self.pending[c["id"]] = (msg, cmd)
            elif name in FILE_TOOLS:
                fp = args.get("path") or args.get("file_path")
                if not isinstance(fp, str) or not fp.strip():
                    continue
                if cwd and not work.is_absolute(fp):
                    fp = os.path.join(cwd, fp)
                paths.append(fp)
                path_tool = path_tool or name
                if name != "edit":
                    continue
                spans = [args] + [e for e in args.get("edits") or [] if isinstance(e, dict)] \
                    if isinstance(args.get("edits"), list) else [args]
                for s in spans:
                    old = next((s[k] for k in _OLD_KEYS if isinstance(s.get(k), str)), None)
                    rec = work.edit_record(fp, old)
                    if rec:
                        edits.append((rec, name))
        if paths and self.want["PATHS"]:
            rec = work.files_record(paths)
            if rec:
                self.emit("files", rec, offset, tool=path_tool)
        if self.want["EDITS"]:
            for rec, name in edits:
                self.emit("edit", rec, offset, tool=name)

    def result_of(self, m: dict, offset: int) -> None:
        text = content_text(m.get("content"))
        err = m.get("isError") if isinstance(m.get("isError"), bool) else None
        tool = m.get("toolName") if isinstance(m.get("toolName"), str) else None
        code = None
        hit = _EXIT.search(text) if tool in SHELL_TOOLS else None
        if hit:
            code = int(hit.group(1))
        pend = self.pending.pop(m.get("toolCallId"), None) if isinstance(m.get("toolCallId"), str) else None
        if pend is not None and code is not None and code != 0:
            msg, cmd = pend
            msg.text = work.command_record(cmd, code) or msg.text
            msg.exit_code = code
        if self.want["TOOL_OUTPUT"] and text:
            self.emit("tool-output", text, offset, tool=tool, exit_code=code, is_error=err)

    def emit(self, role: str, text: str, offset: int, **kw) -> Message | None:
        if not text:
            return None
        text, cut = clip(text)
        self.clipped += cut
        msg = Message(role, text, self.ts, byte_offset=offset, **kw)
        self.part.messages.append(msg)
        return msg

    def result(self, end: int, malformed: int, hint: str) -> ReadResult:
        p = self.part
        if not p.cwd:
            p.project = hint
        sessions = [p] if (p.messages or self.seen_header) else []
        return ReadResult(sessions=sessions, safe_offset=end, malformed=malformed + self.bad, clipped=self.clipped)


def content_text(content) -> str:
    """Text of a message's content: a string, or its ``text`` blocks joined
    (thinking, tool calls and images are not text)."""
    if isinstance(content, str):
        return content.strip()
    if not isinstance(content, list):
        return ""
    texts = [b["text"] for b in content
             if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str) and b["text"].strip()]
    return "\n".join(texts).strip()
