"""DeepSeek Harness (``dsh``): ``${DSH_HOME:-~/.dsh}/sessions/<workspace-slug>/session-<uuid>/session.jsonl.zstd``
(or a plain ``session.jsonl``) (harness-formats section 14 "DeepSeek Harness").

The ``.zstd`` file is a chain of zstd frames whose bytes are JSONL. It cannot be
read from an offset, so it is read whole whenever it changes (``safe_offset``
stays 0, which sends the plan to a full re-read). A file cut short mid-frame
keeps the lines of its complete part; the cut is counted as one malformed
value and named in the file's faults, and a file with nothing readable before
the cut is an unreadable file. The plain ``session.jsonl`` takes the offset path.

Lines: a header ``{type:"session", id:"session-<uuid>", createdAt, cwd}``, then
events ``{type, seq, time, data}``: ``user/message`` (only when
``data.source.kind`` is ``user``: other kinds are plugin injections),
``assistant/message`` (``data.message.content`` blocks: ``text`` kept,
``reasoning`` dropped; it supersedes the streamed deltas of its reply),
``assistant/chunk`` (``text-delta``) and packed ``text-chunks`` (``data.texts``,
time ``time0``) gathered as a fallback reply flushed at ``step/end``,
``turn/end``, ``tool/result`` or the end of the file; ``tool/result`` (nested
``tool-result`` blocks) as tool output; ``session/title`` the title.

dsh's tool dialect is not in the reference: tool-call blocks give work records
by their argument keys only (``command`` a command, ``path``/``file_path``/
``filePath`` a file, ``old_string``/``oldText`` an edit).
"""

from __future__ import annotations

import os
from typing import Mapping

from deja.stages import work_records as work
from deja.stages.sources.base import Message, ReadResult, SessionPart, SourceFile
from deja.stages.sources.jsonl import Lines, clip, is_regular_file, parse_ts, read_head, unzstd
from deja.stages.sources.locate import deepseek_files, deepseek_home

HARNESS = "deepseek"

_PATH_KEYS = ("path", "file_path", "filePath")
_OLD_KEYS = ("old_string", "oldText", "old_text", "oldString")


def roots(env: Mapping[str, str]) -> list[str]:
    return [deepseek_home(env)]


def discover(env: Mapping[str, str]) -> list[SourceFile]:
    return [SourceFile(p, HARNESS) for p in deepseek_files(env)]


def read(path: str, start: int = 0) -> ReadResult:
    if not is_regular_file(path):
        return ReadResult(safe_offset=start, error=f"not a readable regular file: {path}")
    try:
        if path.endswith(".zstd"):
            data, cut = unzstd(path)  # (every frame's bytes, and why the stream stopped early)
            if cut and not data.strip():
                return ReadResult(error=f"zstd stream cut short ({cut}): nothing readable")
            res = _parse(path, Lines(path, 0, data=data), (cut, len(data)) if cut else None)
            res.safe_offset = 0  # no offsets into a compressed stream: re-read whole on change
            return res
        return _parse(path, Lines(path, start), None)
    except OSError as exc:
        return ReadResult(safe_offset=start, error=f"{type(exc).__name__}: {exc}")
    except Exception as exc:  # one bad file costs that file, never the run
        return ReadResult(safe_offset=start, error=f"deepseek reader failed: {type(exc).__name__}: {exc}")


def _parse(path: str, lines: Lines, cut) -> ReadResult:
    s = _Session(path)
    if lines.start > 0:  # the header lies before the offset
        for obj in read_head(path, min(lines.start, 64 << 10)):
            if obj.get("type") == "session":
                s.header(obj)
                break
    s.bad += lines.each(s.step)
    s.flush()
    if cut:
        # the complete lines before the cut are kept; the cut itself is one fault
        lines.faults.note(cut[1], f"zstd stream cut short: {cut[0]}")
    part = s.part
    res = ReadResult(sessions=[part] if part.messages or part.cwd else [], safe_offset=lines.end,
                     malformed=lines.malformed + lines.faults.count + s.bad, clipped=s.clipped)
    res.faults = lines.faults.first
    return res


