"""Crash recovery for OpenClaw: the generic recovery of ``turns.py`` over the
sessions its reader parses. OpenClaw reopens a session by its chat key, not
its id: ``openclaw tui --session <key>`` (openclaw/openclaw
``src/cli/tui-cli.ts``: ``--session <key>``; the Gateway owns the sessions and
must be running). The key is the one ``sessions.json`` beside the transcript
maps to the session (``{"<key>": {"sessionId": …, "updatedAt": …}}``), quoted
for the shell; a
session no key maps to any more (reset, or the index pruned) gets no command,
since any other command would open a different conversation."""

from __future__ import annotations

import json
import os
import shlex

from deja.stages.recover.turns import Recovery, export

HARNESS = "openclaw"
_INDEX = "sessions.json"


def resume_command(session_id: str, path: str) -> str:
    key = session_key(session_id, path)
    return f"openclaw tui --session {shlex.quote(key)}" if key else ""


def session_key(session_id: str, path: str) -> str:
    """The chat key ``sessions.json`` beside ``path`` gives ``session_id`` (the
    latest updated when several do), "" when none does or its key holds a
    character a terminal line cannot carry."""
    try:
        with open(os.path.join(os.path.dirname(path), _INDEX), "rb") as fh:
            index = json.load(fh)
    except (OSError, ValueError):
        return ""
    if not isinstance(index, dict):
        return ""
    name = os.path.basename(path)
    best, best_at = "", -1.0
    for key, entry in index.items():
        if not isinstance(entry, dict) or not _plain(key):
            continue
        file = entry.get("sessionFile")
        if entry.get("sessionId") != session_id and not (isinstance(file, str) and os.path.basename(file) == name):
            continue
        at = entry.get("updatedAt")
        at = float(at) if isinstance(at, (int, float)) and not isinstance(at, bool) else 0.0
        if at > best_at:
            best, best_at = key, at
    return best


def _plain(key) -> bool:
    # quoted, any printable key pastes whole; a control character would reach the terminal
    return isinstance(key, str) and bool(key) and key.isprintable()


export(Recovery(HARNESS, "OpenClaw", resume=resume_command), globals())
