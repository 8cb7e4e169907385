"""Claude Code reader: harness-formats section 3 and the real-transcript notes.

Every transcript here is composed in the test (real line shapes, invented
content). The last tests read the shared corpus of real published transcripts
when it is present beside the repository.
"""

from __future__ import annotations

import collections
import csv
import os
from pathlib import Path

import orjson
import pytest

from deja.stages.sources import claude
from deja.stages.sources.jsonl import MESSAGE_CAP

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "data_samples" / "claude" / "projects"
SHARED = Path(__file__).resolve().parents[2] / "shared"
REAL = SHARED / "corpus" / "real"

SID = "9d1c5a2e-7b40-4e6f-8a13-2c4b6d8e0f12"
CWD = "/home/dev/src/shop"


# --------------------------------------------------------------------- helpers


class T:
    """Builds current-shape (2.1.x) Claude Code lines for one session."""

    def __init__(self, sid: str = SID, cwd: str = CWD, branch: str = "main"):
        self.sid, self.cwd, self.branch = sid, cwd, branch
        self.n = 0
        self.parent = None

    def _base(self, kind: str, ts: str | None, **extra) -> dict:
        self.n += 1
        uid = f"{self.sid[:8]}-{self.n:04d}"
        d = {"parentUuid": self.parent, "isSidechain": False, "type": kind, "uuid": uid}
        if ts is not None:
            d["timestamp"] = ts
        d.update(
            {
                "userType": "external",
                "entrypoint": "cli",
                "cwd": self.cwd,
                "sessionId": self.sid,
                "version": "2.1.90",
                "gitBranch": self.branch,
            }
        )
        d.update(extra)
        self.parent = uid
        return d

    def user(self, content, ts="2026-03-02T10:00:00.000Z", **extra) -> dict:
        d = self._base("user", ts, **extra)
        d["message"] = {"role": "user", "content": content}
        return d

    def assistant(self, *blocks, ts="2026-03-02T10:00:04.000Z", model="claude-opus-4-6", msg_id="msg_01A", **extra):
        d = self._base("assistant", ts, requestId="req_011A", **extra)
        d["message"] = {
            "model": model,
            "id": msg_id,
            "type": "message",
            "role": "assistant",
            "content": list(blocks),
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 3, "output_tokens": 40},
        }
        return d

    def result(self, tool_id, content, is_error=None, ts="2026-03-02T10:00:05.000Z", **extra) -> dict:
        block = {"tool_use_id": tool_id, "type": "tool_result", "content": content}
        if is_error is not None:
            block["is_error"] = is_error
        extra.setdefault("toolUseResult", {"stdout": "", "stderr": "", "interrupted": False})
        return self.user([block], ts=ts, **extra)

    def system(self, subtype, ts="2026-03-02T10:00:06.000Z", **extra) -> dict:
        return self._base("system", ts, subtype=subtype, isMeta=False, **extra)

    def attachment(self, att, ts="2026-03-02T10:00:07.000Z") -> dict:
        return self._base("attachment", ts, attachment=att)


def text(t):
    return {"type": "text", "text": t}


def tool_use(name, inp, tid="toolu_01X"):
    return {"type": "tool_use", "id": tid, "name": name, "input": inp}


def dump(lines) -> bytes:
    return b"".join(orjson.dumps(x) + b"\n" for x in lines)


def write(path: Path, lines) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(dump(lines))
    return str(path)


def session_file(tmp_path, lines, project="-home-dev-src-shop", sid=SID) -> str:
    return write(tmp_path / "projects" / project / f"{sid}.jsonl", lines)


def read_one(path, start=0, live=False):
    r = claude.read(path, start, live=live)
    assert r.error == ""
    assert len(r.sessions) == 1, [s.session_id for s in r.sessions]
    return r, r.sessions[0]


def roles(part):
    return [m.role for m in part.messages]


def by_role(part, role):
    return [m for m in part.messages if m.role == role]


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for k in ("DEJA_INDEX_PATHS", "DEJA_INDEX_COMMANDS", "DEJA_INDEX_EDITS", "DEJA_INDEX_TOOL_OUTPUT"):
        monkeypatch.delenv(k, raising=False)


# -------------------------------------------------------------------- discover


def _store(root: Path) -> dict[str, Path]:
    proj = root / "-home-dev-src-shop"
    files = {
        "main": proj / f"{SID}.jsonl",
        "other": root / "-home-dev-src-api" / "11111111-2222-4333-8444-555555555555.jsonl",
        "sub": proj / SID / "subagents" / "agent-a0123456789abcdef.jsonl",
        "old_agent": proj / "agent-1a2b3c4d.jsonl",
        "tool_result": proj / SID / "tool-results" / "toolu_01.jsonl",
    }
    for p in files.values():
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"")
    (proj / "notes.txt").write_text("not a transcript")
    (proj / "memory").mkdir()
    (proj / "memory" / "MEMORY.md").write_text("# memory")
    return files


def test_discover_deja_root(tmp_path):
    files = _store(tmp_path / "store")
    got = claude.discover({"DEJA_CLAUDE_ROOT": str(tmp_path / "store"), "HOME": str(tmp_path / "nohome")})
    assert [f.path for f in got] == sorted([str(files["main"]), str(files["other"])])
    assert {f.harness for f in got} == {"claude"}


def test_discover_subagents_included(tmp_path):
    files = _store(tmp_path / "store")
    got = claude.discover({"DEJA_CLAUDE_ROOT": str(tmp_path / "store"), "DEJA_INCLUDE_SUBAGENTS": "1"})
    paths = [f.path for f in got]
    assert paths == sorted(paths)
    assert set(paths) == {str(files[k]) for k in ("main", "other", "sub", "old_agent")}  # never tool-results


def test_discover_claude_config_dir(tmp_path):
    files = _store(tmp_path / "cfg" / "projects")
    _store(tmp_path / "home" / ".claude" / "projects")  # must be ignored: CLAUDE_CONFIG_DIR wins
    got = claude.discover({"CLAUDE_CONFIG_DIR": str(tmp_path / "cfg"), "HOME": str(tmp_path / "home")})
    assert [f.path for f in got] == sorted([str(files["main"]), str(files["other"])])


