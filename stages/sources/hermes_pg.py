"""Hermes's tables in Postgres, when ``DEJA_HERMES_PG_DSN`` names a server.

The same ``sessions`` and ``messages`` columns as the SQLite store, read with
a real driver (psycopg 3) and handed to ``hermes.build``. The store's
pseudo-path is ``postgres:hermes:<hash>``: the DSN (it may hold a password)
is never written into the index, only a hash of it; the DSN itself is taken
from the environment at read time.

Every read is a read-only transaction with ``statement_timeout`` from
DEJA_STORE_TIMEOUT (the SQLite stores' budget), and the connection attempt
is bounded by it too. A server that cannot be reached, refuses the login or
lacks the tables is that store's one-line error; the rest of the index
still builds. psycopg is imported here only, when the DSN is set.
"""

from __future__ import annotations

import hashlib
import os
from typing import Mapping

from deja.stages.sources.base import ReadResult
from deja.stages.sources.sqlite_store import timeout_seconds

ENV = "DEJA_HERMES_PG_DSN"


def pseudo_path(dsn: str) -> str:
    from deja.stages.sources.hermes import PG_PREFIX

    return PG_PREFIX + hashlib.sha256(dsn.encode()).hexdigest()[:16]


def read(path: str, env: Mapping[str, str] | None = None) -> ReadResult:
    env = os.environ if env is None else env
    dsn = env.get(ENV) or ""
    if not dsn or pseudo_path(dsn) != path:
        return ReadResult(error=f"the Postgres store is no longer named by {ENV}: skipped")
    try:
        import psycopg
    except ImportError:
        return ReadResult(error="reading Hermes from Postgres needs the psycopg package (pip install 'psycopg[binary]')")
    budget = timeout_seconds(env)
    try:
        with psycopg.connect(dsn, connect_timeout=max(1, int(min(budget, 30))), autocommit=False) as con:
            con.read_only = True
            with con.cursor() as cur:
                cur.execute(f"SET LOCAL statement_timeout = {int(budget * 1000)}")
                return _read(cur)
    except psycopg.OperationalError as exc:
        return ReadResult(error="Postgres: " + _one_line(exc))
    except psycopg.Error as exc:
        return ReadResult(error="Postgres: " + _one_line(exc))
    except Exception as exc:  # one bad store costs that store, never the run
        return ReadResult(error=f"hermes Postgres reader failed: {type(exc).__name__}: {exc}")


def _read(cur) -> ReadResult:
    from deja.stages.sources.hermes import MESSAGE_COLUMNS, SESSION_COLUMNS, build

    cur.execute("SELECT table_name, column_name FROM information_schema.columns "
                "WHERE table_schema = current_schema() AND table_name IN ('sessions', 'messages')")
    cols: dict[str, set[str]] = {}
    for table, column in cur.fetchall():
        cols.setdefault(table, set()).add(column)
    if not {"session_id", "role", "content"} <= cols.get("messages", set()) or "id" not in cols.get("sessions", set()):
        return ReadResult(error="schema changed: no Hermes sessions/messages tables in this Postgres schema")

    def pick(table: str, want) -> str:
        return ", ".join(f'"{c}"' if c in cols[table] else f"NULL AS {c}" for c in want)

    cur.execute(f"SELECT {pick('sessions', SESSION_COLUMNS)} FROM sessions ORDER BY id")
    sessions = cur.fetchall()
    order = "session_id, timestamp, id" if {"timestamp", "id"} <= cols["messages"] else "session_id"
    cur.execute(f"SELECT {pick('messages', MESSAGE_COLUMNS)} FROM messages ORDER BY {order}")
    return build(sessions, _numbers(cur), "")


def _numbers(cur):
    """Rows with Postgres numerics as Python numbers (a NUMERIC timestamp arrives as Decimal)."""
    from decimal import Decimal

    for row in cur:
        yield tuple(float(v) if isinstance(v, Decimal) else v for v in row)


def _one_line(exc: Exception) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__
