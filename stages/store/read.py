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

from .layout import ALL_BUCKETS, LATE_SESSION_COLUMNS, SESSION_TYPES
from .catalog import Busy, Store


HOT_ROLES = ("command",)
VOCAB_MARK = 512  # a hot vocabulary's rows between two marks (a text-heavy 200 MB history: ~1,700 marks)


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
        self.hot = False  # the small datasets are tables in memory (a warm server's store, open_live)
        self._hot: set[str] = set()  # the tables of one role's records made so far (records_of)
        self.memo: dict = {}  # what queries keep of this store between requests (a hot store only)
        # a hot store's vocabulary: the stem of every VOCAB_MARK-th row (the table is in stem
        # order), and how many rows the marks cover (rows added since follow them)
        self.vocab_marks: tuple[list[str], int] | None = None
        # a hot vocabulary's parts added since it was read whole: part → (first, last rowid)
        self.vocab_rows: dict[str, tuple[int, int]] = {}

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
        from .catalog import note_suspects

        rel = part[len(str(self.root)) + 1:]
        note_suspects(self.root, [rel])  # (the next index run decodes it whole)
        if part in self.files.get("sessions", []):
            # every answer names its sessions: there is no rest to answer from
            raise Damaged(f"part {rel} is damaged; run `deja index` to repair it")
        for paths in self.files.values():
            if part in paths:
                paths.remove(part)
        self.part_keys.pop(part, None)
        self.damaged.append(part)
        self._hot.clear()
        self.vocab_rows.clear()
        self.vocab_marks = _views(self.con, self.files, self.records_view, self.hot)

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

    def in_memory(self, role: str | None) -> bool:
        """This role's records are (or will be, on first use) a table in memory:
        ``records_of`` ignores the sessions then."""
        return self.hot and role in HOT_ROLES and self.has("records")

    def records_of(self, keys, role: str | None = None, hive: bool = True) -> str:
        """A FROM source for the records of these sessions that opens only the
        parts holding them. Every part costs a footer read, and a fetch by id
        decompresses each part's text whole (DuckDB prunes row groups by ranges,
        not by id lists): a few sessions' snippets read a few parts, not all.
        ``role``: the caller reads only that role's records; a hot store keeps
        the commands in memory (short, and every shell command's hook looks
        its command up). ``hive``: False for a caller that reads no column of
        the parts' folder names (harness, month): their parsing costs a fetch
        by id a tenth of its time."""
        if self.in_memory(role):
            name = "hot_" + role
            if name not in self._hot:
                self.tolerant(lambda: self.con.execute(
                    f"CREATE OR REPLACE TABLE {name} AS SELECT * FROM records WHERE role = '{role}'"))
                self._hot.add(name)
            return name
        keys = set(keys)
        every = self.files.get("records", [])
        parts = [f for f in every if (held := self.part_keys.get(f)) is None or not keys.isdisjoint(held)]
        if len(parts) == len(every) and hive:
            return self.records_source()
        hive_sql = "true" if hive else "false"
        if not parts:
            return f"(SELECT * FROM read_parquet({_list(every[:1])}, hive_partitioning={hive_sql}) LIMIT 0)"
        return f"read_parquet({_list(parts)}, hive_partitioning={hive_sql})"

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


# The warm server's processes (pipeline/serve.py) keep the live store open
# between requests: the views bound, Parquet footers cached, on the process's
# shared connection. It is reopened when the catalog's files change (a run
# committed, a promote, a forget): parts are immutable, so the same catalog
# means the same live store.
_kept: dict = {"on": False}


def keep_open(on: bool) -> None:
    """Keep the live store of the shared connection open between requests."""
    _kept.clear()
    _kept["on"] = on


def kept_store() -> "LiveStore | None":
    """The live store this process keeps open, if it does and has opened one."""
    return _kept.get("live") if _kept["on"] else None


def keeping() -> bool:
    """This process keeps the live store open between requests (a warm server's)."""
    return _kept["on"]


def per_catalog(store: Store, name: str, compute):
    """In a process that keeps the store open: ``compute()``'s value, computed
    again only when the catalog's files change (what a query reads of the
    catalog itself, like the manifest). Elsewhere, simply ``compute()``."""
    if not _kept["on"]:
        return compute()
    key = _catalog_key(store)
    memo = _kept.setdefault("memo", {})
    got = memo.get(name)
    if got is not None and got[0] == key:
        return got[1]
    value = compute()
    memo[name] = (key, value)
    return value


