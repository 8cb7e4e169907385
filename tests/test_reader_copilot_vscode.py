"""VS Code Copilot Chat: the chatSessions change log (.jsonl) and the older
whole document (.json), laid out as VS Code keeps them; roles, order, times,
title, project, work records, incremental replacement and bad input."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from conftest import deja_cmd

from deja.stages.sources import copilot_vscode
from deja.stages.sources.locate import vscode_chat_files, vscode_user_dirs

SAMPLE = Path(__file__).resolve().parents[1] / "data_samples" / "copilot-vscode" / "User"
WS_LOG = "5f1c2a9d8e7b4c3a2f1e0d9c8b7a6f5e"
WS_DOC = "a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5"
LOG_ID = "3b9e1c52-7a4d-4f0e-9c61-2d8a5e7f1b90"
DOC_ID = "9d2f6b18-04c3-4e8a-b5d7-6a1e3c9f0b42"


def vscode_user(home, build: str = "Code") -> Path:
    """The sample sessions in a VS Code build's User folder at the Linux default."""
    user = home.home / ".config" / build / "User"
    shutil.copytree(SAMPLE, user)
    return user


def log_file(user: Path) -> Path:
    return user / "workspaceStorage" / WS_LOG / "chatSessions" / f"{LOG_ID}.jsonl"


def doc_file(user: Path) -> Path:
    return user / "workspaceStorage" / WS_DOC / "chatSessions" / f"{DOC_ID}.json"


def summary(home, **env) -> dict:
    out = json.loads(home.run("index", "--json", extra_env=env).stdout)
    return {h["harness"]: h for h in out["harnesses"]}


def test_the_change_log_replays_into_turns_with_times_title_project_and_work(home):
    (s,) = copilot_vscode.read(str(log_file(vscode_user(home)))).sessions
    assert (s.harness, s.session_id, s.cwd) == ("copilot-vscode", LOG_ID, "/home/dev/src/invoice-api")
    assert (s.title, s.title_rank) == ("Invoice PDF export times out on large invoices", 1)  # set by a kind-1 line
    assert [m.role for m in s.messages] == [
        "user", "assistant", "assistant", "edit", "command", "tool-output", "files", "user", "assistant", "files"]
    assert s.messages[0].ts == 1772460000000
    cmd, out = s.messages[4], s.messages[5]
    assert cmd.text == "$ pytest tests/test_export.py -q  → exit 1" and cmd.exit_code == 1
    assert cmd.ts == 1772460041000 and cmd.tool == "run_in_terminal"
    assert out.is_error is True and "LayoutError" in out.text
    assert s.messages[3].text.startswith("/home/dev/src/invoice-api/export/pdf.py\nfor item in invoice.items:")
    assert s.messages[6].text == "/home/dev/src/invoice-api/export/pdf.py" and s.messages[6].ts == 1772460052000
    assert s.messages[8].ts == 1772460121000  # modelState.completedAt
    ts = [m.ts for m in s.messages]
    assert ts == sorted(ts)


def test_the_older_whole_document_is_read_with_its_inline_references(home):
    (s,) = copilot_vscode.read(str(doc_file(vscode_user(home)))).sessions
    assert (s.session_id, s.cwd, s.title) == (DOC_ID, "/home/dev/src/webshop", "Cart total shows NaN after removing a coupon")
    assert [m.role for m in s.messages] == ["user", "assistant", "files"]
    assert "Guard it in `cart.ts`: `const pct" in s.messages[1].text
    assert s.messages[1].ts == 1764590020000  # timestamp + result.timings.totalElapsed
    assert s.messages[2].text == "/home/dev/src/webshop/src/cart.ts"


def test_edited_file_events_of_the_wrong_type_cost_that_value_not_the_chat(home):
    path = doc_file(vscode_user(home))
    doc = json.loads(path.read_text())
    doc["requests"][0]["editedFileEvents"] = 7
    path.write_text(json.dumps(doc))
    res = copilot_vscode.read(str(path))
    assert not res.error and [m.role for m in res.sessions[0].messages] == ["user", "assistant", "files"]


