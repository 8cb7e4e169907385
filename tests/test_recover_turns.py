"""`deja recover` for the harnesses whose recovery is built on their reader's
parse (stages/recover/turns.py): each one's sample store laid out at its
default home path and cut the way a crash leaves it (a tool call that never
got a result, or a prompt that never got a reply). The session is offered for
its folder, its digest names the last instruction, the files and commands,
and ends with that harness's own resume command."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from test_reader_amp import store as amp_store
from test_reader_cline import CLINE_SESSION, lay_out
from test_reader_copilot import SID as COPILOT_SID
from test_reader_copilot import ev, start, turn
from test_reader_crush import SID as CRUSH_SID
from test_reader_crush import crush_store
from test_reader_cursor import cli_store
from test_reader_goose import goose_store
from test_reader_hermes import hermes_home
from test_recover import digest, ids, listing, section
from test_sqlite_store import add_session, opencode_store

from deja.pipeline.demo import build_sqlite_samples

SAMPLES = Path(__file__).resolve().parents[1] / "data_samples"
NOW = time.time()


@dataclass
class Crash:
    cwd: str
    sid: str
    last: str  # the last instruction
    resume: str
    actions: list[str] = field(default_factory=list)  # lines the tool-action section holds
    files: list[str] = field(default_factory=list)  # lines the files section holds
    turn: str = ""  # how the Last turn section starts


def _append(path: Path, *rows: dict) -> None:
    with open(path, "a") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in rows)


def copilot(home) -> Crash:
    p = home.home / ".copilot" / "session-state" / COPILOT_SID / "events.jsonl"
    p.parent.mkdir(parents=True)
    # the turn up to its answer, then a new ask whose command never completed
    p.write_text("".join([start(), *turn(), ev("user.message", 8, {"content": "now run the linter too"}),
                          ev("tool.execution_start", 9, {"toolCallId": "c9", "toolName": "bash",
                                                         "arguments": {"command": "ruff check ."}})]))
    return Crash("/home/dev/src/orders-api", COPILOT_SID, "now run the linter too", f"copilot --resume={COPILOT_SID}",
                 ["- bash: ruff check . → no result"], ["- retry.py"],
                 "Last turn may be incomplete: work was in progress on: bash ruff check .")


def cursor(home) -> Crash:
    sid = "7e3f1a2b-0000-4000-8000-0000000000aa"
    p = next(cli_store(home).rglob(f"{sid}.jsonl"))
    _append(p, {"role": "user", "message": {"content": [{"type": "text", "text": "<user_query>\nadd a test for the empty cart\n</user_query>"}]}})
    os.utime(p, (NOW - 3600, NOW - 3600))  # the CLI's lines carry no time: the file's is the session's
    return Crash("/home/dev/src/storefront", sid, "add a test for the empty cart",
                 f"cursor-agent --resume {sid}", [], [], "Last turn may be incomplete: the last ask got no reply")


def opencode(home) -> Crash:
    opencode_store(home)  # the sample session ends in a prompt that got no reply
    return Crash("/home/dev/src/rate-limiter", "ses_01JQ8ZK4", "good, commit it", "opencode -s ses_01JQ8ZK4",
                 ["- bash: go test ./... -run TestRefill -count=20 → exit 1"], ["- bucket.go"],
                 "Last turn may be incomplete: the last ask got no reply")


def pi(home) -> Crash:
    dest = home.home / ".pi" / "agent" / "sessions"
    shutil.copytree(SAMPLES / "pi" / "sessions", dest)
    p = next(dest.rglob("*.jsonl"))
    _append(p,
            {"type": "message", "id": "u9", "parentId": "si1a2b3c", "timestamp": "2026-03-02T07:05:00.000Z",
             "message": {"role": "user", "content": [{"type": "text", "text": "run the queue tests again"}]}},
            {"type": "message", "id": "a9", "parentId": "u9", "timestamp": "2026-03-02T07:05:02.000Z",
             "message": {"role": "assistant", "content": [{"type": "toolCall", "id": "tc9", "name": "bash",
                                                            "arguments": {"command": "npm test -- queue"}}]}})
    sid = "0c6e1f2a-3b4c-4d5e-8f6a-7b8c9d0e1f2a"
    return Crash("/home/dev/src/relay", sid, "run the queue tests again", f"pi --session {sid}",
                 ["- bash: npm test -- queue → no result"], [],
                 "Last turn may be incomplete: work was in progress on: bash npm test -- queue")


def omp(home) -> Crash:
    shutil.copytree(SAMPLES / "omp" / "agent", home.home / ".omp" / "agent")  # ends in a tool result, no reply
    sid = "1f9d2a6b-9c0d-4e12-8a34-56789abcdef0"
    return Crash("/home/dev/src/ledger", sid, "invoice totals drift by a cent after currency conversion",
                 f"omp --resume {sid}", ["- bash: cargo test rounding"], [],
                 "Last turn may be incomplete: the last tool result got no reply")


def hermes(home) -> Crash:
    db = hermes_home(home) / "state.db"
    sid = "20260304_101500_a1b2c3"
    con = sqlite3.connect(db)
    con.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, 'user', ?, 1772619400.0)",
                (sid, "also cap the backoff at five minutes"))
    con.commit()
    con.close()
    return Crash("/home/dev/src/mailer", sid, "also cap the backoff at five minutes", f"hermes --resume {sid}",
                 [], ["- retry.py"], "Last turn may be incomplete: the last ask got no reply")


def crush(home) -> Crash:
    db = crush_store(home)
    con = sqlite3.connect(db)
    con.execute("INSERT INTO messages (id, session_id, role, parts, model, created_at, updated_at) "
                "VALUES ('m-crash', ?, 'user', ?, NULL, 1772893000, 1772893000)",
                (CRUSH_SID, json.dumps([{"type": "text", "data": {"text": "now bump the reorder threshold"}}])))
    con.commit()
    con.close()
    return Crash(str(home.home / "src" / "inventory-svc"), CRUSH_SID, "now bump the reorder threshold",
                 f"crush --session {CRUSH_SID}", [], [], "Last turn may be incomplete: the last ask got no reply")


def goose(home) -> Crash:
    d = goose_store(home)
    _append(d / "20260303_1.jsonl", {"id": "m9", "role": "user", "created": 1772530100,
                                     "content": [{"type": "text", "text": "make the fixture clean up after itself"}]})
    return Crash("/home/dev/src/report-builder", "20260303_1", "make the fixture clean up after itself",
                 "goose session --resume --session-id 20260303_1", [], [],
                 "Last turn may be incomplete: the last ask got no reply")


def amp(home) -> Crash:
    p = amp_store(home)
    doc = json.loads(p.read_text())
    doc["messages"].append({"role": "user", "content": [{"type": "text", "text": "sign the retries too"}],
                            "meta": {"sentAt": 1772600000000}})
    p.write_text(json.dumps(doc))
    tid = p.stem
    return Crash("/home/dev/src/webhooks", tid, "sign the retries too", f"amp threads continue {tid}", [], [],
                 "Last turn may be incomplete: the last ask got no reply")


def cline(home) -> Crash:
    lay_out(home)  # the CLI session ends in an edit that never got its result
    return Crash("/home/dev/src/ledger", CLINE_SESSION, "Why does the monthly report double-count refunds?",
                 f"cline --id {CLINE_SESSION}",
                 ["- run_commands: pytest tests/test_monthly.py -q → failed", "- editor: reports/sql/refunds.sql → no result"],
                 ["- reports/monthly.py", "- reports/sql/refunds.sql"],
                 "Last turn may be incomplete: work was in progress on: editor")


def kimi(home) -> Crash:
    shutil.copytree(SAMPLES / "kimi", home.home / ".kimi-code")
    wire = next((home.home / ".kimi-code").rglob("wire.jsonl"))
    _append(wire,
            {"type": "context.append_message", "time": "2026-03-05T09:03:00Z",
             "message": {"role": "user", "content": "run it twenty times to be sure"}},
            {"type": "context.append_loop_event", "time": "2026-03-05T09:03:02Z",
             "event": {"type": "tool.call", "id": "tc_3", "name": "Bash",
                       "args": {"command": "npx playwright test login.spec.ts --repeat-each 20"}}})
    return Crash("/home/dev/src/portal", "5d1e-kimi-demo", "run it twenty times to be sure",
                 "kimi --session 5d1e-kimi-demo",
                 ["- Bash: npx playwright test login.spec.ts --repeat-each 20 → no result"], ["- tests/login.spec.ts"],
                 "Last turn may be incomplete: work was in progress on: Bash npx playwright test")


def _cut_last_line(path: Path) -> None:
    """The file as a crash leaves it after a tool result: its final answer never written."""
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:-1]))


def senpi(home) -> Crash:
    shutil.copytree(SAMPLES / "senpi" / "agent", home.home / ".senpi" / "agent")
    p = next((home.home / ".senpi").rglob("*.jsonl"))
    _cut_last_line(p)  # the edit's result came back; the answer after it never did
    sid = "5e9a1c2d-7b3f-4a60-9d18-2c4e6f8a0b1c"
    return Crash("/home/dev/src/atlas", sid, "the tile cache serves stale tiles after a style change, why?",
                 f"senpi --session {sid}", ["- bash: npm test -- tiles → exit 1"], ["- src/tiles/cache.ts"],
                 "Last turn may be incomplete: the last tool result got no reply")


def gjc(home) -> Crash:
    shutil.copytree(SAMPLES / "gjc" / "agent", home.home / ".gjc" / "agent")  # the managed v2-<digest> folder
    p = next((home.home / ".gjc").rglob("*.jsonl"))
    _append(p,
            {"type": "message", "id": "u9", "parentId": "a0000009", "timestamp": "2026-03-07T09:05:00.000Z",
             "message": {"role": "user", "content": [{"type": "text", "text": "run the whole berth suite now"}]}},
            {"type": "message", "id": "a9", "parentId": "u9", "timestamp": "2026-03-07T09:05:02.000Z",
             "message": {"role": "assistant", "content": [{"type": "toolCall", "id": "tc9", "name": "bash",
                                                            "arguments": {"command": "pytest tests/test_berths.py"}}]}})
    sid = "7a1c3e4f-9d5b-4c82-9f3a-4e6a8b0c2d3e"
    return Crash("/home/dev/src/harbor", sid, "run the whole berth suite now", f"gjc --resume {sid}",
                 ["- bash: pytest tests/test_berths.py → no result"], ["- harbor/berths.py"],
                 "Last turn may be incomplete: work was in progress on: bash pytest tests/test_berths.py")


def kimchi(home) -> Crash:
    dest = home.home / ".config" / "kimchi" / "harness"
    shutil.copytree(SAMPLES / "kimchi" / "harness", dest)
    _cut_last_line(next(dest.rglob("*.jsonl")))  # both tool results in, no answer
    sid = "6f0b2d3e-8c4a-4b71-8e29-3d5f7a9b1c2d"
    return Crash("/home/dev/src/kiln", sid, "why does the kiln scheduler start two firings at midnight?",
                 f"kimchi --session {sid}", ["- bash: go test ./scheduler/... → exit 1"], ["- scheduler/cron.go"],
                 "Last turn may be incomplete: the last tool result got no reply")


def prime(home) -> Crash:
    shutil.copytree(SAMPLES / "prime" / "agent", home.home / ".prime" / "agent")  # the flat <uuid7>.jsonl layout
    p = next((home.home / ".prime").rglob("*.jsonl"))
    _append(p, {"type": "message", "id": "u9", "parentId": "a0000009", "timestamp": "2026-03-08T09:05:00.000Z",
                "message": {"role": "user", "content": [{"type": "text", "text": "add a regression test for the BOM"}]}})
    sid = "0195f3a2-6b7c-7d8e-9f01-a2b3c4d5e6f7"
    return Crash("/home/dev/src/quarry", sid, "add a regression test for the BOM", f"prime-agent --resume {sid}",
                 ["- bash: python -m pytest tests/test_import.py → exit 1"], ["- quarry/importer.py"],
                 "Last turn may be incomplete: the last ask got no reply")


OPENCLAW_SID = "3b7e5c10-8d2f-4a61-9e0b-c4d5e6f7a8b9"


def openclaw(home) -> Crash:
    shutil.copytree(SAMPLES / "openclaw" / "agents", home.home / ".openclaw" / "agents")
    p = next((home.home / ".openclaw").rglob(f"{OPENCLAW_SID}.jsonl"))
    _append(p,
            {"type": "message", "id": "u9", "parentId": "oc1a0002", "timestamp": "2026-03-04T08:20:00.000Z",
             "message": {"role": "user", "content": [{"type": "text", "text": "show me the current bucket policy"}]}},
            {"type": "message", "id": "a9", "parentId": "u9", "timestamp": "2026-03-04T08:20:02.000Z",
             "message": {"role": "assistant", "content": [{"type": "toolCall", "id": "tc9", "name": "exec",
                                                            "arguments": {"command": "aws s3api get-bucket-policy --bucket nightly"}}]}})
    # resumed by the chat key sessions.json maps to the session, not by its id
    return Crash("/home/dev/src/infra", OPENCLAW_SID, "show me the current bucket policy",
                 "openclaw tui --session agent:ops:main",
                 ["- exec: aws s3api get-bucket-policy --bucket nightly → no result"], [],
                 "Last turn may be incomplete: work was in progress on: exec aws s3api")


CRASHES = [copilot, cursor, opencode, pi, omp, hermes, crush, goose, amp, cline, kimi, senpi, gjc, kimchi, prime, openclaw]


@pytest.mark.parametrize("crash", CRASHES, ids=[c.__name__ for c in CRASHES])
def test_a_crashed_session_is_offered_and_its_digest_ends_with_the_harness_resume(home, crash):
    c = crash(home)
    doc = listing(home, cwd=c.cwd)
    assert c.sid in ids(doc)
    cand = next(x for x in doc["candidates"] if x["id"] == c.sid)
    assert cand["harness"] == crash.__name__ and cand["resume"] == c.resume
    assert cand["incomplete"].startswith(c.turn)
    text = digest(home, c.sid, cwd=c.cwd)
    assert section(text, "Last instruction") == c.last
    for line in c.actions:
        assert line in section(text, "Recent tool actions").splitlines()
    for line in c.files:
        assert line in section(text, "Files touched").splitlines()
    assert section(text, "Last turn").startswith(c.turn)
    assert text.splitlines()[-1].endswith(c.resume)
    assert ids(listing(home, cwd="/home/dev/src/elsewhere")) == []


def test_sessions_no_terminal_can_resume_are_not_offered(home):
    """The Cursor IDE's chats and the Cline extension's tasks are reopened in
    the editor, not by the resume command: only the CLIs' sessions are offered."""
    lay_out(home)
    assert ids(listing(home, cwd="/home/dev/src/fetch-kit")) == []  # the extension task's folder
    assert ids(listing(home, cwd="/home/dev/src/ledger")) == [CLINE_SESSION]
    cli_store(home)
    d = home.home / ".config" / "Cursor" / "User" / "globalStorage"
    d.mkdir(parents=True)
    shutil.copy(SAMPLES / "cursor" / "User" / "globalStorage" / "state.vscdb.json", d)
    build_sqlite_samples(d)
    # the IDE's chat lies in the same folder as the CLI's transcript
    assert ids(listing(home, cwd="/home/dev/src/storefront")) == ["7e3f1a2b-0000-4000-8000-0000000000aa"]