def test_discover_home_default(tmp_path):
    files = _store(tmp_path / "home" / ".claude" / "projects")
    got = claude.discover({"HOME": str(tmp_path / "home")})
    assert [f.path for f in got] == sorted([str(files["main"]), str(files["other"])])


def test_discover_missing_root_and_fifo(tmp_path):
    assert claude.discover({"DEJA_CLAUDE_ROOT": str(tmp_path / "absent")}) == []
    proj = tmp_path / "store" / "-p"
    proj.mkdir(parents=True)
    os.mkfifo(proj / "pipe.jsonl")  # a FIFO would block open() forever
    (proj / "dir.jsonl").mkdir()
    assert claude.discover({"DEJA_CLAUDE_ROOT": str(tmp_path / "store")}) == []


# ------------------------------------------------------------------ basic turns


def test_user_and_assistant_speech(tmp_path):
    t = T()
    path = session_file(
        tmp_path,
        [
            t.user("why does checkout 500 on empty carts?"),
            t.assistant(
                {"type": "thinking", "thinking": "", "signature": "sig"},
                text("Looking at the cart total."),
                {"type": "image", "source": {"type": "base64", "data": "AAAA"}},
                text("It indexes items[0]."),
            ),
            t.user([text("and the fix?"), {"type": "image", "source": {"type": "base64", "data": "BBBB"}}]),
        ],
    )
    r, s = read_one(path)
    assert [(m.role, m.text) for m in s.messages] == [
        ("user", "why does checkout 500 on empty carts?"),
        ("assistant", "Looking at the cart total.\nIt indexes items[0]."),
        ("user", "and the fix?"),
    ]
    assert s.session_id == SID and s.harness == "claude"
    assert r.safe_offset == os.path.getsize(path) and r.malformed == 0


def test_role_from_message_role_and_string_content(tmp_path):
    t = T()
    line = t.user("a reply filed under a user line")
    line["message"]["role"] = "assistant"
    path = session_file(tmp_path, [line, t.assistant(text("x"), ts=None) | {"message": {"role": "", "content": "plain string"}}])
    _, s = read_one(path)
    assert [(m.role, m.text) for m in s.messages] == [
        ("assistant", "a reply filed under a user line"),
        ("assistant", "plain string"),
    ]


def test_tool_result_is_tool_output(tmp_path):
    t = T()
    path = session_file(
        tmp_path,
        [
            t.result("toolu_1", "The file /home/dev/src/shop/cart.py has been updated."),
            t.result("toolu_2", [{"type": "text", "text": "first"}, {"type": "image", "source": {}}, {"type": "text", "text": "second"}]),
            t.result("toolu_3", "<tool_use_error>File has not been read yet.</tool_use_error>", is_error=True),
            t.user([{"type": "tool_result", "tool_use_id": "toolu_4", "content": "result text"}, text("also, please hurry")]),
        ],
    )
    _, s = read_one(path)
    assert [(m.role, m.text, m.is_error) for m in s.messages] == [
        ("tool-output", "The file /home/dev/src/shop/cart.py has been updated.", None),
        ("tool-output", "first\nsecond", None),
        ("tool-output", "<tool_use_error>File has not been read yet.</tool_use_error>", True),
        # a line mixing speech and tool results stays speech
        ("user", "result text\nalso, please hurry", None),
    ]


def test_tool_use_result_never_indexed(tmp_path):
    t = T()
    path = session_file(
        tmp_path,
        [
            t.assistant(tool_use("Edit", {"file_path": "/s/a.py", "old_string": "x = 1", "new_string": "x = 2"})),
            t.result("toolu_01X", "updated", toolUseResult={"originalFile": "ORIGINAL-FILE-MARKER", "oldString": "x = 1"}),
        ],
    )
    _, s = read_one(path)
    assert not any("ORIGINAL-FILE-MARKER" in m.text for m in s.messages)


# ------------------------------------------------------------------ work records


def test_bash_command_with_exit_code_from_result(tmp_path):
    t = T()
    path = session_file(
        tmp_path,
        [
            t.assistant(tool_use("Bash", {"command": "cd shop && pytest -x tests/test_cart.py", "description": "run"}, "toolu_B1")),
            t.result("toolu_B1", "Exit code 1\nFAILED tests/test_cart.py::test_empty - IndexError", is_error=True),
            t.assistant(tool_use("Bash", {"command": "git status"}, "toolu_B2")),
            t.result("toolu_B2", "On branch main\nnothing to commit"),
            t.assistant(tool_use("Bash", {"command": "ls -la"}, "toolu_B3")),
            t.assistant(tool_use("Bash", {"command": "cat <<EOF > x\npytest\nEOF"}, "toolu_B4")),
        ],
    )
    _, s = read_one(path)
    cmds = by_role(s, "command")
    assert [(m.text, m.exit_code, m.tool) for m in cmds] == [
        ("$ cd shop && pytest -x tests/test_cart.py  → exit 1", 1, "Bash"),
        ("$ git status", None, "Bash"),
        # every command the agent ran is a record (issue 13), a multi-line one on one line
        ("$ ls -la", None, "Bash"),
        ("$ cat <<EOF > x ⏎ pytest ⏎ EOF", None, "Bash"),
    ]
    assert by_role(s, "tool-output")[0].is_error is True


