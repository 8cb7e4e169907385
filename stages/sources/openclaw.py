"""OpenClaw: pi's session format, one folder per agent:
``${OPENCLAW_STATE_DIR:-~/.openclaw}/agents/<agentId>/sessions/<sessionId>.jsonl``.
``sessions.json`` beside them maps chat keys to session ids (recovery reads it)."""

from __future__ import annotations

import os
from typing import Mapping

from deja.stages.sources.base import ReadResult, SourceFile
from deja.stages.sources.locate import openclaw_files, openclaw_root
from deja.stages.sources.pi_format import read_file

HARNESS = "openclaw"


def roots(env: Mapping[str, str]) -> list[str]:
    return [openclaw_root(env)]


def discover(env: Mapping[str, str]) -> list[SourceFile]:
    return [SourceFile(p, HARNESS) for p in openclaw_files(env)]


def read(path: str, start: int = 0) -> ReadResult:
    return read_file(path, start, HARNESS, f"openclaw-{agent_of(path)}")


def agent_of(path: str) -> str:
    """The agent id: ``agents/<agentId>/sessions/<file>``."""
    return os.path.basename(os.path.dirname(os.path.dirname(os.path.abspath(path))))
