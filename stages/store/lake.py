"""The team store: two Apache Iceberg tables in a SQL catalog (Postgres), data
files as Parquet on a shared folder or an S3-compatible bucket.

    deja.records   machine, harness, session_id, project, role, text, ts, tool,
                   exit_code, record_key, published_at
                   partitioned by machine, harness and month(ts)
    deja.sessions  machine, harness, session_id, project, title, started, updated,
                   records, published_at; partitioned by machine

Iceberg rather than DuckLake: the DuckLake extension is a DuckDB binary that
must match DuckDB's version, and none built for the DuckDB this project runs
(2.x) can be installed offline; Iceberg is written here by ``pyiceberg`` (pure
Python over pyarrow) and read by Spark, Trino, DuckDB, Polars and the rest.
Every commit is optimistic (the catalog swaps the table's metadata pointer
only if nobody else did first): a publisher that loses the race has its
changes applied again on top of the winner's, by pyiceberg's own retries
(``commit.retry.*``) and, when those run out, by ``commit`` doing the whole
work again on a fresh copy of the table.

Readers that only want the current data files ask the catalog's table row
for the metadata pointer with one SQL query and keep the file list of each
pointer they have read (``current_files``): a search pays pyiceberg's import
and the manifests' reading only when someone published since.
"""

from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path

NAMESPACE = "deja"
RECORDS, SESSIONS = "records", "sessions"
ATTEMPTS = 12  # commits tried before a busy table is said busy
ROW_GROUP_ROWS = 512  # (measured: a search of 2 machines' lake 193 ms at one group a file, 74 ms at 512 rows)


class LakeError(Exception):
    """The team store cannot be reached or read; one line for the person."""


def _schemas():
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import IdentityTransform, MonthTransform
    from pyiceberg.types import LongType, NestedField, StringType, TimestamptzType

    def f(i, name, kind):
        return NestedField(i, name, kind, required=False)

    records = Schema(
        f(1, "machine", StringType()), f(2, "harness", StringType()), f(3, "session_id", StringType()),
        f(4, "project", StringType()), f(5, "role", StringType()), f(6, "text", StringType()),
        f(7, "ts", TimestamptzType()), f(8, "tool", StringType()), f(9, "exit_code", LongType()),
        f(10, "record_key", StringType()), f(11, "published_at", TimestamptzType()),
        f(12, "seq", LongType()),
    )
    records_spec = PartitionSpec(
        PartitionField(1, 1000, IdentityTransform(), "machine"),
        PartitionField(2, 1001, IdentityTransform(), "harness"),
        PartitionField(7, 1002, MonthTransform(), "month"),
    )
    sessions = Schema(
        f(1, "machine", StringType()), f(2, "harness", StringType()), f(3, "session_id", StringType()),
        f(4, "project", StringType()), f(5, "title", StringType()), f(6, "started", TimestamptzType()),
        f(7, "updated", TimestamptzType()), f(8, "records", LongType()), f(9, "published_at", TimestamptzType()),
    )
    sessions_spec = PartitionSpec(PartitionField(1, 1000, IdentityTransform(), "machine"))
    return {RECORDS: (records, records_spec), SESSIONS: (sessions, sessions_spec)}


def arrow_schema(table: str):
    """The Arrow schema rows are appended with (Iceberg's types, as pyarrow reads them)."""
    import pyarrow as pa

    ts = pa.timestamp("us", tz="UTC")
    if table == RECORDS:
        return pa.schema([("machine", pa.string()), ("harness", pa.string()), ("session_id", pa.string()),
                          ("project", pa.string()), ("role", pa.string()), ("text", pa.string()), ("ts", ts),
                          ("tool", pa.string()), ("exit_code", pa.int64()), ("record_key", pa.string()),
                          ("published_at", ts), ("seq", pa.int64())])
    return pa.schema([("machine", pa.string()), ("harness", pa.string()), ("session_id", pa.string()),
                      ("project", pa.string()), ("title", pa.string()), ("started", ts), ("updated", ts),
                      ("records", pa.int64()), ("published_at", ts)])


def catalog(uri: str, warehouse: str, props: dict | None = None):
    """The SQL catalog (``uri``: a SQLAlchemy URL of Postgres) over ``warehouse``."""
    try:
        from pyiceberg.catalog.sql import SqlCatalog
    except ImportError:
        raise LakeError("the team store needs pyiceberg: pip install 'deja[team]'")
    try:
        return SqlCatalog("deja", uri=uri, warehouse=warehouse, **(props or {}))
    except Exception as exc:
        raise LakeError(f"cannot open the team catalog: {why(exc)}")


def ensure_tables(cat) -> None:
    """Create the namespace and both tables if they are not there (two machines
    may try at once: the loser finds them made), and add the columns a table
    made by an older deja lacks."""
    from pyiceberg.exceptions import NamespaceAlreadyExistsError, TableAlreadyExistsError

    try:
        cat.create_namespace(NAMESPACE)
    except NamespaceAlreadyExistsError:
        pass
    for name, (schema, spec) in _schemas().items():
        try:
            table = cat.load_table(f"{NAMESPACE}.{name}")
        except Exception:
            table = None
        if table is not None:  # made by an older deja: the columns added since, added (Iceberg evolves schemas)
            have = set(table.schema().column_names)
            missing = [fld for fld in schema.fields if fld.name not in have]
            if missing:
                with table.update_schema() as update:
                    for fld in missing:
                        update.add_column(fld.name, fld.field_type)
            continue
        try:
            cat.create_table(f"{NAMESPACE}.{name}", schema=schema, partition_spec=spec,
                             # small row groups, appended with the tool output last: a search
                             # of what was said skips the tool output's row groups
                             properties={"write.parquet.compression-codec": "zstd",
                                         "write.parquet.row-group-limit": str(ROW_GROUP_ROWS)})
        except TableAlreadyExistsError:
            pass


