"""Read-only access to the live store for queries, hooks and analysts' helpers.

Opens the catalog read-only just long enough to learn which Parquet files are
live, then queries them from an in-memory DuckDB connection. A writer holding
the catalog at that instant makes this raise ``Busy``: the CLI retries, hooks
treat it as a miss.

A damaged part (torn, missing, unreadable) is met only when a query reads it:
no search pays to verify every part. The DuckDB error names the file; the
part leaves this store's views and the query runs again on the rest
(``LiveStore.tolerant``), and the command says once what repairs it.
"""

from __future__ import annotations

import os
from pathlib import Path

from . import duck  # DuckDB's compiled core (duck.py)

from .layout import ALL_BUCKETS, LATE_SESSION_COLUMNS
from .catalog import Busy, Store


class LiveStore:
    """The live Parquet files and the in-memory connection whose views read them."""

    def __init__(self, root: Path, files: dict[str, list[str]], con: duck.DuckDBPyConnection,
                 part_keys: dict[str, list[str] | None] | None = None, states: set[str] | None = None,
                 records_view: bool = True):
        self.root, self.files, self.con = root, files, con
        self.part_keys = part_keys or {}  # records part → the sessions it holds (None: unknown)
        # `deja promote` states in use (None: not known, assume any): lookups are skipped without them
        self.any_lifecycle = states is None or bool(states)
        self.any_rejected = states is None or "rejected" in states
        self.records_view = records_view  # the `records` view exists (see records_source)
        self.damaged: list[str] = []  # parts left out: a query met them torn, missing or unreadable

    def tolerant(self, fn):
        """``fn()``, run again without each damaged part it meets."""
        while True:
            try:
                return fn()
            except duck.Error as exc:
                part = self.damaged_part(exc)
                if part is None:
                    raise
                self.leave_out(part)

    def damaged_part(self, exc: BaseException) -> str | None:
        """The live part a DuckDB error names, when it is damaged; None when the
        error is another, or the part was replaced by a run that committed after
        this store was opened (the caller lists the live files again)."""
        msg = str(exc)
        for paths in self.files.values():
            for path in paths:
                if path in msg:
                    return path if os.path.exists(path) or _still_live(self.root, path) else None
        return None

    def leave_out(self, part: str) -> None:
        if part in self.files.get("sessions", []):
            # every answer names its sessions: there is no rest to answer from
            raise Damaged(f"part {part[len(str(self.root)) + 1:]} is damaged; run `deja index` to repair it")
        for paths in self.files.values():
            if part in paths:
                paths.remove(part)
        self.part_keys.pop(part, None)
        self.damaged.append(part)
        _views(self.con, self.files, self.records_view)

    def damage_notice(self) -> str | None:
        """One line for stderr naming the damaged parts met, and what repairs them."""
        if not self.damaged:
            return None
        rels = [p[len(str(self.root)) + 1:] for p in self.damaged]
        if len(rels) == 1:
            return f"deja: part {rels[0]} is damaged; run `deja index` to repair it (answering from the rest)"
        return (f"deja: {len(rels)} parts are damaged ({', '.join(rels[:3])}{' …' if len(rels) > 3 else ''}); "
                "run `deja index` to repair them (answering from the rest)")

    def has(self, dataset: str) -> bool:
        return bool(self.files.get(dataset))

    def postings_for_buckets(self, buckets: set[int]) -> list[str]:
        """The postings parts that can hold tokens of these buckets: the buckets'
        own, and the parts of small runs that hold every bucket (``bucket=all``)."""
        wanted = {f"bucket={b:02d}" for b in buckets} | {f"bucket={ALL_BUCKETS}"}
        return [f for f in self.files.get("postings", []) if f.rsplit("/", 2)[-2] in wanted]

    def records_of(self, keys) -> str:
        """A FROM source for the records of these sessions that opens only the
        parts holding them. Every part costs a footer read, and a fetch by id
        decompresses each part's text whole (DuckDB prunes row groups by ranges,
        not by id lists): a few sessions' snippets read a few parts, not all."""
        keys = set(keys)
        every = self.files.get("records", [])
        parts = [f for f in every if (held := self.part_keys.get(f)) is None or not keys.isdisjoint(held)]
        if len(parts) == len(every):
            return self.records_source()
        if not parts:
            return f"(SELECT * FROM read_parquet({_list(every[:1])}, hive_partitioning=true) LIMIT 0)"
        return f"read_parquet({_list(parts)}, hive_partitioning=true)"

    def records_source(self) -> str:
        """A FROM source for every record: the ``records`` view, or without it
        (``open_live(records_view=False)``) the parts themselves."""
        if self.records_view:
            return "records"
        return f"read_parquet({_list(self.files.get('records', []))}, hive_partitioning=true)"

    def close(self) -> None:
        if not duck.is_shared(self.con):  # the process's own connection outlives this store
            self.con.close()


class NoIndex(Exception):
    pass


class Damaged(Exception):
    """A part no query can do without (sessions) is damaged: one line, what repairs it."""


