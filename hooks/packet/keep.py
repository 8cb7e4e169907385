"""The two lists a packet carries from one capture to the next (seed 001).

* ``carry_keep`` — the "Keep until closed" list: questions still waiting on
  the user, open #N items, settled verdicts and checks put off for later. A
  host summary tends to drop exactly these lines, so each capture starts from
  the list the previous one left, drops what the transcript has since closed
  and ages out what nobody touched for two compactions.
* ``carry_instructions`` — the user's standing instructions ("never modify
  internal/legacy/", "не трогай legacy"): how to work, not what to do. A tail
  read loses the early turns that said them, so they are carried too.

The small text helpers at the top are shared with extract.py (which imports
this module, so they live here rather than there).

Pure functions over ``Message`` lists; standard library only.
"""

from __future__ import annotations

import re
from typing import Iterable, Iterator

from deja.stages.display import clip_bytes
from deja.stages.replies import ASK_TOOLS

# --------------------------------------------------------------------------- limits

MAX_KEEP = 12
KEEP_CAPS = {"awaiting": 3, "verdict": 4, "recheck": 3}  # "open" takes the rest of the 12
KEEP_KINDS = ("awaiting", "open", "verdict", "recheck")  # also the order they are listed in
MAX_AGE = 2  # untouched captures a line survives; the next one drops it
KEEP_LINE_BYTES = 240

MAX_INSTRUCTIONS = 8
INSTRUCTION_BYTES = 1000
INSTRUCTION_LINE_BYTES = 240
INSTRUCTION_TURN_BYTES = 6 * 1024  # longer user turns are pastes, not rules

SCAN_CHARS = 128 * 1024  # of one message's text; a bound on work, not on meaning
HARNESS_SCAN_CHARS = 16 * 1024  # harness-block stripping is lazy-regex work: keep it small


# --------------------------------------------------------------------------- shared text helpers


def text_of(msg) -> str:
    """A message's text, whatever the reader (or a caller) put there."""
    t = getattr(msg, "text", "")
    return t if isinstance(t, str) else ""


def role_of(msg) -> str:
    r = getattr(msg, "role", "")
    return r if isinstance(r, str) else ""


def ts_of(msg) -> int | None:
    t = getattr(msg, "ts", None)
    return t if isinstance(t, int) and not isinstance(t, bool) else None


def norm(text: str) -> str:
    """Whitespace collapsed to single spaces, typographic apostrophes made plain, and
    lone surrogates (a JSON line may carry one) replaced so the text encodes as UTF-8."""
    text = text.encode("utf-8", "replace").decode("utf-8")
    return " ".join(text.replace("\u2019", "'").split())


def key(text: str) -> str:
    """What two lines share when they say the same thing: case, spacing, edge punctuation."""
    return norm(text).casefold().strip(" .,;:!-–—*_`\"'")


def item(text: str, msg, session: str, harness: str, limit: int) -> dict:
    """One packet item: the text and where it came from."""
    return {
        "text": clip_bytes(norm(text), limit),
        "session": session,
        "harness": harness,
        "role": role_of(msg),
        "ts": ts_of(msg),
    }


_FENCE = ("```", "~~~")


def prose_lines(text: str, cap: int = SCAN_CHARS) -> Iterator[str]:
    """Stripped, non-empty lines outside code fences, quoted lines (``> …``) skipped."""
    in_fence = False
    for raw in text[:cap].splitlines():
        s = raw.strip()
        if s.startswith(_FENCE):
            in_fence = not in_fence
            continue
        if in_fence or not s or s.startswith(">"):
            continue
        yield s


# A list bullet, a number, a heading mark, then optional emphasis: what may stand
# before a label that still "opens the line".
_LEAD = r"^(?:[-*+•·]\s+|\d{1,3}[.)]\s+|#{1,6}\s+)?(?:\*\*|__|\*|_)?\s*"
_EMPH = r"(?:\*\*|__|\*|_)?"