def test_a_spawned_session_is_never_offered(home):
    db = opencode_store(home)
    con = sqlite3.connect(db)
    add_session(con, "ses_child", "look for other callers of refill", ts=1772442100000)
    con.execute("UPDATE session SET parent_id = 'ses_01JQ8ZK4', directory = '/home/dev/src/rate-limiter' "
                "WHERE id = 'ses_child'")
    con.commit()
    con.close()
    assert ids(listing(home, cwd="/home/dev/src/rate-limiter")) == ["ses_01JQ8ZK4"]


def test_a_session_written_this_minute_and_mid_turn_is_left_out_as_the_live_one(home):
    p = home.home / ".copilot" / "session-state" / COPILOT_SID / "events.jsonl"
    p.parent.mkdir(parents=True)
    now = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
    begin = json.loads(start())
    ask = json.loads(ev("user.message", 1, {"content": "recover my last session"}))
    begin["timestamp"] = ask["timestamp"] = now
    p.write_text(json.dumps(begin) + "\n" + json.dumps(ask) + "\n")
    doc = listing(home, cwd="/home/dev/src/orders-api")
    assert ids(doc) == [] and [x["id"] for x in doc["excluded"]] == [COPILOT_SID]


def test_a_profiles_session_resumes_with_the_profile_named(home):
    d = hermes_home(home)
    con = sqlite3.connect(d / "profiles" / "research" / "state.db")
    con.execute("ALTER TABLE sessions ADD COLUMN cwd TEXT")  # a newer Hermes records the folder
    con.execute("UPDATE sessions SET cwd = '/home/dev/src/papers'")
    con.commit()
    con.close()
    (cand,) = listing(home, cwd="/home/dev/src/papers")["candidates"]
    assert cand["resume"] == f"hermes -p research --resume {cand['id']}"
    assert digest(home, cand["id"], cwd="/home/dev/src/papers").splitlines()[-1].endswith(cand["resume"])
    shutil.copytree(SAMPLES / "omp" / "agent", home.home / ".omp" / "profiles" / "work" / "agent")
    (cand,) = listing(home, cwd="/home/dev/src/ledger")["candidates"]
    assert cand["resume"] == f"omp --profile work --resume {cand['id']}"