def test_a_command_still_running_is_read_with_its_exit_code_once_its_result_is_written(tmp_path):
    """The index reads live: a run between a Bash call and its result (a hook's
    refresh during the very call) leaves the call's lines for the next read,
    which has the exit code."""
    t = T()
    said = [t.user("run the tests")]
    first = said + [t.assistant(tool_use("Bash", {"command": "make test"}, "toolu_M"))]
    path = session_file(tmp_path, first)
    r1, s1 = read_one(path, live=True)
    assert roles(s1) == ["user"]  # what came before the call is read now
    assert r1.safe_offset == len(dump(said))
    assert [m.text for m in read_one(path)[1].messages][-1] == "$ make test"  # (recovery reads it all)
    with open(path, "ab") as fh:
        fh.write(dump([t.result("toolu_M", "Exit code 2\nmake: *** [test] Error 1", is_error=True)]))
    _, s2 = read_one(path, r1.safe_offset, live=True)
    assert [(m.role, m.exit_code) for m in s2.messages] == [("command", 2), ("tool-output", None)]
    assert s2.messages[0].text == "$ make test  → exit 2"


def test_a_call_the_conversation_went_on_after_is_not_waited_for(tmp_path):
    """An interrupted call never gets its result: a live transcript whose
    person or agent spoke after it is read to its end."""
    t = T()
    path = session_file(tmp_path, [t.user("run the tests"), t.assistant(tool_use("Bash", {"command": "make test"}, "toolu_M")),
                                   t.user("stop, run only the cart tests")])
    r, s = read_one(path, live=True)
    assert roles(s) == ["user", "command", "user"] and r.safe_offset == os.path.getsize(path)


def test_a_session_nobody_writes_to_any_more_is_read_to_its_end_without_the_result(tmp_path):
    t = T()
    path = session_file(tmp_path, [t.user("run the tests"), t.assistant(tool_use("Bash", {"command": "make test"}, "toolu_M"))])
    old = os.path.getmtime(path) - 3600
    os.utime(path, (old, old))  # killed mid-command an hour ago
    r, s = read_one(path, live=True)
    assert [(m.text, m.exit_code) for m in s.messages][-1] == ("$ make test", None)
    assert r.safe_offset == os.path.getsize(path)


def test_file_tools_give_one_files_record_and_edits(tmp_path):
    t = T()
    path = session_file(
        tmp_path,
        [
            t.assistant(tool_use("Read", {"file_path": "/s/app/db.py", "offset": 1, "limit": 40})),
            t.assistant(tool_use("Write", {"file_path": "/s/app/new.py", "content": "print(1)\n"})),
            t.assistant(
                tool_use("Edit", {"file_path": "/s/app/db.py", "old_string": "pool_size=5", "new_string": "pool_size=20"}),
                tool_use("Read", {"file_path": "/s/app/db.py"}, "toolu_2"),
                tool_use("Read", {"file_path": "/s/app/tasks.py"}, "toolu_3"),
            ),
            t.assistant(
                tool_use(
                    "MultiEdit",
                    {"file_path": "/s/app/api.py", "edits": [{"old_string": "a()", "new_string": "b()"}, {"old_string": "", "new_string": "c"}, {"old_string": "d()", "new_string": "e()"}]},
                )
            ),
            t.assistant(tool_use("NotebookEdit", {"notebook_path": "/s/nb/eda.ipynb", "cell_id": "c1", "new_source": "x"})),
            t.assistant(tool_use("Grep", {"pattern": "pool", "path": "/s/app"})),
            t.assistant(tool_use("TodoWrite", {"todos": [{"content": "x", "status": "pending"}]})),
        ],
    )
    _, s = read_one(path)
    got = [(m.role, m.text, m.tool) for m in s.messages]
    assert got == [
        ("files", "/s/app/db.py", "Read"),
        ("files", "/s/app/new.py", "Write"),
        ("files", "/s/app/db.py\n/s/app/tasks.py", "Edit"),
        ("edit", "/s/app/db.py\npool_size=5", "Edit"),
        ("files", "/s/app/api.py", "MultiEdit"),
        ("edit", "/s/app/api.py\na()", "MultiEdit"),
        ("edit", "/s/app/api.py\nd()", "MultiEdit"),
        ("files", "/s/nb/eda.ipynb", "NotebookEdit"),
    ]
    # every record of a line points at that line
    offsets = {m.byte_offset for m in s.messages if m.text.startswith("/s/app/api.py")}
    assert len(offsets) == 1


@pytest.mark.parametrize(
    "family, gone",
    [("PATHS", "files"), ("COMMANDS", "command"), ("EDITS", "edit"), ("TOOL_OUTPUT", "tool-output")],
)
def test_record_families_can_be_switched_off(tmp_path, monkeypatch, family, gone):
    t = T()
    lines = [
        t.assistant(tool_use("Edit", {"file_path": "/s/a.py", "old_string": "old", "new_string": "new"}, "toolu_E")),
        t.result("toolu_E", "updated"),
        t.assistant(tool_use("Bash", {"command": "npm test"}, "toolu_N")),
        t.result("toolu_N", "Exit code 1\n1 failing", is_error=True),
        t.user("<bash-input>npm run lint</bash-input>"),
        t.user("<bash-stdout>ok</bash-stdout><bash-stderr></bash-stderr>"),
    ]
    path = session_file(tmp_path, lines)
    _, every = read_one(path)
    assert {"files", "command", "edit", "tool-output"} <= set(roles(every))
    monkeypatch.setenv(f"DEJA_INDEX_{family}", "0")
    _, s = read_one(path)
    assert gone not in roles(s)
    assert len(s.messages) == len(every.messages) - roles(every).count(gone)


# ------------------------------------------------------------- not-a-person turns


