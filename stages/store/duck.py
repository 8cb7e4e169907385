"""DuckDB for the read paths that pay for every import: search and hooks.

DuckDB 2's Python package wraps its compiled core (`_duckdb`) in a pure-Python
layer whose imports (importlib.metadata, email, zipfile, …) cost more than
the rest of a query (bench/README.md, measured figures). Connections, queries and exceptions come from the core, so the read
paths use it directly; the index path, which wants relations and Arrow
conversion, imports the full package.
"""

from __future__ import annotations

import threading

# The compiled core, loaded on first use (module __getattr__): a search or hook
# imports it on a warm-up thread while its main thread imports the rest.
_NAMES = frozenset({"DuckDBPyConnection", "Error", "IOException", "ConnectionException", "BinderException",
                    "CatalogException"})
_core = None
_lock = threading.Lock()
_warm: dict = {}  # "thread": the warm-up thread, "con": the connection it opened


def _load():
    global _core
    with _lock:
        if _core is None:
            try:
                import _duckdb as core
            except ImportError:  # an older duckdb without the split: the package is the core
                import duckdb as core
            _core = core
    return _core


def __getattr__(name: str):
    if name == "core":
        return _load()
    if name in _NAMES:
        return getattr(_load(), name)
    raise AttributeError(f"module 'deja.stages.store.duck' has no attribute {name!r}")


def warm_up() -> None:
    """Import DuckDB and open an in-memory database on a thread, while the
    caller imports the rest: a large share of a search's or hook's budget, and the
    database instance is built in C++, which releases the GIL, so on two cores
    most of it is hidden. The next ``connect()`` without arguments takes it."""
    if "thread" in _warm or _core is not None:
        return

    def run():
        try:
            _warm["con"] = _open()
        except Exception:  # the caller's own connect() will say what is wrong
            pass

    t = threading.Thread(target=run, name="deja-duckdb-warm-up", daemon=True)
    _warm["thread"] = t
    t.start()
    import atexit

    atexit.register(_settle)  # never exit while the thread is inside DuckDB's C++


def warming() -> bool:
    """The warm-up is still inside DuckDB: time the caller would spend waiting."""
    t = _warm.get("thread")
    return t is not None and t.is_alive()


def _settle():
    t = _warm.get("thread")
    if t is not None:
        t.join()


def shared():
    """The process's in-memory connection, the same on every call: the freshness
    check and the query it guards share one DuckDB instance (each costs a start)."""
    con = _warm.get("shared")
    if con is not None:
        try:
            # (parsing a statement fails on a closed connection as running one
            # does, in microseconds rather than a query's tenth of a millisecond)
            con.extract_statements("SELECT 1")
            return con
        except Exception:  # closed by the query before (an in-process caller runs several)
            pass
    con = _warm["shared"] = connect()
    return con


def is_shared(con) -> bool:
    """``con`` is the process's shared connection (``shared()``): it lives until
    the process ends, and closing it would only spend time tearing DuckDB down."""
    return con is not None and con is _warm.get("shared")


def connect(*args, **kwargs):
    """``_duckdb.connect``; an in-memory connection the warm-up opened is handed out once."""
    t = _warm.get("thread")
    if t is not None and not args and not kwargs:
        t.join()
        con = _warm.pop("con", None)
        if con is not None:
            return con
    return _open(*args, **kwargs)


def _open(*args, **kwargs):
    # DuckDB draws its progress bar on stdout, tty or not, once a query runs
    # past two seconds (a loaded machine, a big merge): it would land inside
    # `--json` output, a hook's envelope and the MCP protocol stream. (A
    # session setting: the connect config refuses it.)
    con = _load().connect(*args, **kwargs)
    con.execute("SET enable_progress_bar = false")
    # The catalog is DuckDB's only file of ours (Parquet has its own codecs):
    # every index run rewrites a row group of file_sessions, and choosing
    # compression for its strings made the checkpoint at DETACH ~65 of an
    # appended turn's ~210 ms. Uncompressed: ~8 ms, the file 15 % larger.
    con.execute("SET force_compression = 'uncompressed'")
    # A part read twice (a bucket by two rungs of a search, a records part by
    # two roles' snippets, every request of a warm process) parses its footer
    # once; an entry is checked against the file's mtime, and parts are
    # replaced whole, never rewritten in place.
    con.execute("SET parquet_metadata_cache = true")
    return con


def inline(sql: str, **lists) -> str:
    """``sql`` with each ``$name`` replaced by that list spelled as a SQL literal.

    Binding a Python list as a parameter makes DuckDB import decimal, uuid and
    platform to type its items, a cost every search and hook would pay; the read paths
    spell their lists (ints and strings: tokens, ids, paths) out instead."""
    import re

    for name, values in lists.items():
        sql = re.sub(rf"\${name}\b", lambda _m, v=values: sql_list(v), sql)
    return sql


def sql_list(values) -> str:
    out = []
    for v in values:
        if isinstance(v, str):
            out.append("'" + v.replace("'", "''") + "'")
        elif isinstance(v, int):  # (bool is an int: True → 1)
            out.append(str(int(v)))
        else:
            raise TypeError(f"sql_list: {type(v).__name__}")
    return "[" + ", ".join(out) + "]"
