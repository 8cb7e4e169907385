"""omp (Oh My Pi, can1357/oh-my-pi): pi's session format under ``~/.omp``, its
profiles and XDG (``locate.omp_roots``); the header may carry a ``title``."""

from __future__ import annotations

from typing import Mapping

from deja.stages.sources.base import ReadResult, SourceFile
from deja.stages.sources.locate import omp_files, omp_roots
from deja.stages.sources.pi import folder_project
from deja.stages.sources.pi_format import read_file

HARNESS = "omp"


def roots(env: Mapping[str, str]) -> list[str]:
    return omp_roots(env)


def discover(env: Mapping[str, str]) -> list[SourceFile]:
    return [SourceFile(p, HARNESS) for p in omp_files(env)]


def read(path: str, start: int = 0) -> ReadResult:
    return read_file(path, start, HARNESS, folder_project(path))
