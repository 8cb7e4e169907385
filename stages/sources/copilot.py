"""GitHub Copilot CLI, every store generation under ``~/.copilot``
(harness-formats section 8 and "Seen in real published transcripts → Copilot CLI").

* ``session-state/<id>/events.jsonl`` (current) and ``session-state/<id>.jsonl``
  (the flat layout before it): one event a line, ``{type, data, id, timestamp,
  parentId}``. Append-only: read from the last safe offset. ``session.start``
  names the session and its folder (``data.context.cwd``); ``session.resume``
  appends to the same file. The folder's ``workspace.yaml`` holds the
  harness's ``summary`` of the session, its title.
* ``history-session-state/session_<id>_<startMs>.json`` (2025): one JSON
  document per session, ``{sessionId, startTime, chatMessages, timeline}``,
  rewritten whole, so read whole (``safe_offset`` 0: any change re-reads it).
  The ``timeline`` carries the times; ``chatMessages`` (OpenAI chat shape, no
  times) is read only when the timeline holds no speech. No cwd is recorded.
* ``command-history-state.json``: ``{"commandHistory": [...]}``, the prompts
  typed, newest first, with no session or time: one session of its own
  (slash commands left out).

Work records follow Copilot's tool dialect (harness-formats 1.2): ``bash``,
``powershell`` and ``shell`` run ``command``; ``view``, ``read``, ``edit``,
``create``, ``write`` and the older ``str_replace_editor`` name a ``path``;
``edit`` and ``str_replace_editor``'s ``str_replace`` replace ``old_str``.
"""

from __future__ import annotations

import os
import re
from typing import Mapping

import orjson

from deja.stages import work_records as work
from deja.stages.sources.base import Message, ReadResult, SessionPart, SourceFile
from deja.stages.sources.codex import json_object
from deja.stages.sources.jsonl import Lines, clip, is_regular_file, parse_ts, read_head
from deja.stages.sources.locate import copilot_files, copilot_home
from deja.stages.sources.values import Faults

HARNESS = "copilot"
HISTORY_FILE = "command-history-state.json"
HISTORY_SESSION = "command-history"

SHELL_TOOLS = frozenset(("bash", "powershell", "shell"))
FILE_TOOLS = frozenset(("view", "read", "edit", "create", "write", "str_replace_editor"))
_NOISE_TOOLS = frozenset(("report_intent",))  # the agent announcing its next step: "Intent logged"
_EXIT = re.compile(r"<exited with exit code (-?\d+)>\s*$")
_REMINDER = re.compile(r"\s*<reminder>.*?</reminder>\s*", re.S)
_SLASH = re.compile(r"\s*/[A-Za-z][\w-]*(?:\s|$)")  # a slash command (/model, /login): the harness's, not a prompt
_LEGACY_NAME = re.compile(r"session_(.+?)_\d+\.json$")
_HEAD = 64 << 10


# --------------------------------------------------------------------------- discover


def roots(env: Mapping[str, str]) -> list[str]:
    """Where this reader looks, for `deja doctor`."""
    return [copilot_home(env)]


def discover(env: Mapping[str, str]) -> list[SourceFile]:
    return [SourceFile(p, HARNESS) for p in copilot_files(env)]


# --------------------------------------------------------------------------- read


def read(path: str, start: int = 0) -> ReadResult:
    if not is_regular_file(path):
        return ReadResult(safe_offset=start, error=f"not a readable regular file: {path}")
    try:
        name = os.path.basename(path)
        if name == HISTORY_FILE:
            return _read_history(path)
        if name.endswith(".json"):
            return _read_legacy(path)
        return _read_events(path, start)
    except OSError as exc:
        return ReadResult(safe_offset=start, error=f"{type(exc).__name__}: {exc}")
    except Exception as exc:  # one bad file costs that file, never the run
        return ReadResult(safe_offset=start, error=f"copilot reader failed: {type(exc).__name__}: {exc}")


