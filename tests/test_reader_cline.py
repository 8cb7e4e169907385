"""Cline, Roo Code and Kilo Code: task folders of whole JSON documents, laid
out at their default paths (data_samples/ copied under a temp HOME), read by
the real `deja index`. No published transcripts exist for these harnesses:
the shapes follow their source code (harness-formats §11, §14, §15)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from conftest import REPO, Home, deja_cmd
from deja.pipeline.run import run_index
from deja.stages.sources import reader
from deja.stages.sources.cline_family import search_blocks

SAMPLES = REPO / "data_samples"
CLINE_TASK = "1767607200000"
CLINE_SESSION = "sess_01JH7ZK3V8Q2M4N6P8R0T2W4Y6"
ROO_PARENT = "0f3c9a52-7d1e-4b8a-9c36-5e2d14a7b901"
ROO_CHILD = "7b21e6d4-93a0-4f5c-8e17-c4d09b3a6f28"
KILO_TASK = "3d8e1f70-2a5b-4c96-b0e4-8f17a2c5d93e"


def storage(home: Home, ext: str) -> Path:
    return home.home / ".config" / "Code" / "User" / "globalStorage" / ext


def lay_out(home: Home) -> dict[str, Path]:
    """The samples where each harness keeps them on Linux by default."""
    cline = storage(home, "saoudrizwan.claude-dev")
    shutil.copytree(SAMPLES / "cline", cline, ignore=shutil.ignore_patterns("sessions"))
    shutil.copytree(SAMPLES / "cline" / "sessions", home.home / ".cline" / "data" / "sessions")
    roo = storage(home, "rooveterinaryinc.roo-cline")
    shutil.copytree(SAMPLES / "roo", roo)
    kilo = storage(home, "kilocode.kilo-code")
    shutil.copytree(SAMPLES / "kilo", kilo)
    return {"cline": cline, "roo": roo, "kilo": kilo}


def sessions_of(home: Home, *words: str, **kw) -> set[str]:
    return {h["session"]["id"] for h in home.search(*words, **kw)["hits"]}


def read(harness: str, path: Path):
    res = reader(harness).read(str(path))
    assert not res.error, res.error
    return res


def test_every_store_at_its_default_path_is_indexed(home):
    lay_out(home)
    out = json.loads(home.run("index", "--json").stdout)
    per = {h["harness"]: h for h in out["harnesses"]}
    assert per["cline"]["sessions"] == 2  # an extension task and a CLI session
    assert per["roo"]["sessions"] == 1  # the orchestrator's subtask is a subagent: left out
    assert per["kilo"]["sessions"] == 1
    assert sessions_of(home, "exponential", "jitter") == {f"cline-task-{CLINE_TASK}"}
    assert sessions_of(home, "refunds", "twice") == {CLINE_SESSION}
    assert sessions_of(home, "commas") == {f"kilo-task-{KILO_TASK}"}
    assert sessions_of(home, "429", "Retry-After") == {f"roo-task-{ROO_PARENT}"}


def test_cline_extension_task_roles_order_times_project_title_and_work(tmp_path, home):
    stores = lay_out(home)
    (part,) = read("cline", stores["cline"] / "tasks" / CLINE_TASK / "api_conversation_history.json").sessions
    assert part.session_id == f"cline-task-{CLINE_TASK}"
    assert part.title == "The retry helper hammers the server: make the backoff exponential with jitter"
    assert part.cwd == "/home/dev/src/fetch-kit" and part.project == "src/fetch-kit"
    roles = [m.role for m in part.messages]
    assert roles == ["user", "assistant", "files", "tool-output", "assistant", "files", "edit", "tool-output",
                     "command", "tool-output", "assistant"]
    # no time per message in Cline's older tasks: the task's start plus a second per turn
    assert part.messages[0].ts == 1767607200000 and part.messages[-1].ts == 1767607207000
    assert [m.ts for m in part.messages] == sorted(m.ts for m in part.messages)
    by_role = {m.role: m for m in part.messages}
    assert by_role["files"].text == "/home/dev/src/fetch-kit/src/retry.ts"
    assert by_role["edit"].text == ("/home/dev/src/fetch-kit/src/retry.ts\n"
                                    "    try { return await fn() } catch (e) { await sleep(200) }")
    assert by_role["command"].text == "$ npm test -- retry"
    assert not any("environment_details" in m.text or "<task>" in m.text or "<read_file>" in m.text
                   for m in part.messages)
    assert part.messages[1].text.startswith("The backoff is a fixed 200 ms delay")  # <thinking> unwrapped


def test_cline_cli_session_title_times_work_records_and_errors(home):
    stores = lay_out(home)
    folder = home.home / ".cline" / "data" / "sessions" / CLINE_SESSION
    (part,) = read("cline", folder / f"{CLINE_SESSION}.messages.json").sessions
    assert part.session_id == CLINE_SESSION and part.title == "Refunds double-counted in monthly report"
    assert part.project == "src/ledger"
    assert part.messages[0].text == "Why does the monthly report double-count refunds?"  # <user_input> unwrapped
    assert part.messages[0].ts == 1768226400000
    recs = [(m.role, m.tool, m.text) for m in part.messages if m.role in ("command", "files", "edit")]
    assert ("command", "run_commands", "$ pytest tests/test_monthly.py -q") in recs
    assert ("files", "read_files", "/home/dev/src/ledger/reports/monthly.py\n"
                                   "/home/dev/src/ledger/reports/sql/refunds.sql") in recs
    assert ("edit", "editor", "/home/dev/src/ledger/reports/sql/refunds.sql\n"
                              "JOIN lines l ON l.order_id = o.id") in recs
    (out,) = [m for m in part.messages if m.role == "tool-output"]
    assert out.is_error is True and out.tool == "run_commands"
    # a subagent's or teammate's file shares the format and is not a person's session
    doc = json.loads((folder / f"{CLINE_SESSION}.messages.json").read_text())
    doc["agent"] = "researcher"
    (folder / f"{CLINE_SESSION}.messages.json").write_text(json.dumps(doc))
    assert read("cline", folder / f"{CLINE_SESSION}.messages.json").sessions == []


def test_roo_subtask_keeps_its_parent_and_is_indexed_with_subagents(home):
    stores = lay_out(home)
    (child,) = read("roo", stores["roo"] / "tasks" / ROO_CHILD / "api_conversation_history.json").sessions
    assert (child.kind, child.parent, child.spawned) == ("subtask", f"roo-task-{ROO_PARENT}", True)
    assert child.project == "src/catalog-api"
    edits = [m.text for m in child.messages if m.role == "edit"]
    assert edits == ["/home/dev/src/catalog-api/app/routes/search.py\n@router.get('/search')\ndef search(q: str):"]
    home.run("index", extra_env={"DEJA_INCLUDE_SUBAGENTS": "1"})
    assert sessions_of(home, "token-bucket", "limiter", "--harness", "roo") == {
        f"roo-task-{ROO_PARENT}", f"roo-task-{ROO_CHILD}"}


def test_kilo_xml_tools_with_multi_file_arguments(home):
    stores = lay_out(home)
    (part,) = read("kilo", stores["kilo"] / "tasks" / KILO_TASK / "api_conversation_history.json").sessions
    assert part.session_id == f"kilo-task-{KILO_TASK}" and part.project == "src/crm-export"
    assert [m.text for m in part.messages if m.role == "files"] == ["/home/dev/src/crm-export/export/csv_writer.py"] * 2
    assert [m.text for m in part.messages if m.role == "edit"] == [
        "/home/dev/src/crm-export/export/csv_writer.py\n    return ','.join(r)"]
    assert [m.ts for m in part.messages][:2] == [1768831200000, 1768831220000]  # Roo and Kilo stamp every message


def test_search_blocks_of_both_diff_dialects():
    cline = "------- SEARCH\nold a\n=======\nnew a\n+++++++ REPLACE\n------- SEARCH\nold b\n=======\nnew b\n+++++++ REPLACE"
    roo = "<<<<<<< SEARCH\n:start_line:7\n:end_line:8\n-------\nold c\nold d\n=======\nnew\n>>>>>>> REPLACE"
    assert search_blocks(cline) == ["old a", "old b"]
    assert search_blocks(roo) == ["old c\nold d"]


def test_a_rewritten_task_replaces_its_session(home):
    stores = lay_out(home)
    home.run("index")
    assert json.loads(home.run("index", "--json").stdout)["up_to_date"]
    p = stores["kilo"] / "tasks" / KILO_TASK / "api_conversation_history.json"
    doc = json.loads(p.read_text())
    doc[0]["content"][0]["text"] = "<task>\nThe TSV export drops rows with tabs in the surname\n</task>"
    doc.append({"role": "assistant", "ts": 1768831300000, "content": [{"type": "text", "text": "Quoted every field; tabs survive now."}]})
    p.write_text(json.dumps(doc))
    out = json.loads(home.run("index", "--json").stdout)
    assert not out["up_to_date"]
    assert sessions_of(home, "surname") == {f"kilo-task-{KILO_TASK}"}
    # the old turn went with the old document (the task's name in the history index stands)
    assert sessions_of(home, "--role", "user", "commas", "name") == set()
    assert sessions_of(home, "survive") == {f"kilo-task-{KILO_TASK}"}


def test_a_document_of_an_unexpected_shape_is_counted_and_the_run_completes(home):
    stores = lay_out(home)
    bad = stores["roo"] / "tasks" / "aaaa0000-0000-4000-8000-000000000001"
    bad.mkdir()
    (bad / "api_conversation_history.json").write_text(json.dumps({"messages": "not a list"}))
    torn = stores["roo"] / "tasks" / "aaaa0000-0000-4000-8000-000000000002"
    torn.mkdir()
    (torn / "api_conversation_history.json").write_text('[{"role": "user", "content": "half wri')
    odd = stores["kilo"] / "tasks" / "aaaa0000-0000-4000-8000-000000000003"
    odd.mkdir()  # a list, but of the wrong things: each costs itself, the good turn stays
    (odd / "api_conversation_history.json").write_text(json.dumps(
        ["stray", {"role": "user", "content": {"odd": 1}}, {"role": "user", "ts": "soon", "content": "oddball question"}]))
    summary = run_index(dict(home.env))
    assert summary.harnesses["roo"].malformed == 2 and summary.harnesses["roo"].sessions == 1
    assert summary.harnesses["kilo"].malformed == 3 and summary.harnesses["kilo"].sessions == 2
    assert sessions_of(home, "oddball") == {"kilo-task-aaaa0000-0000-4000-8000-000000000003"}
    assert "malformed" in home.run("doctor").stdout


def test_a_task_folder_missing_a_file_is_still_read(home):
    stores = lay_out(home)
    # no conversation: the panel's messages stand in for it
    task = stores["cline"] / "tasks" / CLINE_TASK
    (task / "api_conversation_history.json").unlink()
    (part,) = read("cline", task / "ui_messages.json").sessions
    assert [m.role for m in part.messages] == ["user", "command"]
    assert part.project == "src/fetch-kit" and part.title.startswith("The retry helper")
    # no history item: the project from the environment details of the first turn
    (stores["roo"] / "tasks" / ROO_PARENT / "history_item.json").unlink()
    (parent,) = read("roo", stores["roo"] / "tasks" / ROO_PARENT / "api_conversation_history.json").sessions
    assert parent.project == "src/catalog-api" and parent.title == ""
    # neither file: nothing to read, nothing said
    (task / "ui_messages.json").unlink()
    out = json.loads(home.run("index", "--json").stdout)
    assert {h["harness"]: h["sessions"] for h in out["harnesses"]}["cline"] == 1
    assert not out["errors"]
    assert sessions_of(home, "rate", "limiting") == {f"roo-task-{ROO_PARENT}"}


def test_ui_messages_read_first_give_way_to_the_conversation_written_after(home):
    """A task indexed while its folder held only the panel's messages (the
    extension writes the API conversation right after) is read again from the
    conversation, once: the panel's records go, rather than stay as a vanished
    file's and hold every message twice; an older deja's duplicate goes too."""
    stores = lay_out(home)
    task = stores["cline"] / "tasks" / CLINE_TASK
    conversation = task / "api_conversation_history.json"
    saved = conversation.read_bytes()
    conversation.unlink()
    home.run("index")

    def messages():
        shown = json.loads(home.run("show", "--json", "--harness", "cline", f"cline-task-{CLINE_TASK}").stdout)
        return [(m["role"], m["text"]) for m in shown["session"]["messages"]]

    assert [r for r, _ in messages()] == ["user"]  # the panel's task
    conversation.write_bytes(saved)
    home.run("index")
    once = messages()
    assert len(once) > 1 and [r for r, _ in once].count("user") == 1  # the task, not twice
    home.run("index", "--rebuild")
    assert messages() == once


def test_a_task_that_vanishes_mid_run_is_counted_and_the_run_completes(home):
    stores = lay_out(home)
    family = {str(p) for s in stores.values() for p in s.glob("tasks/*/api_conversation_history.json")}
    gone: list[str] = []

    def progress(done, total, path):
        if done == 1:  # one file read, the others not yet: take one of them away
            doomed = sorted(family - {path})[0]
            os.unlink(doomed)
            gone.append(doomed)

    summary = run_index(dict(home.env), progress=progress)
    h = next(s for s in summary.harnesses.values() if s.changed_while_read)
    assert h.changed_while_read == 1 and h.failed == 0
    assert any(gone[0] in e and "vanished" in e for e in summary.errors)
    assert sum(s.sessions for s in summary.harnesses.values()) == 3  # 2 cline, 1 roo, 1 kilo: one gone
    assert not json.loads(home.run("index", "--json").stdout)["errors"]


def test_overrides_and_the_roo_cli_and_custom_storage(home, tmp_path):
    custom = tmp_path / "roo-elsewhere"
    shutil.copytree(SAMPLES / "roo", custom)
    settings = home.home / ".config" / "Code" / "User" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text('{\n  // JSONC\n  "roo-cline.customStoragePath": "%s",\n}\n' % custom)
    shutil.copytree(SAMPLES / "kilo", home.home / ".vscode-mock" / "global-storage")  # the Roo CLI's
    env = dict(home.env)
    found = [f.path for f in reader("roo").discover(env)]
    assert len(found) == 3 and sum(str(custom) in p for p in found) == 2
    env["DEJA_ROO_ROOTS"] = str(SAMPLES / "kilo")
    assert [f.path for f in reader("roo").discover(env)] == [
        str(SAMPLES / "kilo" / "tasks" / KILO_TASK / "api_conversation_history.json")]
    env = dict(home.env, DEJA_CLINE_ROOT=str(SAMPLES / "cline" / "sessions"), DEJA_CLINE_ROOTS=str(tmp_path / "none"))
    assert len(reader("cline").discover(env)) == 1


def test_absent_stores_find_nothing(home):
    for h in ("cline", "roo", "kilo"):
        assert reader(h).discover(dict(home.env)) == []
    assert reader("cline").roots(dict(home.env))[-1] == str(home.home / ".cline" / "data" / "sessions")


def test_demo_shows_the_cline_family(tmp_path):
    env = {"HOME": str(tmp_path), "PATH": os.environ.get("PATH", ""), "DEJA_SERVE": "off"}
    proc = subprocess.run(deja_cmd() + ["demo"], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    for h in ("cline:", "roo:", "kilo:"):
        assert h in proc.stdout


def test_an_id_of_the_wrong_type_costs_that_value_and_the_task_is_still_indexed(home):
    stores = lay_out(home)
    session = home.home / ".cline" / "data" / "sessions" / CLINE_SESSION / f"{CLINE_SESSION}.messages.json"
    doc = json.loads(session.read_text())
    doc["messages"][2]["content"][0]["tool_use_id"] = ["tu2"]
    session.write_text(json.dumps(doc))
    task = stores["roo"] / "tasks" / ROO_PARENT / "api_conversation_history.json"
    doc = json.loads(task.read_text())
    doc[2]["content"][0]["tool_use_id"] = {"id": "call_1"}
    task.write_text(json.dumps(doc))
    res = read("cline", session)
    assert res.malformed == 1 and res.faults == [(0, "message 2 tool_use_id a list is not text")]
    (out,) = [m for m in res.sessions[0].messages if m.role == "tool-output"]
    assert out.text.startswith("FAILED tests/test_monthly.py") and out.tool is None and out.is_error is True
    assert len(res.sessions[0].messages) == 8
    res = read("roo", task)
    assert res.malformed == 1 and [m.role for m in res.sessions[0].messages] == [
        "user", "assistant", "tool-output", "assistant"]
    summary = run_index(dict(home.env))
    assert (summary.harnesses["cline"].sessions, summary.harnesses["cline"].failed) == (2, 0)
    assert (summary.harnesses["roo"].sessions, summary.harnesses["roo"].failed) == (1, 0)
    assert sessions_of(home, "refunds", "twice") == {CLINE_SESSION}
    assert sessions_of(home, "subtask", "completed") == {f"roo-task-{ROO_PARENT}"}


def test_a_message_of_a_shape_not_foreseen_costs_that_message_only(home):
    stores = lay_out(home)
    p = stores["kilo"] / "tasks" / KILO_TASK / "api_conversation_history.json"
    doc = json.loads(p.read_text())
    doc += [  # Roo's multi-file arguments written as objects, not the XML the parse knows
        {"role": "assistant", "ts": 1768831300000, "content": [
            {"type": "text", "text": "Quoting the header row as well."},
            {"type": "tool_use", "id": "t9", "name": "write_to_file",
             "input": {"path": "export/csv_writer.py", "file_blocks": [{"path": "export/csv_writer.py"}]}}]},
        {"role": "user", "ts": 1768831320000, "content": [{"type": "text", "text": "<feedback>now the semicolons</feedback>"}]},
    ]
    p.write_text(json.dumps(doc))
    res = read("kilo", p)
    assert res.malformed == 1 and res.faults == [(0, "message 5 could not be read (TypeError)")]
    msgs = res.sessions[0].messages
    assert [(m.role, m.text) for m in msgs[-2:]] == [("assistant", "Quoting the header row as well."),
                                                     ("user", "now the semicolons")]
    assert not [m for m in msgs if m.ts == 1768831300000 and m.role in ("files", "edit")]