def label_re(labels: Iterable[str]) -> re.Pattern:
    """A line that opens with one of ``labels`` and a colon; ``rest`` is what follows."""
    alt = "|".join(labels)
    return re.compile(_LEAD + r"(?:" + alt + r")" + _EMPH + r"\s*[:：]\s*" + _EMPH + r"\s*(?P<rest>.*)$", re.I)


def heading_re(labels: Iterable[str]) -> re.Pattern:
    """A line that is the label alone, as a markdown heading or in bold ("## Still open",
    "**Remaining**"): it heads the bullets below it."""
    alt = "|".join(labels)
    return re.compile(
        r"^(?:#{1,6}\s+(?:\*\*|__)?(?:" + alt + r")(?:\*\*|__)?|(?:\*\*|__)(?:" + alt + r")(?:\*\*|__))\s*[:：]?\s*$",
        re.I,
    )


_BULLET = re.compile(r"^(?:[-*+•·]|\d{1,3}[.)])\s+")


def is_bullet(line: str) -> bool:
    return bool(_BULLET.match(line))


def tidy(line: str) -> str:
    """A line without its list marker and markdown emphasis."""
    s = _BULLET.sub("", line.strip(), count=1)
    s = s.replace("**", "").replace("__", "")
    return s.strip()


# Harness wrappers: <system-reminder>…</system-reminder>, <command-name>…, our own
# echoed <deja-recall> frame, Codex's <environment_context>. Any whole block with
# a wrapper-like name goes; so does everything after a known one never closed.
_TAG = re.compile(r"<(/?)([A-Za-z][\w:.-]{0,60})(?:\s[^<>]{0,300})?>")
_HARNESS_OPEN = re.compile(
    r"<(?:system-reminder|command-message|command-name|command-args|local-command-[\w-]+|user-prompt-submit-hook|"
    r"fork-boilerplate|deja-recall|environment_context|user_instructions|task-notification|ide_[\w-]+|"
    r"bash-[\w-]+|turn_aborted)\b[^<>]{0,300}>.*",
    re.S | re.I,
)
_TAG_VALUE = {
    name: re.compile(rf"<{name}>(.*?)</{name}>", re.S) for name in ("command-name", "command-args")
}
# Slash commands that configure the harness rather than ask for work.
_BUILTIN_SLASH = frozenset(
    "model clear compact config login logout help cost status resume exit quit context memory permissions "
    "hooks mcp agents doctor bug vim theme terminal-setup ide release-notes usage export add-dir".split()
)


def strip_harness(text: str, cap: int = HARNESS_SCAN_CHARS) -> str:
    """A user turn without harness wrappers; a custom slash command keeps its arguments."""
    s = text[:cap]
    if "<" not in s:
        return s
    slash = _slash_request(s)
    s = _HARNESS_OPEN.sub(" ", _drop_blocks(s))
    return f"{slash}\n{s}" if slash else s


_WRAPPER_NAMES = frozenset(("instructions", "permissions", "environment", "context", "reminder", "summary"))


def _harness_name(name: str) -> bool:
    """Harness wrappers are named like system-reminder, environment_context, INSTRUCTIONS."""
    return "-" in name or "_" in name or ":" in name or name in _WRAPPER_NAMES


def _drop_blocks(s: str) -> str:
    """``s`` without whole ``<tag …>…</tag>`` blocks, paired with a stack (linear
    time: a lazy regex per opening tag is quadratic on text full of tags)."""
    open_at: dict[str, list[int]] = {}
    spans: list[tuple[int, int]] = []
    for m in _TAG.finditer(s):
        name = m.group(2).lower()
        if not _harness_name(name):
            continue  # <b>, <div>: markup the user wrote, not a wrapper
        if not m.group(1):
            open_at.setdefault(name, []).append(m.start())
        elif open_at.get(name):
            spans.append((open_at[name].pop(), m.end()))
    if not spans:
        return s
    out: list[str] = []
    pos = 0
    for start, end in sorted(spans):
        if start < pos:
            pos = max(pos, end)  # inside a block already dropped
            continue
        out.append(s[pos:start])
        out.append(" ")
        pos = end
    out.append(s[pos:])
    return "".join(out)


