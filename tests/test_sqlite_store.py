"""SQLite-backed stores (stages/sources/sqlite_store.py) through the real `deja index`:
a snapshot of the committed state, never a lock on or a byte written to the
agent's database, a per-store time budget, and a bad store costing only itself."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

from conftest import REPO, Home

from deja.pipeline.demo import build_sqlite_samples

SPEC = REPO / "data_samples" / "opencode" / "opencode.db.json"


def opencode_store(home: Home) -> Path:
    """The sample opencode database at its default home path."""
    d = home.home / ".local" / "share" / "opencode"
    d.mkdir(parents=True, exist_ok=True)
    shutil.copy(SPEC, d / "opencode.db.json")
    build_sqlite_samples(d)
    return d / "opencode.db"


def add_session(con, sid: str, text: str, ts: int = 1772500000000) -> None:
    con.execute("INSERT INTO session VALUES (?, 'prj_1', NULL, 's', '/home/dev/src/other', ?, '1.2.0', ?, ?)",
                (sid, "t " + sid, ts, ts))
    con.execute("INSERT INTO message VALUES (?, ?, ?, ?, ?)",
                ("m_" + sid, sid, ts, ts, json.dumps({"role": "user", "time": {"created": ts}})))
    con.execute("INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
                ("p_" + sid, "m_" + sid, sid, ts, ts, json.dumps({"type": "text", "text": text})))


def index(home: Home, *args: str, **env) -> dict:
    return json.loads(home.run("index", "--json", *args, extra_env=env).stdout)


def by_harness(summary: dict) -> dict:
    return {h["harness"]: h for h in summary["harnesses"]}


def test_a_wal_store_is_read_with_its_committed_wal_and_left_untouched(home):
    db = opencode_store(home)
    writer = sqlite3.connect(db)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("PRAGMA wal_autocheckpoint=0")
    add_session(writer, "ses_inwal", "zeppelin mooring drill only in the wal")
    writer.commit()
    assert (db.parent / "opencode.db-wal").stat().st_size > 0  # the new session lives only in the WAL
    before = {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in db.parent.iterdir()}
    index(home)
    after = {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in db.parent.iterdir()}
    assert after == before  # no -shm created, nothing checkpointed, nothing written
    assert home.search("zeppelin mooring")["total"] == 1
    writer.close()


def test_a_change_only_in_the_wal_is_seen_by_the_next_run(home):
    db = opencode_store(home)
    writer = sqlite3.connect(db)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.commit()
    index(home)
    add_session(writer, "ses_later", "quokka lantern appended later")
    writer.commit()
    index(home)
    assert home.search("quokka lantern")["total"] == 1
    assert home.search("refill drift")["total"] == 1  # the sessions that did not change are still there, once
    writer.close()


def test_a_locked_database_is_read_as_committed_and_the_writer_is_not_blocked(home):
    db = opencode_store(home)
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("BEGIN EXCLUSIVE")
    add_session(writer, "ses_uncommitted", "walrus uncommitted gossip")
    summary = index(home)
    assert summary["errors"] == []
    assert by_harness(summary)["opencode"]["sessions"] == 1
    assert home.search("walrus gossip")["total"] == 0  # not committed: not seen
    writer.execute("COMMIT")  # deja took no lock: the agent's commit goes through
    writer.close()
    index(home)
    assert home.search("walrus gossip")["total"] == 1


def test_a_corrupt_database_is_reported_and_the_rest_of_the_index_builds(home):
    db = opencode_store(home)
    data = bytearray(db.read_bytes())
    data[100:4096] = os.urandom(4096 - 100)  # the header survives, the schema page does not
    db.write_bytes(bytes(data))
    home.claude_file("c1").write_text(json.dumps({
        "type": "user", "sessionId": "c1", "cwd": "/home/dev/src/shop", "timestamp": "2026-03-02T09:00:00Z",
        "uuid": "u1", "message": {"role": "user", "content": "marmot payroll export"}}) + "\n")
    summary = index(home)
    hs = by_harness(summary)
    assert hs["opencode"]["failed"] == 1 and hs["opencode"]["sessions"] == 0
    assert any("opencode.db" in e and "SQLite" in e for e in summary["errors"])
    assert hs["claude"]["sessions"] == 1
    assert home.search("marmot payroll")["total"] == 1


def test_a_file_that_is_not_sqlite_at_all_is_reported(home):
    db = opencode_store(home)
    db.write_bytes(b"this is not a database\n" * 10)
    summary = index(home)
    assert any("not a readable SQLite database" in e for e in summary["errors"])


def test_a_store_over_its_time_budget_is_unreadable_and_the_rest_builds(home):
    opencode_store(home)
    home.claude_file("c1").write_text(json.dumps({
        "type": "user", "sessionId": "c1", "cwd": "/home/dev/src/shop", "timestamp": "2026-03-02T09:00:00Z",
        "uuid": "u1", "message": {"role": "user", "content": "marmot payroll export"}}) + "\n")
    summary = index(home, DEJA_STORE_TIMEOUT="0.000001")
    hs = by_harness(summary)
    assert hs["opencode"]["failed"] == 1
    assert any("DEJA_STORE_TIMEOUT" in e for e in summary["errors"])
    assert hs["claude"]["sessions"] == 1
    # with the default budget the next run reads it (a failed store is tried again)
    assert by_harness(index(home))["opencode"]["sessions"] == 1


def test_an_empty_store_file_is_no_sessions_and_no_error(home):
    db = opencode_store(home)
    db.write_bytes(b"")
    summary = index(home)
    assert summary["errors"] == []


def test_a_store_read_before_keeps_its_sessions_when_a_later_read_fails(home):
    """History outlives a bad read: a database over its time budget or damaged
    this run keeps every session the index holds of it, through a rebuild too,
    says why, and is read again when it can be."""
    db = opencode_store(home)
    first = by_harness(index(home))["opencode"]["sessions"]
    assert first >= 1
    before = {s["id"] for s in json.loads(home.run("last", "--json", "--harness", "opencode").stdout)["sessions"]}
    os.utime(db)  # the agent wrote to it
    summary = index(home, DEJA_STORE_TIMEOUT="0.000001")
    assert by_harness(summary)["opencode"] == dict(by_harness(summary)["opencode"], failed=1, sessions=first)
    good = db.read_bytes()
    db.write_bytes(good[:4096])  # damaged mid-write
    for args in ((), ("--rebuild",)):
        summary = index(home, *args)
        assert by_harness(summary)["opencode"]["sessions"] == first, args
        assert any("opencode.db" in e and "SQLite" in e for e in summary["errors"])
        kept = {s["id"] for s in json.loads(home.run("last", "--json", "--harness", "opencode").stdout)["sessions"]}
        assert kept == before, args
    doctor = home.run("doctor").stdout
    assert "opencode.db" in doctor and "malformed" in doctor
    db.write_bytes(good)
    summary = index(home)
    assert summary["errors"] == [] and by_harness(summary)["opencode"]["sessions"] == first
