"""What a session settled: the decision line, and whether it backed out.

Shared by the index (sessions.decision, sessions.gave_up), search ranking
(bounded lift and damp, cli-contract §5.3), ctx digests and the hooks, so the
rule is written once.
"""

from __future__ import annotations

import re

_DECISION = re.compile(
    r"\b(?:we pinned|we moved|we dropped|we switched|we chose|decision:|fixed by|fixed it by|the fix\b|"
    r"root cause|turned out|traced it to|instead of|the cause was|resolved by|worked around|we set|we added)",
    re.I,
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_BACKED_OUT = re.compile(
    r"\b(?:reverted|rolled back|roll(?:ing)? back|undid the change|undo(?:ing)? the change|gave up|giving up|"
    r"backed out|backing out|abandon(?:ed|ing) (?:the|this) approach)\b",
    re.I,
)
# Every phrase of _DECISION and of _BACKED_OUT holds one of its hints, lower-cased.
# An index run asks about every assistant message, and Python's case-blind
# alternation is slow on long ones; substring tests on the folded text reject
# most messages far sooner (_mentions; bench/README.md).
_DECISION_HINTS = ("we pinned", "we moved", "we dropped", "we switched", "we chose", "decision:", "fixed by",
                   "fixed it by", "the fix", "root cause", "turned out", "traced it to", "instead of", "the cause was",
                   "resolved by", "worked around", "we set", "we added")
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


# prose that mentions backing out without doing it
_NEGATED = re.compile(r"\b(?:not|n't|never|no need to|without|instead of|if|whether|should|could|would)\b[^.?!\n]{0,40}$", re.I)
MAX_LINE = 300


def decision_line(text: str) -> str:
    """The sentence carrying a decision phrase, plus the one after it; "" if none.

    The last such sentence wins: a session's conclusion comes at its end.
    """
    if not text or not _mentions(text, _DECISION_HINTS) or not _DECISION.search(text):
        return ""
    sentences = [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]
    for i in range(len(sentences) - 1, -1, -1):
        s = sentences[i]
        if _DECISION.search(s) and not _is_code(s):
            line = s
            if i + 1 < len(sentences) and not _is_code(sentences[i + 1]):
                line += " " + sentences[i + 1]
            line = " ".join(line.split())
            return line if len(line) <= MAX_LINE else line[: MAX_LINE - 1] + "…"
    return ""


def backed_out(text: str) -> bool:
    """The session's own text reports reverting or abandoning what it did."""
    if not text:
        return False
    if not _mentions(text, _BACKED_OUT_HINTS):
        return False
    for m in _BACKED_OUT.finditer(text):
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