def test_real_copilot_and_cursor_sessions_are_offered_for_their_folders(home):
    """Published transcripts from other people's machines, laid out at their
    home paths (tests/test_real_corpus.py): each is offered for the folder it
    records, with its harness's resume command."""
    import test_real_corpus as real

    if not (real.CORPUS / "MANIFEST.tsv").exists():
        pytest.skip("../shared/corpus/real is not here")
    real.lay_out(home.home, [r for r in real.manifest_rows() if r["harness"] in ("copilot", "cursor")])
    doc = listing(home, "--limit", "20", cwd="c:\\Users\\loganf\\Documents\\IDAHO-VAULT")
    assert {(c["harness"], c["resume"]) for c in doc["candidates"]} == {
        ("copilot", "copilot --resume=252d6b6b-aaad-4790-8254-7ada091ee9fc"),
        ("copilot", "copilot --resume=3fc55392-3e98-4470-8d46-86557601b171")}
    doc = listing(home, "--limit", "20", cwd="/Users/anuragabhay")
    assert sorted(c["resume"] for c in doc["candidates"]) == [
        f"cursor-agent --resume {i}" for i in ("1f171712-43ae-409d-89bf-1d35e602c31b",
                                               "8125e88e-3122-425a-acfb-df1080750109",
                                               "92995525-a7b9-4c55-8419-af1f34879148")]


