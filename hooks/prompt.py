"""UserPromptSubmit — `deja hook-prompt`: recall for what the prompt asks.

hooks-contract §5.4; seed "hook-prompt". What it searches on is the *ask* —
the last line ending in ``?``, else the last line carrying a word — read before
the rest of the prompt, so a pasted listing above the question does not spend
the six-term budget. The same question from the same reader is answered once
an hour (a spawned agent is exempt: a fleet is many readers behind one id); a
block is never shown twice to one agent session; a session shown in the last
10 injections is skipped; a previous session that asked the same question
earns the "you have been here" line.
"""

from __future__ import annotations

import os
import re
import time

from . import common as c

BUDGET = 1536
TERM_BUDGET = 6
COOLDOWN = 3600.0  # the same question from the same reader: once an hour
DEJAVU_EVERY = 20 * 60.0
MAX_SESSIONS = 2
_BLOCKS = [
    re.compile(r"<\s*(hook_context|deja-recall)\s*>.*?(?:<\s*/\s*\1\s*>|\Z)", re.S | re.I),
    re.compile(r"&lt;\s*(hook_context|deja-recall)\s*&gt;.*?(?:&lt;\s*/\s*\1\s*&gt;|\Z)", re.S | re.I),
]
_IDENT = re.compile(r"[A-Za-z]\w*(?:[_.][A-Za-z0-9]\w*)+|[a-z]+[A-Z]\w*|\w+\(\)|[A-Za-z]+\d+\w*")
# What _IDENT can match lies within one of these; it backtracks quadratically
# over a long run of letters (a held-down key: 12,800 of them took 5 s), so
# it is only tried on runs an identifier could be, near the ask's start.
_IDENT_RUN = re.compile(r"[\w.()]+")
IDENT_MAX, IDENT_SPAN = 128, 2048


def names_an_identifier(ask: str) -> bool:
    """The ask holds a name from code (snake_case, dotted.path, camelCase,
    call(), word42): one such word is enough to search on."""
    return any(len(run) <= IDENT_MAX and _IDENT.search(run) for run in _IDENT_RUN.findall(ask[:IDENT_SPAN]))


def prompt_text(payload: dict) -> str:
    p = payload.get("prompt")
    if isinstance(p, list):  # content parts (Kimi): [{type: text, text}]
        p = "\n".join(x.get("text", "") for x in p if isinstance(x, dict) and isinstance(x.get("text"), str))
    return p if isinstance(p, str) else ""


def strip_injected(text: str) -> str:
    """Earlier injected context out of the prompt; an unclosed block truncates."""
    for pat in _BLOCKS:
        text = pat.sub(" ", text)
    return text


