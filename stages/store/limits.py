"""How much of the machine an index run may take: DuckDB's memory and threads,
and the C heap's (glibc) arenas and trims."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Mapping

from deja.stages.store import config

# reader processes of a big run, and DuckDB threads when memory allows: the machines have two cores
WORKERS = max(1, min(2, os.cpu_count() or 1))


def bound_memory(con, root: Path, env: Mapping[str, str] | None = None) -> int:
    """Every DuckDB step of a run (merges, sorts, the vocabulary, purges) works
    within DEJA_MEMORY_LIMIT and spills past it to the store's .tmp, so no step
    holds memory in proportion to the corpus or fails for want of it. Returns
    the size of the key ranges merges sort at a time (stages/store/merge.py).

    Insertion order is not preserved: every write names its ORDER BY, and an
    order kept for its own sake stops DuckDB from streaming a COPY. Each DuckDB
    thread holds its own sort and Parquet buffers, so a small limit gets one
    thread."""
    limit = config.memory_limit_bytes(env)
    threads = WORKERS if limit >= 64_000_000 else 1
    con.execute(f"SET memory_limit = '{limit}B'")
    con.execute("SET temp_directory = ?", [str(Path(root) / ".tmp")])
    con.execute("SET preserve_insertion_order = false")
    con.execute(f"SET threads = {threads}")
    return limit // (8 * threads)


def release(con) -> None:
    """Undo ``bound_memory`` on a connection that outlives the run: the process's
    shared one, which a search or a warm server's next queries go on using (with
    insertion order not kept, a table made in order would not keep it)."""
    for name in ("memory_limit", "temp_directory", "preserve_insertion_order", "threads"):
        try:
            con.execute(f"RESET {name}")
        except Exception:  # (a connection the run's failure left unusable: nothing to keep)
            pass


def one_arena() -> None:
    """One malloc arena for the threads this process starts from now on: set
    before DuckDB, polars and pyarrow start theirs. glibc gives each thread
    that allocates beside another an arena of its own, and each keeps what its
    thread freed: a text-heavy run (tokenizer and finish threads) peaked
    20-45 MB higher, for no time saved (bench/README.md)."""
    _libc("mallopt", -8, 1)  # M_ARENA_MAX


def trim_heap() -> None:
    """Hand freed heap back to the OS (glibc keeps it otherwise): after a
    flush, a written partition, a reader's file."""
    _libc("malloc_trim", 0)


def _libc(name: str, *args: int) -> None:
    try:
        getattr(_glibc(), name)(*args)
    except (OSError, AttributeError):  # not glibc: nothing to tune
        pass


@functools.cache
def _glibc():
    # loaded once: trim_heap runs after every file a reader process reads,
    # and opening the library each time cost a second in 50,000 tiny files
    import ctypes

    return ctypes.CDLL("libc.so.6")
