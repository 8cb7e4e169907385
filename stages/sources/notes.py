"""deja's own notes (``notes.jsonl``, harness-formats "deja notes").

The file lives outside the cache and is primary data: ``deja remember`` and
``deja promote`` append to it, nothing ever rewrites it, and the index is
rebuilt from it like from any agent's store. One JSON object per line::

    {"ts": "2026-03-02T10:00:00Z", "project": "src/shop", "text": "…", "tags": ["db"]}
    {"ts": …, "project": …, "text": …, "kind": "promoted", "session": "claude:<id>",
     "state": "accepted", "title": "…", "src_ts": "…", "note": "why"}

Plain notes group into one user-message session per project and local
calendar day, id ``note-<project-slug>-<YYYY-MM-DD>``; promoted notes group
per source session, id ``deja-note-<harness>-<id>``, titled ``<title> [<state>]``
(the newest correction's title wins).
"""

from __future__ import annotations

import os
import re
import zlib
from datetime import datetime
from pathlib import Path
from typing import Mapping

from deja.stages.sources.base import Message, ReadResult, SessionPart, SourceFile
from deja.stages.sources.jsonl import Lines, clip, parse_ts, read_guarded
from deja.stages.sources.locate import notes_file, notes_files
from deja.stages.sources.projects import short_name

HARNESS = "deja"
DEFAULT_PROJECT = "notes"


def notes_path(env: Mapping[str, str] | None = None) -> Path:
    return Path(notes_file(os.environ if env is None else env))


def roots(env: Mapping[str, str]) -> list[str]:
    """Where deja doctor says notes are read from."""
    return [str(notes_path(env))]


def discover(env: Mapping[str, str]) -> list[SourceFile]:
    return [SourceFile(p, HARNESS) for p in notes_files(env)]


def slug(text: str) -> str:
    s = re.sub(r"[^a-z0-9]+", "-", (text or "").lower()).strip("-")
    return s or DEFAULT_PROJECT


def local_day(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d")


def note_session_id(project: str, ms: int) -> str:
    if re.match(r"^(?:[/~]|[A-Za-z]:[/\\])", project or ""):
        # a project root: its short name, and a mark of the whole path (two repos may share the name)
        return f"note-{slug(short_name(project))}-{zlib.crc32(project.encode()) % 4096:03x}-{local_day(ms)}"
    return f"note-{slug(project)}-{local_day(ms)}"


def promoted_session_id(source: str) -> str:
    harness, _, sid = (source or "").partition(":")
    return f"deja-note-{harness}-{sid}"


def read(path: str, start: int = 0) -> ReadResult:
    return read_guarded(path, start, _read, "notes")


def _read(path: str, start: int) -> ReadResult:
    lines = Lines(path, start)
    parts: dict[str, SessionPart] = {}
    clipped = 0
    skipped = 0
    for offset, obj in lines:
        text = obj.get("text")
        ts = parse_ts(obj.get("ts"))
        if not isinstance(text, str) or not text.strip() or ts is None:
            skipped += 1
            continue
        project = str(obj.get("project") or "").strip() or DEFAULT_PROJECT
        tags = [str(t) for t in obj.get("tags") or [] if str(t).strip()]
        if tags:
            text = text.rstrip() + "\n" + " ".join("#" + t for t in tags)
        text, cut = clip(text)
        clipped += cut
        if obj.get("kind") == "promoted" and obj.get("session"):
            sid = promoted_session_id(str(obj["session"]))
            src_ts = parse_ts(obj.get("src_ts"))
            if src_ts is not None and src_ts < ts:
                ts = src_ts
            part = parts.get(sid)
            if part is None:
                part = parts[sid] = SessionPart(HARNESS, sid, project=project, parent="")
            state = obj.get("state") or "accepted"
            title = str(obj.get("title") or "").strip() or str(obj["session"])
            part.title, part.title_rank = f"{title} [{state}]", 2
        else:
            sid = note_session_id(project, ts)
            part = parts.get(sid)
            if part is None:
                part = parts[sid] = SessionPart(HARNESS, sid, project=project)
        part.messages.append(Message("user", text, ts=ts, byte_offset=offset))
    # lines that decode but are not notes count as malformed: visible in doctor
    # (a note whose time is out of range is skipped: counted there, named by lines.faults)
    return ReadResult(sessions=list(parts.values()), safe_offset=lines.end,
                      malformed=lines.malformed + skipped, clipped=clipped, faults=lines.faults.first)


# --------------------------------------------------------------------------- what must stay out
# Tombstones and project exclusions live in deja.stages.policy (light: the hooks
# check them without loading this reader); re-exported for the index run.
from deja.stages.policy import (  # noqa: E402,F401
    DropFilter, config_dir, drop_filter, exclude_path, exclusion_patterns, file_tombstones, project_excluded,
    tombstones_path,
)
