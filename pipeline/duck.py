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