def _slash_request(s: str) -> str:
    name = _TAG_VALUE["command-name"].search(s)
    args = _TAG_VALUE["command-args"].search(s)
    if not name or not args or not args.group(1).strip():
        return ""
    cmd = name.group(1).strip()
    if cmd.lstrip("/").lower() in _BUILTIN_SLASH:
        return ""
    return f"{cmd} {args.group(1).strip()}"


# --------------------------------------------------------------------------- keep until closed

VERDICT = label_re([
    r"verdict", r"final\s+verdict", r"decision", r"final\s+decision", r"decided", r"resolution", r"ruling",
    r"settled", r"вердикт", r"решение", r"итоговое\s+решение", r"решено",
])

_OPEN_WORD = (
    r"(?:still\s+open|remains?\s+open|open|pending|unresolved|unmerged|not\s+(?:yet\s+)?(?:merged|closed|done|fixed)|"
    r"awaiting\s+(?:review|merge)|in\s+review|(?:ещё|еще)\s+открыт\w*|открыт\w*|не\s+закрыт\w*|не\s+смерж\w*)"
)
# "#12 still open", "PR #12 is still open", "#12 открыт"
_OPEN_AFTER = re.compile(r"#(?P<n>\d{1,7})\b(?P<gap>[^.;\n#]{0,40}?)\b(?P<w>" + _OPEN_WORD + r")\b", re.I)
# "open: #34", "still open: #12, #13", "Open PRs: #7"
_OPEN_BEFORE = re.compile(
    r"(?<![\w-])" + _OPEN_WORD + r"\s*(?:items?|issues?|prs?|pull\s+requests?|tickets?|bugs?|вопрос\w*|задач\w*)?"
    r"\s*[:：]?\s*(?P<ns>#\d{1,7}\b(?:\s*(?:,|/|&|and|и)?\s*#\d{1,7}\b)*)",
    re.I,
)
_NEGATED_GAP = re.compile(r"\b(?:no\s+longer|not|never|closed|merged|done|fixed|уже\s+не|не)\b|n't\b", re.I)
_ISSUE_NO = re.compile(r"#(\d{1,7})\b")

# What closes an open #N: a merge/close command, a harness line reporting one,
# "closes #12", or the user saying it is done.
_GH_CLOSE = re.compile(r"\bgh\s+(?:pr|issue)\s+(?:merge|close)\b[^|;&\n]*?(?:#|/(?:pull|issues)/|\s)(\d{1,7})\b", re.I)
_GH_REPORT = re.compile(r"\b(?:merged|closed)\s+(?:pull\s+request|issue)\s+(?:[\w.-]+/[\w.-]+)?#(\d{1,7})\b", re.I)
_CLOSE_VERB = re.compile(
    r"\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?|merged|merge|закрыл\w*|закрыт\w*|смерж\w*|смердж\w*)\s+"
    r"(?:(?:the\s+)?(?:pr|issue|pull\s+request)\s+)?#(\d{1,7})\b",
    re.I,
)
_CLOSE_STATE = re.compile(
    r"#(?P<n>\d{1,7})\b(?P<gap>[^.;\n#]{0,30}?)\b(?P<w>merged|closed|done|resolved|fixed|landed|shipped|"
    r"закрыт\w*|смержен\w*|смерджен\w*|готов\w*|сделан\w*)\b",
    re.I,
)

_RECHECK = re.compile(
    r"\b(?:re-?check|re-?verify|re-?test|re-?run|revisit|double-check|check\s+(?:it\s+|this\s+|that\s+)?(?:again|back)|"
    r"verify\s+again|look\s+again)\b[^\n?]{0,100}?\b(?:later|after|once|when|tomorrow|next\s+(?:time|session|run|week))\b"
    r"|\b(?:later|afterwards|tomorrow)\b[^\n?]{0,30}?\b(?:re-?check|re-?verify|check\s+again|verify)\b"
    r"|(?:перепровер\w*|провер\w*\s+(?:ещё|еще|снова)(?:\s+раз)?|вернуться\s+к)[^\n?]{0,100}?(?:позже|потом|после|завтра|когда)"
    r"|(?:позже|потом|завтра)\s+(?:пере)?провер\w*",
    re.I,
)

