"""DuckDB for the read paths that pay for every import: search and hooks.

DuckDB 2's Python package wraps its compiled core (`_duckdb`) in a pure-Python
layer whose imports (importlib.metadata, email, zipfile, …) cost more than
the rest of a query: ~110 ms of a ~210 ms bare `import duckdb; connect()`
here. Connections, queries and exceptions come from the core, so the read
paths use it directly; the index path, which wants relations and Arrow
conversion, imports the full package.
"""

from __future__ import annotations

try:
    import _duckdb as core
except ImportError:  # an older duckdb without the split: the package is the core
    import duckdb as core

connect = core.connect
DuckDBPyConnection = core.DuckDBPyConnection
Error = core.Error
IOException = core.IOException
ConnectionException = core.ConnectionException
BinderException = core.BinderException
CatalogException = core.CatalogException


def inline(sql: str, **lists) -> str:
    """``sql`` with each ``$name`` replaced by that list spelled as a SQL literal.

    Binding a Python list as a parameter makes DuckDB import decimal, uuid and
    platform to type its items, ~7 ms of a search or a hook; the read paths
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