def test_turns_that_are_not_a_person_are_dropped(tmp_path):
    t = T()
    char_indexed = t.assistant(text("x"))
    char_indexed["message"] = {str(i): c for i, c in enumerate("event: message_start")}
    path = session_file(
        tmp_path,
        [
            t.user("<local-command-caveat>Caveat: generated by local commands.</local-command-caveat>", isMeta=True),
            t.user("Base directory for this skill: /home/dev/.claude/skills/x", isMeta=True),
            t.user("Another Claude session sent a message: hi", origin={"kind": "peer"}),
            t.user("<task-notification>\n<status>completed</status>\n</task-notification>", origin={"kind": "task-notification"}),
            t.user("<task-notification>\n<task-id>b1</task-id>\n<status>completed</status>\n</task-notification>"),
            t.user("The coordinator sent a message while you were working", origin={"kind": "coordinator"}),
            t.user("<local-command-stdout>Set model to claude-sonnet-4-6</local-command-stdout>"),
            t.user("<local-command-stderr></local-command-stderr>"),
            t.assistant(text("Prompt is too long"), model="<synthetic>", isApiErrorMessage=True),
            t.assistant(text("No response requested."), model="<synthetic>"),
            t.assistant(text("API Error: 529 overloaded"), isApiErrorMessage=True),
            char_indexed,
            t.user("a real question", origin={"kind": "human"}, promptSource="typed"),
            t.user([text("<ide_opened_file>The user opened the file /s/a.py in the IDE.</ide_opened_file>"), text("why is a.py slow?")]),
        ],
    )
    r, s = read_one(path)
    assert [(m.role, m.text) for m in s.messages] == [("user", "a real question"), ("user", "why is a.py slow?")]
    assert r.malformed == 0


def test_shell_mode(tmp_path):
    t = T()
    path = session_file(
        tmp_path,
        [
            t.user("<bash-input>cargo test -p core</bash-input>"),
            t.user("<bash-stdout>running 3 tests\ntest ok</bash-stdout><bash-stderr>warning: unused import</bash-stderr>"),
            t.user("<bash-input>pwd</bash-input>"),
            t.user("<bash-stdout></bash-stdout><bash-stderr></bash-stderr>"),  # nothing printed
        ],
    )
    _, s = read_one(path)
    assert [(m.role, m.text) for m in s.messages] == [
        ("command", "$ cargo test -p core"),
        ("tool-output", "running 3 tests\ntest ok\nwarning: unused import"),
        ("command", "$ pwd"),  # every command is a record (issue 13)
    ]


# ----------------------------------------------------------- summaries, attachments


def test_compaction_records(tmp_path):
    t = T()
    path = session_file(
        tmp_path,
        [
            t.user("start"),
            t.system("compact_boundary", content="Conversation compacted", compactMetadata={"trigger": "auto", "preTokens": 1000}),
            t.user("This session is being continued from a previous conversation.\n\nSummary:\n1. fix the cart", isCompactSummary=True, isVisibleInTranscriptOnly=True),
            t.system("compact_boundary", compactMetadata={"trigger": "manual"}),  # no content: nothing
            t.system("turn_duration", durationMs=100),
            t.system("away_summary", content="You asked about the cart; nothing changed yet."),
            t.system("api_error", content="overloaded", level="error"),
        ],
    )
    _, s = read_one(path)
    assert [(m.role, m.text[:22]) for m in s.messages] == [
        ("user", "start"),
        ("summary", "Conversation compacted"),
        ("summary", "This session is being "),
    ]


def test_summary_line_and_its_title(tmp_path):
    t = T()
    u = t.user("fix the cart")
    a = t.assistant(text("done"))
    trusted = {"type": "summary", "summary": "Cart total fix", "leafUuid": a["uuid"]}
    foreign = {"type": "summary", "summary": "Some other session", "leafUuid": "not-in-this-file"}
    path = session_file(tmp_path, [foreign, trusted, u, a])
    _, s = read_one(path)
    assert [(m.role, m.text, m.ts) for m in s.messages][:2] == [("summary", "Some other session", None), ("summary", "Cart total fix", None)]
    assert (s.title, s.title_rank) == ("Cart total fix", 1)


def test_queued_command_attachment(tmp_path):
    t = T()
    path = session_file(
        tmp_path,
        [
            t.user("refactor the cart"),
            t.attachment({"type": "queued_command", "prompt": "also keep the old API working", "commandMode": "prompt"}),
            t.attachment({"type": "queued_command", "prompt": "<task-notification>done</task-notification>", "commandMode": "task-notification"}),
            t.attachment({"type": "queued_command", "prompt": "peer says hi", "commandMode": "prompt", "origin": {"kind": "peer"}, "isMeta": True}),
            t.attachment({"type": "queued_command", "prompt": "typed", "commandMode": "prompt", "origin": {"kind": "human"}}),
            t.attachment({"type": "hook_success", "hookName": "SessionStart:startup", "stdout": "hook output", "exitCode": 0}),
            t.attachment({"type": "total_tokens_reminder", "content": "reminder"}),
        ],
    )
    _, s = read_one(path)
    assert [(m.role, m.text) for m in s.messages] == [
        ("user", "refactor the cart"),
        ("user", "also keep the old API working"),
        ("user", "typed"),
    ]


def test_bookkeeping_lines_are_not_messages(tmp_path):
    t = T()
    path = session_file(
        tmp_path,
        [
            {"type": "permission-mode", "permissionMode": "default", "sessionId": SID},
            {"type": "mode", "mode": "normal", "sessionId": SID},
            {"type": "queue-operation", "operation": "enqueue", "timestamp": "2026-03-02T10:00:00Z", "sessionId": SID, "content": "dup prompt"},
            {"type": "agent-name", "agentName": "cart", "sessionId": SID},
            {"type": "pr-link", "sessionId": SID, "prNumber": 7, "prUrl": "https://example.invalid/pr/7", "prRepository": "dev/shop"},
            t._base("progress", "2026-03-02T10:00:01Z", data={"type": "agent_progress", "message": {"content": "nested"}}),
            {"type": "bridge-session", "sessionId": SID, "bridgeSessionId": "b", "lastSequenceNum": 1},
            t.user("the only message"),
        ],
    )
    _, s = read_one(path)
    assert [(m.role, m.text) for m in s.messages] == [("user", "the only message")]


# ------------------------------------------------------------- titles & metadata


