"""Crash recovery shared by Gemini CLI and its fork Qwen Code
(``recover/gemini.py``, ``recover/qwen.py``): the interface of ``base.py``
over the messages their readers find (the state as ``turns.py`` builds it).

A chat belongs to the folder its project directory stands for
(``tmp/<sha256 of the folder>``, or the slug ``projects.json`` and
``.project_root`` give it), or, for Qwen, the ``cwd`` its lines record. The
state is rebuilt from the reader's own messages: a Gemini JSONL chat is a
replay (messages written again, ``$set`` snapshots, rewinds), so chats are
read whole, never by head and tail. A chat's last activity is the latest
time it records (``lastUpdated``, its messages' timestamps), as every
harness's is: never the file's mtime, which a backup or a copy touches.
Saved checkpoints are copies a person made, not sessions that can be lost:
never candidates.
"""


from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from typing import Callable, Mapping

from deja.stages.recover.base import (
    PROBE_SIZES,
    Candidate,
    FolderScan,
    WorkingState,
    cwd_forms,
    line_problems,
    read_window,
    same_dir,
)
from deja.stages.recover.turns import state_of_part
from deja.stages.sources import gemini_chat as chat
from deja.stages.sources.jsonl import parse_ts, read_head

@dataclass(frozen=True)
class ChatRecovery:
    """The recovery interface over one fork's store: what differs between
    Gemini CLI and Qwen Code is only the names below."""

    harness: str
    name: str  # as "looked in" names the harness
    home: Callable[[Mapping[str, str]], str]  # the store's home folder
    subdirs: tuple[str, ...]  # where under it chats are filed, for "looked in"
    files: Callable[[Mapping[str, str]], list[str]]  # every chat file of the store

    def recover_candidates(self, cwd: str, env: Mapping[str, str]) -> FolderScan:
        home = self.home(env)
        out = FolderScan(looked=[(self.name, [os.path.join(home, d) for d in self.subdirs])])
        out.candidates = candidates(self.harness, cwd, self.files(env), self._read)
        return out

    def recover_state(self, path: str, session_id: str) -> WorkingState:
        return state_of(self.harness, path, session_id, self._read)

    def _read(self, path: str):
        return importlib.import_module(f"deja.stages.sources.{self.harness}").read(path)


def candidates(harness: str, cwd: str, paths: list[str], read: Callable) -> list[Candidate]:
    """The chats among ``paths`` whose project directory stands for ``cwd``."""
    forms = cwd_forms(cwd)
    hashes = {chat.project_hash(f) for f in forms} | {chat.project_hash(cwd)}
    mine: dict[str, bool] = {}
    found = []
    for path in paths:
        if os.path.basename(path).startswith("checkpoint"):
            continue
        pdir = chat.project_dir_of(path)
        if pdir not in mine:
            name = os.path.basename(pdir)
            mine[pdir] = name in hashes or same_dir(chat.recorded_cwd(pdir), forms)
        if not mine[pdir] and not _records(path, forms):
            continue
        sid = _session_id(path, read)
        if not sid:
            continue
        try:
            last, torn = _last_active(path, read)
        except OSError:
            continue
        found.append(Candidate(harness, sid, path, last, torn))
    return found


def _last_active(path: str, read: Callable) -> tuple[int | None, bool]:
    """(the latest time the chat records, whether it ends in a half-written line).
    A JSONL chat's latest line says it, as its tail does for every harness; a
    JSON document is read whole."""
    if not path.endswith(".jsonl"):
        res = read(path)
        return max((m.ts for p in res.sessions for m in p.messages if m.ts is not None), default=None), False
    for size in PROBE_SIZES:
        win = read_window(path, size, head=False)
        last = max((t for o in win.lines for t in _times(o) if t is not None), default=None)
        if last is not None or not win.partial:
            break
    return last, win.torn


def _times(o: dict):
    """A line's times: a message's or Qwen event's ``timestamp``, a header's or
    ``$set``'s ``lastUpdated``."""
    upd = o.get("$set")
    for v in (o.get("timestamp"), o.get("lastUpdated"), upd.get("lastUpdated") if isinstance(upd, dict) else None):
        yield parse_ts(v)


def _records(path: str, forms) -> bool:
    """A chat whose own lines record the folder (Qwen's ``cwd`` on every line)."""
    if not path.endswith(".jsonl"):
        return False
    try:
        first = next(iter(read_head(path, 64 << 10)), None)
    except OSError:
        return False
    return isinstance(first, dict) and isinstance(first.get("cwd"), str) and same_dir(first["cwd"], forms)


def _session_id(path: str, read: Callable) -> str:
    if path.endswith(".jsonl"):
        try:
            first = next(iter(read_head(path, 64 << 10)), None)
        except OSError:
            return ""
        sid = first.get("sessionId") if isinstance(first, dict) else None
        if isinstance(sid, str) and sid and sid not in ("a2a-server",):
            return sid
    res = read(path)
    return res.sessions[0].session_id if res.sessions else ""


def state_of(harness: str, path: str, session_id: str, read: Callable) -> WorkingState:
    """The working state from the messages the reader finds in one chat."""
    res = read(path)
    part = next((p for p in res.sessions if p.session_id == session_id), res.sessions[0] if res.sessions else None)
    if part is None:
        return WorkingState(harness, session_id, path, size=os.path.getsize(path))
    state = state_of_part(harness, path, part, same_line_turns=True)
    state.session_id = session_id
    return state


def recover_check(path: str):
    return line_problems(path) if path.endswith(".jsonl") else []