def load(cat, name: str):
    from pyiceberg.exceptions import NoSuchTableError

    try:
        return cat.load_table(f"{NAMESPACE}.{name}")
    except NoSuchTableError:
        raise LakeError(f"the team store has no {NAMESPACE}.{name} table; run `deja team init` first")


def commit(cat, name: str, work) -> int:
    """Run ``work(transaction)`` on table ``name`` and commit it, again on a
    fresh copy of the table each time another writer committed first. Returns
    the attempts it took."""
    import warnings

    from pyiceberg.exceptions import CommitFailedException

    for attempt in range(1, ATTEMPTS + 1):
        table = load(cat, name)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # ("Delete operation did not match any records": nothing to say)
                with table.transaction() as tx:
                    work(tx)
            return attempt
        except CommitFailedException:
            time.sleep(min(2.0, 0.05 * 2 ** attempt) * random.uniform(0.5, 1.5))
    raise LakeError(f"the team table {name} kept changing under this commit ({ATTEMPTS} tries); try again")


def data_files(table) -> list[str]:
    """The data files of the table's current snapshot."""
    return [task.file.file_path for task in table.scan().plan_files()]


def metadata_pointer(dsn_kwargs: dict, name: str) -> str | None:
    """The table's current metadata file, straight from the SQL catalog's table
    row (one query, no pyiceberg): what the file-list cache is keyed by."""
    import psycopg

    with psycopg.connect(**{"connect_timeout": 10, **dsn_kwargs}) as con:  # (the DSN's own timeout wins)
        row = con.execute(
            "SELECT metadata_location FROM iceberg_tables WHERE catalog_name = 'deja' "
            "AND table_namespace = %s AND table_name = %s", (NAMESPACE, name)).fetchone()
    return row[0] if row else None


def current_files(cat_factory, dsn_kwargs: dict, name: str, cache: Path) -> list[str]:
    """The current data files of table ``name``, from ``cache`` while the
    catalog still points at the metadata they were listed from."""
    try:
        pointer = metadata_pointer(dsn_kwargs, name)
    except Exception as exc:
        raise LakeError(f"cannot reach the team catalog: {why(exc)}")
    if pointer is None:
        raise LakeError(f"the team store has no {NAMESPACE}.{name} table; run `deja team init` first")
    try:
        kept = json.loads(cache.read_text())
        if kept.get(name, {}).get("pointer") == pointer:
            return kept[name]["files"]
    except (OSError, ValueError, AttributeError):
        kept = {}
    files = data_files(load(cat_factory(), name))
    kept = kept if isinstance(kept, dict) else {}
    kept[name] = {"pointer": pointer, "files": files}
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_name(f".{cache.name}.{os.getpid()}")
        tmp.write_text(json.dumps(kept))
        os.replace(tmp, cache)
    except OSError:
        pass  # a cache that cannot be written costs the next search the listing again
    return files


def local_path(uri: str) -> str | None:
    """A data file's path on this machine, or None for a bucket's object."""
    if uri.startswith("file://"):
        return uri[len("file://"):]
    if uri.startswith("/"):
        return uri
    return None


def local_copies(cat_factory, name: str, files: list[str], folder: Path) -> list[str]:
    """Local paths of ``files``: the files themselves on a shared folder; from a
    bucket, copies kept in ``folder`` (data files never change once written,
    so a copy is good until the table stops listing it, when it is dropped)."""
    import hashlib

    local = [local_path(f) for f in files]
    if all(p is not None for p in local):
        return local  # type: ignore[return-value]
    folder.mkdir(parents=True, exist_ok=True)
    want = {}
    for uri in files:
        want[hashlib.blake2b(uri.encode(), digest_size=12).hexdigest() + ".parquet"] = uri
    table = None
    for fname, uri in want.items():
        dest = folder / fname
        if dest.exists():
            continue
        if table is None:
            table = load(cat_factory(), name)
        tmp = folder / f".{fname}.{os.getpid()}"
        with table.io.new_input(uri).open() as src, open(tmp, "wb") as out:
            while chunk := src.read(1 << 20):
                out.write(chunk)
        os.replace(tmp, dest)
    for old in folder.glob("*.parquet"):
        if old.name not in want:
            old.unlink(missing_ok=True)
    return [str(folder / f) for f in want]


def read_files(table, files: list[str], columns: list[str]):
    """Rows of ``files`` (a pyarrow Table): read through the table's own FileIO,
    so a bucket needs nothing DuckDB would have to download."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    def read(source):
        f = pq.ParquetFile(source)
        have = set(f.schema_arrow.names)
        got = f.read(columns=[c for c in columns if c in have])
        for c in columns:  # a file written before a column was added: its rows have none
            if c not in have:
                kind = next((sch.field(c).type for sch in (arrow_schema(RECORDS), arrow_schema(SESSIONS))
                             if c in sch.names), pa.string())
                got = got.append_column(pa.field(c, kind), pa.nulls(got.num_rows, kind))
        return got.select(columns)

    parts = []
    for uri in files:
        local = local_path(uri)
        if local is not None:
            parts.append(read(local))
        else:
            with table.io.new_input(uri).open() as fh:
                parts.append(read(fh))
    return pa.concat_tables(parts, promote_options="default") if parts else None



def why(exc: Exception) -> str:
    """An exception's first line, for a one-line error."""
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300]