def test_titles_custom_outranks_ai_last_wins(tmp_path):
    t = T()
    path = session_file(
        tmp_path,
        [
            {"type": "ai-title", "aiTitle": "First generated", "sessionId": SID},
            {"type": "custom-title", "customTitle": "my rename", "sessionId": SID},
            t.user("hello"),
            {"type": "custom-title", "customTitle": "my second rename", "sessionId": SID},
            {"type": "ai-title", "aiTitle": "Later generated", "sessionId": SID},
        ],
    )
    _, s = read_one(path)
    assert (s.title, s.title_rank) == ("my second rename", 2)

    t2 = T()
    path = session_file(
        tmp_path,
        [
            {"type": "ai-title", "aiTitle": "First generated", "sessionId": SID},
            t2.user("hello"),
            {"type": "ai-title", "aiTitle": "Later generated", "sessionId": SID},
        ],
    )
    _, s = read_one(path)
    assert (s.title, s.title_rank) == ("Later generated", 1)


def test_last_prompt_and_touched_files(tmp_path):
    t = T()
    snap = {
        "type": "file-history-snapshot",
        "messageId": "m1",
        "snapshot": {
            "messageId": "m1",
            "trackedFileBackups": {
                "/home/dev/src/shop/cart.py": {"backupFileName": "ab12@v1", "version": 1},
                "docs/notes.md": {"backupFileName": None, "version": 1},
            },
            "timestamp": "2026-03-02T10:00:00Z",
        },
        "isSnapshotUpdate": True,
    }
    delta = {"type": "file-history-delta", "messageId": "m2", "trackingPath": "/home/dev/src/shop/api.py", "backup": {"version": 1}}
    path = session_file(
        tmp_path,
        [
            {"type": "file-history-snapshot", "messageId": "m0", "snapshot": {"messageId": "m0", "trackedFileBackups": {}}, "isSnapshotUpdate": False},
            snap,
            t.user("go"),
            snap,
            delta,
            {"type": "last-prompt", "lastPrompt": "first", "sessionId": SID},
            {"type": "last-prompt", "lastPrompt": "latest prompt", "leafUuid": "x", "sessionId": SID},
        ],
    )
    _, s = read_one(path)
    assert s.last_prompt == "latest prompt"
    assert s.touched == ["/home/dev/src/shop/cart.py", "/home/dev/src/shop/docs/notes.md", "/home/dev/src/shop/api.py"]


def test_metadata_only_file(tmp_path):
    path = session_file(tmp_path, [{"type": "ai-title", "aiTitle": "Only a title", "sessionId": SID}])
    r, s = read_one(path)
    assert s.messages == [] and s.title == "Only a title"


# ---------------------------------------------------------------------- identity


def test_session_id_from_lines_else_stem(tmp_path):
    t = T(sid="aaaaaaaa-0000-4000-8000-000000000001")
    path = write(tmp_path / "projects" / "-p" / "bbbbbbbb-0000-4000-8000-000000000002.jsonl", [t.user("hi")])
    _, s = read_one(path)
    assert s.session_id == "aaaaaaaa-0000-4000-8000-000000000001"

    line = T().user("no id")
    del line["sessionId"]
    path = write(tmp_path / "projects" / "-p" / "cccccccc-0000-4000-8000-000000000003.jsonl", [line])
    _, s = read_one(path)
    assert s.session_id == "cccccccc-0000-4000-8000-000000000003"


def test_sidechain_lines_form_a_child_session(tmp_path):
    t = T()
    side = t.user("review the diff", isSidechain=True, agentId="a1b2c3d4e5f607182")
    reply = t.assistant(text("looks fine"), isSidechain=True, agentId="a1b2c3d4e5f607182", attributionAgent="plugin:reviewer")
    path = session_file(tmp_path, [t.user("main question"), side, reply, t.assistant(text("main answer"))])
    r = claude.read(path)
    parts = {s.session_id: s for s in r.sessions}
    assert set(parts) == {SID, "a1b2c3d4e5f607182"}
    child = parts["a1b2c3d4e5f607182"]
    assert (child.kind, child.parent, child.agent) == ("sidechain", SID, "plugin:reviewer")
    assert [m.text for m in child.messages] == ["review the diff", "looks fine"]
    assert [m.text for m in parts[SID].messages] == ["main question", "main answer"]
    assert parts[SID].kind == "" and parts[SID].parent == ""


def _parent_and_subagent(tmp_path, agent_id="a0f1e2d3c4b5a6978"):
    t = T()
    p1 = t.user("find the slow query")
    p2 = t.assistant(text("I'll ask a subagent to search."))
    p3 = t.assistant(tool_use("Agent", {"description": "search", "prompt": "grep for SELECT", "subagent_type": "Explore"}, "toolu_A"))
    parent = session_file(tmp_path, [p1, p2, p3])
    replay = [dict(x, isSidechain=True, agentId=agent_id) for x in (p1, p2)]
    s = T()
    s.n = 500
    own = [
        s.user("grep for SELECT", isSidechain=True, agentId=agent_id),
        s.assistant(tool_use("Grep", {"pattern": "SELECT"}), isSidechain=True, agentId=agent_id, attributionAgent="Explore"),
        s.assistant(text("Found it in reports.py"), isSidechain=True, agentId=agent_id, attributionAgent="Explore"),
    ]
    sub = write(tmp_path / "projects" / "-home-dev-src-shop" / SID / "subagents" / f"agent-{agent_id}.jsonl", replay + own)
    return parent, sub, replay, own


def test_subagent_file_is_a_sidechain_without_parent_replay(tmp_path):
    _, sub, _, _ = _parent_and_subagent(tmp_path)
    _, s = read_one(sub)
    assert (s.session_id, s.kind, s.parent, s.agent) == ("a0f1e2d3c4b5a6978", "sidechain", SID, "Explore")
    assert [m.text for m in s.messages] == ["grep for SELECT", "Found it in reports.py"]


def test_subagent_replay_dropped_on_incremental_read_too(tmp_path):
    _, sub, replay, own = _parent_and_subagent(tmp_path)
    head = len(dump(replay[:1]))
    r, s = read_one(sub, head)
    assert [m.text for m in s.messages] == ["grep for SELECT", "Found it in reports.py"]
    assert r.safe_offset == os.path.getsize(sub)


