"""Merging small parts when incremental runs pile them up.

Every incremental run adds a delta part per touched records partition and
postings bucket, and replaced files leave dead postings listed in ``deletes``.
Queries stay correct either way; compaction keeps them fast and the store
small. It runs inside an index run, under the writer lock, and commits like
one: new parts first, then one catalog transaction, then garbage collection.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from deja.stages import write

from .store import Store

MAX_PARTS_PER_BUCKET = 8
MAX_VOCAB_PARTS = 8
MAX_PARTS_PER_PARTITION = 8
DEAD_SHARE = 0.05


def needs_compaction(con) -> bool:
    rows = con.execute(
        "SELECT dataset, file, rows FROM generation WHERE dataset IN ('postings', 'records', 'deletes', 'vocab')"
    ).fetchall()
    per_dir = defaultdict(int)
    dead = live = 0
    for dataset, file, n in rows:
        if dataset == "deletes":
            dead += n or 0
            continue
        if dataset == "records":
            live += n or 0
        per_dir[(dataset, str(Path(file).parent))] += 1
    limit = {"postings": MAX_PARTS_PER_BUCKET, "records": MAX_PARTS_PER_PARTITION, "vocab": MAX_VOCAB_PARTS}
    if any(n > limit[d] for (d, _), n in per_dir.items()):
        return True
    return live > 0 and dead > DEAD_SHARE * live


def compact(store: Store, gen: int, force: bool = False, checked: bool = False) -> int:
    """Merge parts; returns the number of files merged away. Caller holds the writer lock.
    ``checked``: the caller already found compaction due (needs_compaction)."""
    con = store.connect(retries=100)
    try:
        if not force and not checked and not needs_compaction(con):
            return 0
        rows = con.execute("SELECT dataset, file FROM generation WHERE dataset IN ('postings','records','deletes','vocab')").fetchall()
    finally:
        con.close()
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    deletes = []
    for dataset, file in rows:
        if dataset == "deletes":
            deletes.append(str(store.root / file))
        else:
            groups[(dataset, str(Path(file).parent))].append(file)
    import duckdb  # the full package: relations to Arrow, only when there is merging to do

    q = duckdb.connect()
    new_parts: list[tuple[str, str, int]] = []
    dropped: list[str] = []
    try:
        if deletes:
            q.execute("CREATE TABLE dead AS SELECT DISTINCT record_id FROM read_parquet(?)", [deletes])
        else:
            q.execute("CREATE TABLE dead (record_id BIGINT)")
        has_dead = bool(deletes)
        for (dataset, folder), files in sorted(groups.items()):
            if dataset == "vocab":
                if len(files) > MAX_VOCAB_PARTS or (force and len(files) > 1):
                    merged = _merge_vocab(q, [str(store.root / f) for f in files])
                    rel = f"vocab/{store.new_part_name(gen)}"
                    write.write_table(merged, store.root, rel, write.VOCAB_ROW_GROUP)
                    new_parts.append(("vocab", rel, merged.num_rows))
                    dropped.extend(files)
                continue
            limit = MAX_PARTS_PER_BUCKET if dataset == "postings" else MAX_PARTS_PER_PARTITION
            # postings with dead ids are rewritten even when few: that is what lets deletes be cleared
            if len(files) <= 1 and not (has_dead and dataset == "postings"):
                continue
            if len(files) <= limit and not force and not has_dead:
                continue
            paths = [str(store.root / f) for f in files]
            order = "token, record_id" if dataset == "postings" else "session_key, seq"
            table = q.sql(
                f"SELECT * FROM read_parquet(?, hive_partitioning=false) "
                f"WHERE record_id NOT IN (SELECT record_id FROM dead) ORDER BY {order}",
                params=[paths],
            ).to_arrow_table()
            name = store.new_part_name(gen)
            rel = f"{folder}/{name}"
            if table.num_rows:
                rg = write.POSTINGS_ROW_GROUP if dataset == "postings" else write.RECORDS_ROW_GROUP
                write.write_table(table, store.root, rel, rg)
                new_parts.append((dataset, rel, table.num_rows))
            dropped.extend(files)
    finally:
        q.close()
    if has_dead:
        dropped.extend(str(Path(d).relative_to(store.root).as_posix()) for d in deletes)
    con = store.connect(retries=100)
    try:
        con.execute("BEGIN TRANSACTION")
        if dropped:
            con.executemany("DELETE FROM generation WHERE file = ?", [[f] for f in dropped])
        if new_parts:
            con.executemany("INSERT INTO generation VALUES (?, ?, ?, ?)", [[d, f, gen, n] for d, f, n in new_parts])
        con.execute("COMMIT")
        store.collect_garbage(con)
    finally:
        con.close()
    return len(dropped)


def _merge_vocab(q, paths: list[str]):
    return q.sql(
        "SELECT token, any_value(stem) AS stem, sum(n)::BIGINT AS n FROM read_parquet(?) GROUP BY token ORDER BY stem, token",
        params=[paths],
    ).to_arrow_table()