def _catalog_key(store: Store) -> tuple:
    key = [str(store.root)]
    for path in (store.catalog_path, store.catalog_path.with_name(store.catalog_path.name + ".wal")):
        try:
            st = os.stat(path)
            key.append((st.st_ino, st.st_size, st.st_mtime_ns))
        except OSError:
            key.append(None)
    return tuple(key)


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
    key = before = None
    if _kept["on"] and con is not None and duck.is_shared(con):
        key = _catalog_key(store)  # (read before the catalog: a commit in between means a reopen next time)
        kept = _kept.get("live")
        if kept is not None and _kept.get("key") == key and kept.con is con:
            return kept  # (a warm freshness check never leaves the catalog attached: fresh._pending_warm)
        con.execute("DETACH DATABASE IF EXISTS cat")  # (a check may have left it attached, or not)
        attached = False
        _kept.pop("live", None)
        # the store of an earlier catalog: its tables stand where their parts are still live
        before = kept if kept is not None and kept.con is con and kept.hot and not kept.damaged else None
        records_view = True  # bound once for every request that follows
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
    live.hot = key is not None
    try:  # (a view binds its parts' footers now)
        live.vocab_marks = live.tolerant(lambda: _views(con, files, records_view, live.hot, before,
                                                        live.vocab_rows))
    except duck.Error:
        if before is None:
            raise
        live.vocab_rows.clear()
        live.vocab_marks = live.tolerant(lambda: _views(con, files, records_view, live.hot))  # read anew
    if key is not None:
        _kept.update(live=live, key=key)
        from . import hot  # (numpy: a warm process's import, never a cold search's)

        hot.keep_only(p for paths in files.values() for p in paths)  # (parts of earlier generations let go)
    return live


def _views(con: duck.DuckDBPyConnection, files: dict[str, list[str]], records_view: bool,
           hot: bool = False, before: "LiveStore | None" = None,
           vocab_rows: dict[str, tuple[int, int]] | None = None) -> tuple[list[str], int] | None:
    """The views of the live parts: sessions, deletes, docs, vocab and (``records_view``) records.
    ``hot``: the small datasets are read into memory instead (a warm server's
    process, which answers request after request from them); records stay
    Parquet. ``before``: the hot store this one follows on the same
    connection: a dataset whose parts only grew (an appended turn's run adds
    a part or two) gets the new parts' rows added to its table, not read again.
    The vocabulary also lets go of parts added that way when compaction merged
    them (their rows, recorded in ``vocab_rows``, are deleted and the merged
    part's added): reading a text-heavy history's words whole again cost a
    served appended turn ~0.2 s every few turns. Returns a hot store's
    vocabulary marks (``LiveStore.vocab_marks``)."""
    kind = "TABLE" if hot else "VIEW"
    marks = None
    for dataset in ("sessions", "deletes", "docs", "vocab"):
        parts = files.get(dataset, [])
        old = before.files.get(dataset, []) if before is not None else []
        if dataset == "vocab" and hot and vocab_rows is not None and parts:
            marks = _hot_vocab(con, parts, before, vocab_rows)
            continue
        if hot and old and set(old) <= set(parts):
            added = [p for p in parts if p not in set(old)]
            if added:
                con.execute(f"INSERT INTO {dataset} BY NAME SELECT {_HOT_COLUMNS[dataset]} "
                            f"FROM read_parquet({_list(added)})")
            if dataset == "vocab":
                marks = before.vocab_marks  # (added rows follow the marked ones: Vocabulary.lookup reads them all)
            continue
        got = _define(con, kind, dataset, parts)
        if dataset == "vocab":
            marks = got
    records = files.get("records", [])
    if records and records_view:
        con.execute(f"CREATE OR REPLACE VIEW records AS SELECT * FROM read_parquet({_list(records)}, hive_partitioning=true)")
    else:
        con.execute("DROP VIEW IF EXISTS records")
    return marks