class _Session:
    def __init__(self, path: str):
        folder = os.path.basename(os.path.dirname(os.path.abspath(path)))
        self.part = SessionPart(harness=HARNESS, session_id=folder)
        self.ts: int | None = None
        self.buf: list[str] = []
        self.buf_at: tuple[int, int | None] = (0, None)
        self.bad = 0
        self.clipped = 0
        self.want = {f: work.enabled(f) for f in ("PATHS", "COMMANDS", "EDITS", "TOOL_OUTPUT")}

    def header(self, obj: dict) -> None:
        if isinstance(obj.get("id"), str) and obj["id"].strip():
            self.part.session_id = obj["id"].strip()
        if isinstance(obj.get("cwd"), str):
            self.part.cwd = obj["cwd"]
        ts = parse_ts(obj.get("createdAt"))
        if ts is not None:
            self.ts = ts

    def step(self, offset: int, obj: dict) -> None:
        t = obj.get("type")
        if t == "session":
            self.header(obj)
            return
        ts = parse_ts(obj.get("time"))
        if ts is not None:
            self.ts = ts
        data = obj.get("data")
        if not isinstance(data, dict):
            return
        if t == "user/message":
            src = data.get("source")
            if isinstance(src, dict) and src.get("kind") == "user":
                self.flush()
                self.emit("user", _text(data), offset)
        elif t == "assistant/message":
            self.buf = []  # the whole reply supersedes its streamed deltas
            m = data.get("message")
            blocks = m.get("content") if isinstance(m, dict) else None
            self.emit("assistant", _text(m) if isinstance(m, dict) else "", offset)
            if isinstance(blocks, list):
                self.tools([b for b in blocks if isinstance(b, dict) and b.get("type") in ("tool-call", "tool_use")], offset)
        elif t == "assistant/chunk":
            c = data.get("chunk")
            if isinstance(c, dict) and c.get("type") == "text-delta":
                piece = next((c[k] for k in ("text", "delta", "textDelta") if isinstance(c.get(k), str)), "")
                self.gather(piece, offset, self.ts)
        elif t == "text-chunks":
            texts = data.get("texts")
            if isinstance(texts, list):
                at = parse_ts(data.get("time0"))
                for piece in texts:
                    if isinstance(piece, str):
                        self.gather(piece, offset, at if at is not None else self.ts)
        elif t in ("step/end", "turn/end"):
            self.flush()
        elif t == "tool/result":
            self.flush()
            out = "\n".join(_tool_results(data)).strip()
            if out and self.want["TOOL_OUTPUT"]:
                self.emit("tool-output", out, offset)
        elif t == "session/title":
            title = data.get("title")
            if isinstance(title, str) and title.strip():
                self.part.title, self.part.title_rank = title.strip(), 1

    def gather(self, piece: str, offset: int, ts) -> None:
        if not self.buf:
            self.buf_at = (offset, ts)
        self.buf.append(piece)

    def flush(self) -> None:
        if self.buf:
            text = "".join(self.buf).strip()
            self.buf = []
            offset, ts = self.buf_at
            self.emit("assistant", text, offset, ts=ts)

    def tools(self, calls: list[dict], offset: int) -> None:
        paths: list[str] = []
        for c in calls:
            name = c.get("toolName") or c.get("name")
            args = c.get("input") if isinstance(c.get("input"), dict) else c.get("args")
            if not isinstance(args, dict):
                continue
            tool = name if isinstance(name, str) else None
            if isinstance(args.get("command"), str) and self.want["COMMANDS"]:
                rec = work.command_record(args["command"])
                if rec:
                    self.emit("command", rec, offset, tool=tool)
            fp = next((args[k] for k in _PATH_KEYS if isinstance(args.get(k), str) and args[k].strip()), None)
            if fp is None:
                continue
            if self.part.cwd and not work.is_absolute(fp):
                fp = os.path.join(self.part.cwd, fp)
            paths.append(fp)
            old = next((args[k] for k in _OLD_KEYS if isinstance(args.get(k), str)), None)
            rec = work.edit_record(fp, old) if self.want["EDITS"] else None
            if rec:
                self.emit("edit", rec, offset, tool=tool)
        rec = work.files_record(paths) if paths and self.want["PATHS"] else None
        if rec:
            self.emit("files", rec, offset)

    def emit(self, role: str, text: str, offset: int, ts=False, **kw) -> None:
        if not text:
            return
        text, cut = clip(text)
        self.clipped += cut
        self.part.messages.append(Message(role, text, self.ts if ts is False else ts, byte_offset=offset, **kw))


def _text(obj: dict) -> str:
    """``content`` (a string or blocks, ``text`` kept) or ``text`` of a message."""
    c = obj.get("content")
    if isinstance(c, str):
        return c.strip()
    if isinstance(c, list):
        return "\n".join(b["text"] for b in c if isinstance(b, dict) and b.get("type") == "text"
                         and isinstance(b.get("text"), str) and b["text"].strip()).strip()
    m = obj.get("message")
    if isinstance(m, dict):
        return _text(m)
    t = obj.get("text")
    return t.strip() if isinstance(t, str) else ""


def _tool_results(obj, depth: int = 0) -> list[str]:
    """Texts of the ``tool-result`` blocks anywhere in a ``tool/result`` event."""
    if depth > 6:
        return []
    out: list[str] = []
    if isinstance(obj, dict):
        if obj.get("type") == "tool-result":
            for key in ("content", "output", "result"):
                v = obj.get(key)
                if isinstance(v, str) and v.strip():
                    out.append(v.strip())
                    break
                if isinstance(v, (list, dict)):
                    got = _texts_in(v)
                    if got:
                        out.append(got)
                        break
            return out
        for v in obj.values():
            out.extend(_tool_results(v, depth + 1))
    elif isinstance(obj, list):
        for v in obj:
            out.extend(_tool_results(v, depth + 1))
    return out


def _texts_in(v) -> str:
    if isinstance(v, dict):
        v = v.get("value") if isinstance(v.get("value"), (str, list)) else [v]
    if isinstance(v, str):
        return v.strip()
    return "\n".join(b["text"] for b in v if isinstance(b, dict) and isinstance(b.get("text"), str)).strip()