def test_subagent_id_from_stem_when_lines_lack_it(tmp_path):
    line = T().user("warmup")
    path = write(tmp_path / "projects" / "-p" / SID / "subagents" / "agent-acompact-0a1b2c3d4e5f6071.jsonl", [line])
    _, s = read_one(path)
    assert (s.session_id, s.kind, s.parent) == ("acompact-0a1b2c3d4e5f6071", "sidechain", SID)


def test_old_top_level_agent_file(tmp_path):
    t = T()
    lines = [
        t.user("Warmup", isSidechain=True, agentId="1a2b3c4d"),
        t.assistant(text("Ready."), isSidechain=True, agentId="1a2b3c4d"),
    ]
    path = write(tmp_path / "projects" / "-home-dev-src-shop" / "agent-1a2b3c4d.jsonl", lines)
    _, s = read_one(path)
    assert (s.session_id, s.kind, s.parent) == ("1a2b3c4d", "sidechain", SID)


# ------------------------------------------------------------- cwd and project


def test_cwd_branch_and_project(tmp_path):
    t = T(cwd="", branch="")
    first = t.user("a")
    t.cwd, t.branch = "/home/dev/src/shop/.claude/worktrees/eager-lamport", "feature/x"
    second = t.user("b")
    t.cwd, t.branch = "/home/dev/src/other", "main"
    third = t.user("c")
    _, s = read_one(session_file(tmp_path, [first, second, third]))
    assert (s.cwd, s.branch) == ("/home/dev/src/shop/.claude/worktrees/eager-lamport", "feature/x")
    assert s.project == "src/shop"


@pytest.mark.parametrize(
    "cwd, project",
    [
        ("C:\\Users\\ann\\Documents\\vault", "Documents/vault"),
        ("c:\\Users\\ann\\code\\app\\.claude\\worktrees\\calm-pike", "code/app"),
        ("/srv/app/", "srv/app"),
        ("/repo", "repo"),
    ],
)
def test_project_from_cwd(cwd, project):
    assert claude.project_from_cwd(cwd) == project


def test_project_from_directory_name_without_cwd(tmp_path):
    line = T().user("no cwd here")
    del line["cwd"]
    _, s = read_one(session_file(tmp_path, [line], project="-nonexistent-root-xyz-my-app"))
    assert s.cwd == "" and s.project == "my/app"


def test_decode_project_dir_on_disk(tmp_path):
    base = tmp_path / "src"
    (base / "my-app").mkdir(parents=True)
    (base / "my").mkdir()  # a decoy: "my" exists but holds no "app"
    (base / "tools" / ".claude" / "worktrees" / "brave-turing").mkdir(parents=True)
    (base / "v1.2_data").mkdir()
    enc = lambda p: "".join(c if c.isalnum() and c.isascii() else "-" for c in str(p))  # noqa: E731
    claude.decode_project_dir.cache_clear()
    assert claude.resolve_project_dir(enc(base / "my-app")) == str(base / "my-app")
    assert claude.decode_project_dir(enc(base / "my-app")) == "src/my-app"
    assert claude.decode_project_dir(enc(base / "tools" / ".claude" / "worktrees" / "brave-turing")) == "src/tools"
    assert claude.decode_project_dir(enc(base / "v1.2_data")) == "src/v1.2_data"
    (base / "my" / "app").mkdir()  # now the separator reading exists and is tried first
    claude.decode_project_dir.cache_clear()
    assert claude.resolve_project_dir(enc(base / "my-app")) == str(base / "my" / "app")


@pytest.mark.parametrize(
    "name, project",
    [
        ("-Users-ann-src-my-app", "my/app"),  # not on this machine: last two pieces
        ("C--Users-ann-Documents-vault", "Documents/vault"),
        ("c--Users-ann-code", "ann/code"),
        ("-Users-ann-code-shop--claude-worktrees-calm-pike", "code/shop"),
        ("C--Users-ann-app--claude-worktrees-w", "ann/app"),
        ("-" + "-".join(f"p{i}" for i in range(30)), "p28/p29"),  # > 24 parts: no disk walk
        ("-", ""),
    ],
)
def test_decode_project_dir_fallback(name, project):
    assert claude.decode_project_dir(name) == project


# ------------------------------------------------------------ times and offsets


def test_timestamps_inherit_and_offsets(tmp_path):
    t = T()
    lines = [
        {"type": "summary", "summary": "before any time", "leafUuid": "none"},
        t.user("first", ts="2026-03-02T10:00:00.250Z"),
        t.assistant(text("no time"), ts=None),
        t.user("numeric seconds", ts=1772445600),
        t.user("numeric ms", ts=1772445600123),
        t.user("bad time", ts="not a time"),
    ]
    path = session_file(tmp_path, lines)
    _, s = read_one(path)
    first_ms = 1772445600250
    assert [m.ts for m in s.messages] == [None, first_ms, first_ms, 1772445600000, 1772445600123, 1772445600123]
    data = Path(path).read_bytes()
    starts = [0] + [i + 1 for i, b in enumerate(data) if b == 0x0A][:-1]
    assert [m.byte_offset for m in s.messages] == starts


def test_clip_counts(tmp_path):
    t = T()
    big = "x" * (MESSAGE_CAP + 10)
    r, s = read_one(session_file(tmp_path, [t.user(big), t.user("small")]))
    assert r.clipped == 1
    assert len(s.messages[0].text) == MESSAGE_CAP and s.messages[1].text == "small"


# ------------------------------------------------------------ robustness


def test_missing_file_is_an_error_not_an_exception(tmp_path):
    r = claude.read(str(tmp_path / "gone.jsonl"))
    assert r.error and r.sessions == [] and r.safe_offset == 0
    r = claude.read(str(tmp_path))  # a directory
    assert r.error


def test_zero_byte_file(tmp_path):
    path = tmp_path / "projects" / "-p" / f"{SID}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"")
    r = claude.read(str(path))
    assert (r.sessions, r.safe_offset, r.malformed, r.error) == ([], 0, 0, "")


