"""Sessions synced in from other machines (``deja sync import``).

``deja sync import`` appends the batch lines it has not seen to one file per
machine of origin, ``<data>/deja/imports/<machine>/<month>.jsonl`` (beside the notes,
outside the cache): primary data, never rewritten, read by this reader like
any agent's store, so a rebuild replays it. One record per line, the batch
format of cli-contract §2.3 with the machine that wrote it::

    {"harness": "codex", "session_id": "019b…", "project": "api", "role": "assistant",
     "text": "…", "time": "2026-03-02T09:00:12.345Z", "origin": "box", "tool": null, "exit_code": null}

A session keeps its harness; its id is namespaced ``imported-<hash>`` of
(machine, harness, id) so it never meets a local session of the same id, its
project is ``imported:<project>``, and the sessions dataset marks it
``origin = imported`` with ``from_machine`` and ``orig_id``.
"""

from __future__ import annotations

import hashlib
from typing import Mapping

from deja.stages.roles import ROLES
from deja.stages.sources import LONG_NAMES
from deja.stages.sources.base import Message, ReadResult, SessionPart, SourceFile
from deja.stages.sources.jsonl import Lines, clip, parse_ts, read_guarded
from deja.stages.sources.locate import imports_dir, imports_files

HARNESS = "imported"
PROJECT_PREFIX = "imported:"


def roots(env: Mapping[str, str]) -> list[str]:
    return [imports_dir(env)]


def discover(env: Mapping[str, str]) -> list[SourceFile]:
    return [SourceFile(p, HARNESS) for p in imports_files(env)]


def harness_name(name: str) -> str:
    """A batch line's agent as deja names it: written by hand or by another
    tool it may say ``Claude`` or ``claude-code``, which ``--harness claude``
    must still find. Unknown names are kept (lower-cased): a newer deja on the
    other machine may read agents this one does not."""
    name = "-".join(name.strip().lower().split())
    return LONG_NAMES.get(name, name)


def imported_id(machine: str, harness: str, session_id: str) -> str:
    """The id a synced-in session has here: stable across imports and rebuilds."""
    digest = hashlib.blake2b(f"{machine}\0{harness}\0{session_id}".encode("utf-8", "replace"), digest_size=6)
    return "imported-" + digest.hexdigest()


def read(path: str, start: int = 0) -> ReadResult:
    return read_guarded(path, start, _read, "imports")


def _read(path: str, start: int) -> ReadResult:
    lines = Lines(path, start)
    parts: dict[str, SessionPart] = {}
    clipped = skipped = 0
    for offset, obj in lines:
        harness, sid, machine = obj.get("harness"), obj.get("session_id"), obj.get("origin")
        role, text = obj.get("role"), obj.get("text")
        if not (isinstance(harness, str) and harness and isinstance(sid, str) and sid
                and isinstance(machine, str) and machine and role in ROLES and isinstance(text, str) and text):
            skipped += 1
            continue
        harness = harness_name(harness)  # (lines an older deja kept as written)
        key = imported_id(machine, harness, sid)
        part = parts.get(key)
        if part is None:
            project = obj.get("project") if isinstance(obj.get("project"), str) else ""
            project = project.removeprefix(PROJECT_PREFIX)
            part = parts[key] = SessionPart(harness, key, project=PROJECT_PREFIX + (project or "unknown"),
                                            from_machine=machine, orig_id=sid)
        if isinstance(obj.get("title"), str) and obj["title"] and not part.title:
            part.title, part.title_rank = obj["title"], 1
        text, cut = clip(text)
        clipped += cut
        exit_code = obj.get("exit_code")
        part.messages.append(Message(
            role, text, ts=parse_ts(obj.get("time")),
            tool=obj["tool"] if isinstance(obj.get("tool"), str) else None,
            exit_code=exit_code if type(exit_code) is int else None,
            byte_offset=offset))
    return ReadResult(sessions=list(parts.values()), safe_offset=lines.end,
                      malformed=lines.malformed + skipped, clipped=clipped, faults=lines.faults.first)
