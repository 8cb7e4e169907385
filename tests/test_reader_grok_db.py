"""The grok CLI's ``~/.grok/grok.db`` (stages/sources/grok_db.py): roles, order,
times, title, project, work records, and bad input, through the same harness
as Grok Build's folders."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

from deja.pipeline.demo import build_sqlite_samples
from deja.stages.sources import grok
from deja.stages.sources.locate import grok_db, grok_files

SPEC = Path(__file__).resolve().parent.parent / "data_samples" / "grok" / "grok.db.json"
SID = "6f1d2c9e-4b7a-4c1e-9d3f-2a8b5e7c0d14"


def grok_store(home) -> Path:
    d = home.home / ".grok"
    d.mkdir(parents=True, exist_ok=True)
    shutil.copy(SPEC, d / "grok.db.json")
    build_sqlite_samples(d)
    return d / "grok.db"


def test_roles_order_times_title_project_and_work_records(home):
    db = grok_store(home)
    assert grok_files(home.env) == [str(db)]
    res = grok.read(str(db))
    (s,) = res.sessions
    assert (s.harness, s.session_id, s.title, s.cwd) == ("grok", SID, "M4 row dropped by the constants loader",
                                                          "/home/dev/src/tide-tables")
    assert [m.role for m in s.messages] == ["user", "assistant", "command", "files", "tool-output", "tool-output",
                                            "assistant", "edit", "files", "tool-output", "assistant"]
    assert s.messages[0].text == "the harmonic constants loader drops the M4 row, find out why"  # no system notice
    assert s.messages[0].ts == 1772618405120
    assert s.messages[2].text == "$ pytest tests/test_constants.py -q"
    assert s.messages[3].text == "/home/dev/src/tide-tables/src/constants.py"  # joined to the session's folder
    assert s.messages[5].is_error is True and "KeyError: 'M4'" in s.messages[5].text
    assert s.messages[7].text == "/home/dev/src/tide-tables/src/constants.py\nROWS = CONSTANTS[:-1]"
    assert s.messages[-1].text.startswith("Fixed: the loader")
    assert res.malformed == 0 and res.error == ""


def test_a_bad_message_row_costs_that_row_and_another_schema_is_reported(home):
    db = grok_store(home)
    con = sqlite3.connect(db)
    con.execute("UPDATE messages SET message_json = '{not json' WHERE seq = 7")
    con.execute("UPDATE messages SET message_json = '[1, 2]' WHERE seq = 6")
    con.commit()
    res = grok.read(str(db))
    assert res.malformed == 2 and res.error == ""
    assert [m.role for m in res.sessions[0].messages][-1] == "files"
    con.execute("ALTER TABLE messages RENAME TO messages_v9")
    con.commit()
    con.close()
    res = grok.read(str(db))
    assert res.error.startswith("schema changed") and res.sessions == []


def test_the_store_path_and_its_overrides():
    assert grok_db({"HOME": "/h"}) == "/h/.grok/grok.db"
    assert grok_db({"HOME": "/h", "GROK_HOME": "/g"}) == "/h/.grok/grok.db"  # GROK_HOME is Grok Build's
    assert grok_db({"HOME": "/h", "DEJA_GROK_ROOT": "/r"}) == "/r/grok.db"
    assert grok_db({"HOME": "/h", "DEJA_GROK_DB": "/y/g.db"}) == "/y/g.db"


def test_deja_index_reads_it_and_a_new_message_rewrites_only_its_session(home):
    db = grok_store(home)
    con = sqlite3.connect(db)
    con.execute("INSERT INTO sessions SELECT 'other-session', workspace_id, 'Tide chart colours', recap_text, "
                "recap_model, recap_updated_at, model, mode, cwd_at_start, cwd_last, status, created_at, updated_at "
                "FROM sessions")
    con.execute("INSERT INTO messages VALUES ('other-session', 1, 'user', ?, '2026-03-05T09:00:00.000Z')",
                (json.dumps({"role": "user", "content": "make the neap tide colour darker"}),))
    con.commit()
    rows = {h["harness"]: h for h in json.loads(home.run("index", "--json").stdout)["harnesses"]}
    assert (rows["grok"]["sessions"], rows["grok"]["failed"]) == (2, 0)
    con.execute("INSERT INTO messages VALUES ('other-session', 2, 'assistant', ?, '2026-03-05T09:00:04.000Z')",
                (json.dumps({"role": "assistant", "content": [{"type": "text", "text": "darkened the neap band"}]}),))
    con.commit()
    con.close()
    rows = {h["harness"]: h for h in json.loads(home.run("index", "--json").stdout)["harnesses"]}
    # that session written again: its two turns and its name, "Tide chart colours" (a title record)
    assert (rows["grok"]["sessions"], rows["grok"]["records_added"]) == (2, 3)
    hits = home.search("harmonic", "constants")["hits"]
    assert [h["session"]["harness"] for h in hits] == ["grok"]


def test_a_value_of_the_wrong_type_costs_that_value_not_the_message(home):
    db = grok_store(home)
    con = sqlite3.connect(db)
    (raw,) = con.execute("SELECT message_json FROM messages WHERE seq = 3").fetchone()
    msg = json.loads(raw)
    msg["content"][2]["toolName"] = ["bash"]  # the command's record goes; the turn's words stay
    con.execute("UPDATE messages SET message_json = ? WHERE seq = 3", (json.dumps(msg),))
    (raw,) = con.execute("SELECT message_json FROM messages WHERE seq = 4").fetchone()
    msg = json.loads(raw)
    msg["content"][0]["toolName"] = {"name": "read_file"}
    con.execute("UPDATE messages SET message_json = ? WHERE seq = 4", (json.dumps(msg),))
    con.commit()
    con.close()
    res = grok.read(str(db))
    assert res.error == "" and res.malformed == 2
    assert [what for _, what in res.faults] == ["toolName a list is not text", "toolName a dict is not text"]
    (s,) = res.sessions
    assert [m.role for m in s.messages] == ["user", "assistant", "files", "tool-output", "tool-output",
                                            "assistant", "edit", "files", "tool-output", "assistant"]
    assert s.messages[3].tool is None and s.messages[3].text == "1: ROWS = CONSTANTS[:-1]"
    rows = {h["harness"]: h for h in json.loads(home.run("index", "--json").stdout)["harnesses"]}
    assert (rows["grok"]["sessions"], rows["grok"]["failed"]) == (1, 0)
    assert home.search("harmonic", "constants")["total"] == 1
