"""Roo Code (harness-formats §14 "Roo Code"): the VS Code extension
(``rooveterinaryinc.roo-cline``, or the folder its ``roo-cline.customStoragePath``
setting names) and the Roo CLI (``~/.vscode-mock/global-storage``) keep the
Cline task folder, with ``history_item.json`` (``workspace``, ``parentTaskId``)
beside the conversation. Parsed by ``cline_family``; session id
``roo-task-<taskId>``. A subtask an orchestrator started carries its parent
and, like every agent-started session, is read only with
``DEJA_INCLUDE_SUBAGENTS=1``."""

from __future__ import annotations

from typing import Mapping

from . import cline_family as fam
from .base import ReadResult, SourceFile
from .locate import roo_files

HARNESS = "roo"
PREFIX = "roo-task-"


def roots(env: Mapping[str, str]) -> list[str]:
    from .task_folders import roo_roots

    return roo_roots(env)


def discover(env: Mapping[str, str]) -> list[SourceFile]:
    return [SourceFile(p, HARNESS) for p in roo_files(env)]


def read(path: str, start: int = 0) -> ReadResult:
    return fam.guarded(lambda p: fam.read_task(p, HARNESS, PREFIX), path)