_SPEECH = ("user", "assistant", "summary")


def carry_keep(messages: list, previous_keep, session_id: str, harness: str, *, counts: dict | None = None) -> list[dict]:
    """The keep-until-closed list after this capture.

    Starts from ``previous_keep``; lines the transcript re-states are touched
    (age 0), closed ones are dropped, untouched ones age by one and go once
    they would pass MAX_AGE. Capped per kind (3 awaiting, 4 verdicts, 3
    rechecks, the rest open items, 12 in all); ``counts["keep"]`` receives how
    many lines the caps dropped.
    """
    book = _Book(session_id, harness)
    for e in _valid_entries(previous_keep):
        book.carry(e)
    msgs = list(messages or [])
    for m in msgs:
        book.read(m)
    book.close_answered(msgs)
    for q, m in _awaiting(msgs):
        book.note("awaiting", q, m)
    out, dropped = book.finish()
    if counts is not None and dropped:
        counts["keep"] = counts.get("keep", 0) + dropped
    return out


def _valid_entries(previous) -> list[dict]:
    out = []
    if not isinstance(previous, list):
        return out
    for e in previous:
        if not isinstance(e, dict) or e.get("kind") not in KEEP_KINDS:
            continue
        text = e.get("text")
        if not isinstance(text, str) or not text.strip():
            continue
        age = e.get("age")
        ts = e.get("ts")
        out.append({
            "kind": e["kind"],
            "text": clip_bytes(norm(text), KEEP_LINE_BYTES),
            "age": age if isinstance(age, int) and not isinstance(age, bool) and age >= 0 else 0,
            "session": str(e.get("session") or "")[:200],
            "harness": str(e.get("harness") or "")[:40],
            "role": str(e.get("role") or "")[:20],
            "ts": ts if isinstance(ts, int) and not isinstance(ts, bool) else None,
        })
    return out