def file_session_id(path: str) -> str:
    """The session id a file's name or folder gives (``data.sessionId`` wins when present)."""
    name = os.path.basename(path)
    if name == "events.jsonl":
        return os.path.basename(os.path.dirname(path))
    m = _LEGACY_NAME.search(name)
    if m:
        return m.group(1)
    return name.rsplit(".", 1)[0]


# --------------------------------------------------------------------------- events.jsonl


class _Events:
    """One events file: its identity, and the records of the lines read."""

    def __init__(self, path: str):
        self.sid = file_session_id(path)
        self.cwd = ""
        self.branch = ""
        self.ts: int | None = None
        self.out: list[Message] = []
        self.paths: list[str] = []  # files named since the last speech: one files record per turn
        self.paths_at = 0
        self.paths_ts: int | None = None
        self.calls: dict[str, str] = {}  # toolCallId -> tool name
        self.started = False  # a session.start line was read

    def identity(self, obj: dict) -> None:
        data = obj.get("data")
        if not isinstance(data, dict):
            return
        t = obj.get("type")
        if t == "session.start":
            sid = data.get("sessionId")
            self.started = True
            if isinstance(sid, str) and sid:
                self.sid = sid
        if t in ("session.start", "session.resume"):
            ctx = data.get("context")
            if isinstance(ctx, dict):
                if isinstance(ctx.get("cwd"), str) and ctx["cwd"] and not self.cwd:
                    self.cwd = ctx["cwd"]
                if isinstance(ctx.get("branch"), str) and ctx["branch"]:
                    self.branch = ctx["branch"]

    def step(self, offset: int, obj: dict, faults: Faults) -> None:
        ts = obj.get("timestamp")
        if ts is not None:
            self.ts = ts
        self.identity(obj)
        data = obj.get("data")
        if not isinstance(data, dict):
            return
        t = obj.get("type")
        if t == "user.message":
            self.flush()
            self.speech("user", data.get("content"), offset)
        elif t == "assistant.message":
            self.flush()
            self.speech("assistant", data.get("content"), offset)
        elif t == "tool.execution_start":
            name = faults.name(offset, "tool", data.get("toolName"))
            call = data.get("toolCallId")
            if isinstance(call, str):
                self.calls[call] = name
            args = data.get("arguments")
            if isinstance(args, str):
                args = json_object(args)
            if isinstance(args, dict):
                self.call(name, args, offset)
        elif t == "tool.execution_complete":
            self.result(data, offset)
        elif t == "session.compaction_complete":
            summary = data.get("summaryContent")
            if isinstance(summary, str) and summary.strip():
                self.add("summary", summary, offset)
        elif t == "session.error":
            # the model's provider failed the turn ("402 You have no quota"): what the
            # person saw instead of an answer, printed, not said; often all a session holds
            msg = data.get("message")
            if isinstance(msg, str) and msg.strip():
                self.flush()
                self.add("tool-output", msg, offset, is_error=True)

    def add(self, role: str, text: str, offset: int, tool=None, exit_code=None, is_error=None) -> None:
        self.out.append(Message(role, text, self.ts, tool, exit_code, is_error, offset))

    def speech(self, role: str, text, offset: int) -> None:
        if isinstance(text, str) and text.strip():
            self.add(role, text, offset)

    def call(self, name: str, args: dict, offset: int, exit_code: int | None = None) -> None:
        _work(self, name, args, offset, exit_code)

    def result(self, data: dict, offset: int) -> None:
        name = self.calls.get(data.get("toolCallId"), "") if isinstance(data.get("toolCallId"), str) else ""
        if name in _NOISE_TOOLS or not work.enabled("TOOL_OUTPUT"):
            return
        ok = data.get("success")
        text = ""
        res = data.get("result")
        if isinstance(res, dict) and isinstance(res.get("content"), str):
            text = res["content"]
        err = data.get("error")
        if not text and isinstance(err, dict) and isinstance(err.get("message"), str):
            text = err["message"]
        if text.strip():
            self.add("tool-output", text, offset, name or None, None, (ok is False) if isinstance(ok, bool) else None)

    def flush(self) -> None:
        rec = work.files_record(self.paths) if work.enabled("PATHS") else None
        if rec:
            self.out.append(Message("files", rec, self.paths_ts, None, None, None, self.paths_at))
        self.paths = []