def open_live(root: Path, retries: int = 20, con: duck.DuckDBPyConnection | None = None,
              attached: bool = False, records_view: bool = True) -> LiveStore:
    """The live store as views on one in-memory DuckDB connection.

    The catalog is ATTACHed read-only just long enough to read which files are
    live, rather than opened as a second database: one DuckDB instance per
    query is a large share of a search's whole-process budget. ``con`` lets the
    freshness check, which ran first, hand over its connection; ``attached``:
    with the catalog still attached to it as ``cat`` (read-only).
    ``records_view``: False for a caller that reads records only through
    ``records_of``/``records_source`` (binding the view over every part is
    time a search need not spend).
    """
    store = Store(root)
    if not store.exists():
        raise NoIndex(f"no index at {root}; run `deja index` first")
    con = con or duck.connect()
    if not attached:
        attach_catalog(con, store, retries)
    root = str(store.root)
    try:
        files: dict[str, list[str]] = {}
        part_keys: dict[str, list[str] | None] = {}
        try:
            rows = con.execute("SELECT dataset, file, session_keys FROM cat.generation ORDER BY file").fetchall()
        except duck.BinderException:  # a catalog from before session_keys
            rows = [(d, f, None) for d, f in con.execute("SELECT dataset, file FROM cat.generation ORDER BY file").fetchall()]
        for dataset, rel, keys in rows:
            path = root + "/" + rel  # (not pathlib: hundreds of parts)
            files.setdefault(dataset, []).append(path)
            if dataset == "records":
                part_keys[path] = keys
        lifecycle = _lifecycle_rows(con)
    finally:
        con.execute("DETACH cat")
    # `deja promote` states (small): the latest row per session, as a table the session object joins
    # OR REPLACE: the process's shared connection serves every open_live of the process
    con.execute('CREATE OR REPLACE TABLE lifecycle (session_key VARCHAR PRIMARY KEY, state VARCHAR, note VARCHAR, '
                '"at" TIMESTAMP)')
    if lifecycle:
        con.executemany("INSERT INTO lifecycle VALUES (?, ?, ?, ?)", lifecycle)
    live = LiveStore(store.root, files, con, part_keys, {r[1] for r in lifecycle}, records_view)
    live.tolerant(lambda: _views(con, files, records_view))  # a view binds its parts' footers now
    return live


def _views(con: duck.DuckDBPyConnection, files: dict[str, list[str]], records_view: bool) -> None:
    """The views of the live parts: sessions, deletes, docs, vocab and (``records_view``) records."""
    sessions = files.get("sessions", [])
    if sessions:
        con.execute(f"CREATE OR REPLACE VIEW sessions AS SELECT * FROM read_parquet({_list(sessions)})")
        have = {d[0] for d in con.execute("SELECT * FROM sessions LIMIT 0").description}
        late = [f"NULL::{t} AS {c}" for c, t in LATE_SESSION_COLUMNS if c not in have]
        if late:  # a part from before these columns (until the next run rewrites it)
            con.execute(f"CREATE OR REPLACE VIEW sessions AS SELECT *, {', '.join(late)} "
                        f"FROM read_parquet({_list(sessions)})")
    else:
        con.execute("CREATE OR REPLACE VIEW sessions AS SELECT NULL::VARCHAR AS session_key, NULL::INTEGER AS ord WHERE false")
    deletes = files.get("deletes", [])
    if deletes:
        con.execute(f"CREATE OR REPLACE VIEW deletes AS SELECT record_id FROM read_parquet({_list(deletes)})")
    else:
        con.execute("CREATE OR REPLACE VIEW deletes AS SELECT NULL::BIGINT AS record_id WHERE false")
    docs = files.get("docs", [])
    if docs:
        con.execute(f"CREATE OR REPLACE VIEW docs AS SELECT * FROM read_parquet({_list(docs)})")
    else:
        con.execute("CREATE OR REPLACE VIEW docs AS SELECT NULL::BIGINT AS record_id, NULL::INTEGER AS session, "
                    "NULL::TINYINT AS role, NULL::INTEGER AS rec_len WHERE false")
    vocab = files.get("vocab", [])
    if vocab:
        con.execute(f"CREATE OR REPLACE VIEW vocab AS SELECT * FROM read_parquet({_list(vocab)})")
    else:
        con.execute("DROP VIEW IF EXISTS vocab")
    records = files.get("records", [])
    if records and records_view:
        con.execute(f"CREATE OR REPLACE VIEW records AS SELECT * FROM read_parquet({_list(records)}, hive_partitioning=true)")
    else:
        con.execute("DROP VIEW IF EXISTS records")


def _still_live(root: Path, path: str) -> bool:
    """The catalog still lists this missing part (it is damaged, not replaced)."""
    store = Store(root)
    con = duck.connect()
    try:
        attach_catalog(con, store, retries=3)
        rel = path[len(str(store.root)) + 1:]
        return con.execute("SELECT count(*) FROM cat.generation WHERE file = ?", [rel]).fetchone()[0] > 0
    except (Busy, duck.Error):
        return False
    finally:
        con.close()


def attach_catalog(con: duck.DuckDBPyConnection, store: Store, retries: int = 20) -> None:
    """ATTACH the catalog read-only as `cat`; a writer holding it raises Busy."""
    from .catalog import CatalogUnreadable

    try:
        store.attach(con, "cat", read_only=True, retries=retries)
    except CatalogUnreadable as exc:
        raise Damaged(f"the index catalog cannot be read ({exc}); run `deja index` to rebuild it") from exc


def _lifecycle_rows(cat) -> list:
    try:
        return cat.execute(
            'SELECT session_key, arg_max(state, "at"), arg_max(note, "at"), max("at") FROM cat.lifecycle GROUP BY session_key'
        ).fetchall()
    except duck.Error:  # a catalog from before the lifecycle table
        return []


def _list(paths: list[str]) -> str:
    return "[" + ", ".join("'" + p.replace("'", "''") + "'" for p in paths) + "]"


__all__ = ["Busy", "Damaged", "LiveStore", "NoIndex", "open_live"]
