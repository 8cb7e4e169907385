"""Writing immutable Parquet parts. Callers decide names and commit them.

Records are Hive-partitioned ``records/harness=<h>/month=<YYYY-MM>/``; postings
``postings/bucket=<NN>/``, sorted by token so a query's filter skips row
groups; sessions is one small file rewritten whenever a run changes it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

COMPRESSION = "zstd"
# Small row groups in postings: a query for one token reads one or two of them.
POSTINGS_ROW_GROUP = 16_384
RECORDS_ROW_GROUP = 8_192
NO_MONTH = "none"


def month_column(ts: pa.ChunkedArray) -> pa.Array:
    months = pc.strftime(ts, format="%Y-%m")
    return pc.fill_null(months, NO_MONTH)


def write_records(table: pa.Table, harness: str, root: Path, name: str) -> list[tuple[str, int]]:
    """One part per month present in ``table``; returns [(relative path, rows)]."""
    out = []
    months = month_column(table.column("ts"))
    table = table.append_column("_month", months)
    for month in pc.unique(months).to_pylist():
        part = table.filter(pc.equal(table.column("_month"), month)).drop_columns(["_month"])
        # record_id order is file and turn order, and lets a lookup by id skip row groups
        part = part.sort_by([("record_id", "ascending")])
        rel = f"records/harness={harness}/month={month}/{name}"
        _write(part, root / rel, RECORDS_ROW_GROUP)
        out.append((rel, part.num_rows))
    return out


def write_postings(table: pa.Table, root: Path, name: str) -> list[tuple[str, int]]:
    """One part per bucket present; ``table`` must carry a ``bucket`` column."""
    out = []
    table = table.sort_by([("bucket", "ascending"), ("token", "ascending"), ("record_id", "ascending")])
    # rows are sorted by bucket: slice contiguous runs instead of filtering per bucket
    b = table.column("bucket").to_numpy()
    edges = [0, *(np.flatnonzero(np.diff(b)) + 1).tolist(), len(b)]
    for lo, hi in zip(edges, edges[1:]):
        if hi <= lo:
            continue
        bucket = int(b[lo])
        part = table.slice(lo, hi - lo).drop_columns(["bucket"])
        rel = f"postings/bucket={bucket:02d}/{name}"
        _write(part, root / rel, POSTINGS_ROW_GROUP)
        out.append((rel, part.num_rows))
    return out


def vocab_of(postings: pa.Table, stem_many) -> pa.Table:
    """Distinct tokens of a postings batch with their stem and posting count:
    what the close, stemmed and fuzzy search rungs expand a query word against."""
    counts = postings.group_by("token").aggregate([("record_id", "count")])
    tokens = counts.column("token")
    return pa.table(
        {
            "token": tokens,
            "stem": pa.array(stem_many(tokens.to_pylist()), pa.string()),
            "n": pc.cast(counts.column("record_id_count"), pa.int64()),
        }
    ).sort_by([("stem", "ascending"), ("token", "ascending")])


# Vocabulary lookups are by stem (a word's own stem finds it and its forms):
# sorted by stem in small row groups, a lookup reads a few of them.
VOCAB_ROW_GROUP = 4_096


def write_table(table: pa.Table, root: Path, rel: str, row_group: int = 65_536) -> tuple[str, int]:
    _write(table, root / rel, row_group)
    return rel, table.num_rows


def _write(table: pa.Table, path: Path, row_group: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    pq.write_table(
        table,
        tmp,
        compression=COMPRESSION,
        row_group_size=row_group,
        use_dictionary=True,
        write_statistics=True,
    )
    tmp.replace(path)  # a reader or analyst never sees a half-written part
