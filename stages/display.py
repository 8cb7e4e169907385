"""The display sanitiser (redaction-rules §3.4): transcript text made safe to
print. Separate from redaction so the hooks and search, which only print
text that was redacted at index time, do not compile the redaction rules."""

from __future__ import annotations

import re

# Bidi controls (Trojan Source) and invisible characters; printed as a space.
_INVISIBLE = (
    "\u00ad\u061c\u200b\u200e\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff\U000e0000-\U000e007f"
)
# C0 controls except tab and newline, DEL, C1, as a character class's body
# (normalize drops these, and tab and newline, from a session's id and folder)
CONTROLS = "\x00-\x08\x0b-\x1f\x7f-\x9f"
_DISPLAY_NEEDED = re.compile(f"[{CONTROLS}{_INVISIBLE}]")
# One left-to-right pass, in upstream's precedence: an escape sequence (CSI to
# its final byte, OSC to BEL or ST, else ESC plus one character; unterminated
# ones run to the end), then CR LF, then any single unsafe character.
_DISPLAY_RE = re.compile(
    "\x1b(?:\\[[^@-~]*[@-~]?|\\][\\s\\S]*?(?:\x07|\x1b\\\\|\\Z)|[\\s\\S])?"
    "|\r\n"
    f"|[{CONTROLS}{_INVISIBLE}]"
)


def _display_repl(m: re.Match[str]) -> str:
    s = m[0]
    if s[0] == "\x1b":
        return ""
    return "\n" if s == "\r\n" else " "


def sanitize_display(text: str) -> str:
    """Make transcript text safe to print: drop terminal escapes, CR LF → LF,
    other controls / bidi / invisible characters → space. Newline and tab stay."""
    if not _DISPLAY_NEEDED.search(text):
        return text
    return _DISPLAY_RE.sub(_display_repl, text)


# Three ways a day is printed; they differ in what they take and which zone they read.


def local_day(value) -> str:
    """YYYY-MM-DD of a datetime in the local zone (a naive one is taken as
    local); any other value's first ten characters; "" for None."""
    from datetime import datetime

    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.astimezone().strftime("%Y-%m-%d")
    return str(value)[:10]


def own_day(dt) -> str:
    """YYYY-MM-DD of a date or datetime in its own zone; "" for anything else."""
    return dt.strftime("%Y-%m-%d") if dt is not None and hasattr(dt, "strftime") else ""


def utc_day(ms: int | None) -> str:
    """YYYY-MM-DD in UTC of epoch milliseconds; "" for none."""
    from datetime import datetime, timezone

    if not ms:
        return ""
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d")


def one_line(text: str, limit: int = 120) -> str:
    """``text`` with its whitespace collapsed, at most ``limit`` characters (see clip)."""
    return clip(" ".join(text.split()), limit)


def clip(text: str, limit: int) -> str:
    """At most ``limit`` characters, ending in an ellipsis when cut."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def clip_bytes(text: str, limit: int) -> str:
    """At most ``limit`` bytes of UTF-8, cut at a word boundary, with an ellipsis:
    for budgets counted in bytes, as the hooks' are."""
    if len(text.encode("utf-8")) <= limit:
        return text
    cut = text.encode("utf-8")[: max(0, limit - 3)].decode("utf-8", "ignore")
    sp = cut.rfind(" ")
    if sp > len(cut) // 2:
        cut = cut[:sp]
    return cut.rstrip(" ,;:-") + "…"


def plural(n: int, word: str, many: str | None = None) -> str:
    """``word`` as ``n`` of it reads: "1 session", "2 sessions"."""
    return word if n == 1 else (many or word + "s")


def counted(n: int, word: str, many: str | None = None) -> str:
    """"1 session", "2 sessions"."""
    return f"{n} {plural(n, word, many)}"


def share(part: float) -> str:
    """A share as a person reads it: "100%" only when it is whole, "0%" only when
    it is none (201 of 202 is "99.5%", not a rounded "100%")."""
    pct = part * 100
    if 99 < pct < 100 or 0 < pct < 1:
        return f"{pct:.1f}%" if pct < 99.95 else "99.9%"
    return f"{pct:.0f}%"


# shown beside a session whose transcript the agent deleted (cleanupPeriodDays) and deja kept
GONE_MARK = "(transcript deleted; kept by deja)"
