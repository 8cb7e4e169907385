"""Zed's threads store: zstd and JSON bodies, roles, order, the thread time,
title, project, work records, parent edges; a zstd body cut short costs that
thread, a corrupt database is an error, and the run completes."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import zstandard

from deja.pipeline.demo import build_sqlite_samples
from deja.stages.sources import zed

SPEC = Path(__file__).resolve().parents[1] / "data_samples" / "zed" / "threads" / "threads.db.json"


def zed_store(home) -> Path:
    d = home.home / ".local" / "share" / "zed" / "threads"
    d.mkdir(parents=True, exist_ok=True)
    shutil.copy(SPEC, d / "threads.db.json")
    build_sqlite_samples(d)
    return d / "threads.db"


def add_zstd_thread(db: Path, tid: str, text: str, parent=None, cut: bool = False) -> None:
    doc = {"version": "0.3.0", "title": "t", "updated_at": "2026-03-05T08:00:00+00:00",
           "messages": [{"User": {"id": "u", "content": [{"Text": text}, {"Mention": {"uri": {}, "content": "fn main() {}"}}]}},
                        {"Agent": {"content": [{"Thinking": {"text": "hmm"}}, {"Text": "done"},
                                               {"ToolUse": {"name": "edit_file", "input": {"path": "src/main.rs"}}}],
                                   "tool_results": {}}}]}
    blob = zstandard.ZstdCompressor(level=3).compress(json.dumps(doc).encode())
    if cut:
        blob = blob[: len(blob) // 2]
    con = sqlite3.connect(db)
    con.execute("INSERT INTO threads VALUES (?, ?, ?, 'zstd', ?, ?, ?, '0', ?)",
                (tid, "Zstd thread " + tid, "2026-03-05T08:00:00+00:00", blob, parent, "/home/dev/src/engine",
                 "2026-03-05T07:59:00+00:00"))
    con.commit()
    con.close()


def test_roles_order_time_title_project_and_work_records(home):
    db = zed_store(home)
    (s,) = zed.read(str(db)).sessions
    assert (s.title, s.cwd) == ("Borrow checker error in the parser", "/home/dev/src/lexer")
    assert [m.role for m in s.messages] == ["user", "assistant", "command", "tool-output", "files"]
    assert {m.ts for m in s.messages} == {1772615400000}  # created_at, for every message
    assert s.messages[2].text == "$ cargo test -p lexer" and s.messages[4].text == "lexer/src/parser.rs"


def test_a_zstd_body_is_decoded_with_mentions_kept_and_thinking_dropped(home):
    db = zed_store(home)
    add_zstd_thread(db, "z1", "port the renderer to wgpu")
    s = next(s for s in zed.read(str(db)).sessions if s.session_id == "z1")
    assert [(m.role, m.text) for m in s.messages] == [
        ("user", "port the renderer to wgpu\nfn main() {}"), ("assistant", "done"), ("files", "src/main.rs")]
    assert s.messages[0].ts == 1772697540000


def test_a_zstd_body_cut_short_costs_that_thread_only(home):
    db = zed_store(home)
    add_zstd_thread(db, "z1", "kept")
    add_zstd_thread(db, "z2", "cut", cut=True)
    res = zed.read(str(db))
    assert res.malformed == 1 and res.error == "" and res.faults
    assert sorted(s.session_id for s in res.sessions) == ["3f1c2a9e-7b42-4d1e-9a0b-5c6d7e8f9012", "z1"]


def test_a_subagent_thread_names_its_parent_and_is_kept_only_when_asked(home, monkeypatch):
    db = zed_store(home)
    add_zstd_thread(db, "child", "look at the shader", parent="3f1c2a9e-7b42-4d1e-9a0b-5c6d7e8f9012")
    assert "child" not in {s.session_id for s in zed.read(str(db)).sessions}
    monkeypatch.setenv("DEJA_INCLUDE_SUBAGENTS", "1")
    child = next(s for s in zed.read(str(db)).sessions if s.session_id == "child")
    assert (child.kind, child.parent, child.spawned) == ("subagent", "3f1c2a9e-7b42-4d1e-9a0b-5c6d7e8f9012", True)


def test_the_five_column_store_of_older_zed_still_reads(home, tmp_path):
    db = tmp_path / "threads.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE threads (id TEXT PRIMARY KEY, summary TEXT NOT NULL, updated_at TEXT NOT NULL, "
                "data_type TEXT NOT NULL, data BLOB NOT NULL)")
    legacy = {"summary": "Old", "updated_at": "2025-06-01T10:00:00Z",
              "messages": [{"id": 0, "role": "user", "segments": [{"type": "text", "text": "old question"}]},
                           {"id": 1, "role": "assistant", "segments": [{"type": "thinking", "text": "x"},
                                                                      {"type": "text", "text": "old answer"}]}]}
    con.execute("INSERT INTO threads VALUES ('old', 'Old', '2025-06-01T10:00:00Z', 'json', ?)", (json.dumps(legacy),))
    con.commit()
    con.close()
    (s,) = zed.read(str(db)).sessions
    assert [(m.role, m.text) for m in s.messages] == [("user", "old question"), ("assistant", "old answer")]
    assert s.cwd == "" and s.messages[0].ts == 1748772000000


def test_a_corrupt_database_is_an_error_and_the_index_still_builds(home):
    db = zed_store(home)
    db.write_bytes(b"SQLite format 3\x00" + b"\x00\xff" * 2048)
    res = zed.read(str(db))
    assert res.error and res.sessions == []
    home.claude_file("s1").write_text(json.dumps({
        "type": "user", "sessionId": "s1", "uuid": "u1", "cwd": "/home/dev/src/shop",
        "timestamp": "2026-03-02T10:00:00Z", "message": {"role": "user", "content": "hello there"}}) + "\n")
    summary = json.loads(home.run("index", "--json").stdout)
    rows = {h["harness"]: h for h in summary["harnesses"]}
    assert rows["claude"]["sessions"] == 1 and rows["zed"]["sessions"] == 0


def test_the_store_path_follows_xdg_flatpak_and_the_deja_overrides():
    from deja.stages.sources.locate import zed_db

    assert zed_db({"HOME": "/h"}).startswith(("/h/.local/share/zed/", "/h/Library/"))
    assert zed_db({"HOME": "/h", "DEJA_ZED_ROOT": "/z"}) == "/z/threads/threads.db"
    assert zed_db({"HOME": "/h", "DEJA_ZED_DB": "/t.db"}) == "/t.db"


def test_a_content_of_the_wrong_type_costs_that_message_and_the_store_is_still_indexed(home):
    db = zed_store(home)
    add_zstd_thread(db, "z1", "port the renderer to wgpu")
    con = sqlite3.connect(db)
    (raw,) = con.execute("SELECT data FROM threads WHERE id = '3f1c2a9e-7b42-4d1e-9a0b-5c6d7e8f9012'").fetchone()
    doc = json.loads(raw)
    doc["messages"][0]["User"]["content"] = 3.7
    con.execute("UPDATE threads SET data = ? WHERE id = '3f1c2a9e-7b42-4d1e-9a0b-5c6d7e8f9012'", (json.dumps(doc),))
    con.commit()
    con.close()
    res = zed.read(str(db))
    assert res.error == "" and res.malformed == 1 and res.faults == [(0, "message 0 content is 3.7, not a list")]
    by_id = {s.session_id: s for s in res.sessions}
    assert [m.role for m in by_id["3f1c2a9e-7b42-4d1e-9a0b-5c6d7e8f9012"].messages] == [
        "assistant", "command", "tool-output", "files"]
    assert [m.role for m in by_id["z1"].messages] == ["user", "assistant", "files"]
    rows = {h["harness"]: h for h in json.loads(home.run("index", "--json").stdout)["harnesses"]}
    assert (rows["zed"]["sessions"], rows["zed"]["failed"]) == (2, 0)
    assert home.search("immutable", "borrow")["total"] == 1 and home.search("wgpu")["total"] == 1
