"""Hermes: the SQLite store per profile (roles, order, times, project, work
records, titles, parent edges, rewinds, bad input) and the same tables read
from a real Postgres started here."""

from __future__ import annotations

import json
import shutil
import sqlite3
import time
from pathlib import Path

from conftest import _free_port
from deja.pipeline.demo import build_sqlite_samples
from deja.stages.sources import hermes, hermes_pg

SAMPLES = Path(__file__).resolve().parent.parent / "data_samples" / "hermes"
SID = "20260304_101500_a1b2c3"


def hermes_home(home) -> Path:
    """The sample stores at the default home path, ~/.hermes."""
    d = home.home / ".hermes"
    shutil.copytree(SAMPLES, d)
    build_sqlite_samples(d)
    return d


def test_roles_order_times_title_project_and_work_records(home):
    d = hermes_home(home)
    (s,) = hermes.read(str(d / "state.db")).sessions
    assert (s.session_id, s.cwd, s.branch, s.title, s.title_rank) == (SID, "/home/dev/src/mailer", "main",
                                                                       "SMTP retry backoff", 1)
    assert [m.role for m in s.messages] == ["user", "assistant", "command", "files", "tool-output", "tool-output",
                                            "assistant", "edit", "files", "assistant"]
    assert s.messages[0].ts == 1772619300250  # fractional epoch seconds, exact to the millisecond
    assert s.messages[2].text == "$ cd /home/dev/src/mailer && python -m pytest tests/test_retry.py -q"
    failed = s.messages[5]
    assert (failed.exit_code, failed.is_error, failed.tool) == (1, True, "terminal")
    assert failed.text.startswith("FAILED tests/test_retry.py")
    assert s.messages[7].text == "/home/dev/src/mailer/retry.py\ndelay = base * attempt"


def test_a_store_without_cwd_is_the_profiles_project_and_the_root_store_is_hermes(home):
    d = hermes_home(home)
    (s,) = hermes.read(str(d / "profiles" / "research" / "state.db")).sessions
    assert (s.cwd, s.project) == ("", "research")
    assert [m.role for m in s.messages] == ["user", "assistant"]  # the system prompt is not memory
    con = sqlite3.connect(d / "state.db")
    con.execute("UPDATE sessions SET cwd = NULL")
    con.commit()
    con.close()
    assert hermes.read(str(d / "state.db")).sessions[0].project == "hermes"


def test_every_profile_is_found_and_indexed(home):
    hermes_home(home)
    summary = json.loads(home.run("index", "--json").stdout)
    row = {h["harness"]: h for h in summary["harnesses"]}["hermes"]
    assert (row["files"], row["sessions"]) == (2, 2)
    hit = home.search("exponential")
    assert hit["hits"][0]["session"]["harness"] == "hermes"


def test_a_delegated_child_is_a_subagent_and_a_rewound_turn_is_gone(home):
    d = hermes_home(home)
    con = sqlite3.connect(d / "state.db")
    con.execute("INSERT INTO sessions (id, source, model_config, parent_session_id, started_at) VALUES "
                "('child', 'cli', ?, ?, 1772619400)", (json.dumps({"_delegate_from": SID}), SID))
    con.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES ('child', 'user', 'look', 1772619401)")
    con.execute("UPDATE messages SET active = 0 WHERE content LIKE 'Backoff is now%'")
    con.commit()
    con.close()
    sessions = {s.session_id: s for s in hermes.read(str(d / "state.db")).sessions}
    child = sessions["child"]
    assert (child.kind, child.parent, child.spawned) == ("subagent", SID, True)
    assert not any(m.text.startswith("Backoff is now") for m in sessions[SID].messages)


def test_bad_input_is_counted_and_costs_only_itself(home):
    d = hermes_home(home)
    db = d / "state.db"
    con = sqlite3.connect(db)
    con.execute("UPDATE messages SET tool_calls = '{not json' WHERE tool_calls LIKE '%read_file%'")
    con.commit()
    con.close()
    res = hermes.read(str(db))
    assert res.malformed == 1 and res.error == "" and res.sessions
    con = sqlite3.connect(db)
    con.execute("ALTER TABLE messages RENAME TO messages_v2")
    con.commit()
    con.close()
    assert hermes.read(str(db)).error.startswith("schema changed")
    db.write_bytes(b"SQLite format 3\x00" + b"\x00" * 100)
    assert hermes.read(str(db)).error
    db.unlink()
    assert hermes.read(str(db)).error.startswith("not a readable regular file")


