"""`deja ctx <query|id-prefix>`: a markdown digest of the best-matching session,
small enough (≤ ~8 KB) to pipe into a prompt.

Which session: a single token of at least 6 characters is first tried as an id
prefix (``show.resolve``); anything else, or a token no id starts with, is a
search (``search.search(live, Query(text, limit=1))``) and the first hit wins.

What the digest holds, in this order: the title; harness, id, project and
dates; the problem (the first real asks of the person: acknowledgements such as
"ok" or "continue" are skipped, and so are short follow-ups after the first); the decisions (sentences of the agent's turns
holding a decision phrase of cli-contract §5.3, each with the sentence after
it, by the rule of ``stages.outcome.decision_lines``, unless the outcome already shows it); the outcome (the last answer of the agent, preceded by the last substantial
one when the final answer is a short sign-off); the commands run, failures
marked ``→ exit N`` (the latest 30); the files touched (the 20 worked on most).
When the digest is over budget, list items are dropped (the earliest commands
first, then files, the last decisions, asks; each section keeps a few and says
how many it left out), then the outcome is shortened, then the text is cut.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from . import show
from deja.stages.display import clip, one_line
from deja.stages.outcome import decision_lines
from deja.stages.work_records import command_of, inspects
from deja.stages.store.read import LiveStore

BUDGET = 8000  # bytes of UTF-8
_ACK_RE = re.compile(
    r"(?:(?:yes|yep|yeah|y|no|ok|okay|k|sure|thanks|thank you|thx|continue|go on|go ahead|proceed|do it|"
    r"lgtm|nice|great|perfect|cool|good|done|please|please continue|keep going|carry on|sounds good|"
    r"looks good)[\s.,!]*)+",
    re.I,
)
MAX_ASKS = 3
MAX_DECISIONS = 8
DECISIONS_SCANNED = 500  # bounds the work on huge sessions
MAX_COMMANDS = 30
MAX_FILES = 20
SHORT_OUTCOME = 160
FOLLOW_UP_MIN = 32
TURN_CHARS = 300  # a turn of the condensed conversation (`deja share`)


class CtxNotFound(Exception):
    """Nothing to digest; the message says why (printed on stderr, exit 0)."""


@dataclass
class Section:
    title: str
    items: list[str]
    keep: int  # never drop below this many items
    bullet: bool = True
    front: bool = False  # drop the earliest items first (commands: the last ones say where work ended)
    dropped: int = 0

    def drop(self, n: int = 1) -> None:
        n = min(n, len(self.items))
        if n <= 0:
            return
        self.items = self.items[n:] if self.front else self.items[: len(self.items) - n]
        self.dropped += n

    def cap(self, most: int) -> "Section":
        self.drop(len(self.items) - most)
        return self

    def render(self) -> str:
        if not self.items:
            return ""
        lines = [("- " + i) if self.bullet else i for i in self.items]
        if self.dropped:
            note = f"- … {self.dropped} {'earlier' if self.front else 'more'} left out"
            lines = [note] + lines if self.front else lines + [note]
        return f"## {self.title}\n\n" + "\n".join(lines) + "\n"


def find(store: LiveStore, text: str, known_harnesses: list[str],
         harness: str | None = None) -> tuple[show.Resolved, list[str], bool]:
    """(the session, notices, whether it was only the nearest match), of
    ``harness``'s sessions when it is given. Raises CtxNotFound."""
    from .search import Query, search

    text = text.strip()
    notes: list[str] = []
    if not text:
        raise CtxNotFound("ctx needs a query or a session id")
    if show.session_count(store) == 0:
        raise CtxNotFound("the index holds no sessions yet; run `deja index`")
    token = show.clean_id(text)
    if len(text.split()) == 1 and len(token) >= 6:
        named, ident = show.split_harness(token, known_harnesses)
        try:
            res = show.resolve(store, ident, named or harness) if not (named and harness and named != harness) else None
        except show.ShowError:
            res = None
        if res is not None:
            if res.notice:
                notes.append(res.notice)
            return res, notes, False
    env = search(store, Query(text, limit=1, harness=harness), notes)
    hits = env.get("hits") or []
    if not hits:
        raise CtxNotFound(f"no session matches {text!r}")
    s = hits[0]["session"]
    res = show.resolve(store, s["id"], s["harness"], exact=True)
    nearest = (hits[0].get("tier") or env.get("tier")) == "relevance"
    if nearest:
        notes.append("no session holds every word; this is the nearest one")
    return res, notes, nearest


