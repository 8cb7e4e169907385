"""The bounds of every value a reader takes from a transcript.

Transcripts are written by other programs, and some write odd values: a
timestamp in nanoseconds or 1e300, an exit code of 2**40, a dict where a
branch name belongs. Such a value costs that value, never the line, the file
or the run (design §6): it becomes unknown (None, or "" for text fields) and
is noted as a fault with the byte offset of its line, which ingest turns into
``path:line: what`` for `deja doctor`.

Light on purpose: reader workers, the freshness check and the hooks import it.
"""

from __future__ import annotations

import math

# Times outside [1970, 2200) are not times any agent wrote: unknown.
MIN_MS = 0
MAX_MS = 7_258_118_400_000  # 2200-01-01T00:00:00Z
INT16 = (-(1 << 15), (1 << 15) - 1)
INT32 = (-(1 << 31), (1 << 31) - 1)
INT64 = (0, (1 << 63) - 1)  # byte offsets: never negative
# Identity fields (ids, cwd, branch, parent, agent, tool names, paths) longer
# than this are garbage, not names: cut, so one line cannot bloat every session row.
NAME_CAP = 4096
# Titles and prompts: the same cap as a stored message (ingest.STORE_TEXT_CAP).
PROSE_CAP = 64 << 10
# Faults kept per file with their lines; the rest are only counted.
FAULTS_KEPT = 5


def epoch_ms(value: int | float) -> int | None:
    """Epoch milliseconds from a number in seconds, ms, µs or ns (by magnitude);
    None outside [1970, 2200), for NaN, infinities and booleans."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    a = abs(value)
    if a < 1e11:  # seconds up to year 5138: the range check below decides
        ms = value * 1000
    elif a < 1e14:
        ms = value
    elif a < 1e17:
        ms = value / 1000
    elif a < 1e20:
        ms = value / 1_000_000
    else:
        return None
    ms = int(round(ms))
    return ms if MIN_MS < ms < MAX_MS else None


def valid_ms(value) -> bool:
    return type(value) is int and MIN_MS < value < MAX_MS


def int_in(value, bounds: tuple[int, int]) -> bool:
    return type(value) is int and bounds[0] <= value <= bounds[1]


def show(value) -> str:
    """A bad value as a fault names it: short, one line, type first when not a scalar."""
    if isinstance(value, (dict, list, tuple)):
        return f"a {type(value).__name__}"
    s = repr(value)
    return s if len(s) <= 40 else s[:37] + "..."


class Faults:
    """Values set to unknown while one file was read: all counted, the first few kept.

    ``note`` returns None so a caller can write ``ts = faults.note(...)``.
    """

    __slots__ = ("count", "first")

    def __init__(self) -> None:
        self.count = 0
        self.first: list[tuple[int, str]] = []  # (byte offset of the line, what)

    def note(self, offset: int, what: str):
        self.count += 1
        self.keep(offset, what)
        return None

    def keep(self, offset: int, what: str) -> None:
        """Name a fault counted elsewhere (a line that did not decode: ``Lines.malformed``)."""
        if len(self.first) < FAULTS_KEPT:
            self.first.append((offset, what))

    def extend(self, other: "Faults") -> None:
        self.count += other.count
        self.first = sorted(self.first + other.first)[:FAULTS_KEPT]

    def name(self, offset: int, field: str, value, cap: int = NAME_CAP) -> str:
        """``value`` as a string field: non-strings become "", overlong ones are cut."""
        if isinstance(value, str):
            if len(value) <= cap:
                return value
            self.note(offset, f"{field} of {len(value)} characters cut to {cap}")
            return value[:cap]
        if value is None:
            return ""
        self.note(offset, f"{field} {show(value)} is not text")
        return ""

    def text(self, offset: int, field: str, value) -> str | None:
        """``value`` when it is a string or null, else None and noted: a kind, role
        or id a reader compares with a set or looks up, where a dict or list raises."""
        if value is None or isinstance(value, str):
            return value
        self.note(offset, f"{field} {show(value)} is not text")
        return None

    def items(self, offset: int, field: str, value) -> list:
        """``value`` when it is a list, else [] (noted unless null): a reader that
        walks a number or a string where a list belongs raises or reads characters."""
        if isinstance(value, list):
            return value
        if value is not None:
            self.note(offset, f"{field} is {show(value)}, not a list")
        return []