class _Book:
    """The keep list while one capture reads its messages in order."""

    def __init__(self, session: str, harness: str):
        self.session, self.harness = session, harness
        self.entries: dict[tuple[str, str], dict] = {}  # (kind, key) -> entry, insertion = first seen
        self.touched: set[tuple[str, str]] = set()
        self.carried: set[tuple[str, str]] = set()

    @staticmethod
    def _key(kind: str, text: str) -> tuple[str, str]:
        if kind == "open":
            m = _ISSUE_NO.search(text)
            if m:
                return kind, m.group(1)
        return kind, key(text)

    def carry(self, e: dict) -> None:
        k = self._key(e["kind"], e["text"])
        if k not in self.entries:
            self.entries[k] = e
            self.carried.add(k)

    def note(self, kind: str, text: str, msg, number: str | None = None) -> None:
        """A line this capture's messages state: new, or a touch of a carried one."""
        k = (kind, number) if number else self._key(kind, text)
        e = item(text, msg, self.session, self.harness, KEEP_LINE_BYTES)
        e = {"kind": kind, "text": e["text"], "age": 0, **{f: e[f] for f in ("session", "harness", "role", "ts")}}
        self.entries.pop(k, None)  # re-inserted: the newest statement wins, and sorts as newest
        self.entries[k] = e
        self.touched.add(k)

    def touch_number(self, n: str) -> None:
        if ("open", n) in self.entries:
            self.touched.add(("open", n))

    def close_number(self, n: str) -> None:
        k = ("open", n)
        self.entries.pop(k, None)
        self.touched.discard(k)

    def read(self, m) -> None:
        role = role_of(m)
        text = text_of(m)
        if not text:
            return
        if role == "command":
            self._read_command(m, text)
        elif role == "tool-output":
            for n in _GH_REPORT.findall(text[:SCAN_CHARS]):
                self.close_number(n)
        elif role in _SPEECH:
            self._read_speech(m, role, text)

    def _read_command(self, m, text: str) -> None:
        code = getattr(m, "exit_code", None)
        ok = not (isinstance(code, int) and code != 0)
        for n in _ISSUE_NO.findall(text):
            self.touch_number(n)
        if not ok:
            return  # a merge that failed closes nothing
        for n in _GH_CLOSE.findall(text):
            self.close_number(n)
        for n in _CLOSE_VERB.findall(text):
            self.close_number(n)

    def _read_speech(self, m, role: str, text: str) -> None:
        # A long user turn is a paste (a log, a template): it can close an item, not state one.
        states = not (role == "user" and len(text.encode("utf-8", "replace")) > INSTRUCTION_TURN_BYTES)
        if role == "user" and states:
            text = strip_harness(text)
        for line in prose_lines(text):
            if "#" in line:
                self._read_numbers(m, role, line, states)
            if not states or line.endswith(("?", "？")):
                continue
            v = VERDICT.match(line)
            if v and _says_something(v.group("rest")):
                self.note("verdict", tidy(line), m)
            elif _RECHECK.search(line):
                self.note("recheck", tidy(line), m)

    def _read_numbers(self, m, role: str, line: str, states: bool) -> None:
        for n in _ISSUE_NO.findall(line):
            self.touch_number(n)
        if role == "user":  # the user saying it is done closes it
            closed = set(_CLOSE_VERB.findall(line))
            closed |= {c.group("n") for c in _CLOSE_STATE.finditer(line) if not _NEGATED_GAP.search(c.group("gap"))}
            for n in closed:
                self.close_number(n)
        if states:
            for n in _open_numbers(line):
                self.note("open", tidy(line), m, number=n)

    def close_answered(self, msgs: list) -> None:
        """An awaiting question is closed by a user turn after it."""
        users = [(i, ts_of(m)) for i, m in enumerate(msgs) if role_of(m) == "user" and text_of(m).strip()]
        if not users:
            return
        for k, e in list(self.entries.items()):
            if e["kind"] != "awaiting":
                continue
            if e["ts"] is not None and any(t is not None for _, t in users):
                answered = any(t is not None and t > e["ts"] for _, t in users)
            else:
                asked = _position_of(msgs, e["text"])
                answered = any(i > asked for i, _ in users)
            if answered:
                self.entries.pop(k, None)
                self.touched.discard(k)

    def finish(self) -> tuple[list[dict], int]:
        live: list[dict] = []
        for k, e in self.entries.items():
            if k in self.touched:
                e = dict(e, age=0)
            else:
                e = dict(e, age=e["age"] + 1)
                if e["age"] > MAX_AGE:
                    continue  # untouched for too many compactions: aged out, not "omitted"
            live.append(e)
        # newest first within a kind: touched before carried, then by time
        order = {id(e): i for i, e in enumerate(live)}
        live.sort(key=lambda e: (e["age"], -(e["ts"] or 0), -order[id(e)]))
        kept: dict[str, list[dict]] = {k: [] for k in KEEP_KINDS}
        dropped = 0
        for e in live:
            cap = KEEP_CAPS.get(e["kind"])
            if cap is not None and len(kept[e["kind"]]) >= cap:
                dropped += 1
                continue
            kept[e["kind"]].append(e)
        room = MAX_KEEP - sum(len(kept[k]) for k in KEEP_CAPS)
        dropped += max(0, len(kept["open"]) - room)
        kept["open"] = kept["open"][:room]
        return [e for kind in KEEP_KINDS for e in kept[kind]], dropped


_PLACEHOLDER = re.compile(r"^(?:\[[^\]]*\]|<[^>]*>|\{[^}]*\}|…|\.\.\.)$")


def _says_something(rest: str) -> bool:
    """A label's text that is not empty or a template placeholder ("Decision: [what was chosen]")."""
    r = rest.strip(" *_`")
    return bool(r) and not _PLACEHOLDER.match(r)