def build(store: LiveStore, res: show.Resolved, nearest: bool = False, budget: int = BUDGET,
          conversation: bool = False) -> str:
    """The markdown digest of one session; ``conversation``: the turns too, one
    line each (what `deja share` hands a colleague)."""
    from deja.stages.display import sanitize_display
    from deja.stages.shown import shown, shown_data

    # redacted before the sections cut them to fit (deja.stages.shown)
    rows = [(role, shown(text or ""), code) for role, text, code in _records(store, res)]
    s = shown_data(res.session)
    head = [f"# {one_line(s.get('title') or '(untitled)', 200)}", ""]
    meta = [f"{s['harness']} session `{s['id']}`"]
    if s.get("project"):
        meta.append(f"project {s['project']}")
    span = _utc(s.get("started"))
    if s.get("updated") and s.get("updated") != s.get("started"):
        span += " → " + _utc(s["updated"])
    if span:
        meta.append(span)
    head.append(" · ".join(meta))
    if nearest:
        head += ["", "_Nearest match: no session held every word of the query._"]
    head.append("")

    asks = _asks(rows)
    outcome = _outcome(rows)
    flat_outcome = " ".join(outcome.split())
    decisions = [d for d in _decisions(rows) if d.rstrip("…") not in flat_outcome]  # already shown in full
    commands = _commands(rows)
    files = shown_data(list(res.row.get("touched") or [])) or _files(rows)
    sections = {
        "problem": Section("Problem", [one_line(a, 600) for a in asks], keep=1),
        "conversation": Section("Conversation", _turns(rows) if conversation else [], keep=4, front=True),
        "decisions": Section("Decisions", decisions, keep=2).cap(MAX_DECISIONS),
        "outcome": Section("Outcome", [outcome] if outcome else [], keep=1, bullet=False),
        "commands": Section("Commands run", commands, keep=5, front=True).cap(MAX_COMMANDS),
        "files": Section("Files touched", [f"`{f}`" for f in files], keep=5).cap(MAX_FILES),
    }

    def render() -> str:
        parts = ["\n".join(head)] + [sec.render() for sec in sections.values() if sec.items]
        return sanitize_display("\n".join(p for p in parts if p).rstrip() + "\n")

    md = render()
    for name in ("conversation", "commands", "files", "decisions", "problem"):
        sec = sections[name]
        while len(md.encode()) > budget and len(sec.items) > sec.keep:
            sec.drop()
            md = render()
    if len(md.encode()) > budget and outcome:
        sections["outcome"].items = [clip(outcome, 600)]
        md = render()
    if len(md.encode()) > budget:
        cut = md.encode()[: budget - 40].decode("utf-8", "ignore")
        md = cut.rstrip() + "\n\n… (cut to fit)\n"
    return md


# --------------------------------------------------------------------------- pieces


def _records(store: LiveStore, res: show.Resolved) -> list[tuple]:
    if not store.has("records"):
        return []
    return store.con.execute(
        f"""
        SELECT role, text, exit_code
        FROM {store.records_of([res.key])}
        WHERE session_key = ?
          AND role IN ('user', 'assistant', 'summary', 'command', 'files')
          AND record_id NOT IN (SELECT record_id FROM deletes)
        ORDER BY ts NULLS LAST, seq, record_id
        """,
        [res.key],
    ).fetchall()


def _asks(rows) -> list[str]:
    out = []
    for role, text, _ in rows:
        if role != "user":
            continue
        t = (text or "").strip()
        if len(t) < 4 or _ACK_RE.fullmatch(t) or (t.startswith("/") and len(t.split()) == 1):
            continue
        if out and len(t) < FOLLOW_UP_MIN:  # "commit it please", "try again": not the problem
            continue
        out.append(t)
        if len(out) >= MAX_ASKS:
            break
    return out


def _turns(rows) -> list[str]:
    """The conversation condensed: each ask and answer on one line, acknowledgements left out."""
    out = []
    for role, text, _ in rows:
        t = (text or "").strip()
        if role not in ("user", "assistant") or not t or (role == "user" and _ACK_RE.fullmatch(t)):
            continue
        out.append(f"**{'person' if role == 'user' else 'agent'}:** {one_line(t, TURN_CHARS)}")
    return out


def _decisions(rows) -> list[str]:
    out: list[str] = []
    seen: set[str] = set()
    for role, text, _ in rows:
        if role not in ("assistant", "summary"):
            continue
        for line in decision_lines(text):  # the rule sessions.decision and the hooks use
            key = line.lower()
            if key in seen or any(key in k for k in seen):
                continue
            seen.add(key)
            out.append(clip(line, 360))
            if len(out) >= DECISIONS_SCANNED:
                return out
    return out


def _outcome(rows) -> str:
    answers = [(text or "").strip() for role, text, _ in rows if role == "assistant" and (text or "").strip()]
    if not answers:
        return ""
    last = answers[-1]
    if len(last) < SHORT_OUTCOME:
        # a short sign-off ("Committed as 4e1c9a2"): lead with the last substantial answer
        earlier = next((a for a in reversed(answers[:-1]) if len(a) >= SHORT_OUTCOME), "")
        if earlier:
            return clip(earlier, 1500) + "\n\n" + last
    return clip(last, 1800)


def _commands(rows) -> list[str]:
    out: list[str] = []
    prev = None
    repeat = 1
    for role, text, exit_code in rows:
        if role != "command" or not text:
            continue
        line, marked = command_of(text)
        code = marked if marked is not None else (exit_code if exit_code and exit_code > 0 else 0)
        if not code and inspects(line):
            continue  # every command is stored; a brief lists the ones that did something (or failed)
        item = _code(clip(line, 200)) + (f" → exit {code}" if code else "")
        if item == prev:
            repeat += 1
            out[-1] = f"{item} (×{repeat})"
            continue
        prev, repeat = item, 1
        out.append(item)
    return out


def _files(rows) -> list[str]:
    counts: dict[str, int] = {}
    for role, text, _ in rows:
        if role == "files" and text:
            for p in text.splitlines():
                p = p.strip()
                if p:
                    counts[p] = counts.get(p, 0) + 1
    return [p for p, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]


def _code(text: str) -> str:
    fence = "``" if "`" in text else "`"
    pad = " " if fence == "``" else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _utc(iso: str | None) -> str:
    if not iso:
        return ""
    return iso.replace("T", " ")[:16] + " UTC"


__all__ = ["BUDGET", "CtxNotFound", "build", "find"]
