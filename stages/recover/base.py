"""The recovery interface every harness implements, and the raw reading it shares.

One module per harness beside this one (``claude.py``, ``codex.py``) provides

    recover_candidates(cwd: str, env: Mapping[str, str]) -> FolderScan
        every session recorded for the folder, with what ranking needs
    recover_state(path: str, session_id: str) -> WorkingState
        the working state rebuilt from one transcript

and, to support ``--check`` / ``--repair``,

    recover_check(path: str) -> list[Problem]
    recover_repair(path: str, out: BinaryIO, session_id: str, new_id: str | None) -> list[str]

The registry in ``__init__.py`` finds them; the listing, digest and
check/repair built on them are in ``queries/recover.py`` and
``queries/recover_repair.py``.

Everything here reads transcripts directly: it works on a bare install with no
index built, and imports nothing heavy (no pyarrow, polars or duckdb). Large
transcripts are read in two bounded pieces, the first 64 KiB (identity) and
the last 4 MiB (recent state).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Iterator

from deja.stages.sources.jsonl import Lines, before_long_last_line, read_head

HEAD_BYTES = 64 << 10
TAIL_BYTES = 4 << 20
# Reads that rank a candidate, smallest first: most transcripts end in a few
# small lines, and every session in a folder is probed.
PROBE_SIZES = (16 << 10, TAIL_BYTES)


class RecoverError(Exception):
    """A user-facing failure: the CLI prints it as one line and exits 1."""


# --------------------------------------------------------------------- data model


@dataclass(slots=True)
class Candidate:
    """A session recorded for the folder, with what ranking and exclusion need."""

    harness: str
    session_id: str
    path: str
    last_ts: int | None  # UTC ms of the last line with a timestamp: what candidates are ranked by
    live_tail: bool = False  # ends in fresh traffic (or a half-written line), as a session being written does


@dataclass(slots=True)
class FolderScan:
    candidates: list[Candidate] = field(default_factory=list)
    looked: list[tuple[str, list[str]]] = field(default_factory=list)  # (harness, its stores), for "nothing found"
    notes: list[str] = field(default_factory=list)  # folders ignored and why


@dataclass(slots=True)
class Todo:
    text: str
    status: str  # pending | in_progress | completed


@dataclass(slots=True)
class Action:
    tool: str
    detail: str = ""  # the key input: a command, a path, a pattern
    status: str = ""  # "" (fine or unknown), "failed", "exit N", "no result"


@dataclass(slots=True)
class WorkingState:
    """What was going on in a session, rebuilt from its transcript."""

    harness: str
    session_id: str
    path: str
    cwd: str = ""
    title: str = ""
    title_from_ask: bool = False  # no harness title: the first ask stands in
    last_prompt: str = ""
    asks: list[str] = field(default_factory=list)  # recent real asks, oldest first
    plan: str = ""  # the last explicit plan of the current turn, if any
    answer: str = ""  # the last assistant text
    todos: list[Todo] = field(default_factory=list)
    todo_source: str = ""  # the tool the list came from (TodoWrite, update_plan)
    actions: list[Action] = field(default_factory=list)  # recent tool actions, oldest first
    files: list[str] = field(default_factory=list)  # touched files, least recent first
    branch: str = ""
    modes: dict[str, str] = field(default_factory=dict)
    incomplete: str = ""  # why the last turn may be unfinished; "" when it ended normally
    updated: int | None = None  # UTC ms of the last timestamped line read
    messages: int = 0  # asks and assistant replies in what was read
    partial: bool = False  # only the head and tail of a large transcript were read
    size: int = 0


@dataclass(slots=True)
class Problem:
    kind: str  # torn-tail | malformed-line | dangling-tool-call | broken-parent
    line: int  # 1-based line number in the transcript
    detail: str


# ------------------------------------------------------- reading transcripts


@dataclass(slots=True)
class Window:
    """The bounded part of a transcript that recovery reads."""

    head: list[dict]  # complete lines of the first 64 KiB, only when the tail does not reach them
    lines: list[dict]  # complete lines of the tail window, in file order
    partial: bool  # lines between head and tail (or a last line too long to read) were not read
    torn: bool  # the file ends in a half-written line
    size: int


def read_window(path: str, tail_bytes: int = TAIL_BYTES, head: bool = True) -> Window:
    """Decoded lines of the last ``tail_bytes`` (whole lines) and, if they do not
    reach back to it, of the first 64 KiB. A half-written last line is reported,
    never fatal."""
    size = os.path.getsize(path)
    end = _end(path, size, tail_bytes)
    start = 0
    if end > tail_bytes + (HEAD_BYTES if head else 0):
        start = _next_line_start(path, end - tail_bytes)
    lines = Lines(path, start, stop=end)
    objs = [obj for _, obj in lines]
    heads = list(read_head(path, HEAD_BYTES)) if start and head else []
    torn = _torn(path, lines.end, end) or (end < size and _torn(path, size - 1, size))
    return Window(heads, objs, start > 0 or end < size, torn, size)


def _end(path: str, size: int, tail_bytes: int) -> int:
    """The end of the window: the file's, unless no line begins in the last
    ``tail_bytes`` and the last line is longer than recovery ever reads; then
    the window ends where that line begins, and holds the turns before it."""
    if size <= tail_bytes or _next_line_start(path, size - tail_bytes) < size:
        return size
    return before_long_last_line(path, size, TAIL_BYTES)


def _next_line_start(path: str, pos: int) -> int:
    with open(path, "rb") as fh:
        fh.seek(pos - 1)
        fh.readline()  # finishes the line ``pos`` falls in (or just the newline before it)
        return fh.tell()


def _torn(path: str, end: int, size: int) -> bool:
    if end >= size:
        return False
    with open(path, "rb") as fh:
        fh.seek(end)
        return bool(fh.read(size - end).strip())


def iter_raw_lines(path: str) -> Iterator[tuple[int, bytes, dict | None, bool]]:
    """(1-based line number, raw bytes without the newline, decoded object or
    None, ends with a newline) for every line of the file, streamed."""
    with open(path, "rb") as fh:
        for n, raw in enumerate(fh, 1):
            body = raw.rstrip(b"\r\n")
            obj = _loads(body)
            yield n, body, obj if isinstance(obj, dict) else None, raw.endswith(b"\n")


def _loads(raw: bytes):
    """A line decoded as leniently as the readers do; None when it is not JSON.
    Repair drops what this rejects, so it must not reject valid lines: stdlib
    json takes what orjson refuses (integers past 64 bits)."""
    import json

    import orjson

    text = raw.strip()
    if text.startswith(b"\xef\xbb\xbf"):
        text = text[3:]
    if not text:
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        pass
    try:
        return json.loads(text.decode("utf-8", "replace"))
    except ValueError:
        return None


def dumps(obj: dict) -> bytes:
    """One compact JSON line, as the harnesses write them."""
    import json

    import orjson

    try:
        return orjson.dumps(obj)
    except TypeError:  # integers past 64 bits, kept by the stdlib decoder
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()


def line_problems(path: str) -> list[Problem]:
    """Damage any JSONL transcript can show: a half-written last line, undecodable lines."""
    out: list[Problem] = []
    for n, body, obj, has_nl in iter_raw_lines(path):
        if obj is not None or not body.strip():
            continue
        if not has_nl:
            out.append(Problem("torn-tail", n, "the last line was half-written when the session stopped"))
        else:
            out.append(Problem("malformed-line", n, "a line that does not decode (a crash scar, or written over)"))
    return out


# ----------------------------------------------------------------- matching


def _norm_dir(path: str) -> str:
    s = path.replace("\\", "/").rstrip("/") or "/"
    if re.match(r"^[A-Za-z]:", s):  # Windows: one session can hold C:\x and c:\x
        s = s.lower()
    return s


def cwd_forms(cwd: str) -> frozenset[str]:
    """Normalised spellings of a working directory (as given and resolved)."""
    forms = {_norm_dir(cwd)}
    try:
        forms.add(_norm_dir(os.path.realpath(cwd)))
    except OSError:
        pass
    return frozenset(forms)


def same_dir(recorded: str, forms: frozenset[str]) -> bool:
    return bool(recorded) and _norm_dir(recorded) in forms


# ------------------------------------------------------- the incomplete-turn flag


def incomplete_note(event: str, pending: list, actions: list, torn: bool, error: str, *, noun: str,
                    output: str, unanswered: str, turn_open: bool = False) -> str:
    """The incomplete-turn flag of a digest, in the harness's own words:
    ``noun`` (transcript, rollout), ``output`` (what a tool call records) and
    ``unanswered`` (what an open turn looks like in that harness)."""
    def name(a) -> str:
        return f"{a.tool} {a.detail}".strip()

    def said(text: str) -> str:  # (a command may end in dots of its own: go test ./...)
        return text if text.endswith(".") else text + "."

    failed = f" (instead, an error: {error})" if error else ""
    running = "; ".join(name(a) for a in pending)
    if torn:
        tail = f", with work in progress on: {running}" if running else ""
        return said(f"Last turn may be incomplete: the {noun} ends in a half-written line{tail}")
    if running:
        return f"Last turn may be incomplete: work was in progress on: {running} (no {output} recorded)."
    if event == "interrupt":
        last = f" during: {name(actions[-1])}" if actions else ""
        return said(f"The last turn was interrupted by the user{last}")
    if event == "ask":
        return f"Last turn may be incomplete: the last ask got no reply{failed}."
    if turn_open or event == "result":
        last = f" (last action: {name(actions[-1])})" if actions else ""
        return f"Last turn may be incomplete: {unanswered}{last}{failed}."
    return ""
