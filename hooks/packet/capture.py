"""PreCompact capture: read the live transcript's bounded tail, keep a packet.

Seeds 000/001. The transcript is read by the same reader that indexes it
(one parser per harness), from a line boundary 4 MiB before the end, plus its
first 64 KiB for the session's opening requests. A capture succeeds only when
everything about the source is certain: a known layout, the exact session id
and workspace the hook named, and a file that did not change while it was
read. Anything else is no capture, silently: the hook is best effort.
"""

from __future__ import annotations

import glob
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Mapping

TAIL = 4 << 20
HEAD = 64 << 10


class NoCapture(Exception):
    """Why this PreCompact keeps nothing (for DEJA_DEBUG; the hook stays silent)."""


def harness_of(path: str) -> str:
    """The file's layout says which reader it needs: Codex rollouts open with a
    ``session_meta`` line in a ``{timestamp, type, payload}`` envelope, Claude
    Code lines carry ``sessionId``."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(HEAD)
    except OSError:
        raise NoCapture("transcript unreadable")
    for raw in head.split(b"\n")[:50]:
        if b'"session_meta"' in raw or (b'"response_item"' in raw and b'"payload"' in raw):
            return "codex"
        if b'"sessionId"' in raw:
            return "claude"
    raise NoCapture("unknown transcript format")


def find_transcript(payload: Mapping, env: Mapping[str, str]) -> str:
    """The path the hook named, else the session's file in a known store, by id."""
    path = payload.get("transcript_path")
    if isinstance(path, str) and path:
        if not os.path.isfile(path):
            raise NoCapture("transcript path missing")
        return path
    sid = str(payload.get("session_id") or "")
    if not sid or "/" in sid or "*" in sid:
        raise NoCapture("no transcript named")
    from deja.stages.sources.locate import claude_root, codex_home

    hits = glob.glob(os.path.join(glob.escape(claude_root(env)), "*", glob.escape(sid) + ".jsonl"))
    hits += glob.glob(os.path.join(glob.escape(codex_home(env)), "sessions", "**",
                                   f"rollout-*{glob.escape(sid)}.jsonl"), recursive=True)
    if len(hits) != 1:
        raise NoCapture("transcript not found by session id")
    return hits[0]


def _line_start(path: str, offset: int) -> int:
    """The first line boundary at or after ``offset``."""
    if offset <= 0:
        return 0
    with open(path, "rb") as fh:
        fh.seek(offset - 1)
        chunk = fh.read(1 << 20)
    nl = chunk.find(b"\n")
    return offset + nl if nl >= 0 else offset + len(chunk)


def _read_head(reader, path: str) -> list:
    """The first 64 KiB through the same reader: a copy of those bytes under the
    same file name, so the reader's name-based rules still hold."""
    with open(path, "rb") as fh:
        data = fh.read(HEAD)
    cut = data.rfind(b"\n")
    if cut < 0:
        return []
    with tempfile.TemporaryDirectory(prefix="deja-head-") as tmp:
        copy = os.path.join(tmp, os.path.basename(path))
        with open(copy, "wb") as fh:
            fh.write(data[: cut + 1])
        return reader.read(copy, 0).sessions


def read_session(path: str, harness: str, sid: str, cwd: str):
    """(tail messages, head messages, session part, size read) for exactly this
    session and workspace, or NoCapture."""
    from deja.stages.sources import reader
    from deja.stages.sources.jsonl import before_long_last_line

    mod = reader(harness)
    before = os.stat(path)
    # A last line longer than the tail (a pasted screenshot) leaves no complete
    # line in it: the packet is then built from the turns before that line.
    end = before_long_last_line(path, before.st_size, TAIL) if before.st_size > TAIL else before.st_size
    start = _line_start(path, end - TAIL) if end > TAIL + HEAD else 0
    result = mod.read(path, start, limit=end if end < before.st_size else None)
    if result.error:
        raise NoCapture(result.error)
    head_parts = _read_head(mod, path) if start else []
    after = os.stat(path)
    if (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns):
        raise NoCapture("transcript changed while it was read")
    parts = [p for p in result.sessions if p.session_id == sid]
    if not parts:
        raise NoCapture("session id not declared by the transcript")
    part = parts[-1]
    declared = {_norm(p.cwd) for p in parts if p.cwd} | declared_workspaces(path, start, end)
    if _norm(cwd) not in declared:
        raise NoCapture("workspace does not match the transcript")
    messages = [m for p in parts for m in p.messages]
    head = [m for p in head_parts if p.session_id == sid for m in p.messages]
    return messages, head, part, before.st_size


