"""The session object of the JSON contract (cli-contract §3.1), shared by search,
last, show and ctx so every command describes a session the same way."""

from __future__ import annotations

import time

from deja.stages.store.duck import sql_list

COLUMNS = (
    "ord, session_key, harness, session_id, project, project_root, path, started, updated, title, agent_title, "
    "touched, kind, parent, agent, origin, from_machine, orig_id, messages, decision, gave_up, gone_at, "
    # `deja promote` state (store.read loads the lifecycle table); NULL when none
    """(SELECT {'state': l.state, 'note': l.note, 'at': l."at"} FROM lifecycle l """
    "WHERE l.session_key = sessions.session_key) AS lifecycle"
)


def iso(dt) -> str:
    """A timestamp as UTC ISO-8601: a datetime, or epoch milliseconds (``session_rows``)."""
    if isinstance(dt, int):
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(dt / 1000))
    from datetime import datetime, timezone  # (here: the search path passes epoch ms)

    if isinstance(dt, datetime):
        return dt.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return str(dt)


def session_object(row: dict) -> dict:
    """Always harness, id, project, source; the rest only when known."""
    s = {"harness": row["harness"], "id": row["session_id"], "project": row.get("project") or "",
         "source": {"origin": row.get("origin") or "local"}}
    if row.get("started"):
        s["started"] = iso(row["started"])
    if row.get("updated"):
        s["updated"] = iso(row["updated"])
    if row.get("project_root"):
        s["project_root"] = row["project_root"]
    if row.get("path"):
        s["path"] = row["path"]
    if row.get("title"):
        s["title"] = row["title"]
        if row.get("agent_title"):
            s["agent_title"] = True
    if row.get("touched"):
        s["touched"] = list(row["touched"])[:5]
    if row.get("gave_up"):
        s["gave_up"] = True
    if row.get("gone_at"):  # the agent deleted the transcript; deja keeps the session
        s["source_gone"] = True
        s["gone_at"] = iso(row["gone_at"])
    for k in ("kind", "parent", "agent"):
        if row.get(k):
            s[k] = row[k]
    if row.get("orig_id"):  # synced in (deja sync import): its id and machine where it ran
        s["orig_id"] = row["orig_id"]
    if row.get("from_machine"):
        s["from"] = row["from_machine"]
    lc = row.get("lifecycle")
    if lc and lc.get("state"):
        s["lifecycle"] = lc["state"]
        if lc.get("note"):
            s["lifecycle_note"] = lc["note"]
        if lc.get("at"):
            from datetime import timezone

            s["lifecycle_at"] = iso(lc["at"].replace(tzinfo=timezone.utc) if lc["at"].tzinfo is None else lc["at"])
    return s


def demote_rejected(con, ranked: list, any_rejected: bool = True) -> list:
    """cli-contract §5.3 (end): sessions a person marked `rejected` move below the rest, order kept."""
    if not ranked or not any_rejected:
        return ranked
    rejected = {r[0] for r in con.execute(
        "SELECT s.ord FROM sessions s JOIN lifecycle l ON l.session_key = s.session_key WHERE l.state = 'rejected'"
    ).fetchall()}
    if not rejected:
        return ranked
    return [r for r in ranked if r.ord not in rejected] + [r for r in ranked if r.ord in rejected]


# started/updated as epoch ms: turning TIMESTAMPTZ into datetimes loads zoneinfo, which a search need not pay for
_ROW_COLUMNS = (COLUMNS.replace("started, updated,", "epoch_ms(started) AS started, epoch_ms(updated) AS updated,")
                .replace("gone_at,", "epoch_ms(gone_at) AS gone_at,"))
_ROW_COLUMNS_NO_LIFECYCLE = _ROW_COLUMNS.split(", (SELECT")[0] + ", NULL AS lifecycle"


# session rows a warm store keeps (about a kilobyte each)
MEMO_ROWS = 20_000


def session_rows(con, ords: list[int], lifecycle: bool = True, memo: dict | None = None) -> dict[int, dict]:
    """Session rows by ordinal, as dicts (for callers that need more than the object;
    started and updated in epoch milliseconds). ``lifecycle``: False when no
    session has a `deja promote` state (the lookup per row is then time spent for nothing).
    ``memo``: rows kept from the calls before, for a store that does not change
    under it (a warm process's, LiveStore.memo: a new catalog is a new store)."""
    if memo is None:
        return _session_rows(con, ords, lifecycle)
    if len(memo) > MEMO_ROWS:
        memo.clear()
    missing = [o for o in ords if o not in memo]
    if missing:
        memo.update(_session_rows(con, missing, lifecycle))
    return {o: dict(memo[o]) for o in ords if o in memo}  # (copies: a caller may add to its rows)


def _session_rows(con, ords: list[int], lifecycle: bool) -> dict[int, dict]:
    if not ords:
        return {}
    columns = _ROW_COLUMNS if lifecycle else _ROW_COLUMNS_NO_LIFECYCLE
    cur = con.execute(f"SELECT {columns} FROM sessions WHERE ord IN (SELECT unnest({sql_list(ords)}))")
    names = [d[0] for d in cur.description]
    return {r[0]: dict(zip(names, r)) for r in cur.fetchall()}


def session_objects(con, ords: list[int]) -> dict[int, dict]:
    return {o: session_object(r) for o, r in session_rows(con, ords).items()}
