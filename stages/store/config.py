"""Where things live, from the environment. Nothing here imports anything heavy."""

from __future__ import annotations

import os
from pathlib import Path
from collections.abc import Mapping

SCHEMA_VERSION = 1
# Moves when deja derives something new from a transcript: stale stores re-read.
CONTENT_VERSION = 5  # 2: every shell command is a command record; project identity (project_root)
# 3: a decision line carries its content (no bare heading or colon lead-in); AskUserQuestion and
# request_user_input read; Codex subagent rollouts left out; the seed's whole redactor (issue 14)
# 4: postings hold (token, record_id, tf); a record's session, role and length live in docs
# 5: a session's names are title records (normalize.names): sessions indexed before have none


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


def usage_log(root: Path) -> Path:
    """``<index>.usage``: the bounded log of what the hooks and the MCP server
    served (ids and counts only; hooks/packet/metric.py writes it)."""
    root = Path(root)
    return root.with_name(root.name + ".usage")


def handoff_dir(env: Mapping[str, str] | None = None) -> Path:
    """``<index>.handoff``: the working states `deja handoff` packs for another agent."""
    root = index_dir(env)
    return root.with_name(root.name + ".handoff")


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


# DuckDB's working memory in an index run (merges, sorts, the vocabulary): past
# it DuckDB spills to the store's .tmp instead of growing, and merges cut
# themselves into ranges that fit (stages/store/merge.py). The budget is the whole
# process tree's peak (design §5): Arrow batches, the tokenizer and two reader
# processes sit beside it.
DEFAULT_MEMORY_LIMIT = 96_000_000
# Below this DuckDB cannot hold a Parquet row group per thread.
MIN_MEMORY_LIMIT = 16_000_000


def memory_limit_bytes(env: Mapping[str, str] | None = None) -> int:
    """DEJA_MEMORY_LIMIT (16MB, 1GB, 512MiB, … as DuckDB reads them: KB, MB
    powers of 1000, KiB, MiB of 1024), at least MIN_MEMORY_LIMIT; else the default."""
    import re

    env = os.environ if env is None else env
    value = (env.get("DEJA_MEMORY_LIMIT") or "").strip().replace(" ", "")
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([KMGT]?)(i?)B?", value, re.I)
    if m is None:
        return DEFAULT_MEMORY_LIMIT
    number, unit, binary = float(m.group(1)), m.group(2).upper(), m.group(3)
    return max(MIN_MEMORY_LIMIT, int(number * (1024 if binary else 1000) ** " KMGT".index(unit or " ")))
