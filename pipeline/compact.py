"""Merging small parts when incremental runs pile them up.

Every incremental run adds parts: a records part per touched partition, a
vocabulary part, and postings — a part per touched bucket from a big run, one
``bucket=all`` part from a small one. Replaced files leave dead postings
listed in ``deletes``. Queries stay correct either way; compaction keeps them
fast and the store small. It runs inside an index run, under the writer lock,
and commits like one: new parts first, then one catalog transaction, then
garbage collection.

The merges are DuckDB COPYs from Parquet to Parquet: they stream through a
bounded amount of memory (spilling to the store's ``.tmp`` when a merge is
larger) instead of building the merged part in Arrow. A folder over its limit
merges size-tiered: when its largest part outweighs the rest together, only
the rest are merged, so a month's or a bucket's big part is not rewritten for
every few small ones. ``bucket=all`` parts merge among themselves until they
hold ``SPLIT_ROWS`` postings, then are split into their buckets.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from deja.stages import write
from deja.stages.tokenize import N_BUCKETS, bucket_of

from . import duck
from .store import Store

MAX_PARTS = 8  # per folder: a postings bucket, a records partition, vocab
DEAD_SHARE = 0.05
SPLIT_ROWS = 100_000  # bucket=all postings beyond this go to their buckets
# DuckDB's working memory for the merges; beyond it they spill to the store's
# .tmp. The end of a cold 1 GB run merges ~40 parts per folder on top of the
# flushes' high-water mark: with 256 MB compaction added ~145 MB to the peak,
# with 64 MB ~95 MB, for about a third more merge time.
MERGE_SETTINGS = {"memory_limit": "64MB"}

ALL_FOLDER = f"postings/bucket={write.ALL_BUCKETS}"


def needs_compaction(con, vocab_parts: int = MAX_PARTS) -> bool:
    """``vocab_parts``: how many vocabulary parts may stay (a big run keeps one:
    every search reads them all, and merging costs a big run little)."""
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
        per_dir[str(Path(file).parent)] += 1
    return (any(n > MAX_PARTS for n in per_dir.values()) or per_dir.get("vocab", 0) > vocab_parts
            or _dead_due(dead, live))


def _dead_due(dead: int, live: int) -> bool:
    return live > 0 and dead > DEAD_SHARE * live


def compact(store: Store, gen: int, force: bool = False, checked: bool = False, con=None,
            vocab_parts: int = MAX_PARTS) -> int:
    """Merge parts; returns the number of files merged away. Caller holds the writer lock.
    ``checked``: the caller already found compaction due (needs_compaction).
    ``con``: the process's in-memory DuckDB (the catalog is attached to it)."""
    con = con or duck.connect()
    with store.catalog(con, retries=100) as cat:
        if not force and not checked and not needs_compaction(cat, vocab_parts):
            return 0
        rows = cat.execute(
            "SELECT dataset, file, rows FROM generation WHERE dataset IN ('postings','records','deletes','vocab')"
        ).fetchall()
        live = {r[0] for r in cat.execute("SELECT file FROM generation").fetchall()}
    groups: dict[tuple[str, str], list[tuple[str, int]]] = defaultdict(list)
    deletes, dead, live = [], 0, 0
    for dataset, file, n in rows:
        if dataset == "deletes":
            deletes.append(file)
            dead += n or 0
            continue
        live += (n or 0) if dataset == "records" else 0
        groups[(dataset, str(Path(file).parent))].append((file, n or 0))
    # Dead postings are cleared, and the deletes dropped, only by rewriting every
    # postings part: when they are a noticeable share, or asked to.
    clear = bool(deletes) and (force or _dead_due(dead, live))
    merge = Merge(store, gen, con, [str(store.root / d) for d in deletes])
    committed = False
    try:
        for (dataset, folder), parts in sorted(groups.items()):
            if dataset == "postings" and folder == ALL_FOLDER:
                merge.deltas(parts, force, clear)
            elif dataset == "postings" and clear:
                merge.parts(dataset, folder, [f for f, _ in parts])
            elif dataset == "vocab" and len(parts) > vocab_parts:
                merge.parts(dataset, folder, [f for f, _ in parts])
            else:
                picked = pick(parts, force)
                if picked:
                    merge.parts(dataset, folder, picked)
        merge.close()
        if clear:
            merge.dropped.extend(deletes)
        facts = store.part_facts(con, merge.new_parts)
        with store.catalog(con, retries=100) as cat:
            cat.execute("BEGIN TRANSACTION")
            if merge.dropped:
                cat.execute("DELETE FROM generation WHERE file IN (SELECT unnest(?))", [merge.dropped])
            store.add_parts(cat, merge.new_parts, gen, facts)
            cat.execute("COMMIT")
            committed = True
            store.collect_garbage(cat)
    finally:
        if not committed:  # a failed merge (a full disk) leaves no part behind
            merge.close()
            store.discard(live)
    return len(merge.dropped)


