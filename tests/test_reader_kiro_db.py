"""The Kiro CLI's ``data.sqlite3`` (stages/sources/kiro_db.py): one
``ConversationState`` per row, read into roles, order, times, project and work
records; the older one-per-folder table; bad rows counted."""

from __future__ import annotations

import json
import shutil
import sqlite3

from conftest import REPO

from deja.pipeline.demo import build_sqlite_samples
from deja.stages.sources import kiro
from deja.stages.sources.locate import kiro_cli_dbs, kiro_files

SPEC = REPO / "data_samples" / "kiro" / "kiro-cli" / "data.sqlite3.json"
CID = "3c5e8a17-92d4-4f0b-b6a1-0d7e2f9c4b58"
CWD = "/home/dev/src/route-planner"


def kiro_store(home):
    d = home.home / ".local" / "share" / "kiro-cli"
    d.mkdir(parents=True)
    shutil.copy(SPEC, d / "data.sqlite3.json")
    build_sqlite_samples(d)
    return d / "data.sqlite3"


def test_roles_order_times_project_and_work_records(home):
    db = kiro_store(home)
    assert kiro_files({"HOME": str(home.home)}) == [str(db)]
    res = kiro.read(str(db))
    (s,) = res.sessions
    assert (s.harness, s.session_id, s.cwd) == ("kiro", CID, CWD)
    assert [m.role for m in s.messages] == ["user", "assistant", "command", "files", "tool-output", "tool-output",
                                            "assistant", "edit", "files", "assistant"]
    assert s.messages[0].text == "the ferry leg is missing from routes that cross the fjord"
    assert s.messages[0].ts == 1772781123441  # the prompt's own time (RFC 3339 with an offset)
    assert s.messages[1].ts == 1772781127500  # the reply's: when its stream ended
    assert s.messages[2].text == "$ cargo test ferry"
    assert s.messages[3].text == f"{CWD}/src/legs.rs"  # fs_read's list of reads
    assert s.messages[5].is_error is True and "FAILED" in s.messages[5].text
    assert s.messages[7].text == f"{CWD}/src/legs.rs\nlegs.iter().filter(|l| l.mode != Mode::Ferry)"
    assert res.malformed == 0 and res.error == ""


def test_the_older_one_chat_per_folder_table_is_read(home):
    db = kiro_store(home)
    con = sqlite3.connect(db)
    value = con.execute("SELECT value FROM conversations_v2").fetchone()[0]
    con.execute("DROP TABLE conversations_v2")
    con.execute("INSERT INTO conversations VALUES (?, ?)", (CWD, value))
    con.commit()
    con.close()
    (s,) = kiro.read(str(db)).sessions
    assert (s.session_id, s.cwd, len(s.messages)) == (CID, CWD, 10)


def test_a_bad_row_is_counted_and_another_schema_reported(home):
    db = kiro_store(home)
    con = sqlite3.connect(db)
    con.execute("INSERT INTO conversations_v2 VALUES ('/tmp', 'x', '{not json', 0, 0)")
    con.execute("INSERT INTO conversations_v2 VALUES ('/tmp', 'y', ?, 0, 0)", (json.dumps({"history": 3}),))
    con.commit()
    res = kiro.read(str(db))
    assert (res.malformed, len(res.sessions), res.error) == (2, 1, "")
    con.execute("DROP TABLE conversations_v2")
    con.execute("DROP TABLE conversations")
    con.commit()
    con.close()
    res = kiro.read(str(db))
    assert res.error.startswith("schema changed") and res.sessions == []


def test_the_store_paths_and_override():
    assert kiro_cli_dbs({"HOME": "/h"})[0] in ("/h/.local/share/kiro-cli/data.sqlite3",
                                                "/h/Library/Application Support/kiro-cli/data.sqlite3")
    assert kiro_cli_dbs({"HOME": "/h", "DEJA_KIRO_CLI_DB": "/y/k.sqlite3"}) == ["/y/k.sqlite3"]


def test_deja_index_reads_it_and_a_new_turn_rewrites_that_session(home):
    db = kiro_store(home)
    rows = {h["harness"]: h for h in json.loads(home.run("index", "--json").stdout)["harnesses"]}
    assert (rows["kiro"]["sessions"], rows["kiro"]["failed"]) == (1, 0)
    assert [h["session"]["harness"] for h in home.search("ferry", "fjord")["hits"]] == ["kiro"]
    con = sqlite3.connect(db)
    state = json.loads(con.execute("SELECT value FROM conversations_v2").fetchone()[0])
    last = json.loads(json.dumps(state["history"][-1]))
    last["user"]["content"] = {"Prompt": {"prompt": "also show the ferry timetable link"}}
    last["user"]["timestamp"] = "2026-03-06T08:20:00+01:00"
    last["assistant"] = {"Response": {"message_id": "g7", "content": "Added the timetable link under the leg."}}
    state["history"].append(last)
    con.execute("UPDATE conversations_v2 SET value = ?, updated_at = updated_at + 60000", (json.dumps(state),))
    con.commit()
    con.close()
    rows = {h["harness"]: h for h in json.loads(home.run("index", "--json").stdout)["harnesses"]}
    assert (rows["kiro"]["sessions"], rows["kiro"]["records_added"]) == (1, 12)
    assert home.search("timetable", "link")["total"] == 1
