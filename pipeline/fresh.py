"""Freshness before answering: a query never pays for a rebuild.

Reading commands call ``ensure_fresh`` first. It compares the stores with the
manifest (a directory walk and a stat per file). Turns appended to live
transcripts are ingested inline when they are small; anything heavier (new or
rewritten files, big appends, a content-version change) is handed to a
detached background `deja index`, and the answer comes from the store as it
is. A writer already running means the store is being refreshed: nothing to do.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from deja.stages.sources import locate

from deja.stages.store import config
from deja.pipeline import manifest as mf
from deja.stages.store.catalog import UNNAMED_PARTS, Busy, Store
from deja.stages.store.refresh import background_failure, background_index

INLINE_MAX_BYTES = 2 << 20  # appended bytes worth ingesting in front of a query
INLINE_MAX_FILES = 8
# what the plan reads of each transcript's manifest row (manifest.plan)
# (records: manifest.plan keeps a vanished transcript that left records as GONE; without
# the column every vanished file looked empty, a REMOVE the index run never makes)
MANIFEST_COLUMNS = ("path", "harness", "size", "mtime_ns", "prefix_hash", "safe_offset", "content_version", "error",
                    "records")


def pending(env: Mapping[str, str], con=None, check_disk: bool = True,
            keep_attached: bool = False, problems: list[str] | None = None) -> tuple[list[mf.Action], int, bool] | None:
    """The work the stores hold for the index, how many sessions it has, and
    whether the files on disk are exactly the live ones, each of the size it
    was written with (a killed run leaves parts for the next writer to clean; a
    torn or missing part is for it to repair) and the catalog is of this version.

    None when there is no index yet, or the catalog is busy or unreadable. Light: a directory
    walk, a stat per file, and the manifest read through DuckDB's core.
    ``keep_attached``: when there is nothing to do, the catalog stays attached
    to ``con`` as ``cat`` for the query that follows (``open_live(attached=True)``).
    ``problems`` collects what the stores' walk skipped (locate.sources).
    """
    store = Store(config.index_dir(env))
    if not store.exists():
        return None
    sources = locate.sources(env, problems)  # (first: no DuckDB needed, which may still be warming up)
    from deja.stages.store.read import Damaged, attach_catalog, keeping

    from deja.stages.store import duck

    con = duck.shared() if con is None else con
    if not check_disk and keeping():
        return _pending_warm(store, con, sources)
    cols = list(MANIFEST_COLUMNS)
    if check_disk:  # `deja index`: a same-size, same-mtime rewrite is checked for (manifest.edge_hash)
        cols.append("edge_hash")
    try:
        attach_catalog(con, store, retries=3)
    except (Busy, Damaged):  # an unreadable catalog: an index run sets it aside
        return None
    actions = None
    try:
        manifest = _manifest(con, cols)
        # only `deja index` says how many: the rows of the live sessions parts, as doctor
        # counts them (a file's session with no message has no row, so file_sessions overcounts)
        sessions = (con.execute("SELECT coalesce(sum(rows), 0) FROM cat.generation WHERE dataset = 'sessions'")
                    .fetchone()[0] if check_disk else 0)
        # with the sizes written: a part torn since (a crash, a full disk) has another
        live = dict(con.execute("SELECT file, bytes FROM cat.generation").fetchall()) if check_disk else {}
        current = not check_disk or _catalog_current(con)
        actions = [a for a in mf.plan(sources, manifest, verify=check_disk) if a.kind != mf.SKIP]
    except duck.Error:  # a catalog a killed first run left half-made: the full run repairs it
        actions = None
    finally:
        if not (keep_attached and actions == []):
            con.execute("DETACH cat")
    if actions is None:
        return None
    clean = True
    if check_disk and not actions:  # only `deja index` cleans up after a killed run; queries need not look
        clean = current and store.parquet_files() == live
    return actions, sessions, clean


def _pending_warm(store: Store, con, sources) -> tuple[list[mf.Action], int, bool] | None:
    """``pending`` for a query in a warm server's process: the manifest is read
    from the catalog once per catalog state (stages/store/read.per_catalog),
    and only the files on disk are looked at again."""
    from deja.stages.store import duck
    from deja.stages.store.read import Damaged, attach_catalog, per_catalog

    def manifest() -> dict:
        attach_catalog(con, store, retries=3)
        try:
            return _manifest(con, list(MANIFEST_COLUMNS))
        finally:
            con.execute("DETACH cat")

    try:
        known = per_catalog(store, "manifest", manifest)
    except (Busy, Damaged, duck.Error):
        return None
    from deja.stages.sources import watch

    w = watch.current()
    folders = _folders(sources) if w is not None else None
    if folders is None:
        w = None  # (a database server's sessions: no folder to watch)
    if w is not None:
        # nothing changed since a check found the store fresh: no stat of every file (stages/sources/watch.py)
        count = len(sources)
        if w.quiet(folders, count, known):
            return [], 0, True
    actions = [a for a in mf.plan(sources, known, verify=False) if a.kind != mf.SKIP]
    if w is not None and not actions:
        w.mark_clean(folders, count, known)
    return actions, 0, True


_FOLDERS: list = [None, None]  # the sources list _folders last saw, and its answer


def _folders(sources: list[tuple[str, str]]) -> frozenset | None:
    """The folders holding ``sources``' transcripts, None when one is a
    database server's. Worked out again only for another list: a warm
    process's listing hands out the same one while nothing changed."""
    if _FOLDERS[0] is not sources:
        remote = any(p.startswith(mf.REMOTE_PREFIX) for p, _ in sources)
        _FOLDERS[:] = [sources, None if remote else frozenset(p.rpartition(os.sep)[0] for p, _ in sources)]
    return _FOLDERS[1]


