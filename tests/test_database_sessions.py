"""A database that changed replaces only the sessions that changed.

A SQLite store (opencode here; every SQLite reader goes the same way,
pipeline/ingest.py ``fingerprints``) holds many sessions and an agent changes
one at a time: the next `deja index` writes that session's records again and
leaves the others' records, ids and all, as they were. A session the agent
deleted from its database is kept, marked gone, like a deleted transcript.
"""

from __future__ import annotations

import json
import sqlite3

import duckdb
from test_sqlite_store import add_session, by_harness, index, opencode_store


def three_sessions(home):
    db = opencode_store(home)
    con = sqlite3.connect(db)
    add_session(con, "ses_b", "lighthouse lens polishing schedule")
    add_session(con, "ses_c", "harbour crane maintenance rota")
    con.commit()
    con.close()
    return db


def add_message(db, sid: str, text: str, ts: int = 1772600000000) -> None:
    con = sqlite3.connect(db)
    con.execute("INSERT INTO message VALUES (?, ?, ?, ?, ?)",
                ("m2_" + sid, sid, ts, ts, json.dumps({"role": "user", "time": {"created": ts}})))
    con.execute("INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
                ("p2_" + sid, "m2_" + sid, sid, ts, ts, json.dumps({"type": "text", "text": text})))
    con.execute("UPDATE session SET time_updated = ? WHERE id = ?", (ts, sid))
    con.commit()
    con.close()


def live_records(index) -> dict[str, list[tuple]]:
    """session_key → its live records (record_id, seq, role, text), in order."""
    con = duckdb.connect()
    con.execute(f"ATTACH '{index / 'catalog.duckdb'}' AS cat (READ_ONLY)")
    live: dict[str, list[str]] = {}
    for dataset, rel in con.execute("SELECT dataset, file FROM cat.generation").fetchall():
        live.setdefault(dataset, []).append(str(index / rel))
    dead = [r[0] for r in con.execute("SELECT record_id FROM read_parquet(?)", [live["deletes"]]).fetchall()] \
        if live.get("deletes") else []
    rows = con.execute("SELECT session_key, record_id, seq, role, text FROM read_parquet(?, hive_partitioning=false) "
                       "WHERE record_id NOT IN (SELECT unnest(?::BIGINT[])) ORDER BY session_key, seq",
                       [live["records"], dead]).fetchall()
    out: dict[str, list[tuple]] = {}
    for key, *rest in rows:
        out.setdefault(key, []).append(tuple(rest))
    return out


def sessions(index) -> dict[str, tuple]:
    parts = [str(p) for p in (index / "sessions").glob("*.parquet")]
    con = duckdb.connect()
    con.execute(f"ATTACH '{index / 'catalog.duckdb'}' AS cat (READ_ONLY)")
    live = [str(index / r[0]) for r in con.execute("SELECT file FROM cat.generation WHERE dataset = 'sessions'")
            .fetchall()]
    assert set(live) <= set(parts)
    return {r[0]: r[1:] for r in con.execute(
        "SELECT session_key, title, messages, epoch_ms(started), epoch_ms(updated), gone_at IS NOT NULL "
        "FROM read_parquet(?)", [live]).fetchall()}


def manifest_records(index) -> int:
    con = duckdb.connect()
    con.execute(f"ATTACH '{index / 'catalog.duckdb'}' AS cat (READ_ONLY)")
    return con.execute("SELECT records FROM cat.manifest WHERE harness = 'opencode'").fetchone()[0]


def without_ids(records: dict[str, list[tuple]]) -> dict[str, list[tuple]]:
    return {k: [r[1:] for r in rows] for k, rows in records.items()}


