"""Reading another program's SQLite database: one consistent snapshot, the live file never touched.

Every SQLite-backed reader (Cursor's state.vscdb, opencode, later Goose, Zed,
Hermes…) opens its store through ``snapshot``. The live database belongs to
an agent that may be writing it right now, so deja

* never opens the live file with SQLite: a read-only connection still takes
  a shared lock (in rollback-journal mode that stalls the agent's commit for
  as long as we read), needs a ``-shm`` beside a WAL database (created if
  missing), and may try to roll back a hot journal. Instead the database and
  its ``-wal``/``-journal`` are copied with plain reads into a private temp
  folder, the stats taken before and after the copy must agree (else it is
  copied again: the agent wrote meanwhile), and the copy is opened. Opening
  the copy replays the copied WAL (committed transactions the agent has not
  checkpointed yet are seen) and rolls back a copied hot journal (a
  transaction in flight is not), so the snapshot is the last committed
  state. ``immutable=1`` on the live file would skip both and could read a
  half-written page.
* gives each store a time budget, ``DEJA_STORE_TIMEOUT`` seconds (default
  ten minutes) for copy and queries together. A store that runs out raises
  ``Unreadable``; the reader reports it as the file's error and the rest of
  the index still builds (the file is tried again next run).

A database that changed is read again whole, and only the sessions whose
fingerprint changed are written again (pipeline/ingest.py ``fingerprints``).

Light: ``sqlite3`` is imported when a snapshot is opened, never at import.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping

DEFAULT_TIMEOUT = 600.0
# The store files the incremental plan stats with their WAL (pipeline/manifest.py).
SQLITE_SUFFIXES = (".db", ".vscdb", ".sqlite", ".sqlite3")
# WAL and rollback journals: without them the copy may lack committed data
# (WAL) or hold half a transaction (journal).
SIDE_FILES = ("-wal", "-journal")
_HEADER = b"SQLite format 3\x00"
_COPY_TRIES = 5
_CHUNK = 4 << 20


class Unreadable(Exception):
    """The store cannot be read this run; the message is one line for the person."""


class Empty(Unreadable):
    """A zero-byte file: an agent created it and wrote nothing yet (no sessions, no error)."""


def timeout_seconds(env: Mapping[str, str] | None = None) -> float:
    raw = (env if env is not None else os.environ).get("DEJA_STORE_TIMEOUT")
    try:
        value = float(raw) if raw else DEFAULT_TIMEOUT
    except ValueError:
        return DEFAULT_TIMEOUT
    return value if value > 0 else DEFAULT_TIMEOUT


def stat_key(path: str) -> tuple[int, int]:
    """(size, mtime_ns) of a database with its WAL: a WAL-mode agent writes only
    the ``-wal`` between checkpoints, so the main file's stat alone would call
    a changed store unchanged. Raises OSError when the database is gone."""
    st = os.stat(path)
    size, mtime = st.st_size, st.st_mtime_ns
    try:
        w = os.stat(path + "-wal")
        size, mtime = size + w.st_size, max(mtime, w.st_mtime_ns)
    except OSError:
        pass
    return size, mtime


class Snapshot:
    """``with snapshot(path) as snap:`` a private copy of the store, opened
    (``snap.con``), removed on exit. ``snap.check()`` in long Python loops;
    queries are stopped by SQLite itself when the budget runs out."""

    def __init__(self, path: str, env: Mapping[str, str] | None = None):
        self.path = path
        self.budget = timeout_seconds(env)
        self.deadline = time.monotonic() + self.budget
        self.tmp = ""
        self.con = None

    # -- budget -----------------------------------------------------------
    def out_of_time(self) -> bool:
        return time.monotonic() > self.deadline

    def check(self) -> None:
        if self.out_of_time():
            raise self.timeout()

    def timeout(self) -> Unreadable:
        return Unreadable(f"reading this database took longer than DEJA_STORE_TIMEOUT ({self.budget:g} s): "
                          "skipped this run")

    # -- open -------------------------------------------------------------
    def __enter__(self) -> "Snapshot":
        try:
            self._open()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self.con is not None:
            try:
                self.con.close()
            except Exception:
                pass
            self.con = None
        if self.tmp:
            import shutil

            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = ""

    def _open(self) -> None:
        import sqlite3

        copy = self._copy()
        try:
            con = sqlite3.connect(copy, timeout=0, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise Unreadable(f"cannot open the database copy: {exc}") from None
        self.con = con
        con.set_progress_handler(lambda: 1 if self.out_of_time() else 0, 20_000)
        try:
            con.execute("SELECT count(*) FROM sqlite_master").fetchone()  # replays the WAL, rolls back a journal
            con.execute("PRAGMA query_only = ON")
        except sqlite3.Error as exc:
            raise self.failure(exc) from None

    def failure(self, exc: Exception) -> Unreadable:
        """A sqlite3 error as the one line the person reads."""
        if self.out_of_time() or "interrupted" in str(exc):
            return self.timeout()
        text = str(exc)
        if "not a database" in text or "malformed" in text or "corrupt" in text:
            return Unreadable(f"not a readable SQLite database ({text})")
        return Unreadable(f"SQLite: {text}")

    def _copy(self) -> str:
        try:
            with open(self.path, "rb") as fh:
                head = fh.read(len(_HEADER))
        except OSError as exc:
            raise Unreadable(f"cannot be read ({exc.strerror or type(exc).__name__})") from None
        if not head:
            raise Empty("empty")
        if head != _HEADER:
            raise Unreadable("not a readable SQLite database (no SQLite header)")
        import tempfile

        self.tmp = tempfile.mkdtemp(prefix="deja-sqlite-")
        dest = os.path.join(self.tmp, "store.db")
        for _ in range(_COPY_TRIES):
            before = self._stats()
            for suffix in ("",) + SIDE_FILES:
                target = dest + suffix
                if os.path.exists(target):
                    os.unlink(target)
                if before.get(suffix) is not None:
                    self._copy_file(self.path + suffix, target)
            if self._stats() == before:
                return dest
            time.sleep(0.05)
        raise Unreadable(f"kept changing while it was copied ({_COPY_TRIES} tries): read again next run")

    def _stats(self) -> dict[str, tuple | None]:
        out: dict[str, tuple | None] = {}
        for suffix in ("",) + SIDE_FILES:
            try:
                st = os.stat(self.path + suffix)
                out[suffix] = (st.st_size, st.st_mtime_ns, st.st_ino)
            except FileNotFoundError:
                out[suffix] = None
            except OSError as exc:
                raise Unreadable(f"cannot be read ({exc.strerror or type(exc).__name__})") from None
        if out[""] is None:
            raise Unreadable("vanished while it was read")
        return out

    def _copy_file(self, src: str, dest: str) -> None:
        try:
            with open(src, "rb") as fi, open(dest, "wb") as fo:
                while chunk := fi.read(_CHUNK):
                    fo.write(chunk)
                    self.check()
        except FileNotFoundError:
            return  # a side file gone between stat and open: the second stat sees it
        except OSError as exc:
            raise Unreadable(f"cannot be copied ({exc.strerror or type(exc).__name__})") from None

    # -- queries ----------------------------------------------------------
    def rows(self, sql: str, args: tuple = ()):
        """The rows of ``sql``, with the budget and SQLite's errors as ``Unreadable``."""
        import sqlite3

        try:
            for row in self.con.execute(sql, args):
                yield row
        except sqlite3.Error as exc:
            raise self.failure(exc) from None

    def tables(self) -> set[str]:
        return {r[0] for r in self.rows("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}

    def columns(self, table: str) -> set[str]:
        """Probe optional columns rather than assume them (harness-formats 1.5)."""
        return {r[1] for r in self.rows(f"PRAGMA table_info({_quote(table)})")}


def snapshot(path: str, env: Mapping[str, str] | None = None) -> Snapshot:
    return Snapshot(path, env)


def read_store(path: str, build, who: str):
    """The one read of a SQLite-backed store: ``build(snapshot)`` makes the
    ReadResult from a consistent copy. An empty file is no sessions; a store
    that is unreadable, corrupt or over its time budget is that file's error;
    a reader that fails costs that store only, never the run."""
    from .base import ReadResult
    from .locate import is_regular_file

    if not is_regular_file(path):
        return ReadResult(error=f"not a readable regular file: {path}")
    try:
        with snapshot(path) as snap:
            return build(snap)
    except Empty:
        return ReadResult()
    except Unreadable as exc:
        return ReadResult(error=str(exc))
    except Exception as exc:  # one bad store costs that store, never the run
        return ReadResult(error=f"{who} reader failed: {type(exc).__name__}: {exc}")


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
