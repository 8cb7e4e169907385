"""The GitHub Copilot CLI reader (stages/sources/copilot.py) against harness-formats
section 8 and "Seen in real published transcripts → Copilot CLI".

Fixtures are written here in the shapes real Copilot CLI builds write (composed
content): the session-state events (folder and flat layouts), the 2025
history-session-state documents and the command history. The real published
files are read by tests/test_real_corpus.py.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

from deja.stages.sources import copilot
from deja.stages.sources.locate import copilot_files

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "data_samples" / "copilot"
SID = "5b7d0c1e-2f3a-4b5c-8d9e-0f1a2b3c4d5e"
CWD = "/home/dev/src/orders-api"


def ev(typ: str, sec: int, data: dict, n=[0]) -> str:
    n[0] += 1
    return json.dumps({"type": typ, "data": data, "id": f"id-{n[0]}",
                       "timestamp": f"2026-03-04T10:00:{sec:02d}.000Z", "parentId": None}) + "\n"


def start(sid=SID, cwd=CWD, branch="main") -> str:
    return ev("session.start", 0, {"sessionId": sid, "version": 1, "producer": "copilot-agent",
                                   "copilotVersion": "unknown", "startTime": "2026-03-04T10:00:00.000Z",
                                   "context": {"cwd": cwd, "gitRoot": cwd, "branch": branch}})


def turn() -> list[str]:
    return [
        ev("user.message", 1, {"content": "make the retry backoff exponential",
                               "transformedContent": "<current_datetime>x</current_datetime> make the retry…"}),
        ev("assistant.message", 2, {"content": "Looking at the retry helper.", "toolRequests": []}),
        ev("tool.execution_start", 3, {"toolCallId": "c0", "toolName": "report_intent", "arguments": {"intent": "Fix retry"}}),
        ev("tool.execution_complete", 3, {"toolCallId": "c0", "success": True, "result": {"content": "Intent logged"}}),
        ev("tool.execution_start", 4, {"toolCallId": "c1", "toolName": "view", "arguments": {"path": f"{CWD}/retry.py"}}),
        ev("tool.execution_complete", 4, {"toolCallId": "c1", "success": True, "result": {"content": "1. time.sleep(0)"}}),
        ev("tool.execution_start", 5, {"toolCallId": "c2", "toolName": "edit",
                                       "arguments": {"path": f"{CWD}/retry.py", "old_str": "time.sleep(0)", "new_str": "x"}}),
        ev("tool.execution_complete", 5, {"toolCallId": "c2", "success": True, "result": {"content": "File updated."}}),
        ev("tool.execution_start", 6, {"toolCallId": "c3", "toolName": "bash", "arguments": {"command": "pytest -q tests"}}),
        ev("tool.execution_complete", 6, {"toolCallId": "c3", "success": False,
                                          "error": {"message": "1 failed\n<exited with exit code 1>", "code": "failure"}}),
        ev("assistant.message", 7, {"content": "Backoff is exponential now.", "toolRequests": []}),
    ]


def store(tmp_path: Path, lines: list[str], flat: bool = False) -> Path:
    state = tmp_path / ".copilot" / "session-state"
    p = state / f"{SID}.jsonl" if flat else state / SID / "events.jsonl"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text("".join(lines))
    return p


def roles(res) -> list[str]:
    return [m.role for m in res.sessions[0].messages]


# --------------------------------------------------------------------------- discovery


def test_every_store_generation_is_discovered_and_absent_stores_cost_nothing(tmp_path):
    events = store(tmp_path, [start()])
    flat = tmp_path / ".copilot" / "session-state" / "0a1b2c3d-0000-4000-8000-000000000001.jsonl"
    flat.write_text(start(sid="0a1b2c3d-0000-4000-8000-000000000001"))
    legacy = tmp_path / ".copilot" / "history-session-state" / "session_abc_1759738320000.json"
    legacy.parent.mkdir()
    legacy.write_text("{}")
    history = tmp_path / ".copilot" / "command-history-state.json"
    history.write_text('{"commandHistory": []}')
    (tmp_path / ".copilot" / "session-state" / SID / "checkpoints").mkdir()
    (tmp_path / ".copilot" / "session-state" / SID / "checkpoints" / "other.jsonl").write_text("{}\n")
    want = sorted(map(str, (events, flat, legacy, history)))
    assert copilot_files({"HOME": str(tmp_path)}) == want
    assert copilot_files({"COPILOT_HOME": str(tmp_path / ".copilot"), "HOME": "/nowhere"}) == want
    # DEJA_COPILOT_ROOT names the home, or its session-state folder (the reference's form)
    assert copilot_files({"DEJA_COPILOT_ROOT": str(tmp_path / ".copilot"), "HOME": "/nowhere"}) == want
    assert copilot_files({"DEJA_COPILOT_ROOT": str(tmp_path / ".copilot" / "session-state")}) == want
    assert copilot_files({"HOME": str(tmp_path / "empty")}) == []
    assert copilot.roots({"HOME": str(tmp_path)}) == [str(tmp_path / ".copilot")]


# --------------------------------------------------------------------------- events.jsonl


def test_events_roles_order_times_project_and_title(tmp_path):
    p = store(tmp_path, [start(branch="fix/retry")] + turn())
    (p.parent / "workspace.yaml").write_text(f"id: {SID}\ncwd: {CWD}\nsummary: Exponential retry backoff\n")
    res = copilot.read(str(p))
    assert res.malformed == 0 and res.error == "" and res.safe_offset == p.stat().st_size
    (s,) = res.sessions
    assert (s.harness, s.session_id, s.cwd, s.branch) == ("copilot", SID, CWD, "fix/retry")
    assert (s.title, s.title_rank) == ("Exponential retry backoff", 1)
    assert roles(res) == ["user", "assistant", "tool-output", "edit", "tool-output", "command", "tool-output",
                          "files", "assistant"]
    user = s.messages[0]
    assert user.text == "make the retry backoff exponential"  # the typed text, not transformedContent
    assert user.ts == 1772618401000
    speech = [m.ts for m in s.messages if m.role in ("user", "assistant")]
    assert speech == [1772618401000, 1772618402000, 1772618407000]
    assert next(m.ts for m in s.messages if m.role == "files") == 1772618404000  # the turn's first file


def test_events_work_records_follow_copilots_tool_dialect(tmp_path):
    res = copilot.read(str(store(tmp_path, [start()] + turn())))
    by = {m.role: m for m in res.sessions[0].messages}
    assert by["edit"].text == f"{CWD}/retry.py\ntime.sleep(0)"
    assert by["edit"].tool == "edit"
    assert by["command"].text == "$ pytest -q tests" and by["command"].tool == "bash"
    assert by["files"].text == f"{CWD}/retry.py"  # view and edit of one file: listed once
    outputs = [m for m in res.sessions[0].messages if m.role == "tool-output"]
    assert "Intent logged" not in [m.text for m in outputs]  # report_intent is noise
    failed = outputs[-1]
    assert failed.is_error is True and failed.text.startswith("1 failed") and failed.tool == "bash"
    assert outputs[0].is_error is False


def test_windows_powershell_session(tmp_path):
    lines = [start(cwd="c:\\Users\\ann\\vault"),
             ev("tool.execution_start", 2, {"toolCallId": "p", "toolName": "powershell",
                                            "arguments": {"command": "git status", "description": "x"}})]
    res = copilot.read(str(store(tmp_path, lines)))
    s = res.sessions[0]
    assert s.cwd == "c:\\Users\\ann\\vault"
    assert [(m.role, m.text, m.tool) for m in s.messages] == [("command", "$ git status", "powershell")]


def test_flat_layout_and_the_session_start_id_wins(tmp_path):
    p = store(tmp_path, [start(sid="11111111-2222-4333-8444-555555555555")] + turn(), flat=True)
    res = copilot.read(str(p))
    assert res.sessions[0].session_id == "11111111-2222-4333-8444-555555555555"
    no_start = store(tmp_path / "b", turn(), flat=True)
    assert copilot.read(str(no_start)).sessions[0].session_id == SID  # the file name stands in


def test_resumed_session_appends_to_the_same_session(tmp_path):
    resume = ev("session.resume", 30, {"resumeTime": "2026-03-04T10:00:30.000Z", "eventCount": 12,
                                       "context": {"cwd": CWD, "branch": "main"}})
    more = ev("user.message", 31, {"content": "now add jitter"})
    res = copilot.read(str(store(tmp_path, [start()] + turn() + [resume, more])))
    assert len(res.sessions) == 1
    assert res.sessions[0].messages[-1].text == "now add jitter"


def test_append_reads_only_the_new_lines_and_keeps_the_identity(tmp_path):
    p = store(tmp_path, [start()] + turn()[:2])
    first = copilot.read(str(p))
    assert roles(first) == ["user", "assistant"]
    with open(p, "a") as fh:
        fh.writelines(turn()[2:])
    second = copilot.read(str(p), first.safe_offset)
    (s,) = second.sessions
    assert (s.session_id, s.cwd, s.branch) == (SID, CWD, "main")
    assert s.messages[0].role == "tool-output" and "user" not in roles(second)
    assert all(m.byte_offset >= first.safe_offset for m in s.messages)
    nothing = copilot.read(str(p), second.safe_offset)
    assert nothing.sessions == [] and nothing.safe_offset == second.safe_offset


def test_torn_tail_and_bad_lines_are_counted_not_fatal(tmp_path):
    p = store(tmp_path, [start(), "{not json\n", json.dumps([1, 2]) + "\n",
                         ev("user.message", 3, {"content": {"oops": 1}}),
                         ev("tool.execution_start", 4, {"toolCallId": "x", "toolName": {"bad": 1}, "arguments": "nope"})]
              + turn()[:1])
    whole = p.stat().st_size
    with open(p, "a") as fh:
        fh.write('{"type": "assistant.message", "data": {"content": "half')
    res = copilot.read(str(p))
    assert res.safe_offset == whole  # the torn line is read again next run
    assert res.malformed == 2  # the line that is not JSON, and the tool name that is not text
    assert roles(res) == ["user"]


def test_a_file_that_vanishes_is_an_error_not_an_exception(tmp_path):
    p = store(tmp_path, [start()])
    p.unlink()
    res = copilot.read(str(p))
    assert res.sessions == [] and res.error


# --------------------------------------------------------------------------- history-session-state


def legacy_doc(**over) -> dict:
    doc = {
        "sessionId": "3f0d6c2a-91b7-4e58-a4c3-0d2e7f9b1a64", "startTime": "2025-10-06T08:12:00.000Z",
        "chatMessages": [{"role": "user", "content": "why does make docs fail?\n\n<reminder>\nbe brief\n</reminder>"},
                         {"padding": "abc", "role": "assistant", "content": "sphinx is missing."}],
        "timeline": [
            {"id": "1", "timestamp": "2025-10-06T08:12:00.500Z", "type": "info", "text": "Connected to GitHub MCP Server"},
            {"id": "2", "timestamp": "2025-10-06T08:12:31.000Z", "type": "user", "text": "why does make docs fail?"},
            {"type": "tool_call_completed", "id": "3", "timestamp": "2025-10-06T08:12:40.000Z", "callId": "a",
             "name": "bash", "arguments": {"command": "make docs", "async": False},
             "result": {"type": "failure", "log": "make: *** [docs] Error 127\n<exited with exit code 2>"}},
            {"type": "tool_call_completed", "id": "4", "timestamp": "2025-10-06T08:12:41.000Z", "callId": "b",
             "name": "bash", "arguments": {"command": "ls -1a"},
             "result": {"type": "failure", "log": "<exited with exit code ERR_DLOPEN_FAILED>"}},
            {"type": "tool_call_completed", "id": "5", "timestamp": "2025-10-06T08:12:44.000Z", "callId": "c",
             "name": "str_replace_editor",
             "arguments": {"command": "str_replace", "path": "/home/dev/src/ledger/Makefile", "old_str": "sphinx-build"},
             "result": {"type": "success", "log": "File edited."}},
            {"id": "6", "timestamp": "2025-10-06T08:12:58.000Z", "type": "copilot", "text": "sphinx is missing."},
            {"id": "7", "timestamp": "2025-10-06T08:13:05.000Z", "type": "error", "text": "Model call failed: rate limited"},
        ],
    }
    doc.update(over)
    return doc


def legacy_file(tmp_path: Path, doc) -> Path:
    p = tmp_path / ".copilot" / "history-session-state" / "session_3f0d6c2a-91b7-4e58-a4c3-0d2e7f9b1a64_1759738320000.json"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(doc) if not isinstance(doc, str) else doc)
    return p


def test_legacy_document_reads_the_timeline_with_its_times(tmp_path):
    res = copilot.read(str(legacy_file(tmp_path, legacy_doc())))
    assert res.safe_offset == 0  # a document is read whole: any change re-reads it
    (s,) = res.sessions
    assert s.session_id == "3f0d6c2a-91b7-4e58-a4c3-0d2e7f9b1a64" and s.cwd == ""  # no cwd is recorded
    got = [(m.role, m.text.splitlines()[0], m.exit_code, m.is_error) for m in s.messages]
    assert got == [
        ("user", "why does make docs fail?", None, None),
        ("command", "$ make docs  → exit 2", 2, None),
        ("tool-output", "make: *** [docs] Error 127", 2, True),
        ("command", "$ ls -1a", None, None),  # a non-numeric exit "code" is no exit code
        ("tool-output", "<exited with exit code ERR_DLOPEN_FAILED>", None, True),
        ("edit", "/home/dev/src/ledger/Makefile", None, None),
        ("tool-output", "File edited.", None, False),
        ("files", "/home/dev/src/ledger/Makefile", None, None),
        ("assistant", "sphinx is missing.", None, None),
    ]
    assert s.messages[0].ts == 1759738351000 and s.messages[1].ts == 1759738360000


def test_legacy_document_without_timeline_speech_falls_back_to_chat_messages(tmp_path):
    res = copilot.read(str(legacy_file(tmp_path, legacy_doc(timeline=[]))))
    s = res.sessions[0]
    assert [(m.role, m.text) for m in s.messages] == [("user", "why does make docs fail?"),
                                                     ("assistant", "sphinx is missing.")]
    assert {m.ts for m in s.messages} == {1759738320000}  # no times: the session's start


def test_legacy_documents_empty_or_of_an_unexpected_shape_are_counted(tmp_path):
    empty = copilot.read(str(legacy_file(tmp_path, legacy_doc(chatMessages=[], timeline=[
        {"id": "1", "timestamp": "2025-10-03T13:27:26.894Z", "type": "info", "text": "Model changed to: gpt-5."}]))))
    assert empty.sessions == [] and empty.malformed == 0 and empty.error == ""
    for bad in ("[1, 2, 3]", '{"sessionId": "x", "timeline": "no"', '{"sessionId": "x", "timeline": 7}'):
        res = copilot.read(str(legacy_file(tmp_path, bad)))
        assert res.sessions == [] and res.malformed == 1 and res.error == "", bad
    odd = copilot.read(str(legacy_file(tmp_path, legacy_doc(timeline=[3, {"type": "user", "text": "hi",
                                                                           "timestamp": "year 10000"}]))))
    assert odd.malformed == 2 and [m.text for m in odd.sessions[0].messages] == ["hi"]


# --------------------------------------------------------------------------- command history


def test_command_history_is_one_session_of_prompts_oldest_first(tmp_path):
    p = tmp_path / "command-history-state.json"
    p.write_text(json.dumps({"commandHistory": ["second prompt", "/model", "first prompt", 7]}))
    res = copilot.read(str(p))
    (s,) = res.sessions
    assert s.session_id == "command-history" and s.project == "history"
    assert [(m.role, m.text) for m in s.messages] == [("user", "first prompt"), ("user", "second prompt")]
    assert res.malformed == 1 and res.safe_offset == 0
    p.write_text('{"history": []}')
    assert copilot.read(str(p)).malformed == 1


# --------------------------------------------------------------------------- through deja


def test_index_finds_copilot_sessions_by_project_and_replaces_a_rewritten_document(home):
    store(home.home, [start()] + turn())
    legacy = legacy_file(home.home, legacy_doc())
    summary = json.loads(home.run("index", "--json").stdout)
    by = {h["harness"]: h for h in summary["harnesses"]}
    assert by["copilot"]["sessions"] == 2 and by["copilot"]["failed"] == 0
    hits = home.search("backoff", "exponential", "--harness", "copilot")["hits"]
    assert hits and hits[0]["session"]["id"] == SID and hits[0]["session"]["project"] == "src/orders-api"
    doc = legacy_doc()
    doc["timeline"].append({"id": "8", "timestamp": "2025-10-06T08:14:00.000Z", "type": "user",
                            "text": "thanks, install the docs extra in CI too"})
    legacy.write_text(json.dumps(doc))
    os.utime(legacy, (1759738500, 1759738500))
    home.run("index")
    found = home.search("docs", "extra", "CI", "--harness", "copilot")["hits"]
    assert len(found) == 1
    users = home.search("make", "docs", "fail", "--harness", "copilot", "--all")["hits"]
    assert len(users) == 1  # re-read whole, not appended twice


def test_the_bundled_sample_reads_cleanly():
    got = Counter()
    for p in copilot_files({"DEJA_COPILOT_ROOT": str(SAMPLES)}):
        res = copilot.read(p)
        assert res.malformed == 0 and res.error == ""
        for s in res.sessions:
            got.update(m.role for m in s.messages)
    assert got["user"] >= 3 and got["command"] >= 3 and got["edit"] >= 2 and got["files"] >= 2


def test_an_error_the_provider_gave_instead_of_an_answer_is_kept(tmp_path):
    """session.error (a quota, a rate limit): what the person saw instead of an
    answer, and often all such a session holds besides the question."""
    err = ev("session.error", 3, {"errorType": "quota", "statusCode": 402,
                                  "message": "402 You have no quota (Request ID: CD88:30AFE2)"})
    p = store(tmp_path, [start()] + turn()[:1] + [err])
    (s,) = copilot.read(str(p)).sessions
    assert [(m.role, m.text, m.is_error) for m in s.messages][-1] == (
        "tool-output", "402 You have no quota (Request ID: CD88:30AFE2)", True)


def test_the_workspace_summary_reads_as_yaml_writes_it():
    from deja.stages.sources.copilot import _yaml_scalar

    assert [_yaml_scalar(v) for v in ("'it''s the cache'", '"tab\\there \\"q\\" caf\\u00e9"', "plain words",
                                      '"broken \\q"')] == ["it's the cache", 'tab\there "q" café', "plain words",
                                                             "broken \\q"]
