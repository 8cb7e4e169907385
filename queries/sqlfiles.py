"""SQL kept in queries/sql/*.sql, loaded once per process."""

from __future__ import annotations

from functools import cache
from importlib import resources


@cache
def load(name: str) -> str:
    return resources.files("deja.queries").joinpath("sql", f"{name}.sql").read_text()
