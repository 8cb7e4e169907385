"""Read-only access to the live store for queries, hooks and analysts' helpers.

Opens the catalog read-only just long enough to learn which Parquet files are
live, then queries them from an in-memory DuckDB connection. A writer holding
the catalog at that instant makes this raise ``Busy``: the CLI retries, hooks
treat it as a miss.
"""

from __future__ import annotations

from pathlib import Path

from deja import duck as duckdb  # the compiled core: see deja/duck.py

from deja.stages.write import ALL_BUCKETS  # (imports nothing heavy)
from deja.store import Busy, Store


class LiveStore:
    """The live Parquet files and the in-memory connection whose views read them."""

    def __init__(self, root: Path, files: dict[str, list[str]], con: duckdb.DuckDBPyConnection,
                 part_keys: dict[str, list[str] | None] | None = None, states: set[str] | None = None,
                 records_view: bool = True):
        self.root, self.files, self.con = root, files, con
        self.part_keys = part_keys or {}  # records part → the sessions it holds (None: unknown)
        # `deja promote` states in use (None: not known, assume any): lookups are skipped without them
        self.any_lifecycle = states is None or bool(states)
        self.any_rejected = states is None or "rejected" in states
        self.records_view = records_view  # the `records` view exists (see records_source)

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
        if not duckdb.is_shared(self.con):  # the process's own connection outlives this store
            self.con.close()


class NoIndex(Exception):
    pass


def open_live(root: Path, retries: int = 20, con: duckdb.DuckDBPyConnection | None = None,
              attached: bool = False, records_view: bool = True) -> LiveStore:
    """The live store as views on one in-memory DuckDB connection.

    The catalog is ATTACHed read-only just long enough to read which files are
    live, rather than opened as a second database: one DuckDB instance per
    query is a large share of a search's whole-process budget. ``con`` lets the
    freshness check, which ran first, hand over its connection; ``attached``:
    with the catalog still attached to it as ``cat`` (read-only).
    ``records_view``: False for a caller that reads records only through
    ``records_of``/``records_source`` (binding the view over every part costs
    a search ~3 ms).
    """
    store = Store(root)
    if not store.exists():
        raise NoIndex(f"no index at {root}; run `deja index` first")
    con = con or duckdb.connect()
    if not attached:
        attach_catalog(con, store, retries)
    root = str(store.root)
    try:
        files: dict[str, list[str]] = {}
        part_keys: dict[str, list[str] | None] = {}
        try:
            rows = con.execute("SELECT dataset, file, session_keys FROM cat.generation ORDER BY file").fetchall()
        except duckdb.BinderException:  # a catalog from before session_keys
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
    sessions = files.get("sessions", [])
    if sessions:
        con.execute(f"CREATE OR REPLACE VIEW sessions AS SELECT * FROM read_parquet({_list(sessions)})")
    else:
        con.execute("CREATE OR REPLACE VIEW sessions AS SELECT NULL::VARCHAR AS session_key, NULL::INTEGER AS ord WHERE false")
    deletes = files.get("deletes", [])
    if deletes:
        con.execute(f"CREATE OR REPLACE VIEW deletes AS SELECT record_id FROM read_parquet({_list(deletes)})")
    else:
        con.execute("CREATE OR REPLACE VIEW deletes AS SELECT NULL::BIGINT AS record_id WHERE false")
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
    return LiveStore(store.root, files, con, part_keys, {r[1] for r in lifecycle}, records_view)


def attach_catalog(con: duckdb.DuckDBPyConnection, store: Store, retries: int = 20) -> None:
    """ATTACH the catalog read-only as `cat`; a writer holding it raises Busy."""
    store.attach(con, "cat", read_only=True, retries=retries)


def _lifecycle_rows(cat) -> list:
    try:
        return cat.execute(
            'SELECT session_key, arg_max(state, "at"), arg_max(note, "at"), max("at") FROM cat.lifecycle GROUP BY session_key'
        ).fetchall()
    except duckdb.Error:  # a catalog from before the lifecycle table
        return []


def _list(paths: list[str]) -> str:
    return "[" + ", ".join("'" + p.replace("'", "''") + "'" for p in paths) + "]"


__all__ = ["Busy", "LiveStore", "NoIndex", "open_live"]
