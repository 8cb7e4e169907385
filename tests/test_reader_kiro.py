"""Kiro: the IDE's workspace-sessions documents and the CLI's JSONL session logs."""

from __future__ import annotations

import json
import shutil

from conftest import REPO

from deja.stages.sources import kiro

SAMPLES = REPO / "data_samples" / "kiro"
IDE_SID = "a41f6c2d-0b8e-4d7a-93c5-1e2f4a6b8c90"
CLI_SID = "9b2d7e41-3f6a-4c18-8d05-7a1e3c5b9f26"


def store(home):
    shutil.copytree(SAMPLES / "User", home.home / ".config" / "Kiro" / "User")
    shutil.copytree(SAMPLES / "dot_kiro", home.home / ".kiro")
    return sorted(f.path for f in kiro.discover({"HOME": str(home.home)}))


def test_the_workspace_folder_decodes_from_its_base64_name():
    assert kiro.workspace_folder("L3RtcC90ZXN0") == "/tmp/test"
    assert kiro.workspace_folder("L2hvbWUvZGV2L3NyYy9pbnZvaWNlLXNlcnZpY2U_") == "/home/dev/src/invoice-service"
    assert kiro.workspace_folder("not base64!") == ""


def test_ide_session_title_project_index_time_and_no_execution_stubs(home):
    ide = next(p for p in store(home) if p.endswith(".json"))
    (s,) = kiro.read(ide).sessions
    assert (s.session_id, s.title, s.cwd) == (IDE_SID, "Rounding drift in invoice totals", "/home/dev/src/invoice-service")
    assert [m.role for m in s.messages] == ["user", "assistant"]
    assert "On it." not in [m.text for m in s.messages]
    assert s.messages[0].ts == 1772791200000


def test_ide_session_without_a_recorded_folder_takes_the_decoded_one(home):
    ide = next(p for p in store(home) if p.endswith(".json"))
    doc = json.loads(open(ide).read())
    del doc["workspaceDirectory"]
    open(ide, "w").write(json.dumps(doc))
    assert kiro.read(ide).sessions[0].cwd == "/home/dev/src/invoice-service"


def test_cli_log_roles_times_work_records_and_meta(home):
    cli = next(p for p in store(home) if p.endswith(".jsonl"))
    (s,) = kiro.read(cli).sessions
    assert (s.session_id, s.title, s.cwd) == (CLI_SID, "Decimal totals test", "/home/dev/src/invoice-service")
    assert [m.role for m in s.messages] == ["user", "assistant", "edit", "command", "files", "tool-output", "assistant"]
    assert s.messages[0].ts == 1772794800000
    assert s.messages[3].text == "$ python -m pytest tests/test_totals.py"


def test_cli_log_torn_line_waits_and_an_append_reads_only_the_new_lines(home):
    cli = next(p for p in store(home) if p.endswith(".jsonl"))
    whole = kiro.read(cli)
    line = json.dumps({"version": "1", "kind": "Prompt", "data": {"content": [{"kind": "text", "data": "now the credit notes"}],
                                                                   "meta": {"timestamp": 1772795000}}})
    with open(cli, "a") as fh:
        fh.write(line[:30])
    torn = kiro.read(cli, whole.safe_offset)
    assert torn.sessions == [] and torn.safe_offset == whole.safe_offset
    with open(cli, "a") as fh:
        fh.write(line[30:] + "\n")
    (s,) = kiro.read(cli, whole.safe_offset).sessions
    assert [(m.role, m.text) for m in s.messages] == [("user", "now the credit notes")]
    assert s.session_id == CLI_SID and s.cwd == "/home/dev/src/invoice-service"


def test_an_unexpected_document_and_a_bad_line_are_counted_and_the_run_completes(home):
    paths = store(home)
    ide = next(p for p in paths if p.endswith(".json"))
    odd = ide.replace(IDE_SID, "odd")
    open(odd, "w").write(json.dumps({"sessionId": "odd", "history": "none"}))
    assert kiro.read(odd).malformed == 1
    cli = next(p for p in paths if p.endswith(".jsonl"))
    with open(cli, "a") as fh:
        fh.write("{not json\n" + json.dumps({"version": "1", "kind": "Prompt", "data": "text"}) + "\n")
    assert kiro.read(cli).malformed == 2
    summary = json.loads(home.run("index", "--json").stdout)
    assert {h["harness"]: h for h in summary["harnesses"]}["kiro"]["sessions"] == 2
