"""Read-only access to the live store for queries, hooks and analysts' helpers.

Opens the catalog read-only just long enough to learn which Parquet files are
live, then queries them from an in-memory DuckDB connection. A writer holding
the catalog at that instant makes this raise ``Busy``: the CLI retries, hooks
treat it as a miss.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb

from deja.store import Busy, Store


@dataclass
class LiveStore:
    root: Path
    files: dict[str, list[str]]
    con: duckdb.DuckDBPyConnection

    def has(self, dataset: str) -> bool:
        return bool(self.files.get(dataset))

    def postings_for_buckets(self, buckets: set[int]) -> list[str]:
        wanted = {f"bucket={b:02d}" for b in buckets}
        return [f for f in self.files.get("postings", []) if Path(f).parent.name in wanted]

    def close(self) -> None:
        self.con.close()


class NoIndex(Exception):
    pass


def open_live(root: Path, retries: int = 20) -> LiveStore:
    store = Store(root)
    if not store.exists():
        raise NoIndex(f"no index at {root}; run `deja index` first")
    cat = store.connect(read_only=True, retries=retries)
    try:
        files = {}
        for dataset, rel in cat.execute("SELECT dataset, file FROM generation ORDER BY file").fetchall():
            files.setdefault(dataset, []).append(str(store.root / rel))
    finally:
        cat.close()
    con = duckdb.connect()
    sessions = files.get("sessions", [])
    if sessions:
        con.execute(f"CREATE VIEW sessions AS SELECT * FROM read_parquet({_list(sessions)})")
    else:
        con.execute("CREATE VIEW sessions AS SELECT NULL::VARCHAR AS session_key, NULL::INTEGER AS ord WHERE false")
    deletes = files.get("deletes", [])
    if deletes:
        con.execute(f"CREATE VIEW deletes AS SELECT record_id FROM read_parquet({_list(deletes)})")
    else:
        con.execute("CREATE VIEW deletes AS SELECT NULL::BIGINT AS record_id WHERE false")
    vocab = files.get("vocab", [])
    if vocab:
        con.execute(f"CREATE VIEW vocab AS SELECT * FROM read_parquet({_list(vocab)})")
    records = files.get("records", [])
    if records:
        con.execute(f"CREATE VIEW records AS SELECT * FROM read_parquet({_list(records)}, hive_partitioning=true)")
    return LiveStore(store.root, files, con)


def _list(paths: list[str]) -> str:
    return "[" + ", ".join("'" + p.replace("'", "''") + "'" for p in paths) + "]"


__all__ = ["Busy", "LiveStore", "NoIndex", "open_live"]
