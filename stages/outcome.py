"""What a session settled: the decision line, and whether it backed out.

Shared by the index (sessions.decision, sessions.gave_up), search ranking
(bounded lift and damp, cli-contract §5.3), ctx digests and the hooks, so the
rule is written once.
"""

from __future__ import annotations

import re

# Every phrase holds one of these hints, lower-cased (see _mentions).
_DECISION_HINTS = ("we pinned", "we moved", "we dropped", "we switched", "we chose", "decision:", "fixed by",
                   "fixed it by", "the fix", "root cause", "turned out", "traced it to", "instead of", "the cause was",
                   "resolved by", "worked around", "we set", "we added")
# Whole phrases: "we set" is not "we settled".
_DECISION = re.compile(
    "|".join(r"(?<!\w)" + re.escape(p) + (r"(?!\w)" if p[-1].isalnum() else "") for p in _DECISION_HINTS),
    re.I,
)
_BACKED_OUT = re.compile(
    r"\b(?:reverted|rolled back|roll(?:ing)? back|undid the change|undo(?:ing)? the change|gave up|giving up|"
    r"backed out|backing out|abandon(?:ed|ing) (?:the|this) approach)\b",
    re.I,
)
# Every phrase of _BACKED_OUT holds one of these hints, lower-cased. An index run
# asks about every assistant message, and Python's case-blind alternation is slow
# on long ones; substring tests on the folded text reject most messages far
# sooner (_mentions; bench/README.md).
_BACKED_OUT_HINTS = ("revert", "rolled back", "roll back", "rolling back", "undid", "undo", "gave up", "giving up",
                     "backed out", "backing out", "abandon")
# re.I also matches these four non-ASCII letters to ASCII ones (the re docs)
_RE_I_EXTRA = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})


def _mentions(text: str, hints: tuple[str, ...]) -> bool:
    """``text`` may hold a phrase of ``hints`` as a case-blind regex would see it."""
    if not text.isascii() and any(c in text for c in "\u0130\u0131\u017f\u212a"):
        text = text.translate(_RE_I_EXTRA)  # (slow, and rarely needed)
    low = text.lower()
    return any(h in low for h in hints)


_HINTS = None  # (Aho-Corasick automaton of both hint lists, how many are decision hints), built on first use


def outcome(text: str) -> tuple[str, bool]:
    """``(decision_line(text), backed_out(text))`` in one pass: what an index
    run asks of every assistant message.

    One Aho-Corasick pass over the folded text finds the hints of both (29
    substring scans before); backing out is then looked for only on the lines
    that hold one of its hints (its phrases hold no line break), not with a
    case-blind regex over the whole message. bench/README.md has the figures."""
    global _HINTS
    if not text:
        return "", False
    if _HINTS is None:
        import ahocorasick_rs

        _HINTS = (ahocorasick_rs.AhoCorasick(list(_DECISION_HINTS + _BACKED_OUT_HINTS)), len(_DECISION_HINTS))
    folded = text
    if not text.isascii() and any(c in text for c in "\u0130\u0131\u017f\u212a"):
        folded = text.translate(_RE_I_EXTRA)
    low = folded.lower()
    automaton, n_decision = _HINTS
    try:
        found = automaton.find_matches_as_indexes(low, overlapping=True)
    except UnicodeEncodeError:  # lone surrogates: the slow way
        return decision_line(text), backed_out(text)
    decision = any(i < n_decision for i, _, _ in found)
    backed = [start for i, start, _ in found if i >= n_decision]
    line = _decision_line(text) if decision and _DECISION.search(text) else ""
    if not backed:
        return line, False
    if len(low) != len(text):  # folding moved offsets: the whole text
        return line, _backed_out(text, [(0, len(text))])
    spans = set()  # the lines holding a hint, each once, in order
    for start in backed:
        end = text.find("\n", start)
        spans.add((text.rfind("\n", 0, start) + 1, end if end >= 0 else len(text)))
    return line, _backed_out(text, sorted(spans))


# prose that mentions backing out without doing it
_NEGATED = re.compile(r"\b(?:not|n't|never|no need to|without|instead of|if|whether|should|could|would)\b[^.?!\n]{0,40}$", re.I)
MAX_LINE = 300


def decision_line(text: str) -> str:
    """The last decision of ``text`` (see decision_lines), cut to MAX_LINE; "" if none.

    The last one wins: a session's conclusion comes at its end.
    """
    if not text or not _mentions(text, _DECISION_HINTS) or not _DECISION.search(text):
        return ""
    return _decision_line(text)


