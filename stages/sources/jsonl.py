"""Reading live JSONL transcripts safely, and the timestamp forms harnesses write.

Agents append to these files while we read them, so the last line may be torn.
``iter_lines`` yields only complete lines and tells the caller where the
complete part ends; the pipeline resumes there next run.
"""

from __future__ import annotations

import os

from datetime import datetime, timezone
from typing import Iterator

import orjson

from .locate import COMPRESSED, is_regular_file  # noqa: F401  (re-exported: the readers import them from here)
from .values import Faults, epoch_ms, show, valid_ms

_BOM = b"\xef\xbb\xbf"
# Messages above this are cut before redaction (harness-formats 1.4).
MESSAGE_CAP = 1 << 20



def open_bytes(path: str):
    """A transcript's bytes, to read as a file: a ``.zst`` one decompressed as
    it is read, so its offsets (safe_offset, a slice's limit, the prefix hash)
    are offsets into the JSONL it holds, whatever its compressed bytes."""
    return _Unzst(path) if path.endswith(COMPRESSED) else open(path, "rb")


def unzstd(path: str) -> tuple[bytes, str]:
    """A chain of zstd frames decompressed whole, and why it stopped early (""
    when it did not): for a reader that keeps what came before a cut, where
    ``open_bytes`` makes the cut the file's error."""
    out = bytearray()
    if os.path.getsize(path) == 0:  # (no frame at all: an empty stream, not a cut one)
        return b"", ""
    with _Unzst(path) as z:
        try:
            while z.fill():
                out += z.take()
        except ValueError as exc:
            return bytes(out + z.take()), str(exc)
    return bytes(out), ""


class _Unzst:
    """The JSONL inside a chain of zstd frames, read forward a chunk at a time
    (a seek is a forward skip). A damaged stream, one that ends inside a
    frame, or holds none, raises ``ValueError``: a cut file is a failed read,
    not a shorter transcript (zstandard's own stream reader ends quietly there)."""

    CHUNK = 1 << 20

    def __init__(self, path: str):
        import zstandard  # (here: only a compressed transcript pays for it)

        self._fh = open(path, "rb")
        self._frame = zstandard.ZstdDecompressor().decompressobj
        self._damaged = zstandard.ZstdError
        self._obj = None  # the frame being read
        self._buf = bytearray()
        self.pos = 0  # the offset of the next byte read

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self._fh.close()

    def take(self) -> bytes:
        """What is decompressed and not yet read."""
        out = bytes(self._buf)
        self.pos += len(out)
        self._buf.clear()
        return out

    def fill(self) -> bool:
        data = self._fh.read(self.CHUNK)
        if not data:
            if self._obj is None or not self._obj.eof:
                raise ValueError("zstd stream cut short" if self._obj else "no zstd frame in it")
            return False
        while data:
            if self._obj is None or self._obj.eof:
                self._obj = self._frame()
            try:
                self._buf += self._obj.decompress(data)
            except self._damaged as exc:
                raise ValueError(f"damaged zstd stream: {exc}") from None
            data = self._obj.unused_data if self._obj.eof else b""
        return True

    def read(self, n: int = -1) -> bytes:
        while (n < 0 or len(self._buf) < n) and self.fill():
            pass
        n = len(self._buf) if n < 0 else min(n, len(self._buf))
        out = bytes(self._buf[:n])
        del self._buf[:n]
        self.pos += n
        return out

    def seek(self, to: int) -> None:
        if to < self.pos:
            raise ValueError("a compressed transcript is read forward only")
        while self.pos < to and (self._buf or self.fill()):
            n = min(to - self.pos, len(self._buf))
            del self._buf[:n]
            self.pos += n


