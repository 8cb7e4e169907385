"""SQL kept in queries/sql/*.sql, loaded once per process.

Read beside this module rather than through importlib.resources, whose
import alone is a noticeable share of a search; the files install with the package
(pyproject package-data), so they are always there.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

_DIR = Path(__file__).resolve().parent / "sql"


@cache
def load(name: str) -> str:
    return (_DIR / f"{name}.sql").read_text(encoding="utf-8")