def _decision_line(text: str) -> str:
    units = _units(text)
    for i in range(len(units) - 1, -1, -1):
        line = _decision_at(units, i)
        if line:
            return line if len(line) <= MAX_LINE else line[: MAX_LINE - 1] + "…"
    return ""


def decision_lines(text: str) -> list[str]:
    """Every decision of ``text`` in reading order, uncut.

    A decision is a sentence holding a decision phrase ("the fix", "root cause",
    "we switched" …) with the sentence after it. It must carry its content: a
    heading ("### **Root Cause**", a bold-only line) or a lead-in ending in a
    colon ("Instead of the current:") is joined with the sentence that follows
    ("Root Cause: the pool was …"), or dropped when a code block, a table,
    another heading or lead-in, or nothing follows. A lead-in is never the
    sentence added after a decision. Code fences, tables and diff lines are
    never decisions; bold markers and list bullets are dropped.
    """
    if not text or not _mentions(text, _DECISION_HINTS) or not _DECISION.search(text):
        return []
    units = _units(text)
    return [line for i in range(len(units)) if (line := _decision_at(units, i))]


# A unit is one sentence of prose, a heading line, or a line of code.
_PROSE, _HEADING, _CODE = 0, 1, 2
_FENCE_MARK = ("```", "~~~")
_HEADING_LINE = re.compile(r"^(?:#{1,6}\s+(?P<h>.+?)\s*#*|\*\*(?P<b>[^*]+?)\*\*\s*[:：]?)$")
_BULLET = re.compile(r"^(?:[-*+•]|\d{1,3}[.)])\s+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def _units(text: str) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    fenced = False
    for raw in text.splitlines():
        s = raw.strip()
        if s.startswith(_FENCE_MARK):
            fenced = not fenced
            out.append((_CODE, s))
            continue
        if not s:
            continue
        if fenced or s.startswith(("|", "$ ", ">>>", "@@")) or (s[0] in "+-" and not _BULLET.match(s)):
            out.append((_CODE, s))
            continue
        h = _HEADING_LINE.match(s)
        if h:
            head = (h.group("h") or h.group("b")).replace("**", "").strip()
            out.append((_HEADING, _BULLET.sub("", head, count=1)))  # "3. Root Cause" → "Root Cause"
            continue
        s = _BULLET.sub("", s, count=1).replace("**", "")
        out.extend((_PROSE, x) for x in _SENTENCE.split(s) if x.strip())
    return out


def _lead_in(s: str) -> bool:
    return s.rstrip(" *_").endswith((":", "："))


def without_lead_in(line: str) -> str:
    """``line`` less a last sentence that only leads in to what follows it
    ("Done. Summary of what happened:" → "Done."); "" when that is all it is."""
    if not _lead_in(line):
        return line
    return " ".join(_SENTENCE.split(line.strip())[:-1])


def _decision_at(units: list[tuple[int, str]], i: int) -> str:
    """The decision unit ``i`` starts, or ""."""
    kind, s = units[i]
    if kind == _CODE or not _DECISION.search(s) or (kind == _PROSE and _is_code(s)):
        return ""
    nxt = units[i + 1] if i + 1 < len(units) else None
    if kind == _HEADING or _lead_in(s):
        # a heading or lead-in says what comes next: without it there is nothing to show
        if nxt is None or nxt[0] != _PROSE or _lead_in(nxt[1]):
            return ""
        line = s.rstrip(" :：") + ": " + nxt[1]
    else:
        line = s
        if nxt is not None and nxt[0] == _PROSE and not _is_code(nxt[1]) and not _lead_in(nxt[1]):
            line += " " + nxt[1]
    return " ".join(line.split())


def backed_out(text: str) -> bool:
    """The session's own text reports reverting or abandoning what it did."""
    if not text:
        return False
    if not _mentions(text, _BACKED_OUT_HINTS):
        return False
    return _backed_out(text, [(0, len(text))])


def _backed_out(text: str, spans: list[tuple[int, int]]) -> bool:
    """A phrase of _BACKED_OUT inside ``spans`` of ``text`` (whole lines, in
    order) that is not code, a question or negated."""
    for lo, hi in spans:
        for m in _BACKED_OUT.finditer(text, lo, hi):
            line_start = text.rfind("\n", 0, m.start()) + 1
            line_end = text.find("\n", m.end())
            line = text[line_start : line_end if line_end >= 0 else len(text)]
            if _is_code(line) or line.rstrip().endswith("?"):
                continue
            if _NEGATED.search(text[line_start : m.start()]):
                continue
            return True
    return False


def _is_code(line: str) -> bool:
    s = line.lstrip()
    return s.startswith(("+", "-", "```", "$ ", ">>>", "@@", "|")) or s.count("`") >= 4
