"""Goose: the legacy JSONL sessions (offset path) and the SQLite store
(snapshot floor): roles, order, times, title, project, work records, the
sub-agent/recipe filter, and bad input counted."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

from deja.pipeline.demo import build_sqlite_samples
from deja.stages.sources import goose

SAMPLES = Path(__file__).resolve().parents[1] / "data_samples" / "goose" / "sessions"


def goose_store(home) -> Path:
    d = home.home / ".local" / "share" / "goose" / "sessions"
    d.mkdir(parents=True, exist_ok=True)
    for f in SAMPLES.iterdir():
        shutil.copy(f, d / f.name)
    build_sqlite_samples(d)
    return d


def test_legacy_jsonl_roles_order_times_title_project_and_work(home):
    d = goose_store(home)
    res = goose.read(str(d / "20260303_1.jsonl"))
    (s,) = res.sessions
    assert (s.session_id, s.title, s.cwd) == ("20260303_1", "Flaky integration test temp dir", "/home/dev/src/report-builder")
    assert [m.role for m in s.messages] == ["user", "assistant", "edit", "command", "files", "tool-output", "assistant"]
    assert s.messages[0].ts == 1772530000000
    assert s.messages[2].text == "/home/dev/src/report-builder/tests/test_export.py\nOUT = '/tmp/report-out'"
    assert s.messages[3].text == "$ pytest -q tests/test_export.py"
    assert s.messages[5].text == "3 passed in 0.41s" and s.messages[5].is_error is False


def test_legacy_jsonl_append_is_read_from_the_offset_with_the_head_metadata(home):
    d = goose_store(home)
    p = d / "20260303_1.jsonl"
    first = goose.read(str(p))
    with open(p, "a") as fh:
        fh.write(json.dumps({"role": "user", "created": 1772530100, "content": [{"type": "text", "text": "now the CSV one"}]}) + "\n")
        fh.write('{"role": "assistant", "created": 17725')  # torn: still being written
    more = goose.read(str(p), first.safe_offset)
    (s,) = more.sessions
    assert s.cwd == "/home/dev/src/report-builder" and [m.text for m in s.messages] == ["now the CSV one"]
    assert more.safe_offset < p.stat().st_size and more.malformed == 0


def test_sqlite_sessions_of_people_only_unless_subagents_are_asked_for(home, monkeypatch):
    d = goose_store(home)
    res = goose.read(str(d / "sessions.db"))
    (s,) = res.sessions
    assert (s.session_id, s.title, s.cwd) == ("20260306_2", "Dockerfile cache misses", "/home/dev/src/image-pipeline")
    assert [m.role for m in s.messages] == ["user", "assistant", "command", "tool-output"]
    assert s.messages[1].ts == 1772791230000 and s.messages[2].text == "$ docker build -t image-pipeline ."
    monkeypatch.setenv("DEJA_INCLUDE_SUBAGENTS", "1")
    recipe = next(s for s in goose.read(str(d / "sessions.db")).sessions if s.session_id == "20260306_3")
    assert recipe.spawned and recipe.kind == "scheduled"


def test_acp_terminal_and_gateway_sessions_are_a_persons_and_agent_runs_are_not(home, monkeypatch):
    d = goose_store(home)
    con = sqlite3.connect(d / "sessions.db")
    # SessionType (session_manager.rs): a chat from an ACP client such as Zed, `goose term`, a messaging gateway
    for n, kind in enumerate(("acp", "terminal", "gateway", "sub_agent", "hidden"), 4):
        sid = f"20260306_{n}"
        con.execute("INSERT INTO sessions (id, name, session_type, working_dir) VALUES (?, ?, ?, '/home/dev/src/api')",
                    (sid, f"a {kind} chat", kind))
        con.execute("INSERT INTO messages (session_id, role, content_json, created_timestamp) VALUES (?, 'user', ?, ?)",
                    (sid, json.dumps([{"type": "text", "text": f"said in {kind}"}]), 1772800000 + n))
    con.commit()
    con.close()
    read = {s.session_id: s for s in goose.read(str(d / "sessions.db")).sessions}
    assert sorted(read) == ["20260306_2", "20260306_4", "20260306_5", "20260306_6"]
    assert [m.text for m in read["20260306_4"].messages] == ["said in acp"] and not read["20260306_4"].spawned
    monkeypatch.setenv("DEJA_INCLUDE_SUBAGENTS", "1")
    spawned = {s.session_id: s.kind for s in goose.read(str(d / "sessions.db")).sessions if s.spawned}
    assert spawned == {"20260306_3": "scheduled", "20260306_7": "sub_agent", "20260306_8": "hidden"}


def test_a_bad_content_row_costs_that_row_and_a_corrupt_store_is_an_error(home):
    d = goose_store(home)
    con = sqlite3.connect(d / "sessions.db")
    con.execute("UPDATE messages SET content_json = '{not json' WHERE id = 1")
    con.commit()
    con.close()
    res = goose.read(str(d / "sessions.db"))
    assert res.malformed == 1 and res.error == "" and res.sessions[0].messages[0].role == "assistant"
    with open(d / "sessions.db", "r+b") as fh:
        fh.seek(100)
        fh.write(b"\xff" * 4000)
    res = goose.read(str(d / "sessions.db"))
    assert res.error and res.sessions == []


def test_a_store_of_another_schema_is_reported_as_schema_changed(home):
    d = goose_store(home)
    con = sqlite3.connect(d / "sessions.db")
    con.execute("ALTER TABLE messages RENAME TO messages_v2")
    con.commit()
    con.close()
    assert goose.read(str(d / "sessions.db")).error.startswith("schema changed")


def test_the_data_dir_follows_goose_path_root_xdg_and_the_deja_overrides():
    from deja.stages.sources.locate import goose_data_dir, goose_db

    assert goose_data_dir({"HOME": "/h"}) == "/h/.local/share/goose"
    assert goose_data_dir({"HOME": "/h", "XDG_DATA_HOME": "/x"}) == "/x/goose"
    assert goose_data_dir({"HOME": "/h", "GOOSE_PATH_ROOT": "/g"}) == "/g/data"
    assert goose_db({"HOME": "/h", "DEJA_GOOSE_ROOT": "/r"}) == "/r/sessions/sessions.db"
    assert goose_db({"HOME": "/h", "DEJA_GOOSE_DB": "/d.db"}) == "/d.db"


def test_deja_index_reads_both_goose_stores_at_the_default_path(home):
    goose_store(home)
    summary = json.loads(home.run("index", "--json").stdout)
    assert {h["harness"]: h for h in summary["harnesses"]}["goose"]["sessions"] == 2
