"""Crash recovery for Gemini CLI: the interface of ``base.py``, built on what
it shares with Qwen Code (``recover/gemini_chat.py``). Resume: ``gemini
--resume <sessionId>`` in the folder (Gemini lists sessions per project)."""

from __future__ import annotations

from deja.stages.recover.gemini_chat import ChatRecovery, recover_check  # noqa: F401  (recover_check: the same)
from deja.stages.sources.locate import gemini_files, gemini_home

HARNESS = "gemini"
_R = ChatRecovery(HARNESS, "Gemini CLI", gemini_home, ("tmp",), gemini_files)
recover_candidates = _R.recover_candidates
recover_state = _R.recover_state
