"""Time words in a query: "in March", "last month", "two weeks ago", "over the
summer" say when, not what.

They are taken out of the words a session must hold and become windows of
time (a day named with its month, "October 13, 2023" or "1 February", is that
day); a session active inside one is lifted a little (``rank.TIME_LIFT``),
never filtered (§5.1: --since is the hard cut). Months and seasons without a
year are the latest ones not after today; a bare "may", "march" or "fall" is a
word first and counts as a date only after a preposition, "early/mid/late" or
before a year.
"""

from __future__ import annotations

import functools
import re

_MONTHS = {m: i + 1 for i, m in enumerate(
    "january february march april may june july august september october november december".split())}
_MONTHS.update({"jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9,
                "oct": 10, "nov": 11, "dec": 12})
_PLAIN_MONTHS = frozenset("january february april june july august september october november december".split())
_SEASONS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}
_COUNTS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
           "nine": 9, "ten": 10, "couple": 2, "few": 3, "several": 3}
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30.4, "year": 365}
# Compiled on first use, and only for a query holding one of the words every
# time expression needs: compiling it is a noticeable part of a search.
_TIME_WORDS = frozenset(_MONTHS) | frozenset(_SEASONS) | frozenset(
    "ago back earlier last this past previous other yesterday today holidays".split())
_MONTH_NAMES = "|".join(sorted(_MONTHS, key=len, reverse=True))
_TIME_SOURCE = (
    r"\b(?:"
    # a day: "October 13, 2023", "13 October", "the 1st of February, 2023"
    r"(?P<date>(?:(?P<dprep>on|by|since|until|till|from|before|after)\s+)?(?:the\s+)?"
    r"(?:(?P<dday1>\d{1,2})(?:(?:st|nd|rd|th)(?:\s+of)?)?\s+(?P<dmon1>" + _MONTH_NAMES + r")\.?"
    r"|(?P<dmon2>" + _MONTH_NAMES + r")\.?\s+(?:the\s+)?(?P<dday2>\d{1,2})(?:st|nd|rd|th)?)"
    r"(?:,?\s+(?P<dyear>(?:19|20)\d\d))?)"
    r"|(?P<month>(?:(?:in|during|since|around|by|until|till|over|from|back in|sometime in|about)\s+)?"
    r"(?:(?P<part>early|mid|late|(?:the\s+)?(?:start|beginning|middle|end)\s+of)[\s-]+)?"
    r"(?P<mname>" + _MONTH_NAMES + r")\.?(?:\s+(?P<myear>(?:19|20)\d\d))?)"
    r"|(?P<season>(?:(?:in|during|over|through)\s+)?(?:the|this|last|past)\s+(?:(?:early|late)\s+)?"
    r"(?P<sname>spring|summer|autumn|fall|winter)(?!\s+(?:of|back|through|off|over)\b)(?:\s+(?P<syear>(?:19|20)\d\d))?)"
    r"|(?P<ago>(?P<n>\d{1,3}|an?|one|two|three|four|five|six|seven|eight|nine|ten|(?:a\s+)?couple(?:\s+of)?|"
    r"(?:a\s+)?few|several)\s+(?P<unit>day|week|month|year)s?\s+(?:ago|back|earlier))"
    r"|(?P<rel>(?:(?P<edge>early|late)\s+)?(?P<which>last|this|past|previous|the\s+other)\s+"
    r"(?P<runit>day|week|weekend|month|quarter|year))"
    r"|(?P<yesterday>yesterday|today)"
    r"|(?P<holidays>the\s+(?:christmas\s+|winter\s+)?holidays)"
    r")\b"
)


@functools.cache
def _time_re() -> re.Pattern:
    return re.compile(_TIME_SOURCE, re.I)


