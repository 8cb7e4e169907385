"""How the front door (deja.pipeline.api) reaches the store: argument checks
shared by every function, a fresh live store, index runs, and notices.

``notice``: an optional callable given each line a person should see (the CLI
writes them to stderr as they come); without one they are dropped.
"""

from __future__ import annotations

import os
from typing import Callable, Mapping, Optional

from deja.pipeline.errors import COMMITTED_BUT_UNFINISHED, Fail
from deja.stages.store import config

Notice = Optional[Callable[[str], None]]


def environ(env: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if env is None else env


def tell(notice: Notice, line: str) -> None:
    if notice is not None:
        notice(line)


def as_deja_lines(notice: Notice) -> Callable[[str], None]:
    """The library's own notices (index runs, the writer lock) as deja lines."""
    return lambda msg: tell(notice, f"deja: {msg}")


def since_ms(value: str) -> int:
    """Epoch milliseconds of a duration back from now: 7d, 12h, 90m, 30s."""
    import re
    import time

    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(d|h|m|s)\s*", value)
    if not m:
        raise Fail(f"--since takes a duration like 7d, 12h or 90m, not {value!r}")
    n, unit = float(m.group(1)), m.group(2)
    secs = n * {"d": 86400, "h": 3600, "m": 60, "s": 1}[unit]
    return int((time.time() - secs) * 1000)


def check_harness(harness: str | None) -> str | None:
    """The harness id a harness name means (`notes` is deja's own); unknown → Fail."""
    from deja.stages.sources import harnesses

    if harness is not None and not harness.strip():
        raise Fail("--harness needs an agent's name (deja sources lists them)")
    if harness == "notes" and "deja" in harnesses():
        return "deja"
    if harness and harness not in harnesses():
        raise Fail(f"unknown harness {harness!r} (known: {', '.join(harnesses())})")
    return harness


def split_id(ident: str) -> tuple[str | None, str]:
    """(the harness an id names as ``harness:id``, the id without it), quotes trimmed."""
    from deja.queries import show as sh
    from deja.stages.sources import harnesses

    return sh.split_harness(sh.clean_id(ident), harnesses())


def refresh(env: Mapping[str, str] | None = None, notice: Notice = None, keep_attached: bool = False) -> str | None:
    """Bring the store up to date before a query: 'fresh', 'ingested', 'background'
    or 'skipped' (deja.pipeline.fresh.ensure_fresh); None when the check failed
    (the store as it is still answers, and the notice says so)."""
    from deja.pipeline.fresh import ensure_fresh

    try:
        state = ensure_fresh(env, keep_attached=keep_attached)
    except Exception as exc:  # freshness is best effort
        tell(notice, f"deja: could not refresh the index ({type(exc).__name__}: {exc}); answering from the store as it is")
        return None
    if state == "background":
        tell(notice, "deja: refreshing the index in the background; answering from the store as it is")
    return state


def open_store(env: Mapping[str, str] | None = None, notice: Notice = None):
    """The live store (deja.stages.store.read.LiveStore), fresh; close it when done."""
    from deja.stages.store.read import Busy, Damaged, NoIndex, open_live

    refresh(env, notice)  # reading commands answer from a fresh store (cli-contract §1)
    try:
        live = open_live(config.index_dir(env))
        if live.damage_notice():
            tell(notice, live.damage_notice())
        return live
    except (NoIndex, Damaged) as exc:
        raise Fail(str(exc))
    except Busy:
        raise Fail("the index is busy being written; try again in a moment")


def run_index(*, rebuild: bool = False, env: Mapping[str, str] | None = None, progress: Callable | None = None,
              notice: Notice = None, con=None, prune_gone: bool = False):
    """One index run (no up-to-date shortcut): its deja.pipeline.run.Summary."""
    from deja.pipeline.run import DiskFull, run_index as run
    from deja.stages.store.catalog import Busy, StoreError

    try:
        return run(environ(env), rebuild=rebuild, progress=progress, notice=as_deja_lines(notice), con=con,
                   prune_gone=prune_gone)
    except Busy as exc:
        raise Fail(f"{exc}; try again when it finishes")
    except StoreError as exc:
        raise Fail(str(exc))
    except DiskFull as exc:
        fail = Fail(str(exc))
        fail.status = COMMITTED_BUT_UNFINISHED if exc.committed else 1
        raise fail


def reindex(what: str, env: Mapping[str, str] | None = None, notice: Notice = None) -> None:
    """After a change to primary data (a note, a lifted tombstone): index it now;
    a busy writer only defers it (the notice names ``what``)."""
    from deja.pipeline.run import run_index as run
    from deja.stages.store.catalog import Busy

    env = environ(env)
    try:
        run(env, notice=as_deja_lines(notice), lock_wait=min(config.lock_wait_seconds(env), 30.0))
    except Busy:
        tell(notice, f"deja: {what} is saved; the index is busy and picks it up on its next run")
