"""Writing immutable Parquet parts. Callers decide names and commit them.

Records are Hive-partitioned ``records/harness=<h>/month=<YYYY-MM>/``; postings
``postings/bucket=<NN>/``, sorted by token so a query's filter skips row
groups, plus ``postings/bucket=all/`` for the small parts of incremental runs
(every bucket's tokens in one file, until compaction splits them); sessions is
one small file rewritten whenever a run changes it.

Two writers, one layout. Arrow tables of a big run go through pyarrow
(``write_records_part``, ``write_bucket``, ``write_table``). Anything expressed as
a query — an appended turn's rows, the sessions, a purge, a compaction merge —
is COPYed by DuckDB's core (``copy_query``): small runs never import pyarrow,
and merges stream from Parquet to Parquet instead of materialising in Arrow.
Both give DuckDB, the readers' engine, the same column types (tests hold them
to it); DuckDB writes timestamps in microseconds where pyarrow kept ms.
"""

from __future__ import annotations

import os
from pathlib import Path

from . import footer
from .layout import (COMPRESSION, FREE_TEXT, NO_MONTH, POSTINGS_ROW_GROUP, RECORDS_GROUP_BYTES, RECORDS_ORDER,
                     RECORDS_ROW_GROUP, SESSION_TYPES, postings_rel, writer_options)

# ---------------------------------------------------------------------------
# DuckDB: queries and Python lists → Parquet


def copy_query(con, sql: str, params: list | dict | None, root: Path, rel: str, row_group: int = 65_536,
               row_group_bytes: int | None = None) -> int:
    """COPY the rows of ``sql`` to ``root/rel``; returns the row count. No rows, no file.
    ``row_group_bytes``: row groups cut at about that size too (records: RECORDS_GROUP_BYTES)."""
    path = Path(root) / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    _disk_fault(tmp)
    by_size = f", ROW_GROUP_SIZE_BYTES {int(row_group_bytes)}" if row_group_bytes else ""
    rows = con.execute(
        f"COPY ({sql}) TO '{_quote(tmp)}' (FORMAT parquet, COMPRESSION {COMPRESSION}, ROW_GROUP_SIZE {row_group}"
        f"{by_size})",
        params or [],
    ).fetchone()[0]
    if not rows:
        tmp.unlink(missing_ok=True)
        return 0
    footer.strip_statistics(tmp, FREE_TEXT)  # DuckDB cannot be told to leave them out
    tmp.replace(path)  # a reader or analyst never sees a half-written part
    return rows


# Rows bound per statement (load_lists, index_state.insert_rows): DuckDB holds
# every bound value as a Value while the statement runs, a session's touched
# paths and first prompts included. 5,000 at a time put 40-45 MB on the
# commit of 12,000 small transcripts (the many profile's peak); 1,000 cost no
# measurable time.
LOAD_ROWS = 1_000


def load_lists(con, table: str, types, columns: dict[str, list]) -> None:
    """A temp table of ``types`` from Python column lists, in one statement.

    TIMESTAMPTZ columns arrive as epoch milliseconds (the readers' unit) and
    are converted without consulting the connection's time zone.
    """
    selects = []
    for i, (name, sqltype) in enumerate(types, start=1):
        if sqltype == "TIMESTAMPTZ":
            selects.append(f"make_timestamptz(unnest(${i}::BIGINT[]) * 1000) AS {name}")
        else:
            selects.append(f"unnest(${i}::{sqltype}[]) AS {name}")
    select = f"SELECT {', '.join(selects)}"
    n = max((len(columns[name]) for name, _ in types), default=0)
    # a slice at a time: every bound value is held as a DuckDB value while the
    # statement runs, which for 50,000 sessions at once was 265 MB of the run's peak
    for lo in range(0, max(n, 1), LOAD_ROWS):
        args = [columns[name][lo : lo + LOAD_ROWS] for name, _ in types]
        con.execute(f"CREATE OR REPLACE TEMP TABLE {table} AS {select}" if lo == 0 else
                    f"INSERT INTO {table} {select}", args)


