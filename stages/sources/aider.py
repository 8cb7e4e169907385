"""aider: the Markdown chat history it appends to ``.aider.chat.history.md``
in the folder it ran in (harness-formats section 12; the writer checked
against the ``io.py`` of Aider-AI/aider).

One file holds every session run in that folder, appended forever; a session
starts at ``# aider chat started at YYYY-MM-DD HH:MM:SS`` (local time).
Outside code fences, ``#### `` lines are what the person typed (consecutive
ones are one message, ``#### <blank>`` an empty line); ``> `` lines are
aider's own output and end the current block; any other line is the model's
Markdown. aider has no tool calls, but its output says what it did:

* ``#### /run <cmd>`` or ``#### !<cmd>`` (the person ran a command) and
  ``> Running <cmd>`` (a command the model proposed, confirmed) → ``command``;
* ``> Applied edit to <path>`` and ``> Added <path> to the chat`` → the
  turn's ``files`` record (paths relative to the folder of the file).

No message times (every message gets its session's start) and no session
ids: a session is ``aider-<12 hex of sha1(path)>-<ordinal>``, so moving the
file changes the ids. The project is the folder holding the file. Appended
to, never rewritten: the offset path. A read from an offset starts again at
that offset's session header (for its ordinal and the fence state) and keeps
only the lines at or after the offset.
"""

from __future__ import annotations

import hashlib
import os
import re
from datetime import datetime
from typing import Mapping

from deja.stages import work_records as work
from deja.stages.sources.base import Message, ReadResult, SessionPart, SourceFile
from deja.stages.sources.jsonl import clip, is_regular_file
from deja.stages.sources.locate import aider_files, aider_roots
from deja.stages.sources.values import valid_ms

HARNESS = "aider"
HEADER = b"# aider chat started at "
BOM = b"\xef\xbb\xbf"  # (an editor that saved the history may have put one first)
_HEADER_RE = re.compile(r"^# aider chat started at (\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})\s*$")
_ADDED = re.compile(r"^Added (.+?) to the chat(?: \(read-only\))?\.?$")
_NOT_A_FILE = re.compile(r"^\d+ lines? of output$|^clipboard image")


def roots(env: Mapping[str, str]) -> list[str]:
    return aider_roots(env) or [os.path.join(env.get("HOME") or os.path.expanduser("~"), ".aider.chat.history.md")]


def discover(env: Mapping[str, str]) -> list[SourceFile]:
    return [SourceFile(p, HARNESS) for p in aider_files(env)]


def read(path: str, start: int = 0) -> ReadResult:
    if not is_regular_file(path):
        return ReadResult(safe_offset=start, error=f"not a readable regular file: {path}")
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        return ReadResult(safe_offset=start, error=f"{type(exc).__name__}: {exc}")
    if start > len(data):  # truncated since the last run: the pipeline re-reads from 0
        return ReadResult(safe_offset=start)
    try:
        return _parse(path, data, start)
    except Exception as exc:  # one bad file costs that file, never the run
        return ReadResult(safe_offset=start, error=f"aider reader failed: {type(exc).__name__}: {exc}")


def _session_start(data: bytes, start: int) -> tuple[int, int]:
    """(offset of the header of the session holding ``start``, sessions before it)."""
    if start == 0:
        return 0, 0
    at = data.rfind(b"\n" + HEADER, 0, start)
    begin = at + 1 if at >= 0 else 0
    first = data.startswith(HEADER) or data.startswith(BOM + HEADER)
    before = data.count(b"\n" + HEADER, 0, begin) + (1 if begin > 0 and first else 0)
    return begin, before


class _Session:
    def __init__(self, part: SessionPart, ts: int | None):
        self.part, self.ts = part, ts
        self.paths: list[str] = []


