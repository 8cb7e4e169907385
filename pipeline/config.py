"""Where things live, from the environment. Nothing here imports anything heavy."""

from __future__ import annotations

import os
from pathlib import Path
from collections.abc import Mapping

SCHEMA_VERSION = 1
# Moves when deja derives something new from a transcript: stale stores re-read.
CONTENT_VERSION = 1


def home(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    return Path(env.get("HOME") or os.path.expanduser("~"))


def index_dir(env: Mapping[str, str] | None = None) -> Path:
    """The store root: DEJA_INDEX_DIR, default ~/.cache/deja/index.db (a directory)."""
    env = os.environ if env is None else env
    if env.get("DEJA_INDEX_DIR"):
        return Path(env["DEJA_INDEX_DIR"]).expanduser()
    cache = env.get("XDG_CACHE_HOME") or str(home(env) / ".cache")
    return Path(cache) / "deja" / "index.db"


def flag(name: str, env: Mapping[str, str] | None = None) -> bool:
    env = os.environ if env is None else env
    return env.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def lock_wait_seconds(env: Mapping[str, str] | None = None) -> float:
    """How long a second `deja index` waits for the first before saying busy."""
    env = os.environ if env is None else env
    try:
        return float(env.get("DEJA_LOCK_WAIT", "120"))
    except ValueError:
        return 120.0
