"""`deja recover` for Gemini CLI and Qwen Code (stages/recover/gemini.py, qwen.py):
chats matched to the folder their store records, the working state rebuilt
from the reader's messages, the native resume command."""

from __future__ import annotations

import hashlib
import json
import os
import time

from test_reader_gemini import SID, call, header, model, user
from test_reader_qwen import SID as QSID
from test_reader_qwen import chat as qwen_chat
from test_reader_qwen import rows as qwen_rows
from test_recover import digest, ids, listing, section

CWD = "/home/dev/src/tide-tables"


def gemini_chat(home, folder: str, rows, sid=SID, ago: float = 60):
    p = home.home / ".gemini" / "tmp" / folder / "chats" / f"session-2026-04-24T23-16-{sid[:8]}.jsonl"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    t = time.time() - ago
    os.utime(p, (t, t))
    return p


def crashed_rows(sid=SID, day="2026-04-24"):
    return [
        header(sid, start=f"{day}T23:16:28.708Z"),
        user("u1", "why does the tide offset test fail?", f"{day}T23:16:30.000Z"),
        model("g1", "The offset is off by one; fixing it.", f"{day}T23:16:40.000Z", [
            call("c1", "replace", {"file_path": "src/tides.ts", "old_string": "offset = 3", "new_string": "offset = 4"},
                 output="Successfully modified file"),
        ]),
        user("u2", "now run the whole suite", f"{day}T23:17:10.000Z"),  # no reply: it died here
    ]


def test_gemini_chats_are_found_by_the_folder_their_project_directory_stands_for(home):
    hashed = gemini_chat(home, hashlib.sha256(CWD.encode()).hexdigest(), crashed_rows(), ago=600)
    other = "d2f0a9e4-1111-4c3e-8f1a-6d4b2c9e7a10"
    gemini_chat(home, "tide-tables", crashed_rows(other, day="2026-04-25"), sid=other, ago=60)
    # the slug folder is this project's only once projects.json says so
    assert ids(listing(home, cwd=CWD)) == [SID]
    (home.home / ".gemini" / "projects.json").write_text(json.dumps({"projects": {CWD: "tide-tables"}}))
    doc = listing(home, cwd=CWD)
    assert ids(doc) == [other, SID]  # the most recently active first
    c = doc["candidates"][1]
    assert c["harness"] == "gemini" and c["resume"] == f"gemini --resume {SID}"
    assert ids(listing(home, cwd="/home/dev/src/elsewhere")) == []
    assert hashed.exists()


def test_gemini_chats_rank_by_their_last_message_not_the_files_mtime(home):
    folder = hashlib.sha256(CWD.encode()).hexdigest()
    march = "a1a1a1a1-1111-4c3e-8f1a-6d4b2c9e7a10"
    gemini_chat(home, folder, crashed_rows(march, day="2026-03-11"), sid=march, ago=0)  # restored from a backup
    gemini_chat(home, folder, crashed_rows(day="2026-04-24"), ago=86400 * 30)
    doc = listing(home, cwd=CWD)
    assert ids(doc) == [SID, march]
    assert doc["candidates"][0]["when"] == "2026-04-24T23:17:10Z"


def test_a_saved_checkpoint_is_never_a_candidate(home):
    d = home.home / ".gemini" / "tmp" / hashlib.sha256(CWD.encode()).hexdigest()
    d.mkdir(parents=True)
    (d / "checkpoint-rain.json").write_text(json.dumps([{"role": "user", "parts": [{"text": "hi"}]}]))
    assert ids(listing(home, cwd=CWD)) == []


def test_the_gemini_digest_rebuilds_the_turn_and_ends_with_the_resume_command(home):
    gemini_chat(home, hashlib.sha256(CWD.encode()).hexdigest(), crashed_rows())
    text = digest(home, SID, cwd=CWD)
    assert text.startswith("<deja-recall>\nWorking state of an earlier Gemini CLI session")
    assert section(text, "Last instruction") == "now run the whole suite"
    assert section(text, "Recent tool actions") == "- replace: src/tides.ts"
    assert section(text, "Last turn").startswith("Last turn may be incomplete: the last ask got no reply")
    assert text.splitlines()[-1].endswith(f"gemini --resume {SID}")


def test_qwen_chats_are_found_by_the_cwd_on_their_lines(home):
    p = qwen_chat(home.home)
    p.write_text("".join(json.dumps(r) + "\n" for r in qwen_rows()))
    doc = listing(home, cwd="C:\\Users\\ann\\Documents\\ledger")
    assert ids(doc) == [QSID] and doc["candidates"][0]["resume"] == f"qwen -r {QSID}"
    text = digest(home, QSID, cwd="C:\\Users\\ann\\Documents\\ledger")
    assert "- run_shell_command: npm test → exit 1" in section(text, "Recent tool actions")
    assert section(text, "Last plan or answer").endswith("The fee sign was wrong.")
