"""Kilo Code (harness-formats §15, confirmed in Kilo-Org/kilocode): a fork of
Roo Code whose VS Code extension (``kilocode.kilo-code``) and 0.x CLI
(``~/.kilocode/cli/global``) keep Roo's task folders. Parsed by
``cline_family``; session id ``kilo-task-<taskId>``.

The newer Kilo CLI is an opencode fork (Kilo-Org/kilocode ``packages/opencode``)
and keeps opencode's stores under its own name: ``kilo.db``, and before it
the split JSON store ``storage/session/<project>/<id>.json``. Both are read
by ``opencode`` as this harness's sessions (ids ``ses_…``, as Kilo shows
them)."""

from __future__ import annotations

from typing import Mapping

import os

from . import cline_family as fam
from .base import ReadResult, SourceFile
from .locate import kilo_files

HARNESS = "kilo"
PREFIX = "kilo-task-"


def roots(env: Mapping[str, str]) -> list[str]:
    from .task_folders import kilo_roots

    return kilo_roots(env)


def discover(env: Mapping[str, str]) -> list[SourceFile]:
    return [SourceFile(p, HARNESS) for p in kilo_files(env)]


def read(path: str, start: int = 0) -> ReadResult:
    if path.endswith(".db") or os.path.basename(os.path.dirname(os.path.dirname(path))) == "session":
        from . import opencode

        return opencode.read_as(path, HARNESS)
    return fam.guarded(lambda p: fam.read_task(p, HARNESS, PREFIX), path)
