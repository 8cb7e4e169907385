"""pi (badlogic/pi-mono): ``${PI_CODING_AGENT_DIR:-~/.pi/agent}/sessions/--<enc-cwd>--/<ISO-ts>_<uuid>.jsonl``.
The format is shared with omp and OpenClaw (``pi_format``)."""

from __future__ import annotations

import os
from typing import Mapping

from deja.stages.sources.base import ReadResult, SourceFile
from deja.stages.sources.locate import pi_files, pi_root
from deja.stages.sources.pi_format import read_file

HARNESS = "pi"


def roots(env: Mapping[str, str]) -> list[str]:
    return [pi_root(env)]


def discover(env: Mapping[str, str]) -> list[SourceFile]:
    return [SourceFile(p, HARNESS) for p in pi_files(env)]


def read(path: str, start: int = 0) -> ReadResult:
    return read_file(path, start, HARNESS, folder_project(path))


def folder_project(path: str) -> str:
    """The project a session without a recorded cwd gets: its folder's encoded
    cwd (``--home-ann-src-bot--``) decoded as Claude Code's are."""
    from deja.stages.sources.claude import decode_project_dir

    name = os.path.basename(os.path.dirname(os.path.abspath(path)))
    return decode_project_dir(name) if name.strip("-") else ""


def encoded_folder_project(path: str) -> str:
    """``folder_project`` for stores whose folders are not all encoded cwds
    (prime-agent's flat root, gajae-code's ``v2-<digest>`` folders): only a
    ``-``-led folder name is decoded; the header's cwd names the rest."""
    name = os.path.basename(os.path.dirname(os.path.abspath(path)))
    return folder_project(path) if name.startswith("-") else ""
