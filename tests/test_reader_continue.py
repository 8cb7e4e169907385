"""Continue: sessions/<id>.json documents with the sessions.json index beside them."""

from __future__ import annotations

import json
import shutil

from conftest import REPO

from deja.stages.sources import continue_dev

SAMPLES = REPO / "data_samples" / "continue"
SID = "5f0c2a7e-91d4-4b3a-8e6f-2d7a9c1b4e03"


def store(home):
    dest = home.home / ".continue"
    shutil.copytree(SAMPLES, dest)
    return dest / "sessions" / f"{SID}.json"


def test_roles_order_index_time_title_project_and_work_records(home):
    (s,) = continue_dev.read(str(store(home))).sessions
    assert (s.session_id, s.title, s.cwd) == (SID, "Paginate the audit log endpoint", "/home/dev/src/audit-api")
    assert [m.role for m in s.messages] == ["user", "assistant", "files", "tool-output", "assistant", "edit",
                                            "command", "files", "tool-output", "assistant"]
    assert {m.ts for m in s.messages} == {1772618400000}  # the index's dateCreated: messages carry no time
    assert s.messages[5].text == "src/audit/handler.py\n    return db.query(AuditRow).all()"
    assert s.messages[6].text == "$ pytest tests/test_audit.py -q"


def test_the_global_dir_variable_relocates_the_store_and_the_index_file_is_not_a_session(home):
    path = store(home)
    moved = home.root / "elsewhere"
    shutil.move(str(path.parent.parent), moved)
    found = continue_dev.discover({"HOME": str(home.home), "CONTINUE_GLOBAL_DIR": str(moved)})
    assert [f.path for f in found] == [str(moved / "sessions" / f"{SID}.json")]


def test_a_rewritten_session_replaces_the_indexed_one(home):
    path = store(home)
    home.run("index")
    doc = json.loads(path.read_text())
    doc["history"][1]["message"]["content"] = "Paginate the ledger export instead, cursor by id."
    path.write_text(json.dumps(doc))
    home.run("index")
    assert home.search("ledger export")["total"]
    assert not home.search("dashboard stops timing out")["total"]


def test_a_document_of_another_shape_or_half_written_is_counted_and_the_run_completes(home):
    path = store(home)
    other = path.parent / "0000-other.json"
    other.write_text(json.dumps({"sessionId": "x", "history": {"not": "a list"}}))
    torn = path.parent / "0000-torn.json"
    torn.write_text('{"sessionId": "y", "history": [')
    assert continue_dev.read(str(other)).malformed == 1
    assert continue_dev.read(str(torn)).malformed == 1
    assert continue_dev.read(str(path.parent / "vanished.json")).error
    summary = json.loads(home.run("index", "--json").stdout)
    hs = {h["harness"]: h for h in summary["harnesses"]}["continue"]
    assert hs["sessions"] == 1
