"""Kimi Code: ``${KIMI_CODE_HOME:-~/.kimi-code}/sessions/<workDirKey>/<sessionId>/agents/main/wire.jsonl``
with ``<sessionId>/state.json`` beside (``title``, ``workDir``, ``lastPrompt``)
(harness-formats section 14 "Kimi Code"; not the older ``~/.kimi`` of kimi-cli).

Wire lines are ``{type, time, …}``. ``context.append_message`` carries a whole
user or assistant message (content a string or ``text`` parts);
``context.append_loop_event`` carries the agent loop's events: ``content.part``
text is gathered into one assistant reply, flushed at ``step.begin``,
``step.end``, a tool call and the end of the file (a reply cut off mid-stream
is kept); ``think`` parts are not text. ``tool.call`` (``name``, ``args``) gives
work records in Kimi's dialect (``Bash`` ``command``; ``Read``/``Edit``/``Write``/
``ReadMediaFile`` ``path``; ``Edit`` ``old_string``), ``tool.result``
(``result.output``) tool output.

Append-only: read from the last safe offset. A reply whose parts straddle two
runs is two assistant records (the first flushed at the end of the file).
"""

from __future__ import annotations

import os
from typing import Mapping

import orjson

from deja.stages import work_records as work
from deja.stages.sources.base import Message, ReadResult, SessionPart, SourceFile
from deja.stages.sources.jsonl import Lines, clip, is_regular_file, parse_ts
from deja.stages.sources.locate import kimi_files, kimi_home
from deja.stages.sources.pi_format import content_text

HARNESS = "kimi"

_FILE_TOOLS = frozenset(("Read", "Edit", "Write", "ReadMediaFile"))
_STATE_CAP = 1 << 20


def roots(env: Mapping[str, str]) -> list[str]:
    return [kimi_home(env)]


def discover(env: Mapping[str, str]) -> list[SourceFile]:
    return [SourceFile(p, HARNESS) for p in kimi_files(env)]


def session_dir(path: str) -> str:
    """``<sessionId>/`` of ``<sessionId>/agents/main/wire.jsonl``."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(path))))


def read_state(path: str) -> dict:
    """The session's ``state.json`` (an unexpected shape or none: {})."""
    try:
        with open(os.path.join(session_dir(path), "state.json"), "rb") as fh:
            obj = orjson.loads(fh.read(_STATE_CAP))
    except (OSError, orjson.JSONDecodeError):
        return {}
    return obj if isinstance(obj, dict) else {}


def read(path: str, start: int = 0) -> ReadResult:
    if not is_regular_file(path):
        return ReadResult(safe_offset=start, error=f"not a readable regular file: {path}")
    try:
        w = _Wire(path)
        lines = Lines(path, start)
        w.bad += lines.each(w.step)
        w.flush()
        res = w.result(lines.end, lines.malformed + lines.faults.count)
        res.faults = lines.faults.first
        return res
    except OSError as exc:
        return ReadResult(safe_offset=start, error=f"{type(exc).__name__}: {exc}")
    except Exception as exc:  # one bad file costs that file, never the run
        return ReadResult(safe_offset=start, error=f"kimi reader failed: {type(exc).__name__}: {exc}")


class _Wire:
    def __init__(self, path: str):
        state = read_state(path)
        cwd = state.get("workDir") if isinstance(state.get("workDir"), str) else ""
        self.part = SessionPart(harness=HARNESS, session_id=os.path.basename(session_dir(path)), cwd=cwd)
        title = state.get("title")
        if isinstance(title, str) and title.strip():
            self.part.title, self.part.title_rank = title.strip(), 1
        if isinstance(state.get("lastPrompt"), str):
            self.part.last_prompt = state["lastPrompt"]
        self.ts: int | None = parse_ts(state.get("createdAt"))
        self.buf: list[str] = []
        self.buf_at = (0, None)  # (offset, time) of the reply being gathered
        self.bad = 0
        self.clipped = 0
        self.want = {f: work.enabled(f) for f in ("PATHS", "COMMANDS", "EDITS", "TOOL_OUTPUT")}

    def step(self, offset: int, obj: dict) -> None:
        ts = parse_ts(obj.get("time"))
        if ts is not None:
            self.ts = ts
        t = obj.get("type")
        if t == "context.append_message":
            m = obj.get("message")
            if isinstance(m, dict) and m.get("role") in ("user", "assistant"):
                self.flush()
                self.emit(m["role"], content_text(m.get("content")), offset)
        elif t == "context.append_loop_event":
            ev = obj.get("event")
            if isinstance(ev, dict):
                self.event(ev, offset)

    def event(self, ev: dict, offset: int) -> None:
        t = ev.get("type")
        if t == "content.part":
            part = ev.get("part")
            if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
                if not self.buf:
                    self.buf_at = (offset, self.ts)
                self.buf.append(part["text"])
        elif t in ("step.begin", "step.end"):
            self.flush()
        elif t == "tool.call":
            self.flush()
            self.tool(ev.get("name"), ev.get("args"), offset)
        elif t == "tool.result":
            self.flush()
            r = ev.get("result")
            out = r.get("output") if isinstance(r, dict) else None
            if isinstance(out, list):
                out = content_text(out)
            if self.want["TOOL_OUTPUT"] and isinstance(out, str) and out.strip():
                err = r.get("is_error") if isinstance(r.get("is_error"), bool) else None
                self.emit("tool-output", out.strip(), offset, tool=ev.get("name") if isinstance(ev.get("name"), str) else None,
                          is_error=err)

    def tool(self, name, args, offset: int) -> None:
        if isinstance(args, str):  # arguments as a JSON string, as the model streamed them
            try:
                args = orjson.loads(args)
            except orjson.JSONDecodeError:
                return
        if not isinstance(name, str) or not isinstance(args, dict):
            return
        if name == "Bash" and self.want["COMMANDS"]:
            rec = work.command_record(args.get("command"))
            if rec:
                self.emit("command", rec, offset, tool=name)
        elif name in _FILE_TOOLS:
            fp = args.get("path")
            if not isinstance(fp, str) or not fp.strip():
                return
            if self.part.cwd and not work.is_absolute(fp):
                fp = os.path.join(self.part.cwd, fp)
            rec = work.files_record([fp]) if self.want["PATHS"] else None
            if rec:
                self.emit("files", rec, offset, tool=name)
            rec = work.edit_record(fp, args.get("old_string")) if name == "Edit" and self.want["EDITS"] else None
            if rec:
                self.emit("edit", rec, offset, tool=name)

    def flush(self) -> None:
        if self.buf:
            text = "".join(self.buf).strip()
            self.buf = []
            offset, ts = self.buf_at
            self.emit("assistant", text, offset, ts=ts)

    def emit(self, role: str, text: str, offset: int, ts=False, **kw) -> None:
        if not text:
            return
        text, cut = clip(text)
        self.clipped += cut
        self.part.messages.append(Message(role, text, self.ts if ts is False else ts, byte_offset=offset, **kw))

    def result(self, end: int, malformed: int) -> ReadResult:
        p = self.part
        return ReadResult(sessions=[p] if p.messages or p.cwd else [], safe_offset=end,
                          malformed=malformed + self.bad, clipped=self.clipped)