def _work(acc, name: str, args: dict, offset: int, exit_code: int | None) -> None:
    """Command, files and edit records of one Copilot tool call (both generations)."""
    if name in SHELL_TOOLS:
        cmd = args.get("command")
        if work.enabled("COMMANDS") and isinstance(cmd, str):
            rec = work.command_record(cmd, exit_code)
            if rec:
                acc.add("command", rec, offset, name, exit_code)
        return
    if name not in FILE_TOOLS:
        return
    path = args.get("path")
    if not isinstance(path, str) or not path.strip():
        return
    if not acc.paths:
        acc.paths_at, acc.paths_ts = offset, acc.ts
    acc.paths.append(path)
    old = args.get("old_str")
    replaces = name == "edit" or (name == "str_replace_editor" and args.get("command") == "str_replace")
    if replaces and work.enabled("EDITS"):
        rec = work.edit_record(path, old if isinstance(old, str) else "")
        if rec:
            acc.add("edit", rec, offset, name)


def _read_events(path: str, start: int) -> ReadResult:
    ev = _Events(path)
    if start > 0:
        for obj in read_head(path, min(start, _HEAD)):
            ev.identity(obj)
    lines = Lines(path, start)
    bad = lines.each(lambda offset, obj: ev.step(offset, obj, lines.faults))
    ev.flush()
    part = _part(ev.sid, ev.cwd, ev.branch, ev.out, _workspace_title(path))
    clipped = _clip(part.messages)
    return ReadResult(sessions=[part] if (part.messages or (start == 0 and ev.started)) else [], safe_offset=lines.end,
                      malformed=lines.malformed + bad + lines.faults.count, faults=lines.faults.first, clipped=clipped)


def _workspace_title(path: str) -> str:
    """``summary:`` of the session folder's ``workspace.yaml`` (the harness's own
    title), "" when absent. The file is flat ``key: value`` lines."""
    if os.path.basename(path) != "events.jsonl":
        return ""
    try:
        with open(os.path.join(os.path.dirname(path), "workspace.yaml"), encoding="utf-8", errors="replace") as fh:
            for line in fh.read(64 << 10).splitlines():
                if line.startswith("summary:"):
                    value = _yaml_scalar(line[8:].strip())
                    return value if value not in ("|", ">", "|-", ">-") else ""
    except OSError:
        pass
    return ""


def _yaml_scalar(value: str) -> str:
    """A one-line YAML scalar's text: a single-quoted one doubles its quotes, a
    double-quoted one escapes as JSON does (\\", \\t, \\u00e9; YAML's own few
    others are kept as written)."""
    if len(value) >= 2 and value[0] == value[-1] == "'":
        return value[1:-1].replace("''", "'")
    if len(value) >= 2 and value[0] == value[-1] == '"':
        import json

        try:
            return json.loads(value)
        except ValueError:
            return value[1:-1]
    return value


# --------------------------------------------------------------------------- history-session-state


