"""What blame and the other work answers share: the filter that leaves
deleted records out of a query."""

from __future__ import annotations


def not_deleted(alias: str = "r") -> str:
    """A SQL condition: the record ``alias`` was not deleted (``deja forget``)."""
    return f"{alias}.record_id NOT IN (SELECT record_id FROM deletes)"