def test_a_changed_database_replaces_its_sessions(home):
    d = hermes_home(home)
    home.run("index")
    con = sqlite3.connect(d / "state.db")
    con.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, 'user', "
                "'now add jitter to the backoff', 1772619400)", (SID,))
    con.commit()
    con.close()
    home.run("index")
    assert home.search("jitter")["total"] == 1
    assert home.search("exponential")["total"] == 1  # read again, not duplicated


# ---------------------------------------------------------------- Postgres


def _pg_store(dsn: str) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as con:
        con.execute("CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, started_at DOUBLE PRECISION, "
                    "cwd TEXT, title TEXT, title_source TEXT, parent_session_id TEXT, model_config TEXT)")
        con.execute("CREATE TABLE messages (id BIGSERIAL PRIMARY KEY, session_id TEXT NOT NULL, role TEXT NOT NULL, "
                    "content TEXT, tool_calls TEXT, tool_name TEXT, timestamp DOUBLE PRECISION NOT NULL)")
        con.execute("INSERT INTO sessions VALUES ('pg1', 'telegram', 1772800000, '/srv/bots/relay', 'Relay reconnects', "
                    "'user', NULL, NULL)")
        calls = json.dumps([{"function": {"name": "terminal", "arguments": json.dumps({"command": "make test"})}}])
        con.execute("INSERT INTO messages (session_id, role, content, tool_calls, timestamp) VALUES "
                    "('pg1', 'user', 'the relay bot reconnects every minute', NULL, 1772800000.5), "
                    "('pg1', 'assistant', 'The keepalive is shorter than the proxy idle timeout.', %s, 1772800004.25)",
                    (calls,))


def test_the_postgres_store_is_read_with_a_real_driver(home, postgres):
    _pg_store(postgres)
    env = dict(home.env, DEJA_HERMES_PG_DSN=postgres)
    (path,) = hermes.hermes_files(env)
    assert path.startswith(hermes.PG_PREFIX) and postgres not in path  # the DSN only as a hash
    res = hermes_pg.read(path, env)
    assert res.error == ""
    (s,) = res.sessions
    assert (s.session_id, s.cwd, s.title, s.title_rank) == ("pg1", "/srv/bots/relay", "Relay reconnects", 2)
    assert [(m.role, m.ts) for m in s.messages] == [("user", 1772800000500), ("assistant", 1772800004250),
                                                     ("command", 1772800004250)]
    summary = json.loads(home.run("index", "--json", extra_env={"DEJA_HERMES_PG_DSN": postgres}).stdout)
    assert {h["harness"]: h for h in summary["harnesses"]}["hermes"]["sessions"] == 1
    assert home.search("keepalive")["total"] == 1


def test_postgres_reads_are_read_only_and_bounded_by_the_store_timeout(home, postgres):
    _pg_store(postgres)
    import psycopg

    with psycopg.connect(postgres, autocommit=True) as con:  # a view that sleeps past the budget
        con.execute("ALTER TABLE messages RENAME TO messages_t")
        con.execute("CREATE VIEW messages AS SELECT m.* FROM messages_t m, pg_sleep(5) s")
    env = dict(home.env, DEJA_HERMES_PG_DSN=postgres, DEJA_STORE_TIMEOUT="1")
    started = time.monotonic()
    res = hermes_pg.read(hermes.hermes_files(env)[0], env)
    assert time.monotonic() - started < 4
    assert res.error.startswith("Postgres:") and "\n" not in res.error and "timeout" in res.error


def test_an_unreachable_server_is_that_stores_one_line_error(home):
    dsn = f"host=127.0.0.1 port={_free_port()} dbname=hermes user=nobody connect_timeout=2"
    env = dict(home.env, DEJA_HERMES_PG_DSN=dsn)
    res = hermes_pg.read(hermes.hermes_files(env)[0], env)
    assert res.error.startswith("Postgres:") and "\n" not in res.error and res.sessions == []
    proc = home.run("index", "--json", extra_env={"DEJA_HERMES_PG_DSN": dsn})  # the run completes
    assert json.loads(proc.stdout)["harnesses"]