class Lines:
    """Complete lines of a JSONL file from ``start``; counts what did not decode.

    Iterating yields ``(offset, obj)`` for every complete line that decodes to a
    JSON object. After iteration ``end`` is the offset just past the last
    complete line (the safe resume point) and ``malformed`` the number of
    complete lines that did not decode, ``faults`` the values set to unknown
    (and the first few of either, by offset). A final line with no newline is treated
    as complete only if it decodes (12 real files simply lack a final newline);
    otherwise it is a torn tail and is left for the next run.
    """

    # A line's own time, wherever a harness writes it (Claude and Codex
    # ``timestamp``, Codex history and deja's notes ``ts``). Checked here, once
    # for every reader: the reader then sees epoch ms, or None for a value out
    # of range, which is noted in ``faults`` with the line's offset.
    TIME_KEYS = ("timestamp", "ts")

    def __init__(self, path: str, start: int = 0, data: bytes | None = None, stop: int | None = None):
        self.path = path
        self.data = data  # the file's bytes already in hand (a decompressed file), else read from path
        self.start = start
        self.stop = stop  # a line's offset to read up to (held_back), None for the end of the file
        self.end = start
        self.malformed = 0
        self.faults = Faults()
        self._raw = self._ms = None  # the last time seen: lines of one turn repeat it

    def _times(self, offset: int, obj: dict) -> None:
        for key in self.TIME_KEYS:
            raw = obj.get(key)
            if raw is None:
                continue
            if raw != self._raw or type(raw) is not type(self._raw):
                self._raw, self._ms = raw, parse_ts(raw)
            if self._ms is None:
                self.faults.note(offset, f"{key} {show(raw)} is not a time in 1970-2200")
            obj[key] = self._ms

    def each(self, step) -> int:
        """``step(offset, obj)`` for every line; returns how many raised (``failed``)."""
        bad = 0
        for offset, obj in self:
            try:
                step(offset, obj)
            except Exception as exc:  # one bad line costs that line only
                bad += 1
                self.failed(offset, exc)
        return bad

    def failed(self, offset: int, exc: Exception) -> None:
        """A line that decoded but could not be read: kept as a fault (the reader counts it)."""
        self.faults.keep(offset, f"line could not be read ({type(exc).__name__})")

    def __iter__(self) -> Iterator[tuple[int, dict]]:
        want = None if self.stop is None else max(0, self.stop - self.start)
        if self.data is not None:
            data = self.data[self.start:] if want is None else self.data[self.start:self.start + want]
        else:
            with open_bytes(self.path) as fh:
                if self.start:
                    fh.seek(self.start)
                data = fh.read() if want is None else fh.read(want)  # (a slice reads its own bytes, not the rest)
        pos = 0
        n = len(data)
        base = self.start
        while pos < n:
            nl = data.find(b"\n", pos)
            last = nl < 0
            stop = n if last else nl
            raw = data[pos:stop]
            offset = base + pos
            next_pos = n if last else nl + 1
            obj = _decode(raw)
            if obj is None:
                if last:
                    break  # torn tail: not consumed
                if raw.strip():
                    self.malformed += 1
                    self.faults.keep(offset, "line is not JSON")
                pos = next_pos
                self.end = base + pos
                continue
            pos = next_pos
            self.end = base + pos
            if isinstance(obj, dict):
                self._times(offset, obj)
                yield offset, obj


def _decode(raw: bytes):
    raw = raw.strip()
    if raw.startswith(_BOM):
        raw = raw[3:].strip()
    if not raw:
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        try:  # non-UTF-8 bytes: keep what can be read rather than lose the line
            return orjson.loads(raw.decode("utf-8", "replace"))
        except orjson.JSONDecodeError:
            return None


def before_long_last_line(path: str, size: int, longest: int) -> int:
    """Where a bounded tail read of a file of ``size`` bytes must end: ``size``,
    or the start of the last line when that line alone is longer than
    ``longest`` (a pasted screenshot's base64). A window of the tail would hold
    no complete line; the turns before it can still be read. Found backwards
    64 KiB at a time, so the long line is never held in memory."""
    pos = size - 1  # a final newline ends the last line, it does not start one
    with open(path, "rb") as fh:
        while pos > 0:
            step = min(1 << 16, pos)
            fh.seek(pos - step)
            nl = fh.read(step).rfind(b"\n")
            if nl >= 0:
                pos += nl + 1 - step
                break
            pos -= step
    start = max(pos, 0)
    return start if size - start > longest else size


def line_end_after(path: str, offset: int) -> int | None:
    """The offset just past the first newline at or after ``offset`` (where a
    slice of a file read in slices ends); None when there is none there."""
    try:
        with open_bytes(path) as fh:
            fh.seek(offset)
            pos = offset
            while True:
                chunk = fh.read(1 << 16)
                if not chunk:
                    return None
                nl = chunk.find(b"\n")
                if nl >= 0:
                    return pos + nl + 1
                pos += len(chunk)
    except (OSError, ValueError):  # (ValueError: a damaged .zst; its read says why)
        return None


def read_head(path: str, limit: int = 64 << 10) -> Iterator[dict]:
    """Decoded objects of the complete lines within the first ``limit`` bytes."""
    with open_bytes(path) as fh:
        data = fh.read(limit)
    for raw in data.split(b"\n")[:-1] if len(data) == limit else data.split(b"\n"):
        obj = _decode(raw)
        if isinstance(obj, dict):
            yield obj


