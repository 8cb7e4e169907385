"""The store on disk: Parquet datasets, the DuckDB catalog, the writer lock.

Parquet files are immutable. A run writes new parts, then commits by updating
the catalog's ``generation`` table (and the manifest) in one transaction, so a
reader never sees half a run and a run killed at any point leaves the last
good store. Files on disk that the catalog does not list are leftovers of a
killed run or superseded parts; the next writer deletes them.

DuckDB allows one read-write process per file, so writers hold the catalog
open only to load state and to commit; readers open it read-only. A process
keeps one in-memory DuckDB and ATTACHes the catalog to it for each of those
moments: a DuckDB instance costs ~20 ms to start, an ATTACH a few.
"""

from __future__ import annotations

import fcntl
import os
import sys
import time
import zlib
from contextlib import contextmanager
from pathlib import Path

from . import duck as duckdb  # the core: store.py is on the search and hook paths

from .config import CONTENT_VERSION, SCHEMA_VERSION  # noqa: F401  (re-exported)
DATASETS = ("records", "postings", "sessions", "deletes", "vocab")


# Records parts whose sessions the catalog does not list yet (a store from
# before generation.session_keys): the next index run learns them (Store.init),
# and until then the freshness check reports the store as needing that run.
UNNAMED_PARTS = "dataset = 'records' AND session_keys IS NULL"


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
        import uuid  # writers only: the read paths never name a part

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

    def attach(self, con: duckdb.DuckDBPyConnection, alias: str, read_only: bool, retries: int = 0) -> None:
        """ATTACH the catalog to ``con`` as ``alias``; another writer holding it raises Busy after retries."""
        path = str(self.catalog_path).replace("'", "''")
        mode = " (READ_ONLY)" if read_only else ""
        for attempt in range(retries + 1):
            try:
                con.execute(f"ATTACH '{path}' AS {alias}{mode}")
                return
            except (duckdb.IOException, duckdb.ConnectionException, duckdb.BinderException) as exc:
                if attempt == retries:
                    raise Busy(str(exc))
                time.sleep(0.05 * (attempt + 1))

    @contextmanager
    def catalog(self, con: duckdb.DuckDBPyConnection | None = None, retries: int = 0):
        """The catalog, read-write, for the length of the block, as the default
        database of the connection yielded: ``con`` (the process's in-memory
        DuckDB) with the catalog attached, or a connection of its own."""
        if con is None:
            own = self.connect(retries=retries)
            try:
                yield own
            finally:
                own.close()
            return
        home = con.execute("SELECT current_database()").fetchone()[0]
        self.attach(con, "deja_catalog", read_only=False, retries=retries)
        con.execute("USE deja_catalog")
        try:
            yield con
        except BaseException:
            try:
                con.execute("ROLLBACK")  # a transaction the block left open would pin the file
            except duckdb.Error:
                pass
            raise
        finally:
            con.execute(f"USE {home}")
            con.execute("DETACH deja_catalog")  # releases the file for readers and other writers

    def init(self, con: duckdb.DuckDBPyConnection | None = None) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        for name in DATASETS:
            self.dataset_dir(name).mkdir(exist_ok=True)
        from importlib import resources  # writers only (~8 ms to import)

        sql = resources.files("deja").joinpath("catalog.sql").read_text()
        # catalog.sql only when it changed: ~5 ms of every index run otherwise
        digest = f"{zlib.crc32(sql.encode()):08x}"
        with self.catalog(con, retries=40) as cat:  # a hook may hold it a moment
            try:
                current = cat.execute("SELECT value FROM meta WHERE key = 'catalog_sql'").fetchone() == (digest,)
            except duckdb.CatalogException:  # a new catalog
                current = False
            if not current:
                cat.execute(sql)
                row = cat.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
                if row is None:
                    cat.execute("INSERT INTO meta VALUES ('schema_version', ?)", [str(SCHEMA_VERSION)])
                cat.execute("INSERT OR REPLACE INTO meta VALUES ('catalog_sql', ?)", [digest])
            # a store from before session_keys: learn its parts' sessions once
            old = [r[0] for r in cat.execute(f"SELECT file FROM generation WHERE {UNNAMED_PARTS}").fetchall()]
            for rel, keys in self.part_sessions(cat, old).items():
                cat.execute("UPDATE generation SET session_keys = ? WHERE file = ?", [keys, rel])

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

    def parquet_files(self) -> set[str]:
        """Every Parquet file of the datasets on disk, relative to the root.

        os.walk, not Path.rglob: it runs on every index run and the store holds
        hundreds of parts."""
        found = set()
        for name in DATASETS:
            for folder, _, files in os.walk(self.dataset_dir(name)):
                rel = os.path.relpath(folder, self.root).replace(os.sep, "/")
                found.update(f"{rel}/{f}" for f in files if f.endswith(".parquet"))
        return found

    def live_by_dataset(self, con: duckdb.DuckDBPyConnection) -> dict[str, list[str]]:
        """``live_files`` of every dataset, in one query."""
        live: dict[str, list[str]] = {d: [] for d in DATASETS}
        for dataset, rel in con.execute("SELECT dataset, file FROM generation ORDER BY file").fetchall():
            live.setdefault(dataset, []).append(str(self.root / rel))
        return live

    def part_sessions(self, con: duckdb.DuckDBPyConnection, rels: list[str]) -> dict[str, list[str]]:
        """The sessions each records part holds, read from the parts themselves
        (one small dictionary-encoded column): the catalog keeps them so a query
        for a few sessions' records opens only their parts."""
        if not rels:
            return {}
        paths = {str(self.root / r): r for r in rels}
        rows = con.execute(
            "SELECT filename, list(DISTINCT session_key ORDER BY session_key) FROM "
            "read_parquet(?, filename=true, hive_partitioning=false) GROUP BY filename", [list(paths)]
        ).fetchall()
        return {paths[f]: keys for f, keys in rows}

    @staticmethod
    def add_parts(con: duckdb.DuckDBPyConnection, parts: list[tuple[str, str, int]], gen: int,
                  keys: dict[str, list[str]]) -> None:
        """Insert new parts into ``generation`` (the catalog is the default
        database of ``con``), records parts with the sessions they hold
        (``part_sessions``, read before the catalog is opened for writing)."""
        if not parts:
            return
        con.execute(
            "INSERT INTO generation (dataset, file, gen, rows, session_keys) "
            "SELECT unnest(?), unnest(?), ?, unnest(?), unnest(?)",
            [[p[0] for p in parts], [p[1] for p in parts], gen, [p[2] for p in parts],
             [keys.get(p[1]) for p in parts]],
        )

    def collect_garbage(self, con: duckdb.DuckDBPyConnection) -> int:
        """Delete Parquet files the live generation does not list, and the
        temp files of writes a killed run left. Writer only."""
        live = {r[0] for r in con.execute("SELECT file FROM generation").fetchall()}
        removed = 0
        for name in DATASETS:
            for folder, dirs, files in os.walk(self.dataset_dir(name), topdown=False):
                rel = os.path.relpath(folder, self.root).replace(os.sep, "/")
                for f in files:
                    if f.endswith(".tmp") or (f.endswith(".parquet") and f"{rel}/{f}" not in live):
                        try:
                            os.unlink(os.path.join(folder, f))
                            removed += f.endswith(".parquet")
                        except OSError:
                            pass
                if not os.listdir(folder) and folder != str(self.dataset_dir(name)):
                    try:
                        os.rmdir(folder)  # an emptied partition folder
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