def pick(parts: list[tuple[str, int]], force: bool = False) -> list[str]:
    """The parts of one folder to merge into one (size-tiered, see the module notes)."""
    if len(parts) <= 1 or (len(parts) <= MAX_PARTS and not force):
        return []
    ordered = sorted(parts, key=lambda p: -p[1])
    if not force and ordered[0][1] > sum(n for _, n in ordered[1:]):
        ordered = ordered[1:]
    return [f for f, _ in ordered] if len(ordered) > 1 else []


class Merge:
    """The merges of one compaction: new parts written, old ones to drop."""

    def __init__(self, store: Store, gen: int, con, deletes: list[str]):
        self.store, self.gen, self.con = store, gen, con
        self.new_parts: list[tuple[str, str, int]] = []
        self.dropped: list[str] = []
        for name, value in MERGE_SETTINGS.items():
            con.execute(f"SET {name} = '{value}'")
        con.execute("SET temp_directory = ?", [str(store.root / ".tmp")])
        if deletes:
            con.execute("CREATE OR REPLACE TEMP TABLE dead AS SELECT DISTINCT record_id FROM read_parquet(?)", [deletes])
        else:
            con.execute("CREATE OR REPLACE TEMP TABLE dead (record_id BIGINT)")

    def close(self) -> None:
        try:
            self.con.execute("DROP TABLE IF EXISTS dead")
            for name in MERGE_SETTINGS:
                self.con.execute(f"RESET {name}")
        except duck.Error:  # (a connection a failure left unusable)
            pass

    def parts(self, dataset: str, folder: str, files: list[str]) -> None:
        """Merge ``files`` of one folder into one part, without dead records."""
        paths = [str(self.store.root / f) for f in files]
        if dataset == "vocab":
            sql = ("SELECT token, any_value(stem) AS stem, sum(n)::BIGINT AS n FROM read_parquet(?) "
                   f"GROUP BY token ORDER BY {write.VOCAB_ORDER}")
            row_group = write.VOCAB_ROW_GROUP
        else:
            order = write.POSTINGS_ORDER if dataset == "postings" else write.RECORDS_ORDER
            sql = (f"SELECT * FROM read_parquet(?, hive_partitioning=false) "
                   f"WHERE record_id NOT IN (SELECT record_id FROM dead) ORDER BY {order}")
            row_group = write.POSTINGS_ROW_GROUP if dataset == "postings" else write.RECORDS_ROW_GROUP
        rel = f"{folder}/{self.store.new_part_name(self.gen)}"
        self.add(dataset, rel, write.copy_query(self.con, sql, [paths], self.store.root, rel, row_group))
        self.dropped.extend(files)

    def deltas(self, parts: list[tuple[str, int]], force: bool, clear: bool) -> None:
        """``bucket=all`` parts: merged together while small, then split into their
        buckets. ``clear``: every part is rewritten (the deletes go after this)."""
        if len(parts) <= MAX_PARTS and not force and not clear:
            return
        files = [f for f, _ in parts]
        if sum(n for _, n in parts) > SPLIT_ROWS:
            self.split(files)
        elif len(parts) > 1 or clear:
            self.parts("postings", ALL_FOLDER, files)

    def split(self, files: list[str]) -> None:
        """``bucket=all`` parts → one part per bucket."""
        con = self.con
        paths = [str(self.store.root / f) for f in files]
        con.execute("CREATE OR REPLACE TEMP TABLE split AS SELECT * FROM read_parquet(?, hive_partitioning=false) "
                    "WHERE record_id NOT IN (SELECT record_id FROM dead)", [paths])
        try:
            tokens = [r[0] for r in con.execute("SELECT DISTINCT token FROM split").fetchall()]
            write.load_lists(con, "split_buckets", (("token", "VARCHAR"), ("bucket", "INTEGER")),
                             {"token": tokens, "bucket": [bucket_of(t) for t in tokens]})
            name = self.store.new_part_name(self.gen)
            for b in range(N_BUCKETS):
                rel = write.postings_rel(b, name)
                rows = write.copy_query(
                    con, "SELECT s.* FROM split s JOIN split_buckets USING (token) WHERE bucket = ? "
                    f"ORDER BY {write.POSTINGS_ORDER}", [b], self.store.root, rel, write.POSTINGS_ROW_GROUP)
                self.add("postings", rel, rows)
        finally:
            con.execute("DROP TABLE IF EXISTS split")
            con.execute("DROP TABLE IF EXISTS split_buckets")
        self.dropped.extend(files)

    def add(self, dataset: str, rel: str, rows: int) -> None:
        if rows:
            self.new_parts.append((dataset, rel, rows))