def test_every_vscode_build_and_the_empty_window_store_are_found(home):
    for build in ("Code", "Code - Insiders", "VSCodium"):
        vscode_user(home, build)
    empty = home.home / ".config" / "Code" / "User" / "globalStorage" / "emptyWindowChatSessions"
    empty.mkdir(parents=True)
    doc = json.loads(doc_file(SAMPLE).read_text())
    doc["sessionId"] = "e0e0e0e0-1111-4222-8333-444444444444"
    (empty / "e0e0e0e0-1111-4222-8333-444444444444.json").write_text(json.dumps(doc))
    files = vscode_chat_files({"HOME": str(home.home)})
    assert len(files) == 7
    (s,) = copilot_vscode.read(str(empty / "e0e0e0e0-1111-4222-8333-444444444444.json")).sessions
    assert s.cwd == ""  # an empty window has no folder
    per = summary(home)
    assert per["copilot-vscode"]["sessions"] == 3  # the same two sessions in three builds + the empty window's
    assert home.search("LongTable")["total"] >= 1


def test_the_log_wins_over_a_flat_file_of_the_same_session(home):
    user = vscode_user(home)
    stale = log_file(user).with_suffix(".json")
    stale.write_text(json.dumps({"sessionId": LOG_ID, "requests": [{"message": {"text": "stale flat copy"}}]}))
    files = vscode_chat_files({"DEJA_VSCODE_ROOT": str(user)})
    assert str(log_file(user)) in files and str(stale) not in files


def test_user_dirs_follow_each_platform_and_the_overrides(monkeypatch):
    from deja.stages.sources import task_folders

    monkeypatch.setattr(task_folders.sys, "platform", "linux")
    dirs = vscode_user_dirs({"HOME": "/h"})
    assert dirs[:3] == ["/h/.config/Code/User", "/h/.config/Code - Insiders/User", "/h/.config/VSCodium/User"]
    assert vscode_user_dirs({"HOME": "/h", "XDG_CONFIG_HOME": "/x"})[0] == "/x/Code/User"
    monkeypatch.setattr(task_folders.sys, "platform", "darwin")
    assert vscode_user_dirs({"HOME": "/h"})[0] == "/h/Library/Application Support/Code/User"
    monkeypatch.setattr(task_folders.sys, "platform", "win32")
    assert vscode_user_dirs({"HOME": "/h", "APPDATA": "/h/AppData/Roaming"})[1] == os.path.join(
        "/h/AppData/Roaming", "Code - Insiders", "User")
    assert vscode_user_dirs({"HOME": "/h", "VSCODE_PORTABLE": "/p"})[0] == os.path.join("/p", "user-data", "User")
    assert vscode_user_dirs({"HOME": "/h", "DEJA_VSCODE_ROOT": f"/a{os.pathsep}/b"}) == ["/a", "/b"]


def test_appended_change_log_lines_are_applied_and_replace_the_session(home):
    user = vscode_user(home)
    assert summary(home)["copilot-vscode"]["sessions"] == 2
    with log_file(user).open("a") as fh:  # the reply grows while it streams
        fh.write(json.dumps({"kind": 2, "k": ["requests", 1, "response"],
                             "v": [{"value": " The emu fixture renders too."}]}) + "\n")
    summary(home)
    assert home.search("emu")["total"] == 1
    with log_file(user).open("a") as fh:
        fh.write(json.dumps({"kind": 1, "k": ["requests", 1, "response"],
                             "v": [{"value": "LongTable with repeatRows keeps the header on every quokka page."}]}) + "\n")
        fh.write(json.dumps({"kind": 2, "k": ["requests"], "v": [{
            "requestId": "request_3", "timestamp": 1772460300000,
            "message": {"text": "now make the watermark wombat-proof", "parts": []}, "response": []}]}) + "\n")
    per = summary(home)
    assert per["copilot-vscode"]["sessions"] == 2
    assert home.search("wombat-proof")["total"] == 1
    assert home.search("quokka")["total"] == 1
    assert home.search("emu")["total"] == 0  # the reply the new line replaced is gone, not kept beside it
    (s,) = copilot_vscode.read(str(log_file(user))).sessions
    assert [m.role for m in s.messages][-3:] == ["assistant", "files", "user"]


