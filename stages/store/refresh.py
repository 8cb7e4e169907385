"""The background refresh: a detached `deja index` and what it last printed.

A query that finds heavier work than it may do inline (pipeline/fresh.py), and
the PreCompact hook (hooks/context.py), hand the index run to a detached
process; doctor and the next query read its log to say when it failed.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

from deja.stages.store import config


def refresh_log(env: Mapping[str, str]):
    """``<index>.refresh``: what the last background `deja index` printed."""
    root = config.index_dir(env)
    return root.with_name(root.name + ".refresh")


def writer_running(root) -> bool:
    """True while a `deja index` holds the store's writer lock (probed
    without waiting, and without creating the lock file)."""
    import fcntl
    import os

    try:
        fd = os.open(Path(root) / ".lock", os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    except OSError:
        return True
    finally:
        os.close(fd)


def background_index(env: Mapping[str, str]) -> None:
    """A detached `deja index`: it outlives this command and takes the writer lock itself.

    None is started while a run holds the lock: it, or the one a query starts
    after it, takes the changes. (Each query that found heavy work started
    one, which waited up to DEJA_LOCK_WAIT for the lock: a burst of searches
    on a store with much to index left a hundred and more waiting, 70 MB each.)
    One started anyway by a query racing this one finds the lock taken and
    leaves at once.

    Its output goes to ``refresh_log``: the JSON summary when it succeeds, its
    one-line error when it does not (see ``background_failure``)."""
    if writer_running(config.index_dir(env)):
        return
    import subprocess  # (only here: the freshness check in front of every query must not pay for it)

    try:
        log = open(refresh_log(env), "wb")
    except OSError:
        log = subprocess.DEVNULL
    try:
        subprocess.Popen(
            [sys.executable, "-m", "deja", "index", "--json"],
            env=dict(env, DEJA_LOCK_WAIT="0"),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
    except OSError:
        pass
    finally:
        if log is not subprocess.DEVNULL:
            log.close()


def background_failure(env: Mapping[str, str]) -> str:
    """The error of the last background `deja index`, or "" (it succeeded, is
    still running, or none ran). A successful run prints its JSON summary."""
    try:
        with open(refresh_log(env), "rb") as fh:
            text = fh.read(64 << 10).decode("utf-8", "replace").strip()
    except OSError:
        return ""
    if not text or text.startswith("{") or "another deja index is running" in text:
        return ""  # succeeded, running, or found another run at work: nothing failed
    lines = [ln for ln in text.splitlines() if ln.strip()]
    errors = [ln[len("deja: "):] for ln in lines if ln.startswith("deja: ")]
    return (errors[-1] if errors else lines[-1])[:300]