def test_a_new_message_in_one_session_rewrites_only_that_sessions_records(home):
    db = three_sessions(home)
    first = index(home)
    assert by_harness(first)["opencode"]["sessions"] == 3
    before = live_records(home.index)
    add_message(db, "ses_b", "lighthouse keeper asked about the fog horn")
    second = by_harness(index(home))["opencode"]
    after = live_records(home.index)
    # that session only: its name (a title record: opencode named it) and its two turns
    assert second["records_added"] == len(after["opencode:ses_b"]) == 3
    for key in ("opencode:ses_01JQ8ZK4", "opencode:ses_c"):
        assert after[key] == before[key]  # the same records under the same ids: not written again
    assert [r[3] for r in after["opencode:ses_b"]] == ["t ses_b", "lighthouse lens polishing schedule",
                                                        "lighthouse keeper asked about the fog horn"]
    assert home.search("fog", "horn")["total"] == 1
    assert home.search("lighthouse")["total"] == 1  # one session: its old records are gone, not doubled
    assert manifest_records(home.index) == sum(len(v) for v in after.values())

    clean = home.root / "clean.db"
    home.run("index", extra_env={"DEJA_INDEX_DIR": str(clean)})
    assert without_ids(live_records(home.index)) == without_ids(live_records(clean))
    assert sessions(home.index) == sessions(clean)


def test_an_unchanged_rewrite_of_the_database_writes_no_records(home):
    db = three_sessions(home)
    index(home)
    before = live_records(home.index)
    con = sqlite3.connect(db)  # a write that leaves every session as it was (the agent's own bookkeeping)
    con.execute("CREATE TABLE IF NOT EXISTS kv (k TEXT, v TEXT)")
    con.execute("INSERT INTO kv VALUES ('last_opened', 'now')")
    con.commit()
    con.close()
    assert by_harness(index(home))["opencode"]["records_added"] == 0
    assert live_records(home.index) == before


def test_a_session_deleted_from_the_database_is_kept_marked_gone_until_pruned(home):
    db = three_sessions(home)
    index(home)
    before = live_records(home.index)
    con = sqlite3.connect(db)
    for table, column in (("part", "session_id"), ("message", "session_id"), ("session", "id")):
        con.execute(f"DELETE FROM {table} WHERE {column} = 'ses_c'")
    con.commit()
    con.close()
    summary = by_harness(index(home))["opencode"]
    assert (summary["sessions"], summary["gone"], summary["records_added"]) == (3, 1, 0)
    assert live_records(home.index) == before
    rows = sessions(home.index)
    assert rows["opencode:ses_c"][-1] is True and rows["opencode:ses_b"][-1] is False
    assert home.search("harbour", "crane")["total"] == 1  # kept: what the agent deleted is what memory is for
    summary = by_harness(json.loads(home.run("index", "--json", "--rebuild").stdout))["opencode"]
    assert (summary["sessions"], summary["gone"]) == (3, 1)  # a rebuild keeps it too
    rebuilt = live_records(home.index)
    assert without_ids(rebuilt) == without_ids(before)

    summary = by_harness(json.loads(home.run("index", "--json", "--prune-gone").stdout))["opencode"]
    assert (summary["sessions"], summary["gone"]) == (2, 0)
    assert home.search("harbour", "crane")["total"] == 0
    assert live_records(home.index)["opencode:ses_b"] == rebuilt["opencode:ses_b"]


def test_a_deleted_session_that_comes_back_is_no_longer_marked_gone(home):
    db = three_sessions(home)
    index(home)
    tables = (("part", "session_id"), ("message", "session_id"), ("session", "id"))
    con = sqlite3.connect(db)
    for table, column in tables:  # set aside, as a sync from another machine might
        con.execute(f"CREATE TABLE aside_{table} AS SELECT * FROM {table} WHERE {column} = 'ses_c'")
        con.execute(f"DELETE FROM {table} WHERE {column} = 'ses_c'")
    con.commit()
    index(home)
    assert sessions(home.index)["opencode:ses_c"][-1] is True
    for table, _ in reversed(tables):
        con.execute(f"INSERT INTO {table} SELECT * FROM aside_{table}")
    con.commit()
    con.close()
    index(home)
    assert sessions(home.index)["opencode:ses_c"][-1] is False
