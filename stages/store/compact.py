"""Merging small parts when incremental runs pile them up.

Every incremental run adds parts: a records part per touched partition, a
vocabulary part, and postings — a part per touched bucket from a big run, one
``bucket=all`` part from a small one. Replaced files leave dead postings
listed in ``deletes``. Queries stay correct either way; compaction keeps them
fast and the store small. It runs inside an index run, under the writer lock,
and commits like one: new parts first, then one catalog transaction, then
garbage collection.

The merges go from Parquet to Parquet in bounded memory (stages/store/merge.py): a
small one is one DuckDB COPY, a large one is cut into key ranges that each fit
DuckDB's memory limit, so no merge holds memory in proportion to the store or
fails for want of it. A folder over its limit
merges size-tiered: when its largest part outweighs the rest together, only
the rest are merged, so a month's or a bucket's big part is not rewritten for
every few small ones. ``bucket=all`` parts merge among themselves until they
hold ``SPLIT_ROWS`` postings, then are split into their buckets.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from . import duck, layout, merge, write
from .catalog import Store
from .layout import N_BUCKETS, bucket_of
from .limits import bound_memory

MAX_PARTS = 8  # per folder: a postings bucket, a records partition, docs, vocab
DEAD_SHARE = 0.05
SPLIT_ROWS = 100_000  # bucket=all postings beyond this go to their buckets

ALL_FOLDER = f"postings/bucket={layout.ALL_BUCKETS}"


def needs_compaction(con, vocab_parts: int = MAX_PARTS) -> bool:
    """``vocab_parts``: how many vocabulary parts may stay (a big run keeps one:
    every search reads them all, and merging costs a big run little)."""
    rows = con.execute(
        "SELECT dataset, file, rows FROM generation WHERE dataset IN ('postings', 'records', 'docs', 'deletes', 'vocab')"
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
            vocab_parts: int = MAX_PARTS, chunk: int | None = None) -> int:
    """Merge parts; returns the number of files merged away. Caller holds the writer lock.
    ``checked``: the caller already found compaction due (needs_compaction).
    ``con``: the process's in-memory DuckDB (the catalog is attached to it),
    bounded by limits.bound_memory, which said how big a ``chunk`` merges sort at a time."""
    if con is None or chunk is None:
        con = con or duck.connect()
        chunk = bound_memory(con, store.root)
    with store.catalog(con, retries=100) as cat:
        if not force and not checked and not needs_compaction(cat, vocab_parts):
            return 0
        rows = cat.execute(
            "SELECT dataset, file, rows FROM generation WHERE dataset IN ('postings','records','docs','deletes','vocab')"
        ).fetchall()
        before = {r[0] for r in cat.execute("SELECT file FROM generation").fetchall()}
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
    # postings and docs part: when they are a noticeable share, or asked to.
    clear = bool(deletes) and (force or _dead_due(dead, live))
    merging = Merge(store, gen, con, [str(store.root / d) for d in deletes], chunk)
    committed = False
    try:
        for (dataset, folder), parts in sorted(groups.items()):
            if dataset == "postings" and folder == ALL_FOLDER:
                merging.deltas(parts, force, clear)
            elif dataset in ("postings", "docs") and clear:
                merging.parts(dataset, folder, [f for f, _ in parts])
            elif dataset == "vocab" and len(parts) > vocab_parts and (vocab_parts < MAX_PARTS or force):
                merging.parts(dataset, folder, [f for f, _ in parts])  # a big run's: one part
            else:
                picked = pick(parts, force)
                if picked:
                    merging.parts(dataset, folder, picked)
        merging.close()
        if clear:
            merging.dropped.extend(deletes)
        facts = store.part_facts(con, merging.new_parts)
        with store.catalog(con, retries=100) as cat:
            cat.execute("BEGIN TRANSACTION")
            if merging.dropped:
                cat.execute("DELETE FROM generation WHERE file IN (SELECT unnest(?))", [merging.dropped])
            store.add_parts(cat, merging.new_parts, gen, facts)
            cat.execute("COMMIT")
            committed = True
            store.collect_garbage(cat)
    finally:
        if not committed:  # a failed merge (a full disk) leaves no part behind
            merging.close()
            store.discard(before)
    return len(merging.dropped)


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

    def __init__(self, store: Store, gen: int, con, deletes: list[str], chunk_bytes: int):
        self.store, self.gen, self.con = store, gen, con
        self.chunk_bytes = chunk_bytes
        self.new_parts: list[tuple[str, str, int]] = []
        self.dropped: list[str] = []
        # the run's memory limit and spill folder (limits.bound_memory) hold here too
        if deletes:
            con.execute("CREATE OR REPLACE TEMP TABLE dead AS SELECT DISTINCT record_id FROM read_parquet(?)", [deletes])
        else:
            con.execute("CREATE OR REPLACE TEMP TABLE dead (record_id BIGINT)")

    def close(self) -> None:
        try:
            self.con.execute("DROP TABLE IF EXISTS dead")
        except duck.Error:  # (a connection a failure left unusable)
            pass

    def parts(self, dataset: str, folder: str, files: list[str]) -> None:
        """Merge ``files`` of one folder into one part, without dead records."""
        paths = [str(self.store.root / f) for f in files]
        if dataset == "vocab":
            select = ("SELECT token, any_value(stem) AS stem, sum(n)::BIGINT AS n FROM read_parquet($files) "
                      "WHERE $range GROUP BY token")
            keys, row_group, runs_of = layout.VOCAB_KEYS, layout.VOCAB_ROW_GROUP, None
        else:
            select = ("SELECT * FROM read_parquet($files, hive_partitioning=false) "
                      "WHERE $range AND record_id NOT IN (SELECT record_id FROM dead)")
            if dataset == "postings":
                keys, row_group, runs_of = layout.POSTINGS_KEYS, layout.POSTINGS_ROW_GROUP, None
            elif dataset == "docs":
                keys, row_group, runs_of = layout.DOCS_KEYS, layout.DOCS_ROW_GROUP, None
            else:
                keys, row_group, runs_of = layout.RECORDS_KEYS, layout.RECORDS_ROW_GROUP, "role"
        rel = f"{folder}/{self.store.new_part_name(self.gen)}"
        rows = merge.copy_sorted(self.con, select, paths, keys, self.store.root, rel, row_group, self.chunk_bytes,
                                 runs_of)
        self.add(dataset, rel, rows)
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
                rel = layout.postings_rel(b, name)
                rows = write.copy_query(
                    con, "SELECT s.* FROM split s JOIN split_buckets USING (token) WHERE bucket = ? "
                    f"ORDER BY {layout.POSTINGS_ORDER}", [b], self.store.root, rel, layout.POSTINGS_ROW_GROUP)
                self.add("postings", rel, rows)
        finally:
            con.execute("DROP TABLE IF EXISTS split")
            con.execute("DROP TABLE IF EXISTS split_buckets")
        self.dropped.extend(files)

    def add(self, dataset: str, rel: str, rows: int) -> None:
        if rows:
            self.new_parts.append((dataset, rel, rows))