def test_a_log_compacted_into_one_line_and_a_rewritten_document_replace_their_sessions(home):
    user = vscode_user(home)
    with log_file(user).open("a") as fh:
        fh.write(json.dumps({"kind": 1, "k": ["requests", 0, "message", "text"], "v": "the platypus export stalls"}) + "\n")
    doc = json.loads(doc_file(user).read_text())
    doc["requests"][0]["message"]["text"] = "the axolotl coupon breaks the cart"
    doc_file(user).write_text(json.dumps(doc))
    summary(home)
    assert home.search("platypus")["total"] == 1 and home.search("axolotl")["total"] == 1
    state, _ = copilot_vscode.replay(log_file(user).read_bytes())
    state["requests"][0]["message"]["text"] = "the capybara export stalls"
    log_file(user).write_text(json.dumps({"kind": 0, "v": state}) + "\n")  # VS Code's compaction
    doc["requests"][0]["message"]["text"] = "the narwhal coupon breaks the cart"
    doc_file(user).write_text(json.dumps(doc))
    assert summary(home)["copilot-vscode"]["sessions"] == 2
    assert home.search("capybara")["total"] == 1 and home.search("narwhal")["total"] == 1
    assert home.search("platypus")["total"] == 0 and home.search("axolotl")["total"] == 0


def test_a_torn_last_line_waits_and_bad_lines_are_counted(home):
    user = vscode_user(home)
    raw = log_file(user).read_bytes()
    log_file(user).write_bytes(raw + b'{"kind":2,"k":["requests"],"v":[{"requestId":"r')  # a write in progress
    res = copilot_vscode.read(str(log_file(user)))
    assert res.malformed == 0 and len(res.sessions[0].messages) == 10
    log_file(user).write_bytes(raw + b'{not json\n{"kind":1,"k":["requests",7,"x"],"v":1}\n{"kind":9}\n')
    res = copilot_vscode.read(str(log_file(user)))
    assert res.malformed == 3 and res.error == "" and len(res.sessions[0].messages) == 10
    headless = log_file(user).with_name("c1c1c1c1-0000-4000-8000-000000000000.jsonl")
    headless.write_text('{"kind":1,"k":["customTitle"],"v":"x"}\n')
    assert copilot_vscode.read(str(headless)).malformed == 1


def test_a_document_of_another_shape_is_counted_and_the_run_completes(home):
    user = vscode_user(home)
    doc_file(user).write_text(json.dumps(["not", "a", "session"]))
    odd = doc_file(user).with_name("d1d1d1d1-0000-4000-8000-000000000000.json")
    odd.write_text(json.dumps({"sessionId": "x", "requests": {"not": "a list"}}))
    half = doc_file(user).with_name("f1f1f1f1-0000-4000-8000-000000000000.json")
    half.write_text('{"sessionId": "y", "requests": [')
    per = summary(home)
    assert per["copilot-vscode"]["sessions"] == 1 and per["copilot-vscode"]["malformed"] == 3
    gone = copilot_vscode.read(str(user / "workspaceStorage" / "vanished.jsonl"))
    assert gone.error and gone.sessions == []


def test_demo_shows_vscode_copilot_chat_and_both_opencode_generations(tmp_path):
    env = {"HOME": str(tmp_path), "PATH": os.environ.get("PATH", ""), "DEJA_SERVE": "off"}
    proc = subprocess.run(deja_cmd() + ["demo"], env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert "copilot-vscode: 2 sessions" in proc.stdout
    assert "opencode: 2 sessions" in proc.stdout  # its database and its older JSON store
    assert "kilo: 2 sessions" in proc.stdout  # an extension task and the CLI's kilo.db
