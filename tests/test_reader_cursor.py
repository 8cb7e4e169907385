"""Cursor: the IDE's state.vscdb stores, the CLI agent's JSONL and older .txt transcripts."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

from conftest import REPO, Home

from deja.pipeline.demo import build_sqlite_samples
from deja.stages.sources import cursor

SAMPLES = REPO / "data_samples" / "cursor"
CID = "5b1c2d4e-0000-4000-8000-00000000c0de"


def ide_store(home: Home) -> Path:
    user = home.home / ".config" / "Cursor" / "User"
    shutil.copytree(SAMPLES / "User", user)
    build_sqlite_samples(user)
    return user / "globalStorage" / "state.vscdb"


def cli_store(home: Home) -> Path:
    dest = home.home / ".cursor"
    shutil.copytree(SAMPLES / "dot_cursor", dest)
    return dest / "projects"


def roles(part) -> list[str]:
    return [m.role for m in part.messages]


def test_ide_composer_bubbles_in_header_order_with_title_project_times_and_work(home):
    db = ide_store(home)
    res = cursor.read(str(db))
    assert res.error == "" and len(res.sessions) == 1
    s = res.sessions[0]
    assert s.session_id == CID and s.title == "Debounce the search box"
    assert s.cwd == "/home/dev/src/storefront"
    assert roles(s) == ["user", "edit", "files", "assistant"]
    assert s.messages[0].ts == 1772528400000  # 2026-03-03T09:00:00Z
    assert s.messages[1].text.startswith("/home/dev/src/storefront/src/Search.tsx\nonChange={e => fetchResults")


def test_ide_older_chat_panel_in_a_workspace_store_takes_the_workspace_folder(home):
    ws = home.home / ".config" / "Cursor" / "User" / "workspaceStorage" / "a1b2c3"
    ws.mkdir(parents=True)
    (ws / "workspace.json").write_text(json.dumps({"folder": "file:///home/dev/src/old%20app"}))
    con = sqlite3.connect(ws / "state.vscdb")
    con.execute("CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    con.execute("INSERT INTO ItemTable VALUES (?, ?)", ("workbench.panel.aichat.view.aichat.chatdata", json.dumps({
        "tabs": [{"tabId": "tab-1", "chatTitle": "Why is the build slow", "lastSendTime": 1709000000000,
                  "bubbles": [{"type": "user", "text": "why is webpack so slow"},
                              {"type": "ai", "text": "Source maps are on in production."}]},
                 "not a tab"]})))
    con.commit()
    con.close()
    res = cursor.read(str(ws / "state.vscdb"))
    (s,) = res.sessions
    assert (s.session_id, s.title, s.cwd) == ("tab-1", "Why is the build slow", "/home/dev/src/old app")
    assert roles(s) == ["user", "assistant"] and s.messages[0].ts == 1709000000000
    assert res.malformed == 1  # the tab of another shape is counted, not guessed at


def test_cli_jsonl_roles_work_records_mtime_and_project_from_the_encoded_folder(home):
    projects = cli_store(home)
    path = next(projects.rglob("*.jsonl"))
    os.utime(path, ns=(1772600000000 * 10**6, 1772600000000 * 10**6))
    (s,) = cursor.read(str(path)).sessions
    assert s.session_id == "7e3f1a2b-0000-4000-8000-0000000000aa"
    assert s.cwd == "/home/dev/src/storefront"  # home-dev-src-storefront spelled as the tool paths spell it
    assert roles(s) == ["user", "assistant", "files", "edit", "command", "files", "assistant"]
    assert s.messages[0].text.startswith("<user_query>")  # unwrapped by normalize, like every harness
    assert {m.ts for m in s.messages} == {1772600000000}
    assert "$ npm test -- cart" in [m.text for m in s.messages]


def test_cli_txt_turns_multiline_arguments_and_a_numeric_folder(home):
    projects = cli_store(home)
    path = next(projects.rglob("*.txt"))
    (s,) = cursor.read(str(path)).sessions
    assert roles(s) == ["user", "assistant", "edit", "files", "command", "assistant"]
    edit = s.messages[2].text
    assert edit == "/home/dev/src/storefront/tools/cfg.py\ndef load(path):\n    return json.load(open(path))"
    assert s.messages[4].text == "$ cd /home/dev/src/storefront && pytest tests/test_cfg.py -q"
    assert s.cwd == "/home/dev/src/storefront/tools"  # no folder recorded: the one the tool paths share


def test_every_cursor_shape_indexes_through_deja_and_the_project_is_found(home):
    ide_store(home)
    cli_store(home)
    summary = json.loads(home.run("index", "--json").stdout)
    assert summary["errors"] == []
    hs = {h["harness"]: h for h in summary["harnesses"]}["cursor"]
    assert (hs["read"], hs["sessions"], hs["failed"]) == (3, 3, 0)
    hit = home.search("cart total NaN")["hits"][0]["session"]
    assert hit["harness"] == "cursor" and hit["project"] == "src/storefront"
    assert home.search("debounce", "--role", "user")["total"] == 1


def test_a_rewritten_ide_store_replaces_its_sessions_and_keeps_the_unchanged_ones(home):
    db = ide_store(home)
    home.run("index")
    con = sqlite3.connect(db)
    con.execute("INSERT INTO cursorDiskKV VALUES (?, ?)", ("composerData:c2", json.dumps(
        {"composerId": "c2", "name": "Second chat", "createdAt": 1772600000000, "conversation": [
            {"type": 1, "text": "ocelot retry budget question"}]})))
    con.commit()
    con.close()
    summary = json.loads(home.run("index", "--json").stdout)
    assert {h["harness"]: h for h in summary["harnesses"]}["cursor"]["sessions"] == 2
    assert home.search("ocelot retry")["total"] == 1
    assert home.search("debounce")["total"] == 1  # the unchanged session once, not twice


def test_a_cursor_text_transcript_that_vanishes_is_an_error_for_that_file_only(tmp_path):
    res = cursor.read(str(tmp_path / "gone.txt"))
    assert res.error and res.sessions == []


def test_a_value_of_the_wrong_type_costs_that_value_not_the_other_composers(home):
    db = ide_store(home)
    con = sqlite3.connect(db)
    con.execute("INSERT INTO cursorDiskKV VALUES (?, ?)", ("composerData:c-odd", json.dumps(
        {"_v": 10, "composerId": "c-odd", "name": "Cart badge count", "createdAt": 1772600000000,
         "fullConversationHeadersOnly": [{"bubbleId": "o1", "type": 1}, {"bubbleId": ["o2"], "type": 2}]})))
    for bid, typ, text, at in (("o1", 1, "the cart badge shows a stale count", "2026-03-04T09:00:00.000Z"),
                               ("o2", 2, "The badge reads the count before the cart store hydrates.",
                                "2026-03-04T09:00:20.000Z")):
        con.execute("INSERT INTO cursorDiskKV VALUES (?, ?)", (f"bubbleId:c-odd:{bid}", json.dumps(
            {"_v": 3, "type": typ, "bubbleId": bid, "text": text, "createdAt": at})))
    con.execute("INSERT INTO ItemTable VALUES (?, ?)", ("workbench.panel.aichat.view.aichat.chatdata", json.dumps(
        {"tabs": [{"tabId": "tab-odd", "chatTitle": "Odd tab", "bubbles": 5},
                  {"tabId": "tab-1", "chatTitle": "Why is the build slow", "lastSendTime": 1709000000000,
                   "bubbles": [{"type": "user", "text": "why is webpack so slow"}]}]})))
    con.commit()
    con.close()
    res = cursor.read(str(db))
    assert res.error == "" and res.malformed == 2
    assert {what for _, what in res.faults} == {"header bubbleId a list is not text", "tab bubbles is 5, not a list"}
    by_id = {s.session_id: s for s in res.sessions}
    assert set(by_id) == {CID, "c-odd", "tab-1"}
    assert roles(by_id[CID]) == ["user", "edit", "files", "assistant"]
    # the bubble its header misnames is still read, after the ones the headers order
    assert [m.text for m in by_id["c-odd"].messages] == [
        "the cart badge shows a stale count", "The badge reads the count before the cart store hydrates."]
    summary = json.loads(home.run("index", "--json").stdout)
    hs = {h["harness"]: h for h in summary["harnesses"]}["cursor"]
    assert (hs["sessions"], hs["failed"]) == (3, 0) and not summary["errors"]
    assert home.search("debounce", "--role", "user")["total"] == 1
    assert home.search("hydrates")["total"] == 1
