"""Crash recovery for ZCode: the generic recovery of ``turns.py`` over the
sessions its reader parses, for the CLI database only. Resume: ``cd '<dir>' &&
zcode --resume <id>``, the folder from the session row (the user's registry
note: the terminal client reopens a session from any folder; the ``cd`` keeps
the agent in its project). The JSONL transcripts and the older app's
snapshots have no resume command, so they are not offered."""

from __future__ import annotations

from deja.stages.recover.turns import Recovery, export, read_store

HARNESS = "zcode"


def _database(path: str) -> bool:
    return not path.endswith((".jsonl", ".json"))


def _resume(session_id: str, path: str) -> str | None:
    if not _database(path):
        return ""
    res = read_store(HARNESS, path)
    part = next((p for p in res.sessions if p.session_id == session_id), None) if res is not None else None
    folder = part.cwd if part is not None else ""
    if not folder:
        return None  # the plain command: ZCode opens the session from any folder
    if any(c in folder for c in "\n\r\0"):
        return ""  # a folder a shell would misread: no command rather than a wrong one
    return "cd '" + folder.replace("'", "'\\''") + f"' && zcode --resume {session_id}"


export(Recovery(HARNESS, "ZCode CLI", _database, resume=_resume), globals())
