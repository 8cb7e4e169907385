"""Crash recovery for Qwen Code: what it shares with Gemini CLI
(``recover/gemini_chat.py``) over Qwen's store. A JSONL chat records its folder on every line (``cwd``);
an older ``tmp/<sha256 of the folder>/chats/*.json`` by its folder's name.
Resume: ``qwen -r <sessionId>`` (``--resume``) in the folder."""

from __future__ import annotations

import os
from typing import Mapping

from deja.stages.recover.base import FolderScan, WorkingState
from deja.stages.recover.gemini_chat import candidates, recover_check, state_of  # noqa: F401  (recover_check: the same)
from deja.stages.sources import qwen as reader
from deja.stages.sources.locate import qwen_files, qwen_home

HARNESS = "qwen"


def recover_candidates(cwd: str, env: Mapping[str, str]) -> FolderScan:
    home = qwen_home(env)
    out = FolderScan(looked=[f"Qwen Code: {os.path.join(home, 'projects')}, {os.path.join(home, 'tmp')}"])
    out.candidates = candidates(HARNESS, cwd, qwen_files(env), reader.read)
    return out


def recover_state(path: str, session_id: str) -> WorkingState:
    return state_of(HARNESS, path, session_id, reader.read)
