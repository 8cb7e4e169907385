"""Senpi (code-yeongyu/senpi, a pi fork): pi's session format under
``${SENPI_CODING_AGENT_DIR:-~/.senpi/agent}/sessions/--<enc-cwd>--/<ts>_<id>.jsonl``
(its ``config.ts``/``brand.ts``: ``piConfig.configDir`` ``.senpi``, the agent
dir override ``SENPI_CODING_AGENT_DIR``, the session dir ``SENPI_CODING_AGENT_SESSION_DIR``;
``session-manager.ts`` keeps pi's header and entries, version 3)."""

from __future__ import annotations

from typing import Mapping

from deja.stages.sources.base import ReadResult, SourceFile
from deja.stages.sources.locate import senpi_files, senpi_root
from deja.stages.sources.pi import folder_project
from deja.stages.sources.pi_format import read_file

HARNESS = "senpi"


def roots(env: Mapping[str, str]) -> list[str]:
    return [senpi_root(env)]


def discover(env: Mapping[str, str]) -> list[SourceFile]:
    return [SourceFile(p, HARNESS) for p in senpi_files(env)]


def read(path: str, start: int = 0) -> ReadResult:
    return read_file(path, start, HARNESS, folder_project(path))
