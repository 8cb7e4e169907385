"""Crash recovery built on a reader's own parse: for the harnesses whose
working state comes straight from the turns their reader finds (Copilot CLI,
the Cursor CLI agent, opencode, pi, omp, pi's forks Senpi, gajae-code,
Kimchi Coding and prime-agent, OpenClaw, Kimi Code, Hermes, Crush, Goose,
Amp, the Cline CLI; Gemini CLI and Qwen Code through ``gemini_chat.py``).

A harness module states only what is its own (``Recovery``: the reader, which
of its store files hold sessions its resume command can open, how the
"looked in" line names them) and gets the interface of ``base.py`` from here.
The store is read by the reader that indexes it, never parsed a second way;
a session belongs to the folder its reader gives as ``cwd`` and is ranked by
its last timestamped message. Sessions an agent spawned are never offered.

The state: asks and answers, the reader's work records (commands with exit
codes, edits, files) as tool actions, and the last turn's end. A command or
edit with no tool output and no reply after it is work that was in progress
when the session stopped.
"""

from __future__ import annotations

import os
import re
from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Callable, Mapping

from deja.stages.display import one_line
from deja.stages.work_records import command_of
from deja.stages.normalize import strip_plumbing
from deja.stages.recover.base import (
    Action,
    Candidate,
    FolderScan,
    Problem,
    WorkingState,
    cwd_forms,
    incomplete_note,
    line_problems,
    read_window,
    same_dir,
)

_RECENT_ASKS = 8
_RECENT_ACTIONS = 16
_CACHED = 4  # stores kept parsed: phase 1 reads each, phase 2 reads the offered ones again


def _every(path: str) -> bool:
    return True


@dataclass(frozen=True)
class Recovery:
    harness: str
    name: str  # as "looked in" names the harness
    keep: Callable[[str], bool] = _every  # store files whose sessions the resume command opens
    # the resume command when it depends on the store file (a profile's), else None: the table's
    resume: Callable[[str, str], str | None] | None = None

    def reader(self):
        from deja.stages.sources import reader

        return reader(self.harness)

    def recover_candidates(self, cwd: str, env: Mapping[str, str]) -> FolderScan:
        out = FolderScan(looked=[(self.name, list(self.reader().roots(env)))])
        forms = cwd_forms(cwd)
        for src in self.reader().discover(env):
            if not self.keep(src.path):
                continue
            res = read_store(self.harness, src.path)
            for part in res.sessions if res is not None else ():
                if part.spawned or not same_dir(part.cwd, forms):
                    continue
                last = max((m.ts for m in part.messages if m.ts is not None), default=None)
                if last is None:
                    last = _mtime_ms(src.path)
                state = state_of_part(self.harness, src.path, part)
                out.candidates.append(Candidate(self.harness, part.session_id, src.path, last, bool(state.incomplete)))
        return out

    def recover_state(self, path: str, session_id: str) -> WorkingState:
        res = read_store(self.harness, path)
        part = next((p for p in res.sessions if p.session_id == session_id), None) if res is not None else None
        if part is None:
            return WorkingState(self.harness, session_id, path)
        return state_of_part(self.harness, path, part)

    def recover_check(self, path: str) -> list[Problem]:
        return line_problems(path) if path.endswith(".jsonl") else []


def export(rec: Recovery, namespace: dict) -> None:
    """Give a harness module the interface functions of ``rec``."""
    namespace["recover_candidates"] = rec.recover_candidates
    namespace["recover_state"] = rec.recover_state
    namespace["recover_check"] = rec.recover_check
    if rec.resume is not None:
        namespace["resume_command"] = rec.resume


def profile_of(path: str) -> str | None:
    """The profile a store file lies in (``…/profiles/<name>/…``), "" for the
    default one, None when its name is not safe to paste into a shell."""
    parts = path.replace("\\", "/").split("/")
    i = max((n for n, p in enumerate(parts) if p == "profiles"), default=-1)
    name = parts[i + 1] if 0 <= i < len(parts) - 2 else ""
    return name if not name or re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9._-]*", name) else None