def parse_ts(value) -> int | None:
    """Epoch milliseconds (UTC) from any timestamp form in harness-formats 1.3;
    None when absent or not a time in [1970, 2200) (values.epoch_ms)."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return epoch_ms(value)
    if not isinstance(value, str):
        return None
    s = value.strip()
    if not s or len(s) > 64:
        return None
    if s.replace(".", "", 1).isdigit():
        return epoch_ms(float(s) if "." in s else int(s))
    s = s.replace(" ", "T", 1)
    if s.endswith(("Z", "z")):
        s = s[:-1] + "+00:00"
    try:
        dt = datetime.fromisoformat(s)
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=timezone.utc)
        ms = int(dt.timestamp() * 1000)
    except (ValueError, OverflowError, OSError):
        return None
    return ms if valid_ms(ms) else None


def clip(text: str) -> tuple[str, bool]:
    """Cap a parsed message at 1 MiB of characters before redaction."""
    if len(text) <= MESSAGE_CAP:
        return text, False
    return text[:MESSAGE_CAP], True


def speech(role: str, texts: list[str], ts, at: int, res) -> list:
    """One turn's said text blocks as a single clipped message (none when blank);
    ``res`` (the ReadResult) counts a clip."""
    from .base import Message

    text, cut = clip("\n".join(t for t in texts if t.strip()))
    res.clipped += cut
    return [Message(role, text, ts, byte_offset=at)] if text.strip() else []




# A transcript written to within this long is a session still running: a call
# in it without its result yet will get one.
LIVE_SECONDS = 600


def held_back(path: str, calls: dict[str, int], results: dict[str, int], said: int = -1,
              always: bool = False) -> int | None:
    """Where a read of a live transcript stops: the first line of a call whose
    result is not on disk yet, or earlier, so that every call before the stop
    has its result before it too. None: read to the end.

    A command's exit code (and a tool output's tool) come from a later line
    than the call; a run between the two (a hook's refresh, during the very
    call) wrote the call's record without them for good. Its lines are read
    again, whole, once the result is written. Only the calls of the turn the
    agent is in wait: a call with a person's or the agent's words after it
    was interrupted and will never get its result, and a transcript nobody
    writes to any more (a session killed mid-command) is read to its end.
    ``calls``: call id → its line's offset; ``results``: call id → its
    result's; ``said``: the offset of the last line of speech read.
    ``always``: a slice of a file too big to read at once (pipeline/run.py,
    read_sliced) stops so whatever the file's age: its next slice follows."""
    waiting = [at for cid, at in calls.items() if cid not in results and at > said]
    if not waiting:
        return None
    try:
        import time

        if not always and time.time() - os.stat(path).st_mtime >= LIVE_SECONDS:
            return None
    except OSError:
        return None
    stop = min(waiting)
    moved = True
    while moved:  # a call before the stop whose result lies past it moves the stop to that call
        moved = False
        for cid, at in calls.items():
            if at < stop and results.get(cid, stop) >= stop:
                stop, moved = at, True
    return stop


def read_document(path: str):
    """A whole-file JSON document (a store rewritten in place: read whole each time).
    Raises ``ValueError`` when it does not decode (a half-written rewrite)."""
    with open(path, "rb") as fh:
        raw = fh.read().strip()
    if raw.startswith(_BOM):
        raw = raw[3:]
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"not a JSON document ({exc.msg})") from None


def read_guarded(path: str, start: int, read, who: str):
    """``read(path, start)`` for a file read from an offset: a file that cannot
    be read is that file's error, and a reader that fails costs that file only."""
    from .base import ReadResult

    if not is_regular_file(path):
        return ReadResult(safe_offset=start, error=f"not a readable regular file: {path}")
    try:
        return read(path, start)
    except OSError as exc:
        return ReadResult(safe_offset=start, error=f"{type(exc).__name__}: {exc}")
    except Exception as exc:  # one bad file costs that file, never the run
        return ReadResult(safe_offset=start, error=f"{who} reader failed: {type(exc).__name__}: {exc}")


def read_whole_document(path: str, start: int, parse, who: str):
    """The one read of a store that is a JSON document per session: ``parse(path,
    doc, mtime_ms)`` builds the ReadResult. A file that cannot be read is that
    file's error; one that does not decode (half written) is counted malformed
    and read again when it next changes; a parse that fails costs that file only."""
    import os

    from .base import ReadResult

    if not is_regular_file(path):
        return ReadResult(safe_offset=start, error=f"not a readable regular file: {path}")
    try:
        doc = read_document(path)
        mtime = os.stat(path).st_mtime_ns // 1_000_000
    except OSError as exc:
        return ReadResult(safe_offset=start, error=f"{type(exc).__name__}: {exc}")
    except ValueError as exc:
        return ReadResult(malformed=1, faults=[(0, str(exc))])
    try:
        return parse(path, doc, mtime)
    except Exception as exc:  # one bad file costs that file, never the run
        return ReadResult(error=f"{who} reader failed: {type(exc).__name__}: {exc}")


def json_cell(value, res, kind: type | None = None):
    """A JSON column of a store's row, decoded (a value already decoded passes);
    None, counted in ``res.malformed``, when it does not decode or is not a ``kind``."""
    if isinstance(value, (dict, list)):
        obj = value
    else:
        try:
            obj = orjson.loads(value)
        except (orjson.JSONDecodeError, TypeError):
            res.malformed += 1
            return None
    if kind is not None and not isinstance(obj, kind):
        res.malformed += 1
        return None
    return obj


def file_uri_path(uri: str) -> str:
    """``file:///home/x`` → ``/home/x`` (``file:///c%3A/x`` → ``c:/x``); other strings unchanged."""
    if not isinstance(uri, str) or not uri.startswith("file://"):
        return uri if isinstance(uri, str) else ""
    from urllib.parse import unquote, urlparse

    p = unquote(urlparse(uri).path)
    if len(p) > 3 and p[0] == "/" and p[2] == ":" and p[1].isalpha():
        p = p[1:]
    return p
