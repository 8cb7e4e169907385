"""What a person writes into their memory by hand (`deja remember`, `promote`,
`forget`): the primary files and the catalog tables behind them.

* ``notes.jsonl`` and the tombstones file are primary data outside the cache:
  lines are only appended to them (a tombstone is lifted by rewriting the file
  without its line, atomically);
* the catalog's ``lifecycle`` table (a promoted session's state), its
  ``tombstones`` table (forgotten sessions: every index run skips them) and the
  manifest row that makes a lifted tombstone's harness be read again.

Paths come from the caller (deja.stages.sources.notes knows where they live);
catalog writes run under the writer lock, so no index run lands in between.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from deja.stages.store.catalog import Store
from deja.stages.store.private import private_dir, private_file


# --------------------------------------------------------------------------- primary files


def append_json_line(path: Path, rec: dict) -> Path:
    """One line onto a JSON-lines file (never rewritten); a torn last line gets its newline first."""
    private_dir(path.parent)
    line = json.dumps(rec, ensure_ascii=False) + "\n"
    new = not path.exists()
    with open(path, "a+b") as fh:
        if new:
            private_file(path)
        fh.seek(0, os.SEEK_END)
        if fh.tell():
            fh.seek(-1, os.SEEK_END)
            if fh.read(1) != b"\n":
                line = "\n" + line
        fh.seek(0, os.SEEK_END)
        fh.write(line.encode("utf-8"))
    return path


def add_tombstone_lines(path: Path, keys: list[str], have: set[str]) -> None:
    """Append the keys not already in the file (``have``), one a line."""
    private_dir(path.parent)
    new = [k for k in keys if k not in have]
    if new:
        created = not path.exists()
        with open(path, "a", encoding="utf-8") as fh:
            if created:
                private_file(path)
            if path.stat().st_size and not path.read_bytes().endswith(b"\n"):
                fh.write("\n")
            fh.write("".join(k + "\n" for k in new))


def remove_tombstone_line(path: Path, key: str) -> None:
    if path.exists():
        kept = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip() != key]
        tmp = path.with_suffix(".tmp")
        tmp.write_text("".join(ln + "\n" for ln in kept), encoding="utf-8")
        os.chmod(tmp, path.stat().st_mode & 0o777)  # the rewrite keeps the file's permissions
        os.replace(tmp, path)


# --------------------------------------------------------------------------- catalog


def catalog_write(store: Store, fn, lock_wait: float, notice=None):
    """``fn(con)`` on the catalog under the writer lock (no index run in between).
    Raises catalog.Busy when another writer holds the lock past ``lock_wait``."""
    with store.writer_lock(lock_wait, notice=notice):
        store.init()
        con = store.connect(retries=100)
        try:
            return fn(con)
        finally:
            con.close()


def record_lifecycle(con, rows: list[list]) -> None:
    """(session_key, state, note, at) rows: the newest row per session is its state."""
    con.executemany('INSERT INTO lifecycle (session_key, state, note, "at") VALUES (?, ?, ?, ?)', rows)


def write_tombstones(con, rows: list[list]) -> None:
    """(session_key, project, created, reason) rows."""
    con.executemany("INSERT OR REPLACE INTO tombstones VALUES (?, ?, ?, ?)", rows)


def lift_tombstone(con, key: str, harness: str) -> None:
    con.execute("DELETE FROM tombstones WHERE session_key = ?", [key])
    # its files were read while it was tombstoned: read that harness's files again
    con.execute("UPDATE manifest SET content_version = -1 WHERE harness = ?", [harness])


def forget_file_sessions(store: Store) -> None:
    """What the transcripts said about tombstoned sessions leaves the catalog
    (after the run that removed their records committed)."""
    con = store.connect(retries=100)
    try:
        con.execute("DELETE FROM file_sessions WHERE session_key IN (SELECT session_key FROM tombstones)")
    finally:
        con.close()


def _read_rows(store: Store, sql: str) -> list[tuple]:
    """Rows of a small catalog table, or none when there is no catalog or it cannot be read now."""
    if not store.exists():
        return []
    try:
        con = store.connect(read_only=True, retries=20)
        try:
            return con.execute(sql).fetchall()
        finally:
            con.close()
    except Exception:
        return []


def tombstone_rows(store: Store) -> list[tuple]:
    """(session_key, project, created, reason) from the catalog."""
    return _read_rows(store, "SELECT session_key, project, created, reason FROM tombstones")


def packet_rows(store: Store) -> list[tuple]:
    """(harness, session_id, workspace, created) of the compaction-recovery packets."""
    return _read_rows(store, "SELECT harness, session_id, workspace, created FROM packets")
