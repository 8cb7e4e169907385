"""The store on disk: Parquet datasets, the DuckDB catalog, the writer lock.

Parquet files are immutable. A run writes new parts, then commits by updating
the catalog's ``generation`` table (and the manifest) in one transaction, so a
reader never sees half a run and a run killed at any point leaves the last
good store. Files on disk that the catalog does not list are leftovers of a
killed run or superseded parts; the next writer deletes them.

DuckDB allows one read-write process per file, so writers hold the catalog
open only to load state and to commit; readers open it read-only. A process
keeps one in-memory DuckDB and ATTACHes the catalog to it for each of those
moments: starting a DuckDB instance costs far more than an ATTACH.
"""

from __future__ import annotations

import fcntl
import os
import sys
import time
import zlib
from contextlib import contextmanager
from pathlib import Path

from . import duck  # DuckDB's core: the catalog is on the search and hook paths

from .config import SCHEMA_VERSION
from .layout import DATASETS
from .private import private_dir


# Records parts whose sessions the catalog does not list yet (a store from
# before generation.session_keys): the next index run learns them (Store.init),
# and until then the freshness check reports the store as needing that run.
UNNAMED_PARTS = "dataset = 'records' AND session_keys IS NULL"


class Busy(Exception):
    """Another process holds the store (writer lock or catalog)."""


class CatalogUnreadable(Exception):
    """The catalog file is there but is no DuckDB database (torn as it was made,
    a bad sector): not busy, so waiting cannot help; ``init`` sets it aside."""


def _lock_conflict(exc: BaseException) -> bool:
    """DuckDB's error for a file another process holds ("Could not set lock …
    Conflicting lock is held"), as against one it cannot read at all."""
    return "lock" in str(exc).lower()


class StoreError(Exception):
    """The store's path cannot hold an index (a file, not writable): one line naming it."""


