"""Crash recovery for Qwen Code: what it shares with Gemini CLI
(``recover/gemini_chat.py``) over Qwen's store. A JSONL chat records its folder on every line (``cwd``);
an older ``tmp/<sha256 of the folder>/chats/*.json`` by its folder's name.
Resume: ``qwen -r <sessionId>`` (``--resume``) in the folder."""

from __future__ import annotations

from deja.stages.recover.gemini_chat import ChatRecovery, recover_check  # noqa: F401  (recover_check: the same)
from deja.stages.sources.locate import qwen_files, qwen_home

HARNESS = "qwen"
_R = ChatRecovery(HARNESS, "Qwen Code", qwen_home, ("projects", "tmp"), qwen_files)
recover_candidates = _R.recover_candidates
recover_state = _R.recover_state
