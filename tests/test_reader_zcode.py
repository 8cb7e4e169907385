"""ZCode's three stores, laid out at their default home paths from the sample:
the flat JSONL transcripts (Command Code's parse), the CLI's opencode-shaped
database with Claude Code's tool names, and the older app's snapshots.
Shapes from the user's registry note; no real ZCode store was seen."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

from test_recover import digest, ids, listing

from deja.pipeline.demo import build_sqlite_samples
from deja.stages.sources import zcode

SAMPLES = Path(__file__).resolve().parents[1] / "data_samples" / "zcode"
SID = "ses_zc01HqT4mB8vN2kR7pW3xY5a"
SUB = "ses_zc02Jd6sL1fG9hK3mQ8rT4vb"
JSONL_SID = "zc-7d41e2a0-5b3c-4f19-9e8a-1c2d3e4f5a6b"
ACP = "acp-3f6b2d8e-1c4a-4e7b-9d0f-6a5b4c3d2e1f"


def zcode_home(home) -> Path:
    """The sample at ``~/.zcode``, its database built from the spec."""
    z = home.home / ".zcode"
    shutil.copytree(SAMPLES, z)
    build_sqlite_samples(z / "cli" / "db")
    return z


def jsonl_of(z: Path) -> Path:
    return next((z / "projects").rglob("*.jsonl"))


def snapshot_of(z: Path) -> Path:
    return z / "v2" / "sessions" / "9f2c41d07a" / "task_5a1e9c.json"


def harnesses(home, **env) -> dict:
    out = json.loads(home.run("index", "--json", extra_env=env).stdout)
    return {h["harness"]: h for h in out["harnesses"]}


def test_the_jsonl_transcript_keeps_roles_order_times_and_the_usage_lines(home):
    z = zcode_home(home)
    (s,) = zcode.read(str(jsonl_of(z))).sessions
    assert (s.harness, s.session_id) == ("zcode", JSONL_SID)
    assert [m.role for m in s.messages] == ["user", "assistant", "files", "tool-output", "assistant"]
    assert s.messages[0].ts == 1775120400000 and s.messages[-1].ts == 1775120420000
    assert s.messages[2].text == "/home/dev/src/weather-api/forecast/cache.py"
    assert s.project == "weather/api"  # the lines name no folder: the encoded cwd's, as Claude Code's


def test_the_database_reads_claude_code_tool_names_and_a_refused_edit_is_no_change(home):
    z = zcode_home(home)
    res = zcode.read(str(z / "cli" / "db" / "db.sqlite"))
    s = next(p for p in res.sessions if p.session_id == SID)
    assert (s.harness, s.cwd, s.title, s.spawned) == ("zcode", "/home/dev/src/rate-limiter",
                                                     "Token bucket refills too fast", False)
    assert [m.role for m in s.messages] == ["user", "edit", "command", "tool-output", "assistant", "files"]
    assert s.messages[0].ts == 1775000000000 and s.messages[4].ts == 1775000060000
    (edit,) = [m for m in s.messages if m.role == "edit"]
    assert edit.tool == "Edit"
    assert edit.text.startswith("/home/dev/src/rate-limiter/bucket.py\nelapsed = now - self.created")
    assert "self.start" not in "".join(m.text for m in s.messages)  # ZCode refused that Edit: no change
    cmd = s.messages[2]
    assert (cmd.tool, cmd.text, cmd.exit_code) == ("Bash", "$ pytest -q tests/test_refill.py", 0)
    assert s.messages[5].text.split("\n") == ["/home/dev/src/rate-limiter/bucket.py",
                                              "/home/dev/src/rate-limiter/tests/test_refill.py"]


def test_a_subagent_or_fork_session_is_kept_only_when_asked(home):
    z = zcode_home(home)
    sub = next(p for p in zcode.read(str(z / "cli" / "db" / "db.sqlite")).sessions if p.session_id == SUB)
    assert (sub.kind, sub.parent, sub.spawned) == ("subagent", SID, True)
    con = sqlite3.connect(z / "cli" / "db" / "db.sqlite")
    con.execute("UPDATE session SET task_type = 'fork', parent_id = NULL WHERE id = ?", (SUB,))
    con.commit()
    con.close()
    fork = next(p for p in zcode.read(str(z / "cli" / "db" / "db.sqlite")).sessions if p.session_id == SUB)
    assert (fork.kind, fork.spawned) == ("fork", True)
    assert harnesses(home)["zcode"]["sessions"] == 3  # the transcript, the interactive session, the snapshot
    assert SUB not in json.dumps(home.search("caller"))
    home.run("index", "--rebuild", extra_env={"DEJA_INCLUDE_SUBAGENTS": "1"})
    assert SUB in json.dumps(home.search("caller", extra_env={"DEJA_INCLUDE_SUBAGENTS": "1"}))


def test_a_legacy_snapshot_is_read_with_its_title_and_skipped_when_the_database_has_it(home):
    z = zcode_home(home)
    (s,) = zcode.read(str(snapshot_of(z))).sessions
    assert (s.session_id, s.cwd, s.title, s.title_rank) == (ACP, "/home/dev/src/invoice-pdf",
                                                            "Invoice totals round wrong", 1)
    assert [(m.role, m.ts) for m in s.messages] == [("user", 1771000000000), ("assistant", 1771000060000)]
    # no acpSessionId: the taskId names it
    doc = json.loads(snapshot_of(z).read_text())
    del doc["meta"]["acpSessionId"]
    other = snapshot_of(z).parent / "task_77.json"
    other.write_text(json.dumps(doc))
    assert zcode.read(str(other)).sessions[0].session_id == "task_5a1e9c"
    other.unlink()
    (snapshot_of(z).parent / "task_5a1e9c.deleted.json").write_text(json.dumps(doc))
    assert harnesses(home)["zcode"]["sessions"] == 3
    assert home.search("rounded", "summing")["total"] == 1
    # restored into the CLI database: read from there, not twice
    shutil.rmtree(home.index)
    con = sqlite3.connect(z / "cli" / "db" / "db.sqlite")
    con.execute("UPDATE session SET id = ? WHERE id = ?", (ACP, SID))
    con.execute("UPDATE message SET session_id = ? WHERE session_id = ?", (ACP, SID))
    con.commit()
    con.close()
    assert zcode.read(str(snapshot_of(z))).sessions == []
    assert harnesses(home)["zcode"]["sessions"] == 2
    assert home.search("rounded", "summing")["total"] == 0


def test_appended_lines_and_a_changed_database_are_read_on(home):
    z = zcode_home(home)
    harnesses(home)
    with open(jsonl_of(z), "a") as fh:
        fh.write(json.dumps({"role": "user", "content": "also cover the dateline cities", "sessionId": JSONL_SID,
                             "timestamp": "2026-04-02T09:01:00.000Z"}) + "\n")
    con = sqlite3.connect(z / "cli" / "db" / "db.sqlite")
    con.execute("INSERT INTO message VALUES ('msg_z05', ?, 1775000070000, 1775000070000, ?)",
                (SID, json.dumps({"role": "user", "time": {"created": 1775000070000}})))
    con.execute("INSERT INTO part VALUES ('prt_z10', 'msg_z05', ?, 1775000070000, 1775000070000, ?)",
                (SID, json.dumps({"type": "text", "text": "now cap the burst size at the bucket capacity"})))
    con.commit()
    con.close()
    per = harnesses(home)
    assert per["zcode"]["sessions"] == 3
    assert home.search("dateline")["total"] == 1 and home.search("burst", "capacity")["total"] == 1
    assert home.search("rounded", "summing")["total"] == 1


def test_bad_input_is_counted_and_the_run_completes(home):
    z = zcode_home(home)
    with open(jsonl_of(z), "a") as fh:
        fh.write("{not json\n")
        fh.write('{"role": "user", "content": "torn')
    res = zcode.read(str(jsonl_of(z)))
    assert res.malformed == 1 and res.sessions and res.safe_offset < jsonl_of(z).stat().st_size
    odd = snapshot_of(z).parent / "odd.json"
    odd.write_text(json.dumps(["not", "a", "snapshot"]))
    res = zcode.read(str(odd))
    assert res.malformed == 1 and res.sessions == [] and res.error == ""
    gone = zcode.read(str(z / "v2" / "sessions" / "vanished.json"))
    assert gone.error and gone.sessions == []
    con = sqlite3.connect(z / "cli" / "db" / "db.sqlite")
    con.execute("UPDATE part SET data = '{not json' WHERE id = 'prt_z07'")
    con.commit()
    con.close()
    res = zcode.read(str(z / "cli" / "db" / "db.sqlite"))
    assert res.malformed == 1 and res.error == "" and len(res.sessions) == 2
    per = harnesses(home)
    assert per["zcode"]["sessions"] == 3


def test_the_stores_follow_their_overrides(home, tmp_path):
    from deja.stages.sources.locate import zcode_db, zcode_files, zcode_legacy_root, zcode_root

    assert zcode_root({"HOME": "/h"}) == "/h/.zcode/projects"
    assert zcode_db({"HOME": "/h"}) == "/h/.zcode/cli/db/db.sqlite"
    assert zcode_legacy_root({"HOME": "/h"}) == "/h/.zcode/v2/sessions"
    moved = tmp_path / "moved"
    shutil.copytree(SAMPLES, moved)
    build_sqlite_samples(moved / "cli" / "db")
    env = {"HOME": str(home.home), "DEJA_ZCODE_ROOT": str(moved / "projects"),
           "DEJA_ZCODE_DB": str(moved / "cli" / "db" / "db.sqlite"),
           "DEJA_ZCODE_LEGACY_ROOT": str(moved / "v2" / "sessions")}
    assert len(zcode_files(env)) == 3
    assert zcode_files({"HOME": str(home.home)}) == []


def test_a_database_session_is_offered_for_recovery_with_zcode_resume_in_its_folder(home):
    zcode_home(home)
    doc = listing(home, cwd="/home/dev/src/rate-limiter")
    assert ids(doc) == [SID]  # the subagent's is never offered
    cand = doc["candidates"][0]
    assert cand["resume"] == f"cd '/home/dev/src/rate-limiter' && zcode --resume {SID}"
    assert digest(home, SID, cwd="/home/dev/src/rate-limiter").splitlines()[-1].endswith(cand["resume"])
    # the transcripts and snapshots have no resume command
    assert ids(listing(home, cwd="/home/dev/src/invoice-pdf")) == []


def test_demo_shows_the_three_zcode_stores(tmp_path):
    import os
    import subprocess

    from conftest import deja_cmd

    env = {"HOME": str(tmp_path), "PATH": os.environ.get("PATH", ""), "DEJA_SERVE": "off"}
    proc = subprocess.run(deja_cmd() + ["demo"], env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert "zcode: 3 sessions" in proc.stdout  # a transcript, the database's interactive session, a snapshot