def _read_legacy(path: str) -> ReadResult:
    with open(path, "rb") as fh:
        raw = fh.read()
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError:
        if not raw.strip():
            return ReadResult()  # an empty file: the harness had not written it yet
        return ReadResult(malformed=1, faults=[(0, "document is not JSON")])
    if not isinstance(doc, dict):
        return ReadResult(malformed=1, faults=[(0, f"document is a {type(doc).__name__}, not an object")])
    faults = Faults()
    sid = doc.get("sessionId")
    sid = sid if isinstance(sid, str) and sid else file_session_id(path)
    start = parse_ts(doc.get("startTime"))
    acc = _Events(path)
    acc.sid, acc.ts = sid, start
    timeline = doc.get("timeline")
    spoke = False
    if isinstance(timeline, list):
        for i, entry in enumerate(timeline):
            if not isinstance(entry, dict):
                faults.note(0, f"timeline entry {i} is not an object")
                continue
            ts = entry.get("timestamp")
            if ts is not None:
                acc.ts = parse_ts(ts)
                if acc.ts is None:
                    faults.note(0, f"timeline entry {i}: timestamp is not a time in 1970-2200")
            t = entry.get("type")
            if t in ("user", "copilot"):
                acc.flush()
                text = entry.get("text")
                if isinstance(text, str) and text.strip():
                    spoke = True
                    acc.add("user" if t == "user" else "assistant", text, 0)
            elif t == "tool_call_completed":
                _legacy_call(acc, entry, faults)
    elif timeline is not None:
        faults.note(0, "timeline is not a list")
    acc.flush()
    if not spoke:
        acc.ts = start
        _chat_messages(acc, doc.get("chatMessages"), faults)
        acc.flush()
    part = _part(sid, "", "", acc.out, "")
    clipped = _clip(part.messages)
    return ReadResult(sessions=[part] if part.messages else [], safe_offset=0, malformed=faults.count,
                      faults=faults.first, clipped=clipped)


def _legacy_call(acc: _Events, entry: dict, faults: Faults) -> None:
    name = faults.name(0, "tool", entry.get("name"))
    args = entry.get("arguments")
    if isinstance(args, str):
        args = json_object(args)
    res = entry.get("result")
    log = res.get("log") if isinstance(res, dict) else None
    log = log if isinstance(log, str) else ""
    m = _EXIT.search(log)
    code = int(m.group(1)) if m and len(m.group(1)) < 7 else None
    if isinstance(args, dict):
        _work(acc, name, args, 0, code)
    if log.strip() and work.enabled("TOOL_OUTPUT"):
        failed = res.get("type") == "failure" if isinstance(res, dict) else None
        acc.add("tool-output", log, 0, name or None, code, failed)


def _chat_messages(acc: _Events, msgs, faults: Faults) -> None:
    """The OpenAI-shaped ``chatMessages`` of a document whose timeline holds no speech."""
    if not isinstance(msgs, list):
        return
    for msg in msgs:
        if not isinstance(msg, dict):
            continue
        role, content = msg.get("role"), msg.get("content")
        if role == "user" and isinstance(content, str):
            acc.speech("user", _REMINDER.sub("\n", content).strip(), 0)
        elif role == "assistant":
            acc.speech("assistant", content, 0)
            for call in msg.get("tool_calls") or ():
                fn = call.get("function") if isinstance(call, dict) else None
                if isinstance(fn, dict):
                    args = json_object(fn.get("arguments"))
                    _work(acc, faults.name(0, "tool", fn.get("name")), args, 0, None)
            acc.flush()


# --------------------------------------------------------------------------- command history


def _read_history(path: str) -> ReadResult:
    with open(path, "rb") as fh:
        raw = fh.read()
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return ReadResult(malformed=1 if raw.strip() else 0, faults=[(0, "document is not JSON")] if raw.strip() else [])
    items = doc.get("commandHistory") if isinstance(doc, dict) else None
    if not isinstance(items, list):
        return ReadResult(malformed=1, faults=[(0, "no commandHistory list")])
    msgs = [Message("user", s, None) for s in reversed(items)
            if isinstance(s, str) and s.strip() and not _SLASH.match(s)]
    bad = sum(1 for s in items if not isinstance(s, str))
    part = SessionPart(harness=HARNESS, session_id=HISTORY_SESSION, project="history", messages=msgs)
    return ReadResult(sessions=[part] if msgs else [], safe_offset=0, malformed=bad, clipped=_clip(msgs),
                      faults=[(0, f"{bad} entries are not text")] if bad else [])


# --------------------------------------------------------------------------- helpers


def _part(sid: str, cwd: str, branch: str, msgs: list[Message], title: str) -> SessionPart:
    return SessionPart(harness=HARNESS, session_id=sid, cwd=cwd, branch=branch, title=title,
                       title_rank=1 if title else 0, messages=msgs)


def _clip(msgs: list[Message]) -> int:
    n = 0
    for m in msgs:
        m.text, cut = clip(m.text)
        n += cut
    return n

