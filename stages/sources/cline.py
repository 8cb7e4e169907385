"""Cline (harness-formats §11): two store generations under one harness id.

* The VS Code extension (``saoudrizwan.claude-dev``) and the CLI's shared data
  folder keep ``tasks/<taskId>/api_conversation_history.json`` with the task
  index in ``state/taskHistory.json``; read by ``cline_family``. Session id
  ``cline-task-<taskId>``.
* The newer CLI/SDK keeps ``sessions/<id>/<id>.messages.json``
  (``{version, updated_at, agent, sessionId, messages: [{id, role, content,
  ts}]}``) beside its manifest ``<id>.json`` (``cwd`` or ``workspace_root``,
  ``prompt``, ``metadata.title``, ``created_at``/``updated_at`` or, as the
  shipped CLI writes, ``started_at``/``ended_at``). Session id = folder name.
  Files written for a subagent or teammate (``agent`` other than empty or
  ``lead``) share the format and are left out.
"""

from __future__ import annotations

import os
from typing import Mapping

from . import cline_family as fam
from .base import ReadResult, SessionPart, SourceFile
from .locate import cline_files
from .projects import project_from_cwd
from .values import Faults, show

HARNESS = "cline"
PREFIX = "cline-task-"


def roots(env: Mapping[str, str]) -> list[str]:
    from .task_folders import cline_sessions, cline_task_roots

    return cline_task_roots(env) + [cline_sessions(env)]


def discover(env: Mapping[str, str]) -> list[SourceFile]:
    return [SourceFile(p, HARNESS) for p in cline_files(env)]


def read(path: str, start: int = 0) -> ReadResult:
    if path.endswith(".messages.json"):
        return fam.guarded(_read_session, path)
    return fam.guarded(lambda p: fam.read_task(p, HARNESS, PREFIX), path)


def _read_session(path: str) -> ReadResult:
    if not fam.is_regular_file(path):
        return ReadResult(error=f"not a readable regular file: {path}")
    try:
        doc = fam.load(path)
    except ValueError as exc:
        return ReadResult(malformed=1, faults=[(0, str(exc))])
    faults = Faults()
    if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
        faults.note(0, f"document is {show(doc)}, not a session with a messages list")
        return ReadResult(malformed=faults.count, faults=faults.first)
    if doc.get("agent") not in (None, "", "lead"):
        return ReadResult()  # a subagent's or teammate's file: not a person's session
    folder = os.path.dirname(path)
    sid = os.path.basename(folder)
    manifest = fam.load_quiet(os.path.join(folder, sid + ".json"))
    manifest = manifest if isinstance(manifest, dict) else {}
    part = SessionPart(HARNESS, sid)
    part.cwd = next((v for k in ("cwd", "workspace_root") if isinstance(v := manifest.get(k), str) and v.strip()), "")
    meta = manifest.get("metadata")
    title = meta.get("title") if isinstance(meta, dict) else None
    part.title = fam.title_of(title) or fam.title_of(manifest.get("prompt"))
    part.title_rank = 1 if part.title else 0
    start = fam.base_time(manifest.get("created_at"), manifest.get("started_at"))
    conv = fam.Conversation(part, start, faults)
    conv.read(doc["messages"])
    if part.cwd:
        part.project = project_from_cwd(part.cwd)
    sessions = [part] if part.messages or part.title else []
    return ReadResult(sessions=sessions, malformed=faults.count, faults=faults.first, clipped=conv.clipped)