def the_ask(text: str) -> tuple[str, str]:
    """(the ask, the rest of the prompt)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].endswith("?"):
            return lines[i], "\n".join(lines[:i] + lines[i + 1:])
    for i in range(len(lines) - 1, -1, -1):
        if re.search(r"[^\W\d_]{2,}", lines[i]):
            return lines[i], "\n".join(lines[:i] + lines[i + 1:])
    return "", ""


def search_terms(ask: str, rest: str) -> list[str]:
    from deja.queries.search import FILLER
    from deja.stages.tokenize import query_terms

    terms: list[str] = []
    for part in (ask, rest):
        for t in query_terms(part):
            if t in FILLER or len(t) < 2 or t.isdigit() or t in terms:
                continue
            terms.append(t)
            if len(terms) >= TERM_BUDGET:
                return terms
    return terms


def norm_question(s: str) -> str:
    return " ".join(re.findall(r"\w+", s.lower()))


def run(payload: dict, out: c.Output, once: bool = False) -> None:
    env = os.environ
    sid = c.session_id(payload)
    text = strip_injected(prompt_text(payload))
    ask, rest = the_ask(text)
    if not ask:
        raise c.Silent("no ask")
    terms = search_terms(ask, rest)
    if len(terms) < 2 and not names_an_identifier(ask):
        raise c.Silent("too few terms")
    if not terms:
        raise c.Silent("no terms")
    root = c.index_root(env)
    ledger = c.Ledger(root, sid)
    ask_token = "ask:" + c.fingerprint(norm_question(ask))
    exempt = c.spawned(payload, env)
    if not exempt:
        last = ledger.last_time(ask_token)
        if last is not None and time.time() - last < COOLDOWN:
            raise c.Silent("answered within the hour")
    cwd = c.project_cwd(payload, env)
    project = c.project_name(cwd)
    live = c.open_warm(env)
    try:
        body, keys, dejavu = recall(live, terms, ask, project, sid, ledger, exempt)
    finally:
        live.close()
    if not body:
        raise c.Silent("nothing worth showing")
    fp = "fp:" + c.fingerprint(body)
    if not exempt and ledger.has(fp):
        raise c.Silent("block already shown")
    message = None
    if dejavu and not out.plain:
        last = ledger.last_time("dv:")
        if last is None or time.time() - last >= DEJAVU_EVERY:
            message = dejavu
    out.emit("UserPromptSubmit", body, message, keys=keys)
    ledger.add(fp)
    if message:
        ledger.add("dv:", stamp=True)
    ledger.add(*keys, stamp=True)
    if not exempt:
        ledger.add(ask_token, stamp=True)


def recall(live, terms: list[str], ask: str, project: str, sid: str, ledger, exempt: bool):
    """(body, recalled session keys, déjà-vu system message or None)."""
    from deja.queries.search import recall as ranked

    served: dict = {}
    env = ranked(live, terms, project=project or None, limit=8, rows=served)
    tier = env.get("tier")
    hits = env.get("hits") or []
    recent = set() if exempt else ledger.recent_keys(10)
    chosen = []
    for h in hits:
        s = h["session"]
        key = f"{s['harness']}:{s['id']}"
        if s["id"] == sid or key in recent or s.get("kind") in ("sidechain", "subagent"):
            continue
        if project and served.get(key, {}).get("project_root") not in (None, "", project):
            continue
        if tier == "relevance" and len(terms) < 2:
            continue
        chosen.append((key, h))
        if len(chosen) >= MAX_SESSIONS:
            break
    if not chosen:
        return "", [], None
    rows = {k: {"decision": served[k].get("decision") or "", "gave_up": bool(served[k].get("gave_up"))}
            for k, _ in chosen if k in served}
    chosen.sort(key=lambda kh: not rows.get(kh[0], {}).get("decision"))  # lead with a conclusion
    weak = tier == "relevance" or len(terms) < 2
    budget = BUDGET // 2 if len(terms) < 2 else BUDGET
    dv = _dejavu(live, [k for k, _ in chosen], ask, sid)
    lines = []
    if dv:
        key, when = dv
        lines.append(f"You have been here: a previous session ({c.day(when)}, deja:{key.split(':', 1)[1][:8]}) "
                     "asked the same question.")
    cite = None
    for key, h in chosen:
        s = h["session"]
        row = rows.get(key, {})
        title = c.recall_line(s.get("title") or (h.get("snippets") or [""])[0], 120)
        date = (s.get("updated") or s.get("started") or "")[:10]
        short = s["id"][:8]
        lines.append(f"- {date} {s['harness']} \"{title}\" (deja:{short})")
        if weak:
            continue
        if row.get("decision"):
            lines.append(f"  decided: {c.recall_line(row['decision'], 300)}")
        for snip in (h.get("snippets") or [])[:2]:
            if snip != row.get("decision"):
                lines.append(f"  > {c.recall_line(snip, 240)}")
        if cite is None:
            cite = f"deja-vu recalled: {title} ({s['harness']}, {date}, deja:{short})"
    head = f"Earlier sessions on this, pointers only; for more, {c.MORE}:" if weak else \
        "Earlier sessions on what you are asking:"
    lines.insert(1 if dv else 0, head)
    if cite:
        lines.append(f"If you use this, cite it as: {cite}")
        # the citation must survive the budget: it is cut from the digest, not dropped
        body_lines = lines[:-1]
        text = c.fit_lines(body_lines, budget - len(lines[-1].encode("utf-8")) - 1)
        body = text + "\n" + lines[-1]
    else:
        body = c.fit_lines(lines, budget)
    message = None
    if dv:
        topic = c.recall_line(ask, 80)
        message = f"deja-vu: you have been here — \"{topic}\" ({c.ago(dv[1])})"
    return body, [k for k, _ in chosen], message


def _dejavu(live, keys: list[str], ask: str, sid: str):
    """(session key, when in epoch ms) of a recalled session whose user asked the
    same question: one of its user turns holds every word of the ask. Only the
    user turns of the recalled sessions are read (project_memory.user_turns)."""
    from deja.queries.project_memory import user_turns
    from deja.stages.tokenize import tokenize

    q = norm_question(ask)
    words = set(tokenize(ask))
    if len(q.split()) < 3 or len(words) < 3 or not keys:
        return None
    best = None
    for key, rid, text, updated in user_turns(live, keys, sid):
        if best is not None and rid <= best[1]:
            continue
        folded = (text or "").casefold()  # every token of a text is a piece of its folded form:
        if all(w in folded for w in words) and words <= set(tokenize(text)):  # tokenise only candidates
            best = (key, rid, updated)
    return (best[0], best[2]) if best else None