def test_non_utf8_bytes(tmp_path):
    t = T()
    good = orjson.dumps(t.user("caf\u00e9 ok")) + b"\n"
    bad = orjson.dumps(t.user("latin1 PLACEHOLDER here")).replace(b"PLACEHOLDER", b"caf\xe9") + b"\n"
    path = tmp_path / "projects" / "-p" / f"{SID}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\xef\xbb\xbf" + good + bad + b"\xff\xfe not json at all\n")
    r, s = read_one(str(path))
    assert [m.text for m in s.messages] == ["caf\u00e9 ok", "latin1 caf\ufffd here"]
    assert r.malformed == 1 and r.safe_offset == path.stat().st_size


def test_odd_shapes_cost_only_their_line(tmp_path, monkeypatch):
    t = T()
    lines = [
        t.user(5),
        t.user([None, 3, "bare string", {"type": "tool_result"}, {"type": "text", "text": None}]),
        t.assistant(tool_use("Bash", None), tool_use("Edit", {"file_path": 7, "old_string": "x"}), {"type": "tool_use"}),
        t.assistant(tool_use("Bash", {"command": "pytest EXPLODE"}, "toolu_X")),
        t.user("still here", cwd=5, gitBranch=["x"], timestamp={"a": 1}),
        [1, 2, 3],
        "just a string",
    ]
    real = claude.work.command_record

    def flaky(cmd, code=None):
        if isinstance(cmd, str) and "EXPLODE" in cmd:
            raise RuntimeError("boom")
        return real(cmd, code)

    monkeypatch.setattr(claude.work, "command_record", flaky)
    r, s = read_one(session_file(tmp_path, lines))
    assert [m.text for m in s.messages] == ["bare string", "still here"]
    # the line whose handling raised, and the timestamp that is not a time (that value only: its line stays)
    assert r.malformed == 2
    assert [what for _, what in r.faults] == ["line could not be read (RuntimeError)",
                                             "timestamp a dict is not a time in 1970-2200"]


def test_torn_tail_is_left_for_the_next_run(tmp_path):
    t = T()
    done = dump([t.user("complete line")])
    tail = orjson.dumps(t.assistant(text("the streamed reply")))
    path = tmp_path / "projects" / "-p" / f"{SID}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(done + tail[:40])
    r1, s1 = read_one(str(path))
    assert [m.text for m in s1.messages] == ["complete line"]
    assert r1.safe_offset == len(done) and r1.malformed == 0
    with open(path, "ab") as fh:
        fh.write(tail[40:] + b"\n")
    r2, s2 = read_one(str(path), r1.safe_offset)
    assert [(m.text, m.byte_offset) for m in s2.messages] == [("the streamed reply", len(done))]
    assert r2.safe_offset == path.stat().st_size


def test_incremental_read_returns_only_new_messages(tmp_path):
    t = T()
    path = session_file(tmp_path, [t.user("one"), t.assistant(text("two"))])
    r1, s1 = read_one(path)
    assert [m.text for m in s1.messages] == ["one", "two"]
    with open(path, "ab") as fh:
        fh.write(dump([t.user("three"), t.assistant(text("four"))]))
    r2, s2 = read_one(path, r1.safe_offset)
    assert [m.text for m in s2.messages] == ["three", "four"]
    assert s2.session_id == SID and s2.cwd == CWD
    assert all(m.byte_offset >= r1.safe_offset for m in s2.messages)
    r3 = claude.read(path, r2.safe_offset)
    assert r3.sessions == [] and r3.safe_offset == r2.safe_offset


# ------------------------------------------------------------ data samples


def _sample_parts():
    out = {}
    env = {"DEJA_CLAUDE_ROOT": str(SAMPLES), "DEJA_INCLUDE_SUBAGENTS": "1"}
    for f in claude.discover(env):
        r = claude.read(f.path)
        assert r.error == "" and r.malformed == 0
        for s in r.sessions:
            out[s.session_id] = s
    return out


def test_data_samples():
    parts = _sample_parts()
    assert len(parts) == 5
    assert len(claude.discover({"DEJA_CLAUDE_ROOT": str(SAMPLES)})) == 4
    orders = next(s for s in parts.values() if s.project == "src/orders-api" and not s.kind)
    failed = [m for m in orders.messages if m.role == "command" and m.exit_code == 1]
    assert failed and "pytest" in failed[0].text and failed[0].text.endswith("→ exit 1")
    assert any(m.role == "edit" and m.text.startswith("/home/dev/src/orders-api/app/db.py\n") and "pool_size=5" in m.text for m in orders.messages)
    assert any(m.role == "assistant" and "The root cause was" in m.text for m in orders.messages)
    sub = next(s for s in parts.values() if s.kind == "sidechain")
    assert sub.parent == orders.session_id and sub.agent == "Explore"
    assert [m.role for m in sub.messages][0] == "user" and not any("Since yesterday" in m.text for m in sub.messages)
    dash = next(s for s in parts.values() if s.project == "src/web-dashboard")
    assert any(m.role == "command" and m.exit_code == 2 and "tsc" in m.text for m in dash.messages)
    assert any("TS2307" in m.text for m in dash.messages if m.role == "tool-output")
    assert ("command", "$ npm run build") in [(m.role, m.text) for m in dash.messages]
    billing = next(s for s in parts.values() if s.project == "src/billing-worker")
    assert any("sk-proj-" in m.text and "postgres://" in m.text for m in billing.messages if m.role == "user")
    assert not any("cross-session-message" in m.text for m in billing.messages)
    notes = next(s for s in parts.values() if s.project == "src/notes-sync")
    assert (notes.title, notes.title_rank) == ("notes-sync: 3-way merge", 2)
    assert [m.text for m in notes.messages if m.role == "summary"][0] == "Conversation compacted"
    assert notes.touched == ["/home/dev/src/notes-sync/sync/merge.py", "/home/dev/src/notes-sync/sync/client.py"]
    assert not any(m.text == "Prompt is too long" for m in notes.messages)


# ------------------------------------------------------------ the real corpus