_WRITES = [0]


def _disk_fault(tmp: Path) -> None:
    """Tests fill the disk at the Nth part written (DEJA_FAULT_ENOSPC=N): a
    half-written temp file, then ENOSPC, as a full device leaves them."""
    n = os.environ.get("DEJA_FAULT_ENOSPC")
    if n:
        _WRITES[0] += 1
        if _WRITES[0] >= int(n):
            import errno

            tmp.write_bytes(b"PAR1")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(tmp))


def _quote(path: Path) -> str:
    return str(path).replace("'", "''")


# ---------------------------------------------------------------------------
# pyarrow: Arrow tables of a big run → Parquet


def month_column(ts):
    import pyarrow.compute as pc

    months = pc.strftime(ts, format="%Y-%m")
    return pc.fill_null(months, NO_MONTH)


def partitions(table, harness: str):
    """``table``'s rows by records partition: [(harness, month), rows]."""
    import pyarrow.compute as pc

    months = month_column(table.column("ts"))
    found = pc.unique(months).to_pylist()
    if len(found) == 1:  # (a slice of one huge transcript, mostly: a filter would copy every row)
        return [((harness, found[0]), table)]
    return [((harness, month), table.filter(pc.equal(months, month))) for month in found]


def runs_of(table, keys: dict):
    """``table``'s rows in runs of equal ``keys`` (name → one value per row):
    [(the run's key values, its rows)], sorted by the keys, each run's rows in
    their order: one stable sort and one copy of the rows, the runs slices of it."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if table.num_rows == 0:
        return []
    by = pa.table(keys)
    order = pc.sort_indices(by, sort_keys=[(k, "ascending") for k in keys])  # (stable)
    table, by = table.take(order), by.take(order)
    n = table.num_rows
    change = np.zeros(n, bool)
    for k in keys:
        col = by.column(k)
        change[1:] |= pc.fill_null(pc.not_equal(col.slice(1), col.slice(0, n - 1)), True).to_numpy(zero_copy_only=False)
    edges = [0, *np.flatnonzero(change).tolist(), n]
    return [(tuple(by.column(k)[lo].as_py() for k in keys), table.slice(lo, hi - lo)) for lo, hi in zip(edges, edges[1:])]


def write_records_part(table, root: Path, rel: str) -> int:
    """One records part of ``table`` (a partition's rows), sorted by role then id."""
    table = table.sort_by([(col.strip(), "ascending") for col in RECORDS_ORDER.split(",")])
    _write(table, root / rel, RECORDS_ROW_GROUP, runs_of="role")
    return table.num_rows


def of_role(tagged, role: str):
    """The rows of ``role`` in (tag, batch) pairs (``Spill.tagged``): a batch
    tagged with it whole, one of every role (tagged None) filtered."""
    import pyarrow.compute as pc

    for tag, batch in tagged:
        if tag is None:
            batch = batch.filter(pc.equal(batch.column("role"), role))
        if batch.num_rows:
            yield batch


def write_records_streamed(batches, roles, root: Path, rel: str) -> int:
    """``write_records_part`` for a partition too big to hold: ``batches(role)``
    yields its rows of that role (of ``roles``) in id order; each role's rows
    stream into row groups of their own."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    _disk_fault(tmp)
    writer, rows = None, 0
    try:
        for role in sorted(roles):
            pending, n = [], 0
            for got in batches(role):
                if writer is None:
                    writer = pq.ParquetWriter(tmp, got.schema, **writer_options(got.schema.names))
                pending.append(got)
                n += got.num_rows
                if n >= RECORDS_ROW_GROUP:
                    write_record_groups(writer, pa.Table.from_batches(pending))
                    rows += n
                    pending, n = [], 0
            if pending:
                write_record_groups(writer, pa.Table.from_batches(pending))
                rows += n
    except BaseException:
        if writer is not None:
            writer.close()
        tmp.unlink(missing_ok=True)
        raise
    if writer is None:
        return 0
    writer.close()
    os.replace(tmp, path)  # a reader or analyst never sees a half-written part
    return rows


def write_bucket(table, bucket: int, root: Path, name: str):
    """One bucket's postings as one part, sorted by token then record id, so a
    query's token filter skips row groups by their statistics; returns
    ``((rel, rows), counts)``: counts holds each of its words once with its
    postings (``n``), what the vocabulary is made of (``vocab_of``).

    One huge transcript puts a million postings in a bucket: the sorted rows
    are taken into the writer a row group at a time, not as a sorted copy of
    the whole bucket, and the counts come from the words the sort already
    encoded, not from a hash aggregate over the rows (a 1 GB transcript's
    largest bucket: ~75 MB over its rows' 20 MB, now ~35)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = table.combine_chunks()  # (the spill's batches: one copy, then every step below reads it in place)
    words = _words(table)
    order = _order(table, words)
    counts = pa.table({"token": words.dictionary,
                       "n": np.bincount(words.indices.to_numpy(), minlength=len(words.dictionary))})
    rel = postings_rel(bucket, name)
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    _disk_fault(tmp)
    with pq.ParquetWriter(tmp, table.schema, **writer_options(table.schema.names)) as w:
        for lo in range(0, len(order), POSTINGS_ROW_GROUP):
            w.write_table(table.take(order[lo : lo + POSTINGS_ROW_GROUP]), row_group_size=POSTINGS_ROW_GROUP)
    os.replace(tmp, path)  # a reader or analyst never sees a half-written part
    return (rel, table.num_rows), counts


def postings_order(table):
    """The permutation that sorts postings by (token, record_id), byte order.

    A bucket repeats each word once per record that has it, so only its
    distinct words are sorted as strings; the rows then sort by (the word's
    rank, record id) packed in one int64: a third of the time of sorting the
    rows' strings (polars, on two cores), the largest cost of a finish."""
    import pyarrow as pa

    if table.num_rows == 0:
        return pa.array([], pa.int64())
    return _order(table, _words(table))


def _words(table):
    """The postings' tokens dictionary-encoded: each distinct word once, and each row's index into them."""
    import pyarrow.compute as pc

    return pc.dictionary_encode(table.column("token").combine_chunks())


def _order(table, words):
    """postings_order from the rows' ``words``."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    rank = np.empty(len(words.dictionary), np.int64)
    rank[pc.array_sort_indices(words.dictionary).to_numpy()] = np.arange(len(rank))
    keys = rank[words.indices.to_numpy()]
    ids = table.column("record_id").to_numpy()
    if len(ids) == 0:
        return pa.array([], pa.int64())
    low = int(ids.min())
    span = int(ids.max()) - low + 1
    if len(rank) * span < 1 << 62:
        # (in place: a million postings' int64 temporaries are 8 MB each)
        keys *= span
        keys += ids
        keys -= low
        return pa.array(np.argsort(keys))  # (keys are unique: no stable sort needed)
    return pa.array(np.lexsort((ids, keys)))


def vocab_of(counts, stem_many):
    """The vocabulary part of ``counts`` (write_bucket's counts of one or more
    buckets, each token once): each token with its stem and posting count, what the
    close, stemmed and fuzzy search rungs expand a query word against."""
    import pyarrow as pa
    import pyarrow.compute as pc

    tokens = counts.column("token")
    return pa.table(
        {
            "token": tokens,
            "stem": pa.array(stem_many(tokens.to_pylist()), pa.string()),
            "n": pc.cast(counts.column("n"), pa.int64()),
        }
    ).sort_by([("stem", "ascending"), ("token", "ascending")])


def write_table(table, root: Path, rel: str, row_group: int = 65_536) -> tuple[str, int]:
    _write(table, root / rel, row_group)
    return rel, table.num_rows


def _write(table, path: Path, row_group: int, runs_of: str | None = None) -> None:
    """``runs_of``: a column the table is sorted by; each run of equal values
    starts a row group of its own. Records are cut by role, so a query for one
    role (the hooks' commands, the speech of snippets) skips the row groups of
    the others by their statistics instead of decompressing tool output; and
    by their text's size (``write_record_groups``)."""
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    _disk_fault(tmp)
    with pq.ParquetWriter(tmp, table.schema, **writer_options(table.schema.names)) as w:
        for lo, hi in _runs(table, runs_of):
            write_run(w, table.slice(lo, hi - lo), row_group, runs_of)
    os.replace(tmp, path)  # a reader or analyst never sees a half-written part


def write_run(writer, table, row_group: int, runs_of: str | None) -> None:
    """One run of a part's rows through ``writer``: records (the only rows
    cut into runs, by role) in ``record_groups``, anything else in row groups
    of ``row_group`` rows."""
    if runs_of:
        write_record_groups(writer, table, row_group)
    else:
        writer.write_table(table, row_group_size=row_group)


def record_groups(table, rows: int = RECORDS_ROW_GROUP, text_bytes: int = RECORDS_GROUP_BYTES) -> list[tuple[int, int]]:
    """(start, end) of the row groups records (of one role, in order) are
    written in: at most ``rows`` rows and ``text_bytes`` of text each, a
    record longer than that in a row group of its own."""
    import numpy as np
    import pyarrow.compute as pc

    n = table.num_rows
    sizes = pc.binary_length(table.column("text")).fill_null(0).to_numpy(zero_copy_only=False)
    ends = np.cumsum(sizes, dtype=np.int64)  # text up to and including each row
    out, lo = [], 0
    while lo < n:
        before = int(ends[lo - 1]) if lo else 0
        hi = min(lo + rows, int(np.searchsorted(ends, before + text_bytes, side="right")), n)
        hi = max(hi, lo + 1)
        out.append((lo, hi))
        lo = hi
    return out


def write_record_groups(writer, table, rows: int = RECORDS_ROW_GROUP) -> None:
    """``table`` (records of one role) through a ParquetWriter in ``record_groups``."""
    for lo, hi in record_groups(table, rows):
        writer.write_table(table.slice(lo, hi - lo), row_group_size=hi - lo)


def _runs(table, column: str | None) -> list[tuple[int, int]]:
    n = table.num_rows
    if column is None or n == 0:
        return [(0, n)]
    values = table.column(column).to_pylist()
    edges = [0] + [i for i in range(1, n) if values[i] != values[i - 1]] + [n]
    return list(zip(edges, edges[1:]))


def write_sessions(con, cols: dict[str, list], root, rel: str, keep_from: str | None = None,
                   replaced: set[str] | None = None) -> list[tuple[str, int, int]]:
    """Write the sessions part through DuckDB's core; returns [(harness, sessions, messages, gone)]
    (gone: sessions kept after their transcripts left the disk).

    ``cols`` holds every session, or with ``keep_from`` (the live sessions part)
    only those this run changed: the part's other rows are copied over, all but
    the ``replaced`` keys. A small run rebuilds the one or two sessions it
    touched, not all of them. Raises duck.Error when the live part does not
    have today's columns; the caller then rebuilds the whole.
    """
    names = ", ".join(n for n, _ in SESSION_TYPES)
    load_lists(con, "run_sessions", SESSION_TYPES, cols)
    try:
        if keep_from:
            load_lists(con, "run_replaced", (("session_key", "VARCHAR"),), {"session_key": sorted(replaced or ())})
            con.execute(
                f"CREATE OR REPLACE TEMP TABLE run_all_sessions AS SELECT {names} FROM read_parquet(?) "
                "WHERE session_key NOT IN (SELECT session_key FROM run_replaced) "
                f"UNION ALL SELECT {names} FROM run_sessions",
                [keep_from],
            )
            table = "run_all_sessions"
        else:
            table = "run_sessions"
        copy_query(con, f"SELECT * FROM {table} ORDER BY session_key", None, root, rel)
        return con.execute(f"SELECT harness, count(*), sum(messages), count(gone_at) FROM {table} "
                           "GROUP BY harness ORDER BY harness").fetchall()
    finally:
        for t in ("run_sessions", "run_replaced", "run_all_sessions"):
            con.execute(f"DROP TABLE IF EXISTS {t}")
