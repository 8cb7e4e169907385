"""Kimchi Coding (castai/kimchi-dev, the harness ``kimchi`` launches; built on
``@mariozechner/pi-coding-agent``): pi's session format under
``~/.config/kimchi/harness/sessions/--<enc-cwd>--/<ts>_<id>.jsonl``
(``src/entry.ts`` sets ``KIMCHI_CODING_AGENT_DIR`` to ``~/.config/kimchi/harness``;
``package.json`` ``piConfig``: name ``kimchi``)."""

from __future__ import annotations

from typing import Mapping

from deja.stages.sources.base import ReadResult, SourceFile
from deja.stages.sources.locate import kimchi_files, kimchi_root
from deja.stages.sources.pi import folder_project
from deja.stages.sources.pi_format import read_file

HARNESS = "kimchi"


def roots(env: Mapping[str, str]) -> list[str]:
    return [kimchi_root(env)]


def discover(env: Mapping[str, str]) -> list[SourceFile]:
    return [SourceFile(p, HARNESS) for p in kimchi_files(env)]


def read(path: str, start: int = 0) -> ReadResult:
    return read_file(path, start, HARNESS, folder_project(path))