def _manifest() -> list[dict]:
    with open(REAL / "MANIFEST.tsv", newline="") as fh:
        return [r for r in csv.DictReader(fh, delimiter="\t") if r["harness"] == "claude"]


needs_corpus = pytest.mark.skipif(
    not (REAL / "MANIFEST.tsv").is_file() or not (REAL / "claude").is_dir(),
    reason=f"shared corpus of real transcripts not found at {REAL} (it lives beside the repository)",
)


@needs_corpus
def test_real_corpus_flat_files_read_cleanly():
    for row in _manifest():
        path = REAL / "claude" / row["file"]
        r = claude.read(str(path))
        assert r.error == "", row["file"]
        assert r.malformed == 0, row["file"]  # the notes saw no torn or broken lines
        assert r.safe_offset == path.stat().st_size, row["file"]


@needs_corpus
def test_real_corpus_in_store_layout(tmp_path):
    """The corpus rebuilt as a store (symlinks at their original paths), subagents included."""
    root = tmp_path / "projects"
    rows = {}
    for row in _manifest():
        rel = row["source_path"].split("projects/", 1)[1]
        dst = root / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.symlink_to(REAL / "claude" / row["file"])
        rows[str(dst)] = row
    found = claude.discover({"DEJA_CLAUDE_ROOT": str(root), "DEJA_INCLUDE_SUBAGENTS": "1"})
    assert sorted(f.path for f in found) == sorted(rows)
    assert len(claude.discover({"DEJA_CLAUDE_ROOT": str(root)})) == sum(
        1 for p in rows if "/subagents/" not in p and not os.path.basename(p).startswith("agent-")
    )

    totals: collections.Counter = collections.Counter()
    raw = collections.Counter()
    for f in found:
        row = rows[f.path]
        r = claude.read(f.path)
        assert r.error == "" and r.malformed == 0
        got = collections.Counter(m.role for s in r.sessions for m in s.messages)
        mu, ma = int(row["user_msgs"]), int(row["assistant_msgs"])
        # Each raw user line yields at most one user/tool-output record, each
        # assistant line at most one assistant record.
        assert got["user"] + got["tool-output"] <= mu, f.path
        assert got["assistant"] <= ma, f.path
        for s in r.sessions:
            assert s.session_id and s.project, f.path
            if "/subagents/" in f.path or os.path.basename(f.path).startswith("agent-"):
                assert s.kind == "sidechain" and s.parent, f.path
        kind = "sub" if "/subagents/" in f.path else "main"
        if "/subagents/agent-acompact-" in f.path or "/subagents/agent-aside_question-" in f.path:
            # these replay the parent conversation: after the uuid de-duplication
            # only their own prompt and answer are left
            assert got["user"] + got["assistant"] <= 4, f.path
        totals[kind + "_sessions"] += len(r.sessions)
        for role, n in got.items():
            totals[f"{kind}_{role}"] += n
        raw[kind + "_user"] += mu
        raw[kind + "_assistant"] += ma

    # Observed on this corpus (49 files, 46 sessions): main files 3896 raw user
    # lines -> 3703 user + tool-output records (95 %: the rest are isMeta,
    # compaction summaries, local-command, peer/task notifications), and 6678
    # raw assistant lines -> 1580 assistant records (24 %: Claude writes one
    # content block per line and ~3.7k lines are tool_use-only, ~2.2k
    # thinking-only, 24 synthetic). Wide bounds keep this a sanity check.
    speech_in = totals["main_user"] + totals["main_tool-output"]
    assert 0.85 * raw["main_user"] <= speech_in <= raw["main_user"]
    assert 0.15 * raw["main_assistant"] <= totals["main_assistant"] <= 0.35 * raw["main_assistant"]
    assert totals["main_user"] >= 400 and totals["main_assistant"] >= 1200
    assert totals["main_command"] > 100 and totals["main_files"] > 500 and totals["main_edit"] > 100
    # subagent files shrink sharply: the replayed parent lines are dropped
    assert totals["sub_user"] + totals["sub_assistant"] < 0.25 * (raw["sub_user"] + raw["sub_assistant"])
    assert totals["main_sessions"] + totals["sub_sessions"] >= 40


def test_a_resumed_session_is_one_session_without_its_copied_turns_twice(tmp_path):
    """A session resumed into a new file that begins with copies of the
    earlier file's lines (their sessionId and uuid): one session, each turn
    once; a line of the earlier id that the earlier file lacks stays."""
    import json

    from conftest import Home, claude_assistant, claude_user, write_jsonl

    home = Home(tmp_path)
    old, new = "77777777-0000-4000-8000-00000000000a", "00000000-0000-4000-8000-00000000000b"
    earlier = [claude_user(old, "port the invoice renderer to weasyprint", "2026-03-10T14:00:20Z", "u1"),
               claude_assistant(old, [{"type": "text", "text": "Ported; decision: we switched to weasyprint 61."}],
                                "2026-03-10T14:01:20Z", "a1", parent="u1")]
    write_jsonl(home.claude_file(old), earlier)
    write_jsonl(home.claude_file(new), earlier + [
        claude_user(old, "and keep the old template for refunds", "2026-03-10T14:01:30Z", "u1b", parent="a1"),
        claude_user(new, "resumed: now add page numbers", "2026-03-10T14:01:40Z", "u2", parent="u1b"),
        claude_assistant(new, [{"type": "text", "text": "Added page numbers via the @page counter."}],
                         "2026-03-10T14:02:00Z", "a2", msg_id="msg_2", parent="u2")])
    home.run("index")
    shown = home.run("show", old[:8]).stdout
    assert shown.count("[user] 2026-03-10 14:00:20") == 1 and shown.count("switched to weasyprint") == 1
    assert "keep the old template for refunds" in shown  # only in the new file: kept
    stats = json.loads(home.run("stats", "--json").stdout)
    assert (stats["total_sessions"], stats["total_messages"]) == (2, 5)
    hits = home.search("weasyprint")["hits"]
    assert [h["count"] for h in hits if h["session"]["id"] == old] == [2]  # its ask and its answer, once each