_CWD = re.compile(rb'"cwd"\s*:\s*"((?:[^"\\]|\\.){1,4096})"')


def declared_workspaces(path: str, start: int, end: int) -> set[str]:
    """Every working directory the lines read (the head, ``start`` to ``end``)
    declare. A session's cwd moves (a `cd`, a worktree) and Windows writes the
    drive letter in either case, so the hook's workspace must be one of them,
    not the one the reader kept."""
    out: set[str] = set()
    with open(path, "rb") as fh:
        chunks = [fh.read(HEAD)]
        if start:
            fh.seek(start)
            chunks.append(fh.read(end - start))
    for data in chunks:
        for raw in set(_CWD.findall(data)):
            try:
                out.add(_norm(json.loads(b'"' + raw + b'"')))
            except ValueError:
                continue
    return out


def _norm(p: str) -> str:
    """Path spelling, not identity: separators and a Windows drive letter's case."""
    if not p:
        return ""
    p = os.path.normpath(p)
    return p[0].lower() + p[1:] if len(p) > 1 and p[1] == ":" else p


def _redact(messages) -> None:
    from deja.stages.redact import redact

    for m in messages:
        if m.text:
            m.text = redact(m.text)[0]


def blocked(harness: str, sid: str, project: str, cwd: str, env: Mapping[str, str], con=None) -> bool:
    """Policy forbids keeping this session: a tombstone (the primary file, and the
    catalog's with ``con``), or an excluded project or folder; the index run's own filter."""
    from deja.stages import policy

    drop = policy.drop_filter(env, con)
    return drop.drops(f"{harness}:{sid}", project) or policy.project_excluded(cwd, drop.patterns)


def capture(payload: Mapping, root: Path, env: Mapping[str, str]) -> dict:
    """Build and store this session's packet; returns it. NoCapture/Busy otherwise."""
    from deja.hooks import common as c

    from . import extract, metric, repo, store

    sid = c.session_id(payload)
    if not sid:
        raise NoCapture("no session id")
    cwd = c.project_cwd(payload, env)
    path = find_transcript(payload, env)
    harness = harness_of(path)
    messages, head, part, size = read_session(path, harness, sid, cwd)
    project = part.project or c.project_name(cwd)
    if blocked(harness, sid, project, cwd, env):
        raise NoCapture("forgotten session or excluded project")
    _redact(messages)
    _redact(head)
    fp = repo.fingerprint(cwd)
    con = store.connect(root, create=True)
    try:
        if blocked(harness, sid, project, cwd, env, con):  # tombstoned in the catalog only
            raise NoCapture("forgotten session")
        prev = store.previous(con, sid, cwd)
        packet = extract.extract(messages, session_id=sid, harness=harness, head=head, previous=prev)
        packet.update({"workspace": cwd, "captured": store.now_ms(), "repo": fp, "transcript_bytes": size})
        if not store.save(con, root, packet, sid, cwd, harness):
            raise NoCapture("packet over its stored limit")
    finally:
        con.close()
    metric.log(root, "capture", session=sid, harness=harness, path=path, offset=size,
               head_hash=metric.head_hash(path, size))
    store.watch(root, sid)  # the tool hook settles the recovery metric at the first edit
    return packet