def _manifest(con, cols: list[str]) -> dict[str, dict]:
    """path → its manifest row (the catalog attached as ``cat``), with
    ``gone_at`` where the catalog has it (one from before it: the next index
    run adds it)."""
    from deja.stages.store import duck

    try:
        rows = con.execute(f"SELECT {', '.join(cols)}, gone_at FROM cat.manifest").fetchall()
        cols = cols + ["gone_at"]
    except duck.BinderException:
        rows = con.execute(f"SELECT {', '.join(cols)} FROM cat.manifest").fetchall()
    return {r[0]: dict(zip(cols, r)) for r in rows}


def _catalog_current(con) -> bool:
    """False for a catalog an older deja wrote: the next index run upgrades it."""
    from deja.stages.store import duck

    try:
        return not con.execute(f"SELECT count(*) FROM cat.generation WHERE {UNNAMED_PARTS}").fetchone()[0]
    except duck.BinderException:
        return False


def keep_warm() -> None:
    """This process answers request after request (deja serve's warm
    processes, deja mcp): the live store stays open between them and is
    reopened when the catalog changes (read.keep_open), and a store's folder
    is listed again only when it changed (locate.keep_listings), and its
    transcripts are stat'ed only when a watched folder saw a change (watch)."""
    from deja.stages.sources import watch
    from deja.stages.store import read

    read.keep_open(True)
    locate.keep_listings()
    watch.enable()


def ensure_fresh(env: Mapping[str, str] | None = None, con=None, keep_attached: bool = False) -> str:
    """'fresh', 'ingested', 'background' or 'skipped' (no index, busy, disabled).

    ``con``: an in-memory DuckDB connection to read the manifest through (the
    query that follows reuses it), instead of opening the catalog itself.
    ``keep_attached``: on 'fresh' the catalog stays attached as ``cat`` (see pending).
    """
    env = os.environ if env is None else env
    if env.get("DEJA_NO_REFRESH") == "1":
        return "skipped"
    state = pending(env, con, check_disk=False, keep_attached=keep_attached)
    if state is None:
        return "skipped"
    actions = state[0]
    if not actions:
        return "fresh"
    store = Store(config.index_dir(env))
    appended = sum(a.size - a.start for a in actions if a.kind == mf.APPEND)
    small = all(a.kind == mf.APPEND for a in actions) and appended <= INLINE_MAX_BYTES and len(actions) <= INLINE_MAX_FILES
    if small:
        try:
            from deja.pipeline.run import run_index

            from deja.stages.store import duck

            run_index(env, store=store, lock_wait=0, con=duck.shared() if con is None else con)
            return "ingested"
        except Busy:
            return "skipped"
    failed = background_failure(env)
    if failed:  # said before the next attempt overwrites it: a refresh never fails unseen run after run
        print(f"deja: the last background index failed: {failed} (run `deja index`)", file=sys.stderr)
    background_index(env)
    return "background"