def profile_resume(template: str):
    """The resume of a harness whose profiles are homes of their own: the
    default store's sessions take the plain command (None here), a profile's
    ``template`` (``{profile}``, ``{id}``), and a profile name a shell would
    misread no command rather than a wrong one ("")."""
    def resume(session_id: str, path: str) -> str | None:
        profile = profile_of(path)
        if profile is None:
            return ""
        return template.format(profile=profile, id=session_id) if profile else None

    return resume


_cache: OrderedDict = OrderedDict()


def read_store(harness: str, path: str):
    """The reader's parse of one store file, kept while the file is unchanged
    (a database store is copied and queried once per listing, not once per session)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    key = (harness, path)
    stamp = (st.st_size, st.st_mtime_ns)
    hit = _cache.get(key)
    if hit is not None and hit[0] == stamp:
        _cache.move_to_end(key)
        return hit[1]
    from deja.stages.sources import reader

    try:
        res = reader(harness).read(path)
    except Exception:  # readers count bad content; anything past that costs this store only
        return None
    _cache[key] = (stamp, res)
    while len(_cache) > _CACHED:
        _cache.popitem(last=False)
    return res


def _mtime_ms(path: str) -> int | None:
    try:
        return int(os.stat(path).st_mtime * 1000)
    except OSError:
        return None


def state_of_part(harness: str, path: str, part, same_line_turns: bool = False) -> WorkingState:
    """The working state from the messages a reader found for one session.

    ``same_line_turns``: the harness writes a turn's calls and their results
    on the line of its answer (Gemini), so they neither open nor close a turn."""
    s = WorkingState(harness, part.session_id, path, cwd=part.cwd, branch=part.branch)
    try:
        s.size = os.path.getsize(path)
    except OSError:
        pass
    asks: deque = deque(maxlen=_RECENT_ASKS)
    actions: deque = deque(maxlen=_RECENT_ACTIONS)
    files: dict[str, None] = {}
    running: list[Action] = []  # actions since the last output or speech: no result recorded yet
    first_ask = ""
    n = 0
    event = ""
    said_at = -1  # the line of the last answer (same_line_turns)
    for m in part.messages:
        if m.ts is not None:
            s.updated = max(s.updated or 0, m.ts)
        same_line = same_line_turns and m.byte_offset == said_at
        if m.role == "user" and not m.tool:
            ask = strip_plumbing(m.text)
            if ask:
                first_ask = first_ask or ask
                asks.append(ask)
                n += 1
                event = "ask"
                running.clear()  # calls of an earlier turn that never returned: that turn is over
        elif m.role == "assistant":
            if m.text.strip():
                s.answer = m.text
                n += 1
                event, said_at = "answer", m.byte_offset
                running.clear()
        elif m.role in ("command", "edit"):
            if m.role == "command":
                act = Action(m.tool or "shell", command_of(m.text)[0],
                             f"exit {m.exit_code}" if m.exit_code else "")
            else:
                act = Action(m.tool or "edit", m.text.split("\n", 1)[0])
            actions.append(act)
            if not same_line:
                event = "tool"
                running.append(act)
        elif m.role == "files":
            for p in m.text.split("\n"):
                if p:
                    files.pop(p, None)
                    files[p] = None
        elif m.role == "tool-output":
            if m.is_error:
                act = next((a for a in reversed(actions) if a.tool == m.tool), None)
                if act is not None and not act.status:
                    act.status = "failed"
            if not same_line:
                event = "result"
                running.clear()
    if part.title:
        s.title = part.title
    elif first_ask:
        s.title, s.title_from_ask = one_line(first_ask, 200), True
    s.asks = list(asks)
    s.last_prompt = s.asks[-1] if s.asks else ""
    # Gemini writes a call with its result, so a call in its file never ran on unrecorded
    pending = running if event == "tool" and not same_line_turns else []
    for act in pending:
        act.status = act.status or "no result"
    s.actions = list(actions)
    s.files = list(files)
    s.messages = n
    torn = path.endswith(".jsonl") and read_window(path, 16 << 10, head=False).torn
    s.incomplete = incomplete_note(event, pending, s.actions, torn, "", noun="transcript" if not same_line_turns
                                   else "chat", output="result", unanswered="the last tool result got no reply")
    return s
