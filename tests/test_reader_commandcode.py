"""Command Code: projects/<slug>/<id>.jsonl logs with .meta.json titles beside them."""

from __future__ import annotations

import json
import shutil

from conftest import REPO

from deja.stages.sources import commandcode

SAMPLES = REPO / "data_samples" / "commandcode"
SID = "c3e8a1f5-6d2b-4e9c-a7f0-2b4d6e8f1a3c"


def store(home):
    dest = home.home / ".commandcode"
    shutil.copytree(SAMPLES, dest)
    return dest / "projects" / "home-dev-src-ledger" / f"{SID}.jsonl"


def test_roles_order_times_title_project_and_work_records(home):
    (s,) = commandcode.read(str(store(home))).sessions
    assert (s.session_id, s.title, s.cwd) == (SID, "Ledger import skips duplicate rows", "/home/dev/src/ledger")
    assert [m.role for m in s.messages] == ["user", "assistant", "edit", "command", "files", "tool-output", "assistant"]
    assert s.messages[0].ts == 1772895601000
    assert s.messages[2].text == "/home/dev/src/ledger/importer.py\nrows[ref] = row"


def test_only_session_logs_are_discovered_and_the_home_variable_relocates_them(home):
    path = store(home)
    moved = home.root / "cc"
    shutil.move(str(path.parent.parent.parent), moved)
    found = [f.path for f in commandcode.discover({"HOME": str(home.home), "COMMAND_CODE_HOME": str(moved)})]
    assert found == [str(moved / "projects" / "home-dev-src-ledger" / f"{SID}.jsonl")]  # no .checkpoints.jsonl


def test_an_append_keeps_the_header_identity_and_a_parent_session_is_recorded(home):
    path = store(home)
    first = commandcode.read(str(path))
    with open(path, "a") as fh:
        fh.write(json.dumps({"type": "message", "timestamp": "2026-03-07T15:01:00Z",
                             "message": {"role": "user", "content": "also reject blank references"}}) + "\n")
        fh.write('{"type": "message", "message": {"role"')  # torn: left for the next run
    res = commandcode.read(str(path), first.safe_offset)
    (s,) = res.sessions
    assert [m.text for m in s.messages] == ["also reject blank references"]
    assert (s.session_id, s.cwd) == (SID, "/home/dev/src/ledger") and res.safe_offset < path.stat().st_size
    lines = path.read_text().splitlines()
    head = json.loads(lines[0])
    head["parentSession"] = "b1d2c3e4-0000-4000-8000-000000000001"
    path.write_text("\n".join([json.dumps(head)] + lines[1:-1]) + "\n")
    assert commandcode.read(str(path)).sessions[0].parent == "b1d2c3e4-0000-4000-8000-000000000001"


def test_the_older_line_shape_is_read(home):
    path = store(home).with_name("older.jsonl")
    path.write_text(json.dumps({"id": "1", "sessionId": "old-1", "timestamp": "2026-01-05T10:00:00Z", "role": "user",
                                "gitBranch": "main", "content": [{"type": "text", "text": "why does make fail"}]}) + "\n"
                    + json.dumps({"id": "2", "sessionId": "old-1", "timestamp": "2026-01-05T10:00:05Z", "role": "assistant",
                                  "content": [{"type": "tool-call", "toolName": "bash", "input": {"command": "make test"}}]}) + "\n")
    (s,) = commandcode.read(str(path)).sessions
    assert (s.session_id, s.branch) == ("old-1", "main")
    assert [(m.role, m.text) for m in s.messages] == [("user", "why does make fail"), ("command", "$ make test")]


def test_bad_lines_are_counted_and_the_run_completes(home):
    path = store(home)
    with open(path, "a") as fh:
        fh.write("{not json\n" + json.dumps({"type": "message", "message": "just text"}) + "\n")
    assert commandcode.read(str(path)).malformed == 2
    summary = json.loads(home.run("index", "--json").stdout)
    assert {h["harness"]: h for h in summary["harnesses"]}["commandcode"]["sessions"] == 1
