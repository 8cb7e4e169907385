"""What blame and the other work answers share: the filter that leaves
deleted records out of a query, and a UTC day label."""

from __future__ import annotations

from datetime import datetime, timezone


def not_deleted(alias: str = "r") -> str:
    """A SQL condition: the record ``alias`` was not deleted (``deja forget``)."""
    return f"{alias}.record_id NOT IN (SELECT record_id FROM deletes)"


def day(ms: int | None) -> str:
    """Epoch milliseconds as a UTC date, YYYY-MM-DD ("" for none)."""
    if not ms:
        return ""
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d")