def time_windows(text: str, now_ms: float) -> tuple[str, list[tuple[float, float]]]:
    """The text without its time expressions, and the windows they name (ms)."""
    if _TIME_WORDS.isdisjoint(re.findall(r"[a-z]+", text.lower())):
        return text, []
    import datetime as dt

    utc = dt.timezone.utc
    now = dt.datetime.fromtimestamp(now_ms / 1000, utc)
    windows: list[tuple[float, float]] = []

    def month_span(year: int, month: int):
        return dt.datetime(year, month, 1, tzinfo=utc), dt.datetime(year + month // 12, month % 12 + 1, 1, tzinfo=utc)

    def latest(month: int, year: int | None):
        return month_span(year if year else (now.year if month <= now.month else now.year - 1), month)

    def read(m: re.Match) -> str:
        g = {k: (v.lower() if isinstance(v, str) else v) for k, v in m.groupdict().items()}
        day = dt.timedelta(days=1)
        if g["date"]:
            name = g["dmon1"] or g["dmon2"]
            if name not in _PLAIN_MONTHS and not g["dprep"] and not g["dyear"]:
                return m.group(0)  # "step 2 may fail", "mar 3": words unless a date is plain
            month = _MONTHS[name]
            mday = int(g["dday1"] or g["dday2"])
            year = int(g["dyear"]) if g["dyear"] else (now.year if (month, mday) <= (now.month, now.day)
                                                       else now.year - 1)
            try:
                start = dt.datetime(year, month, mday, tzinfo=utc)
            except ValueError:  # "February 30": no day, so words
                return m.group(0)
            start, end = start - day, start + 2 * day  # (the person's day, in any time zone)
        elif g["month"]:
            bare = g["month"].strip(". ") == g["mname"]
            if bare and g["mname"] not in _PLAIN_MONTHS and not g["myear"]:
                return m.group(0)  # "may", "march", "dec" on their own are words
            start, end = latest(_MONTHS[g["mname"]], int(g["myear"]) if g["myear"] else None)
            third = (end - start) / 3
            part = g["part"] or ""
            if part.startswith(("early", "start", "beginning", "the start", "the beginning")):
                start, end = start - 5 * day, start + third
            elif part.startswith(("mid", "middle", "the middle")):
                start, end = start + third, end - third
            elif part.startswith(("late", "end", "the end")):
                start, end = end - third, end + 5 * day
        elif g["season"]:
            first = _SEASONS[g["sname"]]
            year = int(g["syear"]) if g["syear"] else (now.year if first <= now.month else now.year - 1)
            start = dt.datetime(year, first, 1, tzinfo=utc)
            end = start + 92 * day
        elif g["ago"]:
            n = g["n"].replace("a ", "").replace(" of", "").strip()
            days = (int(n) if n.isdigit() else _COUNTS.get(n, 1)) * _UNIT_DAYS[g["unit"]]
            half = max(2.0, days / 2)
            start, end = now - (days + half) * day, now - (days - half) * day
        elif g["rel"]:
            which, unit = g["which"], g["runit"]
            this = which == "this"
            if unit in ("day", "weekend", "week"):
                start, end = now - (7 if this else 14) * day, now
            elif unit == "month":
                if this:
                    start, end = latest(now.month, now.year)
                else:
                    prev = now.replace(day=1) - day
                    start, end = latest(prev.month, prev.year)
                    start, end = start - 7 * day, end + 7 * day
            elif unit == "quarter":
                q0 = (now.month - 1) // 3 * 3 + 1
                start = dt.datetime(now.year, q0, 1, tzinfo=utc)
                if not this:
                    start = dt.datetime(now.year - (q0 == 1), (q0 - 4) % 12 + 1, 1, tzinfo=utc)
                end = start + 92 * day
            else:
                year = now.year if this else now.year - 1
                start, end = dt.datetime(year, 1, 1, tzinfo=utc), dt.datetime(year + 1, 1, 1, tzinfo=utc)
            if g["edge"] and unit in ("month", "quarter", "year"):
                third = (end - start) / 3
                start, end = (start, start + third) if g["edge"] == "early" else (end - third, end)
        elif g["yesterday"]:
            start, end = now - 3 * day, now
        else:  # the holidays: the latest turn of the year
            year = now.year if (now.month, now.day) >= (12, 15) else now.year - 1
            start = dt.datetime(year, 12, 1, tzinfo=utc)
            end = start + 40 * day
        windows.append((start.timestamp() * 1000, end.timestamp() * 1000))
        return " "

    return _time_re().sub(read, text), windows


def in_windows(started_ms: int | None, updated_ms: int | None, windows: list[tuple[float, float]]) -> bool:
    """Whether a session was active during any of the windows."""
    if not updated_ms:
        return False
    first = started_ms or updated_ms
    return any(first <= end and updated_ms >= start for start, end in windows)
