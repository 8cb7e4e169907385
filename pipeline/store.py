"""The store on disk: Parquet datasets, the DuckDB catalog, the writer lock.

Parquet files are immutable. A run writes new parts, then commits by updating
the catalog's ``generation`` table (and the manifest) in one transaction, so a
reader never sees half a run and a run killed at any point leaves the last
good store. Files on disk that the catalog does not list are leftovers of a
killed run or superseded parts; the next writer deletes them.

DuckDB allows one read-write process per file, so writers hold the catalog
open only to load state and to commit; readers open it read-only.
"""

from __future__ import annotations

import fcntl
import os
import sys
import time
import uuid
from contextlib import contextmanager
from importlib import resources
from pathlib import Path

from . import duck as duckdb  # the core: store.py is on the search and hook paths

from .config import CONTENT_VERSION, SCHEMA_VERSION  # noqa: F401  (re-exported)
DATASETS = ("records", "postings", "sessions", "deletes", "vocab")


class Busy(Exception):
    """Another process holds the store (writer lock or catalog)."""


class Store:
    def __init__(self, root: Path | str):
        self.root = Path(root)
        self.catalog_path = self.root / "catalog.duckdb"

    # ---- layout -------------------------------------------------------
    def dataset_dir(self, name: str) -> Path:
        return self.root / name

    def exists(self) -> bool:
        return self.catalog_path.exists()

    def new_part_name(self, gen: int) -> str:
        return f"part-{gen:06d}-{uuid.uuid4().hex[:10]}.parquet"

    # ---- catalog ------------------------------------------------------
    def connect(self, read_only: bool = False, retries: int = 0) -> duckdb.DuckDBPyConnection:
        """Open the catalog; busy (another writer) raises Busy after retries."""
        last: Exception | None = None
        for attempt in range(retries + 1):
            try:
                return duckdb.connect(str(self.catalog_path), read_only=read_only)
            except (duckdb.IOException, duckdb.ConnectionException) as exc:
                last = exc
                if attempt < retries:
                    time.sleep(0.05 * (attempt + 1))
        raise Busy(str(last))

    def init(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        for name in DATASETS:
            self.dataset_dir(name).mkdir(exist_ok=True)
        con = self.connect()
        try:
            con.execute(resources.files("deja").joinpath("catalog.sql").read_text())
            row = con.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            if row is None:
                con.execute("INSERT INTO meta VALUES ('schema_version', ?)", [str(SCHEMA_VERSION)])
        finally:
            con.close()

    # ---- the writer lock ----------------------------------------------
    @contextmanager
    def writer_lock(self, wait: float = 120.0, notice=None):
        """Exclusive across processes; a second writer waits, then says busy."""
        self.root.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.root / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            deadline = time.monotonic() + wait
            told = False
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise Busy("another deja index is running on this store")
                    if not told and notice:
                        notice("another deja index is running; waiting for it")
                        told = True
                    time.sleep(0.1)
            yield
        finally:
            os.close(fd)  # closing releases the flock

    def writer_running(self) -> bool:
        """Another process holds the writer lock right now."""
        try:
            fd = os.open(self.root / ".lock", os.O_RDWR)
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return False
        except BlockingIOError:
            return True
        finally:
            os.close(fd)

    # ---- generations --------------------------------------------------
    def live_files(self, con: duckdb.DuckDBPyConnection, dataset: str) -> list[str]:
        rows = con.execute(
            "SELECT file FROM generation WHERE dataset = ? ORDER BY file", [dataset]
        ).fetchall()
        return [str(self.root / r[0]) for r in rows]

    def collect_garbage(self, con: duckdb.DuckDBPyConnection) -> int:
        """Delete Parquet files the live generation does not list. Writer only."""
        live = {r[0] for r in con.execute("SELECT file FROM generation").fetchall()}
        removed = 0
        for name in DATASETS:
            base = self.dataset_dir(name)
            if not base.exists():
                continue
            for path in base.rglob("*.parquet"):
                rel = path.relative_to(self.root).as_posix()
                if rel not in live:
                    try:
                        path.unlink()
                        removed += 1
                    except OSError:
                        pass
            for d in sorted(base.rglob("*"), reverse=True):  # empty partition folders
                if d.is_dir():
                    try:
                        d.rmdir()
                    except OSError:
                        pass
        return removed

    def size_bytes(self) -> int:
        total = 0
        for path in self.root.rglob("*"):
            try:
                if path.is_file():
                    total += path.stat().st_size
            except OSError:
                pass
        return total


def warn(msg: str) -> None:
    print(f"deja: {msg}", file=sys.stderr)