def _open_numbers(line: str) -> list[str]:
    """The #N a line says are still open (not those it says are closed)."""
    found: list[str] = []
    for m in _OPEN_AFTER.finditer(line):
        if _NEGATED_GAP.search(m.group("gap")) and not m.group("w").lower().startswith("not"):
            continue
        found.append(m.group("n"))
    for m in _OPEN_BEFORE.finditer(line):
        found.extend(_ISSUE_NO.findall(m.group("ns")))
    return list(dict.fromkeys(found))


def _position_of(msgs: list, text: str) -> int:
    """Index of the last assistant message that asked ``text`` (-1: not in this window)."""
    k = key(text)[:80]
    for i in range(len(msgs) - 1, -1, -1):
        if role_of(msgs[i]) == "assistant" and k and k in key(text_of(msgs[i])[:SCAN_CHARS]):
            return i
    return -1


def _awaiting(msgs: list) -> list[tuple[str, object]]:
    """Questions in the assistant's last turn when no user turn follows it: lines
    ending in "?", or every question it put through AskUserQuestion /
    request_user_input (their answers are user turns, stages/replies.py)."""
    for i in range(len(msgs) - 1, -1, -1):
        role = role_of(msgs[i])
        if role == "user" and text_of(msgs[i]).strip():
            return []
        if role == "assistant" and text_of(msgs[i]).strip():
            m = msgs[i]
            if getattr(m, "tool", None) in ASK_TOOLS:  # asked through the question tool: each line one question
                qs = [tidy(s) for s in prose_lines(text_of(m))]
                return [(q, m) for q in qs[-KEEP_CAPS["awaiting"]:]]
            # a line ending "?)" is an aside inside a list, not a question put to the user
            qs = [tidy(s) for s in prose_lines(text_of(m)) if s.rstrip("*_ ").endswith(("?", "？")) and len(s) >= 8]
            return [(q, m) for q in qs[-KEEP_CAPS["awaiting"]:]]
    return []


# --------------------------------------------------------------------------- standing instructions

_LEAD_WORDS = r"^(?:(?:please|pls|plz|and|also|but|so|again|ok|okay|пожалуйста|и|также|ещё|еще)[,!]?\s+)*"
_STRONG = re.compile(
    _LEAD_WORDS + r"(?!(?:don't|do\s+not|dont)\s+(?:worry|bother|mind|know|see|think)\b|must\s+(?:be|have)\b)"
    r"(?:never|always|don't|do\s+not|dont|avoid|must(?:\s+not|n't)?|should\s+(?:never|always)|"
    r"from\s+now\s+on|going\s+forward|in\s+(?:the\s+)?future|remember\s+to|under\s+no\s+circumstances|"
    r"никогда|всегда|нельзя|избега\w*|запрещ\w*|обязательно|впредь|с\s+этого\s+момента|не\s+надо|не\s+нужно|"
    r"не\s+[а-яё]+(?:й|йте|ь|ьте|(?<!л)и|(?<!л)ите))(?![\w'])",
    re.I,
)
_WEAK = re.compile(
    _LEAD_WORDS + r"(?:use|prefer|keep|stick\s+to|only|ensure|make\s+sure|follow|write|run|put|leave|name|format|"
    r"commit|test|add|check|используй\w*|предпочита\w*|держи|оставля\w*|оставь|пиши|делай|запускай|только|следи|"
    r"соблюдай|коммить|тестируй|проверяй)(?![\w'])",
    re.I,
)
_GENERAL = re.compile(
    r"\b(?:instead\s+of|rather\s+than|over|whenever|every\s+time|each\s+time|before|after|by\s+default|everywhere|"
    r"throughout|at\s+all\s+times|unless|only|always|never)\b|,\s*not\b|"
    r"(?:вместо|а\s+не|перед|после|всегда|везде|каждый\s+раз|по\s+умолчанию|только|никогда)",
    re.I,
)
_SENTENCE = re.compile(r"(?<=[.!])\s+")
_NUMBERED = re.compile(r"^\d{1,3}[.)]\s+")


