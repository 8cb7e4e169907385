"""The store floor: the only code that knows a Parquet path or writes catalog SQL.

layout (paths, columns, sort orders), catalog (the DuckDB catalog, the writer
lock, generations), write and merge (Parquet parts), read (the live store a
query opens), duck (DuckDB's compiled core), config (where things live).
It imports nothing above it.
"""