def first_line(exc: BaseException) -> str:
    """An error's first line: DuckDB's messages go on with the query they came from."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


CATALOG_BLOCK = 16 * 1024


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
    def connect(self, read_only: bool = False, retries: int = 0) -> duck.DuckDBPyConnection:
        """Open the catalog; busy (another writer) raises Busy after retries."""
        last: Exception | None = None
        for attempt in range(retries + 1):
            try:
                return duck.connect(str(self.catalog_path), read_only=read_only)
            except (duck.IOException, duck.ConnectionException) as exc:
                if not _lock_conflict(exc) and self.catalog_path.exists():
                    raise CatalogUnreadable(first_line(exc)) from exc
                last = exc
                if attempt < retries:
                    time.sleep(0.05 * (attempt + 1))
        raise Busy(str(last))

    def attach(self, con: duck.DuckDBPyConnection, alias: str, read_only: bool, retries: int = 0) -> None:
        """ATTACH the catalog to ``con`` as ``alias``; another writer holding it raises Busy after retries."""
        path = str(self.catalog_path).replace("'", "''")
        mode = " (READ_ONLY)" if read_only else ""
        for attempt in range(retries + 1):
            try:
                con.execute(f"ATTACH '{path}' AS {alias}{mode}")
                return
            except (duck.IOException, duck.ConnectionException, duck.BinderException) as exc:
                if isinstance(exc, duck.IOException) and not _lock_conflict(exc) and self.catalog_path.exists():
                    raise CatalogUnreadable(first_line(exc)) from exc
                if attempt == retries:
                    raise Busy(str(exc))
                time.sleep(0.05 * (attempt + 1))

    @contextmanager
    def catalog(self, con: duck.DuckDBPyConnection | None = None, retries: int = 0):
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
            except duck.Error:
                pass
            raise
        finally:
            con.execute(f"USE {home}")
            con.execute("DETACH deja_catalog")  # releases the file for readers and other writers

    def ensure_writable(self) -> None:
        """The store's directory exists (made if need be) and can be written;
        otherwise StoreError names the path."""
        try:
            private_dir(self.root)
        except (FileExistsError, NotADirectoryError):
            raise StoreError(f"the index path {self.root} is a file, not a directory (set DEJA_INDEX_DIR to a directory)")
        except OSError as exc:
            raise StoreError(f"cannot create the index directory {self.root}: {exc.strerror}")
        if not self.root.is_dir():
            raise StoreError(f"the index path {self.root} is not a directory (set DEJA_INDEX_DIR to a directory)")
        if not os.access(self.root, os.W_OK):  # (also true for root on a read-only file system)
            raise StoreError(f"the index directory {self.root} is not writable")

    def init(self, con: duck.DuckDBPyConnection | None = None) -> None:
        private_dir(self.root)
        for name in DATASETS:
            self.dataset_dir(name).mkdir(exist_ok=True)
        from importlib import resources  # writers only: the read paths do not pay for the import

        sql = resources.files("deja.stages.store").joinpath("catalog.sql").read_text()
        # catalog.sql only when it changed, not on every index run
        digest = f"{zlib.crc32(sql.encode()):08x}"
        try:
            self._create()
            self._init(con, sql, digest)
        except CatalogUnreadable as exc:
            aside = self.set_aside()
            warn(f"the index catalog could not be read ({exc}); set aside as {aside.name}, the index is rebuilt")
            self._create()
            self._init(con, sql, digest)

    def _create(self) -> None:
        """A new catalog file in 16 KiB blocks: its tables are a few thousand
        rows, and DuckDB's default 256 KiB blocks made an empty catalog 4 MiB."""
        if self.catalog_path.exists():
            return
        con = duck.connect()
        try:
            path = str(self.catalog_path).replace("'", "''")
            con.execute(f"ATTACH '{path}' AS fresh (BLOCK_SIZE {CATALOG_BLOCK})")
            con.execute("DETACH fresh")
        except (duck.IOException, duck.ConnectionException):
            pass  # another process made it first: that one serves
        finally:
            con.close()

    def set_aside(self) -> Path:
        """Move an unreadable catalog (and its write-ahead log) out of the way,
        kept for a post-mortem: the next init starts a new one, and the index
        run then reads every transcript again (its parts are all unknown to it)."""
        aside = self.catalog_path.with_name(self.catalog_path.name + ".unreadable")
        os.replace(self.catalog_path, aside)
        wal = self.catalog_path.with_name(self.catalog_path.name + ".wal")
        if wal.exists():
            os.replace(wal, aside.with_name(aside.name + ".wal"))
        return aside

    def _init(self, con, sql: str, digest: str) -> None:
        with self.catalog(con, retries=40) as cat:  # a hook may hold it a moment
            try:
                current = cat.execute("SELECT value FROM meta WHERE key = 'catalog_sql'").fetchone() == (digest,)
            except duck.CatalogException:  # a new catalog
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
        self.ensure_writable()
        try:
            fd = os.open(self.root / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StoreError(f"cannot write to the index directory {self.root}: {exc.strerror}")
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
        from .refresh import writer_running

        return writer_running(self.root)

    # ---- generations --------------------------------------------------
    def live_files(self, con: duck.DuckDBPyConnection, dataset: str) -> list[str]:
        rows = con.execute(
            "SELECT file FROM generation WHERE dataset = ? ORDER BY file", [dataset]
        ).fetchall()
        return [str(self.root / r[0]) for r in rows]

    def parquet_files(self) -> dict[str, int]:
        """Every Parquet file of the datasets on disk, relative to the root, with its size.

        os.walk, not Path.rglob: it runs on every index run and the store holds
        hundreds of parts."""
        found = {}
        for name in DATASETS:
            for folder, _, files in os.walk(self.dataset_dir(name)):
                rel = os.path.relpath(folder, self.root).replace(os.sep, "/")
                for f in files:
                    if f.endswith(".parquet"):
                        try:
                            found[f"{rel}/{f}"] = os.stat(os.path.join(folder, f)).st_size
                        except OSError:
                            pass
        return found

    def live_parts(self, rows) -> dict[str, list[str]]:
        """Absolute paths of the live parts of every dataset, from generation rows: (dataset, file, ...)."""
        live: dict[str, list[str]] = {d: [] for d in DATASETS}
        for row in sorted(rows, key=lambda r: r[1]):
            live.setdefault(row[0], []).append(str(self.root / row[1]))
        return live

    def part_sessions(self, con: duck.DuckDBPyConnection, rels: list[str]) -> dict[str, list[str]]:
        """The sessions each records part holds, read from the parts themselves
        (one small dictionary-encoded column): the catalog keeps them so a query
        for a few sessions' records opens only their parts."""
        return {rel: facts[0] for rel, facts in self.part_facts(con, [("records", r, 0) for r in rels]).items()}

    def part_facts(self, con: duck.DuckDBPyConnection, parts: list[tuple[str, str, int]]) -> dict[str, tuple]:
        """What ``generation`` keeps of each new part, read before the catalog is
        opened for writing: (session_keys, bytes, min_record_id, max_record_id).
        Sizes let every run notice a torn part with a stat. A postings part
        names the record ids it covers, so a damaged one says what to re-read:
        a flush writes its records and postings parts under one file name, and
        the records parts of that name give the range (a merged postings part
        has none of its name, and no range: it may cover any record)."""
        records = {str(self.root / rel): rel for d, rel, _ in parts if d == "records"}
        keys: dict[str, list[str]] = {}
        ranges: dict[str, tuple[int, int]] = {}  # file name → record ids of its flush
        if records:
            for f, held, lo, hi in con.execute(
                "SELECT filename, list(DISTINCT session_key ORDER BY session_key), min(record_id), max(record_id) "
                "FROM read_parquet(?, filename=true, hive_partitioning=false) GROUP BY filename", [list(records)]
            ).fetchall():
                keys[records[f]] = held
                name = os.path.basename(f)
                old = ranges.get(name, (lo, hi))
                ranges[name] = (min(lo, old[0]), max(hi, old[1]))
        out = {}
        for dataset, rel, _ in parts:
            lo, hi = ranges.get(os.path.basename(rel), (None, None)) if dataset in ("postings", "docs") else (None, None)
            out[rel] = (keys.get(rel), os.stat(self.root / rel).st_size, lo, hi)
        return out

    @staticmethod
    def add_parts(con: duck.DuckDBPyConnection, parts: list[tuple[str, str, int]], gen: int,
                  facts: dict[str, tuple]) -> None:
        """Insert new parts into ``generation`` (the catalog is the default
        database of ``con``) with their ``part_facts``."""
        if not parts:
            return
        cols = [[facts[p[1]][i] for p in parts] for i in range(4)]
        con.execute(
            "INSERT INTO generation (dataset, file, gen, rows, session_keys, bytes, min_record_id, max_record_id) "
            "SELECT unnest(?), unnest(?), ?, unnest(?), unnest(?), unnest(?), unnest(?), unnest(?)",
            [[p[0] for p in parts], [p[1] for p in parts], gen, [p[2] for p in parts], *cols],
        )

    # ---- damage -------------------------------------------------------
    def damaged_parts(self, con: duck.DuckDBPyConnection, rows, footers: bool = False,
                      suspects: set[str] = frozenset()) -> tuple[dict, dict]:
        """Which live parts are damaged: ``rows`` are generation's (dataset, file,
        rows, bytes). Every part gets a stat; its footer is read when its size
        is not the one recorded (or none was), or always with ``footers``
        (doctor); a part a query could not read (``suspects``, ``ANY`` for every
        part: see ``note_suspects``) is decoded whole, since bytes damaged in
        place keep its size and can keep its footer. Returns ({file: (dataset,
        what is wrong)}, {file: size} of sound parts whose size was not recorded yet)."""
        damaged, sizes = {}, {}
        for dataset, rel, n, size in rows:
            if rel in suspects or ANY in suspects:
                problem = self.check_footer(con, rel, n) or self.check_pages(con, rel)
                if problem:
                    damaged[rel] = (dataset, problem)
                    continue
            try:
                actual = os.stat(self.root / rel).st_size
            except FileNotFoundError:
                damaged[rel] = (dataset, "missing")
                continue
            except OSError as exc:
                damaged[rel] = (dataset, f"unreadable ({exc.strerror})")
                continue
            if not footers and actual == size:
                continue
            problem = self.check_footer(con, rel, n)
            if problem:
                damaged[rel] = (dataset, problem)
            elif actual != size:
                sizes[rel] = actual  # sound: a catalog from before sizes were kept
        return damaged, sizes

    def check_pages(self, con: duck.DuckDBPyConnection, rel: str) -> str | None:
        """What is wrong with one part's data pages, or None: every value is decoded."""
        try:
            con.execute("SELECT max(hash(COLUMNS(*))) FROM read_parquet(?)", [str(self.root / rel)])  # (every column, every row)
        except duck.Error as exc:
            return self.unreadable(exc, rel)
        return None

    def unreadable(self, exc: BaseException, rel: str) -> str:
        """What DuckDB said of a part it could not read, without the part's path
        (the report names the file already)."""
        why = first_line(exc).split(": ", 1)[-1]
        for quoted in (f"'{self.root / rel}'", f'"{self.root / rel}"'):
            why = why.replace(quoted, "")
        return f"unreadable ({' '.join(why.split())})"

    def check_footer(self, con: duck.DuckDBPyConnection, rel: str, rows: int | None) -> str | None:
        """What is wrong with one part's footer, or None: only the footer is read."""
        try:
            n = con.execute("SELECT num_rows FROM parquet_file_metadata(?)", [str(self.root / rel)]).fetchone()[0]
        except duck.Error as exc:
            return self.unreadable(exc, rel)
        if rows is not None and n != rows:
            return f"holds {n} rows where the catalog says {rows}"
        return None

    def collect_garbage(self, con: duck.DuckDBPyConnection) -> int:
        """Delete Parquet files the live generation does not list, and the
        temp files of writes a killed run left. Writer only."""
        return self.sweep({r[0] for r in con.execute("SELECT file FROM generation").fetchall()})

    def sweep(self, live: set[str]) -> int:
        """Delete every Parquet file but the ``live`` ones, and every temp file."""
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

    def discard(self, live: set[str]) -> None:
        """After a failed run (a full disk): every part it wrote and every temp
        file go, the ``live`` parts it started from stay (``sweep``), and so do
        DuckDB's spill files."""
        import shutil  # (not at the top: every search imports this module, and shutil is ~2 ms)

        self.sweep(live)
        shutil.rmtree(self.root / ".tmp", ignore_errors=True)

    def size_bytes(self) -> int:
        total = 0
        for path in self.root.rglob("*"):
            try:
                if path.is_file():
                    total += path.stat().st_size
            except OSError:
                pass
        return total


# Parts a query could not read, for the next index run to decode whole
# (Store.damaged_parts): a line per part, ANY when the error named none.
SUSPECTS = ".suspect"
ANY = "*"


def note_suspects(root: Path | str, rels: list[str]) -> None:
    """Best effort: a reader may not write, and saying so is the query's job."""
    try:
        with open(Path(root) / SUSPECTS, "a", encoding="utf-8") as f:
            f.write("".join(r + "\n" for r in rels))
    except OSError:
        pass


def suspects(root: Path | str) -> set[str]:
    try:
        return {line.strip() for line in (Path(root) / SUSPECTS).read_text(encoding="utf-8").splitlines() if line.strip()}
    except (OSError, ValueError):
        return set()


def clear_suspects(root: Path | str) -> None:
    try:
        (Path(root) / SUSPECTS).unlink()
    except OSError:
        pass


def warn(msg: str) -> None:
    print(f"deja: {msg}", file=sys.stderr)
