"""Reading live JSONL transcripts safely, and the timestamp forms harnesses write.

Agents append to these files while we read them, so the last line may be torn.
``iter_lines`` yields only complete lines and tells the caller where the
complete part ends; the pipeline resumes there next run.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Iterator

import orjson

from .locate import is_regular_file  # noqa: F401  (re-exported: the readers import it from here)

_BOM = b"\xef\xbb\xbf"
# Messages above this are cut before redaction (harness-formats 1.4).
MESSAGE_CAP = 1 << 20


class Lines:
    """Complete lines of a JSONL file from ``start``; counts what did not decode.

    Iterating yields ``(offset, obj)`` for every complete line that decodes to a
    JSON object. After iteration ``end`` is the offset just past the last
    complete line (the safe resume point) and ``malformed`` the number of
    complete lines that did not decode. A final line with no newline is treated
    as complete only if it decodes (12 real files simply lack a final newline);
    otherwise it is a torn tail and is left for the next run.
    """

    def __init__(self, path: str, start: int = 0):
        self.path = path
        self.start = start
        self.end = start
        self.malformed = 0

    def __iter__(self) -> Iterator[tuple[int, dict]]:
        with open(self.path, "rb") as fh:
            if self.start:
                fh.seek(self.start)
            data = fh.read()
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
                pos = next_pos
                self.end = base + pos
                continue
            pos = next_pos
            self.end = base + pos
            if isinstance(obj, dict):
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


def read_head(path: str, limit: int = 64 << 10) -> Iterator[dict]:
    """Decoded objects of the complete lines within the first ``limit`` bytes."""
    with open(path, "rb") as fh:
        data = fh.read(limit)
    for raw in data.split(b"\n")[:-1] if len(data) == limit else data.split(b"\n"):
        obj = _decode(raw)
        if isinstance(obj, dict):
            yield obj


def parse_ts(value) -> int | None:
    """Epoch milliseconds (UTC) from any timestamp form in harness-formats 1.3."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return _from_number(value)
    if not isinstance(value, str):
        return None
    s = value.strip()
    if not s:
        return None
    if s.replace(".", "", 1).isdigit():
        return _from_number(float(s) if "." in s else int(s))
    s = s.replace(" ", "T", 1)
    if s.endswith(("Z", "z")):
        s = s[:-1] + "+00:00"
    try:
        dt = datetime.fromisoformat(s)
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return int(dt.timestamp() * 1000)


def _from_number(v: int | float) -> int | None:
    if v > 1e12:
        return int(v)
    if v > 0:
        return int(round(v * 1000))
    return None


def clip(text: str) -> tuple[str, bool]:
    """Cap a parsed message at 1 MiB of characters before redaction."""
    if len(text) <= MESSAGE_CAP:
        return text, False
    return text[:MESSAGE_CAP], True