def test_the_session_a_copilot_shell_names_is_left_out_as_the_live_one(home):
    c = copilot(home)
    doc = listing(home, cwd=c.cwd, extra_env={"COPILOT_AGENT_SESSION_ID": c.sid})
    assert ids(doc) == [] and doc["excluded"] == [
        {"harness": "copilot", "id": c.sid, "reason": "the live session (COPILOT_AGENT_SESSION_ID)"}]


def test_an_openclaw_session_is_resumed_by_its_chat_key_or_not_at_all(home):
    """OpenClaw reopens a chat key, not a session id: the key sessions.json maps
    to the session, quoted where a shell needs it; a session no key maps to any
    more (the chat was reset) gets no command rather than one opening another chat."""
    c = openclaw(home)
    index = next((home.home / ".openclaw").rglob("sessions.json"))
    index.write_text(json.dumps({
        "agent:ops:main": {"sessionId": "9d0c0000-0000-4000-8000-000000000001", "updatedAt": 1772700000000},
        "agent:ops:telegram:dm:+4915 x": {"sessionId": OPENCLAW_SID, "updatedAt": 1772612120000}}))
    cand = next(x for x in listing(home, cwd=c.cwd)["candidates"] if x["id"] == c.sid)
    assert cand["resume"] == "openclaw tui --session 'agent:ops:telegram:dm:+4915 x'"
    index.write_text(json.dumps({"agent:ops:main": {"sessionId": "9d0c0000-0000-4000-8000-000000000001"}}))
    cand = next(x for x in listing(home, cwd=c.cwd)["candidates"] if x["id"] == c.sid)
    assert cand["resume"] == ""
    assert digest(home, c.sid, cwd=c.cwd).splitlines()[-1] == "OpenClaw has no terminal resume for this session."