def _hot_vocab(con: duck.DuckDBPyConnection, parts: list[str], before: "LiveStore | None",
               vocab_rows: dict[str, tuple[int, int]]) -> tuple[list[str], int] | None:
    """A warm server's vocabulary table: its large parts read in stem order
    (the marks cover them), each small part's rows added after them with their
    rowids recorded in ``vocab_rows``. An appended turn's run adds a small
    part; compaction merges small parts: their rows are deleted and the merged
    part's added, and the large parts' rows are never read again."""
    old = before.files.get("vocab", []) if before is not None else []
    rows = dict(before.vocab_rows) if before is not None else {}
    gone = set(old) - set(parts)
    if old and gone <= set(rows):
        marks = before.vocab_marks  # (added rows follow the marked ones: Vocabulary.lookup reads them all)
        for part in gone:
            lo, hi = rows.pop(part)
            con.execute(f"DELETE FROM vocab WHERE rowid BETWEEN {lo} AND {hi}")
        added = [p for p in parts if p not in old]
    else:  # read whole: the large parts in order, the small ones after them
        sizes = {}
        for p in parts:
            try:
                sizes[p] = os.path.getsize(p)
            except OSError:
                sizes[p] = 0
        large = max(sizes.values())
        base = [p for p in parts if sizes[p] * SMALL_VOCAB_PART >= large]
        marks = _define(con, "TABLE", "vocab", base)
        rows = {}
        added = [p for p in parts if p not in base]
    last = con.execute("SELECT coalesce(max(rowid), -1) FROM vocab").fetchone()[0] if added else -1
    for part in added:
        con.execute(f"INSERT INTO vocab BY NAME SELECT {_HOT_COLUMNS['vocab']} FROM read_parquet({_list([part])})")
        end = con.execute("SELECT coalesce(max(rowid), -1) FROM vocab").fetchone()[0]
        rows[part], last = (last + 1, end), end
    vocab_rows.clear()
    vocab_rows.update(rows)
    return marks


# A vocabulary part this many times smaller than the largest is a small one
# (an appended turn's words, or a few such merged): a hot table keeps track of its rows.
SMALL_VOCAB_PART = 8

# what a hot table takes of each part (sessions: BY NAME, so a part from before the late columns fits)
_HOT_COLUMNS = {"sessions": "*", "deletes": "record_id", "docs": "*", "vocab": "token, stem, n"}


def _define(con: duck.DuckDBPyConnection, kind: str, dataset: str, parts: list[str]) -> tuple[list[str], int] | None:
    """One dataset's view (or hot table) over its parts; a hot vocabulary's marks."""

    def define(select: str) -> None:
        try:
            con.execute(f"CREATE OR REPLACE {kind} {dataset} AS {select}")
        except duck.CatalogException:
            # the other kind stands under that name on this connection (a process
            # that opened the store before it kept it open, or the other way round)
            other = "VIEW" if kind == "TABLE" else "TABLE"
            con.execute(f"DROP {other} IF EXISTS {dataset}")
            con.execute(f"CREATE {kind} {dataset} AS {select}")

    if dataset == "sessions":
        if parts:
            have = {d[0] for d in con.execute(f"SELECT * FROM read_parquet({_list(parts)}) LIMIT 0").description}
            # a part from before the late columns has NULLs for them (until the next run rewrites it)
            late = "".join(f", NULL::{t} AS {c}" for c, t in LATE_SESSION_COLUMNS if c not in have)
            define(f"SELECT *{late} FROM read_parquet({_list(parts)})")
        else:  # (every column: a search over a store all of whose sessions were forgotten reads them)
            define("SELECT " + ", ".join(f"NULL::{t} AS {c}" for c, t in SESSION_TYPES) + " WHERE false")
    elif dataset == "deletes":
        define(f"SELECT record_id FROM read_parquet({_list(parts)})" if parts
               else "SELECT NULL::BIGINT AS record_id WHERE false")
    elif dataset == "docs":
        define(f"SELECT * FROM read_parquet({_list(parts)})" if parts else
               "SELECT NULL::BIGINT AS record_id, NULL::INTEGER AS session, NULL::TINYINT AS role, "
               "NULL::INTEGER AS rec_len WHERE false")
    elif not parts:
        for k in ("VIEW", "TABLE"):  # (whichever kind stands: either errs on the other)
            try:
                con.execute(f"DROP {k} IF EXISTS vocab")
            except duck.CatalogException:
                pass
    elif kind == "TABLE":
        # the words in stem order, and every VOCAB_MARK-th row's stem kept
        # aside: a lookup by stem reads the rows between two marks
        # (Vocabulary.lookup), not the whole table (an index on it would cost
        # a text-heavy history's vocabulary some 50 MB). Parts are in that
        # order already: one part (a compacted store) costs no sort
        define(f"SELECT token, stem, n FROM read_parquet({_list(parts)}) ORDER BY stem, token")
        marks = [m for (m,) in con.execute(
            f"SELECT stem FROM vocab WHERE rowid % {VOCAB_MARK} = 0 ORDER BY rowid").fetchall()]
        if all(a <= b for a, b in zip(marks, marks[1:])):  # (rows not in stem order: no marks)
            return marks, con.execute("SELECT count(*) FROM vocab").fetchone()[0]
    else:
        define(f"SELECT * FROM read_parquet({_list(parts)})")
    return None


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