def _parse(path: str, data: bytes, start: int) -> ReadResult:
    res = ReadResult(safe_offset=start)
    end = data.rfind(b"\n") + 1  # a last line with no newline is still being written
    if end <= start:
        return res
    begin, ordinal = _session_start(data, start)
    cwd = os.path.dirname(os.path.abspath(path))
    stem = "aider-" + hashlib.sha1(path.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    flags = {f: work.enabled(f) for f in ("PATHS", "COMMANDS")}
    sessions: list[_Session] = []
    cur: _Session | None = None
    block_role, block_lines, block_at = "", [], 0
    in_fence = False

    def session() -> _Session:
        nonlocal cur
        if cur is None:  # lines before any header (a history aider did not start)
            cur = _new(None)
        return cur

    def _new(ts) -> _Session:
        nonlocal ordinal
        ordinal += 1
        s = _Session(SessionPart(harness=HARNESS, session_id=f"{stem}-{ordinal}", cwd=cwd), ts)
        sessions.append(s)
        return s

    def flush_block():
        nonlocal block_role, block_lines
        if block_role and block_lines:
            text, cut = clip("\n".join(block_lines).strip("\n"))
            res.clipped += cut
            if text.strip():
                s = session()
                s.part.messages.append(Message(block_role, text, s.ts, byte_offset=block_at))
        block_role, block_lines = "", []

    def flush_files(at: int):
        s = cur
        if s is not None and s.paths and flags["PATHS"]:
            files = work.files_record(s.paths)
            if files:
                s.part.messages.append(Message("files", files, s.ts, byte_offset=at))
        if s is not None:
            s.paths = []

    def command(cmd: str, at: int):
        rec = work.command_record(cmd.strip()) if flags["COMMANDS"] else None
        if rec:
            s = session()
            s.part.messages.append(Message("command", rec, s.ts, tool="run", byte_offset=at))

    pos = begin
    while pos < end:
        nl = data.index(b"\n", pos)
        raw, at, pos = data[pos:nl], pos, nl + 1
        keep = at >= start
        if at == 0 and raw.startswith(BOM):
            raw = raw[len(BOM):]
        try:
            line = raw.decode("utf-8").rstrip("\r")
        except UnicodeDecodeError:
            line = raw.decode("utf-8", "replace").rstrip("\r")
            if keep:
                res.malformed += 1
        m = _HEADER_RE.match(line) if not in_fence else None
        if m or (not in_fence and line.startswith("# aider chat started at")):
            flush_block()
            flush_files(at)
            ts = _local_ms(m.group(1)) if m else None
            if m is None and keep:
                res.malformed += 1
            cur = _new(ts)
            in_fence = False
            continue
        if not in_fence and line.startswith("####"):
            text = line[4:]
            text = text[1:] if text.startswith(" ") else text
            text = text.rstrip()
            text = "" if text == "<blank>" else text
            if block_role != "user":
                flush_block()
                flush_files(at)
                block_at = at
            if text.startswith(("/run ", "!")) and not block_lines:
                if keep:
                    command(text[5:] if text.startswith("/run ") else text[1:], at)
                continue
            if keep:
                block_role = "user"
                block_lines.append(text)
            continue
        if not in_fence and (line.startswith("> ") or line == ">"):
            flush_block()
            if keep:
                _output(line[2:].strip(), cwd, session(), at, command)
            continue
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
        if block_role == "user" and not line.strip() and not in_fence:
            continue  # the blank line after a prompt, before the reply
        if block_role != "assistant":
            if block_role == "user" or not line.strip():
                flush_block()
                if not line.strip():
                    continue
            block_role, block_at = "assistant", at
        if keep:
            block_lines.append(line)
    flush_block()
    flush_files(end)
    res.safe_offset = end
    res.sessions = [s.part for s in sessions if s.part.messages]
    return res


def _output(text: str, cwd: str, s: _Session, at: int, command) -> None:
    """aider's own ``> `` lines: the ones that say what it did."""
    text = text.rstrip()
    if text.startswith("Applied edit to "):
        s.paths.append(_join(cwd, text[len("Applied edit to "):].strip()))
    elif text.startswith("Running "):
        command(text[len("Running "):], at)
    else:
        m = _ADDED.match(text)
        if m and not _NOT_A_FILE.match(m.group(1)):
            s.paths.append(_join(cwd, m.group(1).strip()))


def _join(cwd: str, p: str) -> str:
    return p if work.is_absolute(p) else os.path.join(cwd, p)


def _local_ms(stamp: str) -> int | None:
    """The header's local wall-clock time as UTC epoch ms (aider writes no zone)."""
    try:
        ms = int(datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S").timestamp() * 1000)
    except (ValueError, OverflowError, OSError):
        return None
    return ms if valid_ms(ms) else None
