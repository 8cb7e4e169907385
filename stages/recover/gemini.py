"""Crash recovery for Gemini CLI: the interface of ``base.py``, built on what
it shares with Qwen Code (``recover/gemini_chat.py``). Resume: ``gemini
--resume <sessionId>`` in the folder (Gemini lists sessions per project)."""

from __future__ import annotations

import os
from typing import Mapping

from deja.stages.recover.base import FolderScan, WorkingState
from deja.stages.recover.gemini_chat import candidates, recover_check, state_of  # noqa: F401  (recover_check: the same)
from deja.stages.sources import gemini as reader
from deja.stages.sources.locate import gemini_files, gemini_home

HARNESS = "gemini"


def recover_candidates(cwd: str, env: Mapping[str, str]) -> FolderScan:
    home = gemini_home(env)
    out = FolderScan(looked=[f"Gemini CLI: {os.path.join(home, 'tmp')}"])
    out.candidates = candidates(HARNESS, cwd, gemini_files(env), reader.read)
    return out


def recover_state(path: str, session_id: str) -> WorkingState:
    return state_of(HARNESS, path, session_id, reader.read)
