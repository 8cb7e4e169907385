"""opencode's SQLite store: roles, order, times, title, project, work records, parent edges."""

from __future__ import annotations

import json
import sqlite3

from test_sqlite_store import add_session, opencode_store

from deja.stages.sources import opencode


def test_roles_order_times_title_project_and_work_records(home):
    db = opencode_store(home)
    (s,) = opencode.read(str(db)).sessions
    assert (s.session_id, s.title, s.cwd) == ("ses_01JQ8ZK4", "Token bucket refill drifts", "/home/dev/src/rate-limiter")
    assert [m.role for m in s.messages] == ["user", "edit", "command", "tool-output", "assistant", "files", "user"]
    assert s.messages[0].ts == 1772442000000
    cmd = s.messages[2]
    assert cmd.text == "$ go test ./... -run TestRefill -count=20  → exit 1" and cmd.exit_code == 1
    assert s.messages[3].is_error is True
    assert s.messages[1].text.startswith("/home/dev/src/rate-limiter/bucket.go\nelapsed := now.Sub")
    assert s.messages[5].text == "/home/dev/src/rate-limiter/bucket.go"


def test_a_subagent_session_names_its_parent_and_is_kept_only_when_asked(home):
    db = opencode_store(home)
    con = sqlite3.connect(db)
    add_session(con, "ses_child", "subagent explored the retry path")
    con.execute("UPDATE session SET parent_id = 'ses_01JQ8ZK4' WHERE id = 'ses_child'")
    con.commit()
    con.close()
    child = next(s for s in opencode.read(str(db)).sessions if s.session_id == "ses_child")
    assert (child.kind, child.parent, child.spawned) == ("subagent", "ses_01JQ8ZK4", True)
    summary = json.loads(home.run("index", "--json").stdout)
    assert {h["harness"]: h for h in summary["harnesses"]}["opencode"]["sessions"] == 1
    summary = json.loads(home.run("index", "--json", "--rebuild",
                                  extra_env={"DEJA_INCLUDE_SUBAGENTS": "1"}).stdout)
    assert {h["harness"]: h for h in summary["harnesses"]}["opencode"]["sessions"] == 2


def test_a_store_of_another_schema_is_reported_as_schema_changed(home):
    db = opencode_store(home)
    con = sqlite3.connect(db)
    con.execute("ALTER TABLE part RENAME TO parts_v2")
    con.commit()
    con.close()
    res = opencode.read(str(db))
    assert res.error.startswith("schema changed") and res.sessions == []


def test_a_bad_json_row_costs_that_row(home):
    db = opencode_store(home)
    con = sqlite3.connect(db)
    con.execute("UPDATE part SET data = '{not json' WHERE id = 'prt_06'")
    con.commit()
    con.close()
    res = opencode.read(str(db))
    assert res.malformed == 1 and res.error == ""
    assert [m.role for m in res.sessions[0].messages][-1] == "files"


def test_the_store_path_follows_xdg_data_home_and_deja_opencode_db(home, tmp_path):
    from deja.stages.sources.locate import opencode_db

    assert opencode_db({"HOME": "/h"}) == "/h/.local/share/opencode/opencode.db"
    assert opencode_db({"HOME": "/h", "XDG_DATA_HOME": "/x"}) == "/x/opencode/opencode.db"
    assert opencode_db({"HOME": "/h", "DEJA_OPENCODE_DB": "/y/o.db"}) == "/y/o.db"
