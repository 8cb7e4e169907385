"""The catalog's ``packets`` table (stages/store/catalog.sql): one compaction-
recovery packet body per session/workspace pair, delivered at most once.

Plain functions on a read-write catalog connection; the hooks' side (markers,
size limits, JSON) is hooks/packet/store.py.
"""

from __future__ import annotations


def body(con, sid: str, cwd: str, undelivered: bool = False) -> str | None:
    """The pair's stored packet body (only if not yet delivered, with
    ``undelivered``), or None."""
    row = con.execute("SELECT body FROM packets WHERE session_id = ? AND workspace = ?"
                      + (" AND NOT delivered" if undelivered else ""), [sid, cwd]).fetchone()
    return row[0] if row else None


def replace(con, sid: str, cwd: str, harness: str, body: str, keep: int) -> list[tuple[str, str]]:
    """Store the pair's packet, undelivered, in place of the one it had, and evict
    the oldest pairs past ``keep``, in one transaction. Returns the evicted
    (session_id, workspace) pairs."""
    con.execute("BEGIN")
    try:
        con.execute("DELETE FROM packets WHERE session_id = ? AND workspace = ?", [sid, cwd])
        con.execute("INSERT INTO packets (session_id, workspace, harness, created, delivered, body) "
                    "VALUES (?, ?, ?, now()::TIMESTAMP, false, ?)", [sid, cwd, harness, body])
        evicted = con.execute(
            "SELECT session_id, workspace FROM packets ORDER BY created DESC, session_id OFFSET ?", [keep]
        ).fetchall()
        for s, w in evicted:
            con.execute("DELETE FROM packets WHERE session_id = ? AND workspace = ?", [s, w])
        con.execute("COMMIT")
    except Exception:
        con.execute("ROLLBACK")
        raise
    return evicted


def claim(con, sid: str, cwd: str) -> bool:
    """Mark the pair's packet delivered: True for exactly one caller, however
    many race (the update is the claim)."""
    row = con.execute("UPDATE packets SET delivered = true WHERE session_id = ? AND workspace = ? "
                      "AND NOT delivered RETURNING 1", [sid, cwd]).fetchone()
    return bool(row)


def delete(con, sid: str, cwd: str) -> None:
    con.execute("DELETE FROM packets WHERE session_id = ? AND workspace = ?", [sid, cwd])