def is_instruction(sentence: str) -> bool:
    """A sentence telling the agent how to work (a rule), not a question or a task."""
    s = tidy(norm(sentence))
    if not s or s.endswith(("?", "？")) or len(s) > 400:
        return False
    if _STRONG.match(s):
        return True
    return bool(_WEAK.match(s) and _GENERAL.search(s))


def carry_instructions(messages: list, previous_instructions, session_id: str, harness: str,
                       *, counts: dict | None = None) -> list[dict]:
    """Standing instructions after this capture: the previous list merged with
    what this capture's user turns say (newest wins, duplicates once), at most
    8 lines and 1000 bytes, in the order they were said. ``counts["instructions"]``
    receives how many lines the caps dropped."""
    blocks: list[list[dict]] = []  # one per source, oldest first
    for e in _valid_instructions(previous_instructions):
        blocks.append([e])
    for m in messages or []:
        if role_of(m) != "user":
            continue
        lines = _turn_instructions(text_of(m))
        if lines:
            blocks.append([item(t, m, session_id, harness, INSTRUCTION_LINE_BYTES) for t in lines])
    return _fit_instructions(blocks, counts)


def _valid_instructions(previous) -> list[dict]:
    out = []
    if not isinstance(previous, list):
        return out
    for e in previous:
        if isinstance(e, dict) and isinstance(e.get("text"), str) and e["text"].strip():
            ts = e.get("ts")
            out.append({
                "text": clip_bytes(norm(e["text"]), INSTRUCTION_LINE_BYTES),
                "session": str(e.get("session") or "")[:200],
                "harness": str(e.get("harness") or "")[:40],
                "role": str(e.get("role") or "user")[:20],
                "ts": ts if isinstance(ts, int) and not isinstance(ts, bool) else None,
            })
    return out


def _turn_instructions(text: str) -> list[str]:
    """The instruction lines of one user turn, in order."""
    if not text or len(text.encode("utf-8", "replace")) > INSTRUCTION_TURN_BYTES:
        return []
    lines = list(prose_lines(strip_harness(text)))
    out: list[str] = []
    i = 0
    while i < len(lines):
        if _NUMBERED.match(lines[i]):
            j = i
            while j < len(lines) and _NUMBERED.match(lines[j]):
                j += 1
            out.extend(_numbered_list(lines[i:j]))
            i = j
            continue
        out.extend(_line_instructions(lines[i]))
        i += 1
    return out


def _numbered_list(items: list[str]) -> list[str]:
    """A numbered list is taken whole when two thirds of its items are instructions."""
    hits = [it for it in items if is_instruction(_NUMBERED.sub("", it))]
    if len(items) >= 2 and 3 * len(hits) >= 2 * len(items):
        return [it for it in items if not it.rstrip().endswith(("?", "？"))]
    out: list[str] = []
    for it in items:
        out.extend(_line_instructions(_NUMBERED.sub("", it)))
    return out


def _line_instructions(line: str) -> list[str]:
    if line.endswith(("?", "？")):
        return []
    return [tidy(s) for s in _SENTENCE.split(tidy(line)) if is_instruction(s)]


def _fit_instructions(blocks: list[list[dict]], counts: dict | None) -> list[dict]:
    # duplicates: the newest statement wins
    last: dict[str, tuple[int, int]] = {}
    for bi, block in enumerate(blocks):
        for li, e in enumerate(block):
            last[key(e["text"])] = (bi, li)
    kept: list[tuple[int, int, dict]] = []
    used_bytes = 0
    dropped = 0
    for bi in range(len(blocks) - 1, -1, -1):  # newest source first
        for li, e in enumerate(blocks[bi]):
            if last.get(key(e["text"])) != (bi, li):
                continue
            n = len(e["text"].encode("utf-8"))
            if len(kept) >= MAX_INSTRUCTIONS or used_bytes + n > INSTRUCTION_BYTES:
                dropped += 1
                continue
            kept.append((bi, li, e))
            used_bytes += n
    if counts is not None and dropped:
        counts["instructions"] = counts.get("instructions", 0) + dropped
    kept.sort(key=lambda t: (t[0], t[1]))  # in the order they were said
    return [e for _, _, e in kept]
