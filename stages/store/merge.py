"""Merging sorted Parquet parts into one, in bounded memory, whatever their size.

A merge reads parts that are each sorted by the dataset's order (postings by
token then record id, records by role then id, the vocabulary by stem then
token) and writes one part in that order. One DuckDB ``COPY … ORDER BY`` does
it while the parts are small; a large merge under a small memory limit makes
DuckDB's sort or hash aggregate raise "could not allocate block" instead of
spilling (bench/README.md, measured figures). So a merge bigger than ``chunk_bytes`` is cut into
ranges of its sort key, each small enough to sort in memory, and written in
key order into one part:

* the cut points come from the parts' row-group statistics (each part is
  sorted, so every row group's minimum key is a real key and the row groups'
  sizes say how many bytes lie between two of them): footers only, no data;
* each range is a query with a key-range filter, which DuckDB answers by
  reading only the row groups whose statistics overlap it;
* the ranges' rows stream as Arrow batches into one pyarrow writer.

Rows equal on the whole key land in one range, so a range may aggregate (the
vocabulary's GROUP BY token) as well as sort.
"""

from __future__ import annotations

import os
from pathlib import Path

from . import layout, write


def copy_sorted(con, select: str, files: list[str], keys: tuple[tuple[str, str], ...], root: Path, rel: str,
                row_group: int, chunk_bytes: int, runs_of: str | None = None) -> int:
    """Rows of ``select`` over ``files`` (it reads ``read_parquet($files)`` and
    may hold ``$range``, a filter, before its GROUP BY) in order of ``keys``
    ((column, SQL type) pairs, the parts' own sort order), written to
    ``root/rel``. Returns the row count; no rows, no file."""
    order = ", ".join(k for k, _ in keys)
    bounds = cut_points(con, files, keys, chunk_bytes)
    if not bounds:  # (a small merge: DuckDB's COPY, and no pyarrow to import in an appended turn's run)
        return write.copy_query(con, _sql(select, "TRUE") + f" ORDER BY {order}", [files], root, rel, row_group,
                                layout.RECORDS_GROUP_BYTES if runs_of else None)
    import duckdb  # noqa: F401  (the full package lends the core's connections relations: con.sql)
    import pyarrow.parquet as pq

    path = Path(root) / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    rows = 0
    writer = None
    try:
        for lo, hi in zip([None, *bounds], [*bounds, None]):
            where = _range(keys, lo, hi)
            reader = con.sql(_sql(select, where) + f" ORDER BY {order}", params=[files]).to_arrow_reader(row_group)
            for batch in _row_groups(reader, row_group, runs_of):
                if writer is None:
                    writer = pq.ParquetWriter(tmp, batch.schema, **layout.writer_options(batch.schema.names))
                write.write_run(writer, batch, row_group, runs_of)
                rows += batch.num_rows
        if writer is not None:
            writer.close()
            writer = None
    except BaseException:
        if writer is not None:
            writer.close()
        tmp.unlink(missing_ok=True)
        raise
    if not rows:
        tmp.unlink(missing_ok=True)
        return 0
    os.replace(tmp, path)  # a reader or analyst never sees a half-written part
    return rows


def cut_points(con, files: list[str], keys, chunk_bytes: int) -> list[tuple]:
    """Keys at which to cut a merge of ``files`` into ranges of about
    ``chunk_bytes`` (uncompressed); none when it fits in one."""
    cols = [k for k, _ in keys]
    picks = ", ".join(
        f"max(stats_min_value) FILTER (WHERE path_in_schema = '{c}')::{t} AS k{i}" for i, (c, t) in enumerate(keys)
    )
    rows = con.execute(
        f"SELECT any_value(row_group_bytes) AS b, {picks} FROM parquet_metadata(?) "
        "WHERE path_in_schema IN (SELECT unnest(?)) GROUP BY file_name, row_group_id "
        f"ORDER BY {', '.join(f'k{i}' for i in range(len(cols)))}",
        [files, cols],
    ).fetchall()
    if sum(r[0] or 0 for r in rows) <= chunk_bytes:
        return []
    bounds: list[tuple] = []
    acc = 0
    for b, *key in rows:
        if acc >= chunk_bytes and None not in key and (not bounds or tuple(key) > bounds[-1]):
            bounds.append(tuple(key))
            acc = 0
        acc += b or 0
    return bounds


def _sql(select: str, where: str) -> str:
    return select.replace("$files", "?").replace("$range", f"({where})")


def _range(keys, lo: tuple | None, hi: tuple | None) -> str:
    """Rows whose key tuple is ≥ ``lo`` and < ``hi``, spelled so that DuckDB
    can prune row groups by the first column's statistics."""
    parts = []
    if lo is not None:
        parts.append(_cmp(keys, lo, ">="))
    if hi is not None:
        parts.append(_cmp(keys, hi, "<"))
    return " AND ".join(parts) or "TRUE"


def _cmp(keys, values: tuple, op: str) -> str:
    """(k0, k1, …) ``op`` (v0, v1, …), lexicographic, for op in ≥ and <."""
    first, ftype = keys[0]
    v0 = _lit(values[0], ftype)
    if len(keys) == 1:
        return f"{first} {op} {v0}"
    strict = ">" if op == ">=" else "<"
    rest = _cmp(keys[1:], values[1:], op)
    # the redundant bound on the first column is what DuckDB pushes into the scan
    return f"({first} {strict}= {v0} AND ({first} {strict} {v0} OR ({first} = {v0} AND {rest})))"


def _lit(value, sqltype: str) -> str:
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return f"{int(value)}::{sqltype}"


def _row_groups(reader, size: int, runs_of: str | None):
    """Batches of ``reader`` regrouped into row groups of ``size`` rows, cut
    where ``runs_of`` changes value (records keep a row group per role)."""
    import pyarrow as pa

    pending: list = []
    n = 0
    last = None
    for batch in reader:
        for piece in _split_runs(batch, runs_of) if runs_of else [batch]:
            if not piece.num_rows:
                continue
            value = piece.column(runs_of)[0].as_py() if runs_of else None
            if pending and (value != last or n >= size):
                yield pa.Table.from_batches(pending).combine_chunks()
                pending, n = [], 0
            last = value
            pending.append(piece)
            n += piece.num_rows
    if pending:
        yield pa.Table.from_batches(pending).combine_chunks()


def _split_runs(batch, column: str):
    values = batch.column(column).to_pylist()
    start = 0
    for i in range(1, len(values)):
        if values[i] != values[i - 1]:
            yield batch.slice(start, i - start)
            start = i
    yield batch.slice(start)
