"""Crush: per-project SQLite stores found through projects.json; roles,
order, times, title, project, work records, parent edges, bad input."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

from deja.pipeline.demo import build_sqlite_samples
from deja.stages.sources import crush

SAMPLES = Path(__file__).resolve().parents[1] / "data_samples" / "crush"
SID = "b7e1c0d2-5a3f-4e8b-9c1d-2f3a4b5c6d7e"


def crush_store(home) -> Path:
    """The sample store in a project under HOME, listed in Crush's projects.json."""
    project = home.home / "src" / "inventory-svc"
    (project / ".crush").mkdir(parents=True)
    shutil.copy(SAMPLES / "src" / "inventory-svc" / ".crush" / "crush.db.json", project / ".crush" / "crush.db.json")
    build_sqlite_samples(project / ".crush")
    g = home.home / ".local" / "share" / "crush"
    g.mkdir(parents=True)
    (g / "projects.json").write_text(json.dumps({"projects": [
        {"path": str(project), "data_dir": str(project / ".crush"), "last_accessed": "2026-03-07T14:00:00Z"}]}))
    return project / ".crush" / "crush.db"


def test_roles_order_times_title_project_and_work_records(home):
    db = crush_store(home)
    (s,) = crush.read(str(db)).sessions
    assert (s.session_id, s.title, s.cwd) == (SID, "Stock count goes stale after restock", str(home.home / "src" / "inventory-svc"))
    assert [m.role for m in s.messages] == ["user", "assistant", "edit", "command", "files", "tool-output", "assistant"]
    assert s.messages[0].ts == 1772892000000  # Unix seconds
    assert s.messages[2].text == "/home/dev/src/inventory-svc/stock/restock.go\n\treturn tx.Commit()"
    assert s.messages[3].text == "$ go test ./stock/..."
    assert "reasoning" not in s.messages[1].text and "cache invalidation" not in s.messages[1].text


def test_discovery_goes_through_projects_json_and_crush_global_data(home):
    db = crush_store(home)
    assert [f.path for f in crush.discover({"HOME": str(home.home)})] == [str(db)]
    assert crush.discover({"HOME": str(home.home), "CRUSH_GLOBAL_DATA": str(home.root / "none")}) == []


def test_a_subagent_session_names_its_parent_and_summaries_are_not_speech(home, monkeypatch):
    db = crush_store(home)
    con = sqlite3.connect(db)
    con.execute("INSERT INTO sessions (id, parent_session_id, title, updated_at, created_at) VALUES ('kid', ?, 'agent', 1, 1)", (SID,))
    con.execute("INSERT INTO messages (id, session_id, role, parts, created_at, updated_at) VALUES "
                "('k1', 'kid', 'user', ?, 1772892400, 1772892400)",
                (json.dumps([{"type": "text", "data": {"text": "find the cache"}}]),))
    con.execute("INSERT INTO messages (id, session_id, role, parts, created_at, updated_at, is_summary_message) VALUES "
                "('s1', ?, 'assistant', ?, 1772892500, 1772892500, 1)", (SID, json.dumps([{"type": "text", "data": {"text": "SUMMARY"}}])))
    con.commit()
    con.close()
    res = crush.read(str(db))
    assert [s.session_id for s in res.sessions] == [SID]
    assert all(m.text != "SUMMARY" for m in res.sessions[0].messages)
    monkeypatch.setenv("DEJA_INCLUDE_SUBAGENTS", "1")
    kid = next(s for s in crush.read(str(db)).sessions if s.session_id == "kid")
    assert (kid.kind, kid.parent, kid.spawned) == ("subagent", SID, True)


def test_a_bad_parts_row_costs_that_row_and_a_corrupt_store_is_an_error(home):
    db = crush_store(home)
    con = sqlite3.connect(db)
    con.execute("UPDATE messages SET parts = '[{oops' WHERE id = 'm1'")
    con.commit()
    con.close()
    res = crush.read(str(db))
    assert res.malformed == 1 and res.error == "" and res.sessions[0].messages[0].role == "assistant"
    db.write_bytes(b"not a database at all")
    res = crush.read(str(db))
    assert res.error and res.sessions == []


def test_deja_index_reads_crush_stores(home):
    crush_store(home)
    summary = json.loads(home.run("index", "--json").stdout)
    assert {h["harness"]: h for h in summary["harnesses"]}["crush"]["sessions"] == 1


def test_a_failed_bash_command_takes_the_exit_code_its_result_ends_with(home):
    """Crush's bash tool ends a failed command's output with "Exit code N"
    (internal/agent/tools/bash.go); the command record carries it."""
    db = crush_store(home)
    con = sqlite3.connect(db)
    call = [{"type": "tool_call", "data": {"id": "tc9", "name": "bash", "input": json.dumps({"command": "go vet ./..."}),
                                           "finished": True}}]
    result = [{"type": "tool_result", "data": {"tool_call_id": "tc9", "name": "bash", "is_error": False,
                                               "content": "stock/restock.go:12: unreachable code\n\nExit code 1"}}]
    for mid, role, parts, at in (("m8", "assistant", call, 1772892600), ("m9", "tool", result, 1772892601)):
        con.execute("INSERT INTO messages (id, session_id, role, parts, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
                    (mid, SID, role, json.dumps(parts), at, at))
    con.commit()
    con.close()
    (s,) = crush.read(str(db)).sessions
    vet = next(m for m in s.messages if m.role == "command" and "go vet" in m.text)
    assert (vet.text, vet.exit_code) == ("$ go vet ./...  → exit 1", 1)
    ok = next(m for m in s.messages if m.role == "command" and "go test" in m.text)
    assert ok.exit_code is None  # a command that did not fail says no code
