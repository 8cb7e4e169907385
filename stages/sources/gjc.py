"""gajae-code (``gjc``, Yeachan-Heo/gajae-code, an omp descendant): pi's
session format, omp's header (``title``), under ``~/.gjc/agent/sessions/<project>/<ts>_<id>.jsonl``
(``packages/utils/src/dirs.ts``: ``GJC_CONFIG_DIR``, ``GJC_CODING_AGENT_DIR``,
``$XDG_DATA_HOME/gjc/sessions``). ``<project>`` is the encoded cwd, or from the
managed-scope layout on ``v2-<digest>`` (``managed-session-scope.ts``), which
names nothing: the header's cwd does. Sub-agent passes one folder deeper are
not read."""

from __future__ import annotations

from typing import Mapping

from deja.stages.sources.base import ReadResult, SourceFile
from deja.stages.sources.locate import gjc_files, gjc_roots
from deja.stages.sources.pi import encoded_folder_project
from deja.stages.sources.pi_format import read_file

HARNESS = "gjc"


def roots(env: Mapping[str, str]) -> list[str]:
    return gjc_roots(env)


def discover(env: Mapping[str, str]) -> list[SourceFile]:
    return [SourceFile(p, HARNESS) for p in gjc_files(env)]


def read(path: str, start: int = 0) -> ReadResult:
    return read_file(path, start, HARNESS, encoded_folder_project(path))
