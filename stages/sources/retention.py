"""How long each agent keeps its own transcripts: what `deja doctor` shows and
`deja install` offers to raise.

Claude Code deletes transcripts older than ``cleanupPeriodDays`` (its
settings.json; 30 days when absent). Codex never deletes its rollouts
(``sessions/``); it only caps the prompt history ``history.jsonl`` by
``[history] max_bytes`` in config.toml (``persistence = "none"``: none kept).
deja keeps the sessions of deleted transcripts either way (pipeline/manifest.py).
"""

from __future__ import annotations

import json
import os
from typing import Mapping

from deja.stages.sources.locate import _home, codex_home

CLAUDE_DEFAULT_DAYS = 30
# below this, `deja install` offers to raise Claude Code's setting
KEEP_HISTORY_DAYS = 365


def claude_settings_path(env: Mapping[str, str]) -> str:
    return os.path.join(env.get("CLAUDE_CONFIG_DIR") or os.path.join(_home(env), ".claude"), "settings.json")


def claude_cleanup_days(env: Mapping[str, str]) -> tuple[int, bool]:
    """(days, set explicitly): Claude Code's cleanupPeriodDays, its default when absent or unreadable."""
    try:
        with open(claude_settings_path(env), encoding="utf-8") as fh:
            value = json.load(fh).get("cleanupPeriodDays")
    except (OSError, ValueError, AttributeError):
        return CLAUDE_DEFAULT_DAYS, False
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return CLAUDE_DEFAULT_DAYS, False
    return int(value), True


def retention(env: Mapping[str, str]) -> dict[str, dict]:
    """Per harness: ``setting`` (one line a person reads) and, where the agent
    deletes transcripts, ``days``."""
    days, explicit = claude_cleanup_days(env)
    claude = {"days": days, "setting": f"deletes transcripts after {days} days (cleanupPeriodDays"
                                       f"{'' if explicit else ', the default'}, {claude_settings_path(env)})"}
    codex = {"setting": "keeps transcripts"}
    try:
        import tomllib

        with open(os.path.join(codex_home(env), "config.toml"), "rb") as fh:
            history = tomllib.load(fh).get("history") or {}
    except (OSError, ValueError):
        history = {}
    if isinstance(history, dict) and history.get("persistence") == "none":
        codex["setting"] += "; keeps no prompt history (history.persistence = none)"
    elif isinstance(history, dict) and isinstance(history.get("max_bytes"), int):
        codex["setting"] += f"; prompt history capped at {history['max_bytes']} bytes (history.max_bytes)"
    return {"claude": claude, "codex": codex}
