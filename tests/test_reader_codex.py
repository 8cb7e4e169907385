"""The Codex CLI reader (stages/sources/codex.py) against harness-formats section 4.

Fixtures are small rollouts written here in the shapes real Codex builds write
(composed content). The last tests read data_samples/codex and every real
published rollout in ../shared/corpus/real/codex.
"""

from __future__ import annotations

import csv
import json
import os
from collections import Counter
from pathlib import Path

import pytest

from deja.stages.sources import codex
from deja.stages.sources.base import ReadResult

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(__file__).resolve().parents[2] / "shared"
SAMPLES = ROOT / "data_samples" / "codex"

UID = "019cadd4-6693-7a1c-84e2-b7f9d3c6e1a8"
PARENT = "019cad00-0000-7000-8000-00000000aaaa"
CHILD = "019cadd4-f71b-7c3e-86a4-d9f2b5e8a3ca"
CWD = "/home/dev/src/ledger-service"


# --------------------------------------------------------------------------- helpers


def ts(sec: float, minute: int = 0) -> str:
    whole = int(sec)
    return f"2026-03-02T09:{minute:02d}:{whole:02d}.{int(round((sec - whole) * 1000)):03d}Z"


def line(t: str | None, typ: str, payload) -> str:
    obj = {"type": typ, "payload": payload}
    if t is not None:
        obj = {"timestamp": t, **obj}
    return json.dumps(obj)


def meta(sid=UID, cwd=CWD, branch="main", t=None, **extra) -> dict:
    p = {"id": sid, "timestamp": t or ts(0), "cwd": cwd, "originator": "codex-tui", "cli_version": "0.118.0",
         "source": "cli", "model_provider": "openai"}
    if branch:
        p["git"] = {"commit_hash": "4b825dc", "branch": branch, "repository_url": "git@example.com:acme/x.git"}
    p.update(extra)
    return p


def umsg(*texts, role="user") -> dict:
    kind = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": t} for t in texts]}


def fcall(name: str, args, call_id: str) -> dict:
    return {"type": "function_call", "name": name, "arguments": args if isinstance(args, str) else json.dumps(args),
            "call_id": call_id}


def fout(call_id: str, output) -> dict:
    return {"type": "function_call_output", "call_id": call_id, "output": output}


def write(home: Path, lines: list[str], sid: str = UID, day: str = "2026/03/02", stamp="2026-03-02T10-00-00",
          tail: str = "\n") -> str:
    d = home / "sessions" / day
    d.mkdir(parents=True, exist_ok=True)
    p = d / f"rollout-{stamp}-{sid}.jsonl"
    p.write_text("\n".join(lines) + tail, encoding="utf-8")
    return str(p)


def one(res: ReadResult):
    assert not res.error, res.error
    assert len(res.sessions) == 1
    return res.sessions[0]


def roles(part) -> list[tuple[str, str]]:
    return [(m.role, m.text) for m in part.messages]


def by_role(part, role: str) -> list[str]:
    return [m.text for m in part.messages if m.role == role]


# --------------------------------------------------------------------------- discover


def _store(home: Path) -> list[str]:
    a = write(home, [line(ts(0), "session_meta", meta())], stamp="2026-03-02T10-00-00")
    b = write(home, [line(ts(0), "session_meta", meta(sid=CHILD))], sid=CHILD, day="2026/01/09",
              stamp="2026-01-09T08-00-00")
    (home / "sessions" / "2026" / "03" / "02" / "notes.jsonl").write_text("{}\n")
    (home / "sessions" / "2026" / "03" / "02" / "rollout-x.json").write_text("{}\n")
    (home / "history.jsonl").write_text('{"session_id":"s","ts":1772442000,"text":"hi"}\n')
    return [b, a, str(home / "history.jsonl")]


def test_discover_via_deja_codex_root(tmp_path):
    want = _store(tmp_path / "codexhome")
    got = codex.discover({"DEJA_CODEX_ROOT": str(tmp_path / "codexhome"), "CODEX_HOME": str(tmp_path / "other"),
                          "HOME": str(tmp_path)})
    assert [f.path for f in got] == want
    assert {f.harness for f in got} == {"codex"}


def test_discover_via_codex_home_then_home(tmp_path):
    want = _store(tmp_path / "ch")
    assert [f.path for f in codex.discover({"CODEX_HOME": str(tmp_path / "ch"), "HOME": "/nonexistent"})] == want
    home = tmp_path / "user"
    want = _store(home / ".codex")
    assert [f.path for f in codex.discover({"HOME": str(home)})] == want


def test_discover_missing_store_and_fifo(tmp_path):
    assert codex.discover({"DEJA_CODEX_ROOT": str(tmp_path / "absent")}) == []
    d = tmp_path / "sessions" / "2026" / "03" / "02"
    d.mkdir(parents=True)
    os.mkfifo(d / f"rollout-2026-03-02T10-00-00-{UID}.jsonl")
    assert codex.discover({"DEJA_CODEX_ROOT": str(tmp_path)}) == []


def _compress(path: str, keep: bool = False) -> str:
    """What Codex's compression worker does to a rollout a week cold: ``.jsonl.zst``, the ``.jsonl`` removed."""
    import zstandard

    data = Path(path).read_bytes()
    out = path + ".zst"
    Path(out).write_bytes(zstandard.ZstdCompressor(level=3).compress(data))
    if not keep:
        os.unlink(path)
    return out


def test_a_rollout_codex_compressed_is_still_found_and_stays_one_session(tmp_path):
    lines = [line(ts(0), "session_meta", meta()), line(ts(1), "response_item", umsg("why does the ledger drift")),
             line(ts(2), "response_item", fcall("exec_command", {"cmd": "make reconcile"}, "c1")),
             line(ts(3), "response_item", fout("c1", "Chunk ID: 1\nWall time: 0.1 seconds\nProcess exited with code 2\n"
                                                   "Original token count: 3\nOutput:\nreconcile: 3 rows off\n")),
             line(ts(4), "response_item", umsg("rounding in the fx step", role="assistant"))]
    plain = write(tmp_path, lines)
    want = codex.read(plain)
    cut = want.sessions[0].messages[2].byte_offset  # the output's line: its call waits before it
    sliced = codex.read(plain, limit=cut).safe_offset  # (a slice: pipeline/run.py read_sliced)
    both = _compress(plain, keep=True)  # the worker between writing the .zst and removing the .jsonl
    archived = tmp_path / "archived_sessions"
    archived.mkdir()
    cold = write(tmp_path, [line(ts(0), "session_meta", meta(sid=CHILD))], sid=CHILD, stamp="2026-01-09T08-00-00")
    cold = str(Path(_compress(cold)).rename(archived / (Path(cold).name + ".zst")))
    assert [f.path for f in codex.discover({"DEJA_CODEX_ROOT": str(tmp_path)})] == [plain, cold]
    os.unlink(plain)
    assert [f.path for f in codex.discover({"DEJA_CODEX_ROOT": str(tmp_path)})] == [both, cold]
    got = codex.read(both, live=True)
    # the same session as the plain file, its offsets the JSONL's (the manifest hashes that prefix)
    assert (got.sessions, got.safe_offset, got.error) == (want.sessions, want.safe_offset, "")
    assert codex.filename_id(both) == UID and one(codex.read(cold)).session_id == CHILD
    assert 0 < codex.read(both, limit=cut).safe_offset == sliced < cut


def test_a_damaged_compressed_rollout_is_that_files_error_not_a_crash(tmp_path):
    p = _compress(write(tmp_path, [line(ts(0), "session_meta", meta()), line(ts(1), "response_item", umsg("hi"))]))
    data = Path(p).read_bytes()
    Path(p).write_bytes(data[: len(data) // 2])  # cut short: zstandard's own reader would end quietly
    res = codex.read(p)
    assert res.sessions == [] and "compressed rollout unreadable: zstd stream cut short" in res.error
    Path(p).write_bytes(b"not zstd at all\n")
    res = codex.read(p)
    assert res.sessions == [] and "compressed rollout unreadable: damaged zstd stream" in res.error
    Path(p).write_bytes(b"")
    assert "no zstd frame" in codex.read(p).error


# --------------------------------------------------------------------------- identity


def test_session_id_from_file_name_without_meta(tmp_path):
    p = write(tmp_path, [line(ts(1), "response_item", umsg("hello there"))])
    part = one(codex.read(p))
    assert part.session_id == UID
    assert part.harness == "codex"
    assert part.project == "02"  # no cwd: the rollout's directory


@pytest.mark.parametrize(
    "payload, want",
    [
        ({"id": "thread-1", "session_id": "shared-1"}, "thread-1"),  # id wins, never session_id
        ({"session_id": "older-1"}, "older-1"),  # id absent: older rollouts
        ({"id": None, "session_id": "shared-1"}, UID),  # id present, not a string: file name
        ({"id": {"x": 1}}, UID),
        ({"id": ""}, UID),
    ],
)
def test_session_id_rules(tmp_path, payload, want):
    p = write(tmp_path, [line(ts(0), "session_meta", {**payload, "cwd": CWD}), line(ts(1), "response_item", umsg("hi"))])
    assert one(codex.read(p)).session_id == want


def test_project_cwd_and_branch(tmp_path):
    p = write(tmp_path, [
        line(ts(0), "session_meta", meta(branch="fix/timeouts")),
        line(ts(1), "turn_context", {"cwd": "/elsewhere/other", "model": "gpt-5"}),
        line(ts(2), "response_item", umsg("run the tests")),
    ])
    part = one(codex.read(p))
    assert (part.project, part.cwd, part.branch) == ("ledger-service", CWD, "fix/timeouts")
    assert (part.kind, part.parent, part.agent) == ("", "", "")


def test_project_from_windows_cwd(tmp_path):
    p = write(tmp_path, [line(ts(0), "session_meta", meta(cwd="C:\\Users\\dev\\Documents\\Vault\\", branch="")),
                         line(ts(1), "response_item", umsg("hi"))])
    part = one(codex.read(p))
    assert part.project == "Vault"
    assert part.branch == ""


# --------------------------------------------------------------------------- speech


def test_messages_roles_parts_and_duplicate_event_stream(tmp_path):
    p = write(tmp_path, [
        line(ts(0), "session_meta", meta()),
        line(ts(1), "response_item", umsg("<permissions instructions>\nsandbox\n</permissions instructions>", role="developer")),
        line(ts(1), "response_item", umsg("You are a helpful system.", role="system")),
        line(ts(2), "response_item", umsg("# AGENTS.md instructions for /x\n\n<INSTRUCTIONS>\nbe nice\n</INSTRUCTIONS>",
                                         f"<environment_context>\n  <cwd>{CWD}</cwd>\n</environment_context>")),
        line(ts(3), "response_item", {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "why does checkout 500"},
            {"type": "input_image", "image_url": "data:image/png;base64,AAAA"},
            {"type": "input_text", "text": "on empty carts?"}]}),
        line(ts(3.001), "event_msg", {"type": "user_message", "message": "why does checkout 500\non empty carts?", "kind": "plain"}),
        line(ts(4), "response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": "thinking"}],
                                      "encrypted_content": "gAAAA"}),
        line(ts(4), "event_msg", {"type": "agent_reasoning", "text": "thinking"}),
        line(ts(4), "response_item", {"type": "ghost_snapshot", "ghost_commit": {"id": "abc"}}),
        line(ts(5), "event_msg", {"type": "agent_message", "message": "the cart total is nil", "phase": "final_answer"}),
        line(ts(5.001), "response_item", {"type": "message", "role": "assistant", "phase": "final_answer",
                                          "content": [{"type": "output_text", "text": "the cart total is nil"}]}),
        line(ts(5.002), "event_msg", {"type": "token_count", "info": None}),
        line(ts(6), "response_item", {"type": "message", "role": "user", "content": "a string content turn"}),
        line(ts(7), "response_item", umsg("<turn_aborted>\nTurn stopped by the user.\n</turn_aborted>")),
    ])
    part = one(codex.read(p))
    assert roles(part) == [
        ("user", "why does checkout 500\non empty carts?"),
        ("assistant", "the cart total is nil"),
        ("user", "a string content turn"),
    ]


def test_prompt_part_after_a_preamble_part_is_kept(tmp_path):
    p = write(tmp_path, [
        line(ts(0), "session_meta", meta()),
        line(ts(1), "response_item", umsg(f"<environment_context>\n  <cwd>{CWD}</cwd>\n</environment_context>",
                                         "make the retry backoff exponential")),
    ])
    assert by_role(one(codex.read(p)), "user") == ["make the retry backoff exponential"]


def test_event_stream_used_only_without_response_item_messages(tmp_path):
    p = write(tmp_path, [
        line(ts(0), "session_meta", meta()),
        line(ts(1), "event_msg", {"type": "user_message", "message": "run the integration tests", "kind": "plain"}),
        line(ts(2), "event_msg", {"type": "agent_reasoning", "text": "hmm"}),
        line(ts(3), "event_msg", {"type": "agent_message", "message": "they pass"}),
        line(ts(4), "event_msg", {"type": "exec_command_end", "call_id": "c1", "command": ["bash", "-lc", "go test ./integration/..."],
                                  "exit_code": 1, "aggregated_output": "--- FAIL: TestCheckout (5.00s)\n"}),
    ])
    part = one(codex.read(p))
    assert roles(part) == [
        ("user", "run the integration tests"),
        ("assistant", "they pass"),
        ("command", "$ go test ./integration/...  → exit 1"),
        ("tool-output", "--- FAIL: TestCheckout (5.00s)"),
    ]
    assert part.messages[2].exit_code == 1 and part.messages[3].is_error is True


def test_compacted_becomes_summary(tmp_path):
    p = write(tmp_path, [
        line(ts(0), "session_meta", meta()),
        line(ts(1), "response_item", umsg("fix the flaky test")),
        line(ts(2), "compacted", {"message": "We found a shared temp dir race in export tests.", "replacement_history": []}),
        line(ts(3), "compacted", {"replacement_history": []}),
    ])
    part = one(codex.read(p))
    assert roles(part)[1] == ("summary", "We found a shared temp dir race in export tests.")
    assert len(part.messages) == 2


# --------------------------------------------------------------------------- work


def test_exec_command_with_process_exited_framing(tmp_path):
    out = ("Command: /bin/zsh -lc 'go test ./integration/...'\nChunk ID: 1a2b\nWall time: 5.9 seconds\n"
           "Process exited with code 1\nOriginal token count: 12\nOutput:\n--- FAIL: TestCheckout (5.00s)\nFAIL\n")
    p = write(tmp_path, [
        line(ts(0), "session_meta", meta()),
        line(ts(1), "response_item", umsg("run the integration tests")),
        line(ts(2), "response_item", fcall("exec_command", {"cmd": "go test ./integration/...", "workdir": CWD}, "call_7")),
        line(ts(8), "event_msg", {"type": "exec_command_end", "call_id": "call_7", "command": ["/bin/zsh", "-lc", "go test ./integration/..."],
                                  "exit_code": 1, "aggregated_output": "--- FAIL: TestCheckout (5.00s)\nFAIL\n",
                                  "source": "unified_exec_startup"}),
        line(ts(9), "response_item", fout("call_7", out)),
        line(ts(10), "response_item", fcall("exec_command", {"cmd": "ls -la"}, "call_8")),
        line(ts(11), "response_item", fout("call_8", "Command: /bin/zsh -lc 'ls -la'\nChunk ID: 2\nWall time: 0.0 seconds\n"
                                                     "Process exited with code 0\nOriginal token count: 3\nOutput:\ntotal 0\n")),
    ])
    part = one(codex.read(p))
    assert roles(part) == [
        ("user", "run the integration tests"),
        ("command", "$ go test ./integration/...  → exit 1"),
        ("tool-output", "--- FAIL: TestCheckout (5.00s)\nFAIL"),  # exec_command_end not counted again
        ("command", "$ ls -la"),  # every command the agent ran is a record (issue 13)
        ("tool-output", "total 0"),
    ]
    cmd, fail, ls = part.messages[1], part.messages[2], part.messages[4]
    assert (cmd.tool, cmd.exit_code, cmd.ts) == ("exec_command", 1, codex.parse_ts(ts(2)))
    assert (fail.tool, fail.is_error, fail.exit_code) == ("exec_command", True, None)
    assert ls.is_error is False


def test_shell_command_generation_exit_code_framing(tmp_path):
    p = write(tmp_path, [
        line(ts(0), "session_meta", meta()),
        line(ts(1), "response_item", fcall("shell_command", {"command": "cd api && uv run pytest -x", "workdir": CWD, "timeout_ms": 10000}, "c1")),
        line(ts(2), "response_item", fout("c1", "Exit code: 2\nWall time: 3.1 seconds\nTotal output lines: 4\nOutput:\n"
                                                "E   ImportError: cannot import name 'Cart'\n")),
        line(ts(3), "response_item", fcall("shell_command", {"command": "git status --short"}, "c2")),
        line(ts(4), "response_item", fout("c2", "Exit code: 0\nWall time: 0 seconds\nOutput:\n")),
    ])
    part = one(codex.read(p))
    assert roles(part) == [
        ("command", "$ cd api && uv run pytest -x  → exit 2"),
        ("tool-output", "E   ImportError: cannot import name 'Cart'"),
        ("command", "$ git status --short"),  # empty output: no tool-output record
    ]
    assert [m.exit_code for m in part.messages] == [2, None, 0]
    assert part.messages[1].tool == "shell_command"


def test_shell_argv_generation_json_output(tmp_path):
    p = write(tmp_path, [
        line(ts(0), "session_meta", meta(cwd="C:\\Users\\dev\\proj")),
        line(ts(1), "response_item", fcall("shell", {"command": ["powershell.exe", "-Command", "npm run build"]}, "functions.shell:0")),
        line(ts(2), "response_item", fout("functions.shell:0", json.dumps(
            {"output": "\r\n> build\r\nerror TS2304: Cannot find name 'foo'.\r\n", "metadata": {"exit_code": 2, "duration_seconds": 4.2}}))),
        line(ts(3), "response_item", fcall("shell", {"command": ["bash", "-lc", "cargo test"]}, "functions.shell:1")),
        line(ts(4), "response_item", fout("functions.shell:1", "Wall time: 17.0 seconds\naborted by user")),
        line(ts(5), "response_item", fout("functions.shell:9", json.dumps(
            {"output": "Total output lines: 897\n\n---\nname: wrangler", "metadata": {"exit_code": 0}}))),
    ])
    part = one(codex.read(p))
    assert roles(part) == [
        ("command", "$ npm run build  → exit 2"),
        ("tool-output", "> build\r\nerror TS2304: Cannot find name 'foo'."),
        ("command", "$ cargo test"),
        ("tool-output", "aborted by user"),
        ("tool-output", "---\nname: wrangler"),
    ]
    assert part.messages[0].exit_code == 2 and part.messages[1].is_error is True
    assert part.messages[2].exit_code is None and part.messages[3].is_error is None
    assert part.messages[4].tool is None  # its call is not in this read


def test_local_shell_call_and_mcp_output(tmp_path):
    p = write(tmp_path, [
        line(ts(0), "session_meta", meta()),
        line(ts(1), "response_item", {"type": "local_shell_call", "call_id": "l1", "status": "completed",
                                      "action": {"type": "exec", "command": ["bash", "-lc", "make lint"]}}),
        line(ts(2), "response_item", fcall("list_mcp_resources", {}, "m1")),
        line(ts(3), "response_item", fout("m1", '{"resources":[{"server":"docs","uri":"file://docs/a.md"}]}')),
    ])
    part = one(codex.read(p))
    assert roles(part) == [("command", "$ make lint"),
                           ("tool-output", '{"resources":[{"server":"docs","uri":"file://docs/a.md"}]}')]
    assert part.messages[1].tool == "list_mcp_resources"


PATCH = ("*** Begin Patch\n*** Update File: internal/export/export_test.go\n@@\n-const exportDir = \"/tmp/ledger-export\"\n"
         " func TestSettlementExport(t *testing.T) {\n-\tdefer os.RemoveAll(exportDir)\n+\texportDir := t.TempDir()\n"
         "*** Add File: internal/export/README.md\n+# export\n*** Delete File: /abs/old.go\n*** End Patch")


def test_custom_tool_call_apply_patch(tmp_path):
    p = write(tmp_path, [
        line(ts(0), "session_meta", meta()),
        line(ts(1), "response_item", {"type": "custom_tool_call", "status": "completed", "call_id": "p1",
                                      "name": "apply_patch", "input": PATCH}),
        line(ts(2), "response_item", {"type": "custom_tool_call_output", "call_id": "p1", "output": json.dumps(
            {"output": "Success. Updated the following files:\nM internal/export/export_test.go\n",
             "metadata": {"exit_code": 0, "duration_seconds": 0.0}})}),
        line(ts(3), "response_item", {"type": "custom_tool_call", "status": "completed", "call_id": "p2",
                                      "name": "apply_patch", "input": PATCH}),
        line(ts(4), "response_item", {"type": "custom_tool_call_output", "call_id": "p2",
                                      "output": "apply_patch verification failed: Failed to find expected lines in x.go"}),
    ])
    part = one(codex.read(p))
    msgs = part.messages
    f = f"{CWD}/internal/export/export_test.go"
    assert (msgs[0].role, msgs[0].text, msgs[0].tool) == (
        "files", f"{f}\n{CWD}/internal/export/README.md\n/abs/old.go", "apply_patch")
    assert (msgs[1].role, msgs[1].text) == ("edit", f + '\nconst exportDir = "/tmp/ledger-export"\n\tdefer os.RemoveAll(exportDir)')
    assert (msgs[2].role, msgs[2].text, msgs[2].is_error) == (
        "tool-output", "Success. Updated the following files:\nM internal/export/export_test.go", False)
    assert (msgs[-1].role, msgs[-1].is_error) == ("tool-output", True)
    assert [m.role for m in msgs] == ["files", "edit", "tool-output", "files", "edit", "tool-output"]


def test_apply_patch_in_function_call_arguments(tmp_path):
    heredoc = "apply_patch <<'EOF'\n" + PATCH + "\nEOF\n"
    p = write(tmp_path, [
        line(ts(0), "session_meta", meta()),
        line(ts(1), "response_item", fcall("shell", {"command": ["apply_patch", PATCH]}, "s1")),
        line(ts(2), "response_item", fcall("shell", {"command": ["bash", "-lc", heredoc], "workdir": CWD}, "s2")),
        line(ts(3), "response_item", fcall("apply_patch", {"input": PATCH}, "s3")),
        line(ts(4), "response_item", fcall("some_editor", {"payload": {"patch": PATCH}}, "s4")),
    ])
    part = one(codex.read(p))
    files = [m for m in part.messages if m.role == "files"]
    assert [m.tool for m in files] == ["shell", "shell", "apply_patch", "some_editor"]
    assert len({m.text for m in files}) == 1
    assert [m.role for m in part.messages].count("edit") == 4
    assert not [m for m in part.messages if m.role == "command"]


def test_user_shell_command_turn(tmp_path):
    text = ("<user_shell_command>\n<command>\nnpm install -g @openai/codex\n</command>\n<result>\nExit code: 1\n"
            "Duration: 0.9157 seconds\nOutput:\nnpm error code EACCES\n\n</result>\n</user_shell_command>")
    p = write(tmp_path, [
        line(ts(0), "session_meta", meta()),
        line(ts(1), "event_msg", {"type": "exec_command_end", "call_id": "u1", "command": ["bash", "-lc", "npm install -g @openai/codex"],
                                  "exit_code": 1, "aggregated_output": "npm error code EACCES\n", "source": "user_shell"}),
        line(ts(1.001), "response_item", umsg(text)),
    ])
    part = one(codex.read(p))
    assert roles(part) == [("command", "$ npm install -g @openai/codex  → exit 1"),
                           ("tool-output", "npm error code EACCES")]
    assert part.messages[0].tool == "user_shell" and part.messages[0].exit_code == 1
    assert part.messages[1].is_error is True


def test_exit_code_from_exec_end_when_output_has_none(tmp_path):
    lines = [
        line(ts(0), "session_meta", meta()),
        line(ts(1), "response_item", umsg("build it")),
        line(ts(2), "response_item", fcall("exec_command", {"cmd": "make build"}, "c1")),
        line(ts(3), "event_msg", {"type": "exec_command_end", "call_id": "c1", "command": ["bash", "-lc", "make build"],
                                  "exit_code": 2, "aggregated_output": "make: *** [build] Error 2"}),
        line(ts(4), "response_item", fout("c1", "Chunk ID: 9\nWall time: 1.0 seconds\nOutput:\nmake: *** [build] Error 2\n")),
    ]
    part = one(codex.read(write(tmp_path, lines)))
    assert roles(part)[1:] == [("command", "$ make build  → exit 2"), ("tool-output", "make: *** [build] Error 2")]


def test_a_long_command_under_unified_exec_gets_the_exit_code_a_later_write_stdin_reports(tmp_path):
    """exec_command answers "Process running with session ID N" when the command
    outlives its first wait; the exit status arrives in a write_stdin call's
    output for session N (another call_id; exec_command_end is not persisted by
    default). Another session's exit code is not this command's."""
    frame = "Chunk ID: {}\nWall time: 10.0 seconds\n{}\nOriginal token count: 12\nOutput:\n{}\n"
    lines = [
        line(ts(0), "session_meta", meta()),
        line(ts(1), "response_item", umsg("run the slow integration suite")),
        line(ts(2), "response_item", fcall("exec_command", {"cmd": "cargo test --test slowsuite", "yield_time_ms": 10000}, "c1")),
        line(ts(12), "response_item", fout("c1", frame.format("3f2a", "Process running with session ID 71", "Compiling api"))),
        line(ts(13), "response_item", fcall("exec_command", {"cmd": "npm run dev"}, "c2")),
        line(ts(14), "response_item", fout("c2", frame.format("4a1b", "Process running with session ID 72", "listening"))),
        line(ts(15), "response_item", fcall("write_stdin", {"session_id": 71, "chars": "", "yield_time_ms": 30000}, "p1")),
        line(ts(40), "response_item", fout("p1", frame.format("9b7e", "Process exited with code 101", "test checkout_flow ... FAILED"))),
        line(ts(41), "response_item", umsg("The checkout_flow test fails.", role="assistant")),
    ]
    part = one(codex.read(write(tmp_path, lines)))
    got = [(m.role, m.text, m.exit_code, m.is_error) for m in part.messages if m.role in ("command", "tool-output")]
    assert got == [
        ("command", "$ cargo test --test slowsuite  → exit 101", 101, None),
        ("tool-output", "Compiling api", None, True),
        ("command", "$ npm run dev", None, None),
        ("tool-output", "listening", None, None),
        ("tool-output", "test checkout_flow ... FAILED", None, True),
    ]


def test_a_thread_renamed_is_titled_by_its_last_name(tmp_path):
    """/rename writes event_msg thread_name_updated: the person's name for the
    thread (title_rank 2) over the first prompt; the last one written wins."""
    lines = [line(ts(0), "session_meta", meta()), line(ts(1), "response_item", umsg("check the retry policy docs"))]
    for i, name in enumerate(("Retry audit", "  Quokka retry audit ")):
        lines.append(line(ts(2 + i), "event_msg", {"type": "thread_name_updated", "thread_id": UID, "thread_name": name}))
    part = one(codex.read(write(tmp_path, lines)))
    assert (part.title, part.title_rank) == ("Quokka retry audit", 2)
    assert roles(part) == [("user", "check the retry policy docs")]
    unnamed = one(codex.read(write(tmp_path, lines[:2], sid=CHILD)))
    assert (unnamed.title, unnamed.title_rank) == ("", 0)


def test_web_searches_and_messages_between_agents_are_found(tmp_path):
    """A web_search_call's query is the only record of what the agent looked up
    (kept as the web_search tool's output); an agent_message (multi-agent) is
    an agent's words: assistant speech."""
    lines = [
        line(ts(0), "session_meta", meta()),
        line(ts(1), "response_item", umsg("check the retry policy docs")),
        line(ts(2), "response_item", {"type": "web_search_call", "status": "completed",
                                      "action": {"type": "search", "query": "tokio semaphore fairness"}}),
        line(ts(3), "response_item", {"type": "web_search_call", "status": "completed",
                                      "action": {"type": "open_page", "url": "https://docs.rs/tokio/latest/tokio/sync/"}}),
        line(ts(4), "response_item", {"type": "agent_message", "author": "/root/worker1", "recipient": "/root",
                                      "content": [{"type": "input_text", "text": "worker finding: the cache never expires"}]}),
        line(ts(5), "response_item", umsg("Done.", role="assistant")),
    ]
    part = one(codex.read(write(tmp_path, lines)))
    assert [(m.role, m.text, m.tool) for m in part.messages] == [
        ("user", "check the retry policy docs", None),
        ("tool-output", "tokio semaphore fairness", "web_search"),
        ("tool-output", "https://docs.rs/tokio/latest/tokio/sync/", "web_search"),
        ("assistant", "worker finding: the cache never expires", None),
        ("assistant", "Done.", None),
    ]


def test_commands_run_from_code_mode_javascript_are_command_records(tmp_path):
    """Code mode: the model's JavaScript, run by the `exec` custom tool, calls
    tools.exec_command({cmd: ...}); each call is a command (its output, the
    script's, stays tool output)."""
    js = ('const r = await tools.exec_command({cmd: "pytest tests/test_wombat.py -x"});\n'
          "await tools.exec_command({ workdir: \"/x\", cmd: 'grep -n \\'retry\\' src/a.py' });\n"
          "text(r.output);")
    lines = [
        line(ts(0), "session_meta", meta()),
        line(ts(1), "response_item", umsg("run the wombat tests")),
        line(ts(2), "response_item", {"type": "custom_tool_call", "status": "completed", "call_id": "cm1",
                                      "name": "exec", "input": js}),
        line(ts(3), "response_item", {"type": "custom_tool_call_output", "call_id": "cm1",
                                      "output": [{"type": "input_text", "text": "1 failed: test_wombat_roundtrip"}]}),
    ]
    part = one(codex.read(write(tmp_path, lines)))
    assert [(m.role, m.text, m.tool) for m in part.messages][1:] == [
        ("command", "$ pytest tests/test_wombat.py -x", "exec"),
        ("command", "$ grep -n 'retry' src/a.py", "exec"),
        ("tool-output", "1 failed: test_wombat_roundtrip", "exec"),
    ]


def test_a_call_still_running_is_read_with_its_exit_code_and_tool_once_its_output_is_written(tmp_path):
    """The index reads live: a run between a call and its output (a hook's
    refresh during the very call) leaves the call's lines for the next read:
    the command gets its exit code and the output its tool."""
    first = [
        line(ts(0), "session_meta", meta()),
        line(ts(1), "response_item", fcall("exec_command", {"cmd": "go test ./..."}, "c1")),
    ]
    p = write(tmp_path, first)
    res = codex.read(p, live=True)
    assert roles(one(res)) == []
    assert res.safe_offset == len(first[0]) + 1  # the meta line, not the call's
    assert roles(one(codex.read(p))) == [("command", "$ go test ./...")]  # (recovery reads it all)
    with open(p, "a") as fh:
        fh.write(line(ts(5), "response_item", fout("c1", "Exit code: 1\nWall time: 4 seconds\nOutput:\nFAIL\n")) + "\n")
    later = one(codex.read(p, res.safe_offset, live=True))
    assert [(m.role, m.exit_code, m.tool) for m in later.messages] == [
        ("command", 1, "exec_command"), ("tool-output", None, "exec_command")]
    assert later.messages[1].is_error is True
    old = os.path.getmtime(p) - 3600
    with open(p, "a") as fh:  # another call the session was killed during
        fh.write(line(ts(6), "response_item", fcall("exec_command", {"cmd": "make"}, "c2")) + "\n")
    os.utime(p, (old, old))
    assert roles(one(codex.read(p, live=True)))[-1] == ("command", "$ make")


def test_a_call_the_conversation_went_on_after_is_not_waited_for(tmp_path):
    p = write(tmp_path, [
        line(ts(0), "session_meta", meta()),
        line(ts(1), "response_item", fcall("exec_command", {"cmd": "go test ./..."}, "c1")),
        line(ts(2), "response_item", {"type": "message", "role": "user",
                                      "content": [{"type": "input_text", "text": "stop, only the api package"}]}),
    ])
    res = codex.read(p, live=True)
    assert [r for r, _ in roles(one(res))] == ["command", "user"] and res.safe_offset == os.path.getsize(p)


def test_index_switches(tmp_path, monkeypatch):
    p = write(tmp_path, [
        line(ts(0), "session_meta", meta()),
        line(ts(1), "response_item", fcall("exec_command", {"cmd": "go test ./..."}, "c1")),
        line(ts(2), "response_item", fout("c1", "Exit code: 0\nWall time: 1 seconds\nOutput:\nok\n")),
        line(ts(3), "response_item", {"type": "custom_tool_call", "call_id": "p1", "name": "apply_patch", "input": PATCH}),
    ])
    assert Counter(m.role for m in one(codex.read(p)).messages) == {"command": 1, "tool-output": 1, "files": 1, "edit": 1}
    for family, role in [("COMMANDS", "command"), ("TOOL_OUTPUT", "tool-output"), ("PATHS", "files"), ("EDITS", "edit")]:
        monkeypatch.setenv(f"DEJA_INDEX_{family}", "0")
        got = Counter(m.role for m in one(codex.read(p)).messages)
        assert role not in got and sum(got.values()) == 3, family
        monkeypatch.delenv(f"DEJA_INDEX_{family}")


# --------------------------------------------------------------------------- times, offsets, robustness


def test_timestamps_and_byte_offsets(tmp_path):
    lines = [
        line(ts(0), "session_meta", meta()),
        line(ts(1.25), "response_item", umsg("first")),
        line(None, "response_item", umsg("no stamp inherits the previous one")),
        line("not a time", "response_item", umsg("a bad stamp too")),
        line(ts(3), "response_item", umsg("done", role="assistant")),
    ]
    p = write(tmp_path, lines)
    part = one(codex.read(p))
    t1 = codex.parse_ts(ts(1.25))
    assert [m.ts for m in part.messages] == [t1, t1, t1, codex.parse_ts(ts(3))]
    offsets = [0]
    for ln in lines[:-1]:
        offsets.append(offsets[-1] + len(ln.encode()) + 1)
    assert [m.byte_offset for m in part.messages] == offsets[1:]
    assert t1 == 1772442001250


def test_clipped_messages_are_counted(tmp_path):
    big = "x" * ((1 << 20) + 10)
    p = write(tmp_path, [line(ts(0), "session_meta", meta()), line(ts(1), "response_item", umsg(big)),
                         line(ts(2), "response_item", umsg("small", role="assistant"))])
    res = codex.read(p)
    part = one(res)
    assert res.clipped == 1
    assert len(part.messages[0].text) == 1 << 20


def test_malformed_lines_and_bad_line_handling(tmp_path, monkeypatch):
    p = write(tmp_path, [
        line(ts(0), "session_meta", meta()),
        "{this is not json",
        line(ts(1), "response_item", fcall("exec_command", {"cmd": "cargo build"}, "boom")),
        line(ts(2), "response_item", "not an object payload"),
        line(ts(2), "event_msg", None),
        line(ts(3), "response_item", umsg("still read")),
    ])
    real = codex.work.command_record

    def exploding(cmd, exit_code=None):
        if cmd == "cargo build":
            raise RuntimeError("boom")
        return real(cmd, exit_code)

    monkeypatch.setattr(codex.work, "command_record", exploding)
    res = codex.read(p)
    assert res.malformed == 2  # the undecodable line and the line whose handling raised
    assert roles(one(res)) == [("user", "still read")]


def test_unreadable_file_is_an_error_not_an_exception(tmp_path, monkeypatch):
    res = codex.read(str(tmp_path / "sessions" / f"rollout-2026-03-02T10-00-00-{UID}.jsonl"))
    assert res.error and res.sessions == []
    p = write(tmp_path, [line(ts(0), "session_meta", meta())])

    def denied(*args, **kwargs):
        raise PermissionError(13, "Permission denied", p)

    from deja.stages.sources import jsonl

    monkeypatch.setattr(jsonl, "open", denied, raising=False)  # what a mode-0 file does to a non-root reader
    res = codex.read(p)
    assert "Permission denied" in res.error and res.sessions == []
    res = codex.read(p, 10)
    assert "Permission denied" in res.error and res.safe_offset == 10


def test_empty_file(tmp_path):
    p = write(tmp_path, [], tail="")
    res = codex.read(p)
    assert (res.sessions, res.safe_offset, res.malformed, res.error) == ([], 0, 0, "")


def test_torn_tail_is_left_for_the_next_read(tmp_path):
    done = [line(ts(0), "session_meta", meta()), line(ts(1), "response_item", umsg("first question"))]
    last = line(ts(2), "response_item", umsg("the answer", role="assistant"))
    p = write(tmp_path, done + [last[:25]], tail="")
    res = codex.read(p)
    assert roles(one(res)) == [("user", "first question")]
    assert res.safe_offset == sum(len(x) + 1 for x in done)
    assert res.malformed == 0
    with open(p, "a") as fh:
        fh.write(last[25:] + "\n")
    again = codex.read(p, res.safe_offset)
    part = one(again)
    assert part.session_id == UID and part.project == "ledger-service"
    assert roles(part) == [("assistant", "the answer")]
    assert again.safe_offset == os.path.getsize(p)


def test_incremental_read_recovers_identity_and_returns_only_new_records(tmp_path):
    # A session_meta larger than the 64 KiB head (real ones reach 20 KB; developer
    # preambles 50 KB) and an id that differs from the file name.
    head = [
        line(ts(0), "session_meta", meta(sid="thread-from-meta", branch="feat/x", base_instructions="i" * (80 << 10))),
        line(ts(1), "response_item", umsg("x" * 1000, role="developer")),
        line(ts(1), "response_item", umsg("first question")),
        line(ts(1.001), "event_msg", {"type": "user_message", "message": "first question"}),
        line(ts(2), "response_item", fcall("exec_command", {"cmd": "go test ./..."}, "c1")),
    ]
    p = write(tmp_path, head)
    full = one(codex.read(p))
    start = os.path.getsize(p)
    tail = [
        line(ts(3), "event_msg", {"type": "user_message", "message": "second question"}),  # split pair: event copy first
        line(ts(4), "response_item", fout("c1", "Exit code: 1\nWall time: 1 seconds\nOutput:\nFAIL\n")),
        line(ts(5), "event_msg", {"type": "agent_message", "message": "fixed it"}),
        line(ts(5.001), "response_item", umsg("fixed it", role="assistant")),
    ]
    with open(p, "a") as fh:
        fh.write("\n".join(tail) + "\n")
    res = codex.read(p, start)
    part = one(res)
    assert (part.session_id, part.project, part.cwd, part.branch) == (
        full.session_id, full.project, full.cwd, full.branch) == ("thread-from-meta", "ledger-service", CWD, "feat/x")
    assert roles(part) == [("tool-output", "FAIL"), ("assistant", "fixed it")]
    assert all(m.byte_offset >= start for m in part.messages)
    whole = one(codex.read(p))
    assert [(m.role, m.text, m.byte_offset) for m in whole.messages if m.byte_offset >= start] == [
        (m.role, m.text, m.byte_offset) for m in part.messages]


# --------------------------------------------------------------------------- forks and resumes


def _fork_lines(started_at: bool = True) -> list[str]:
    """A spawned thread: own meta, the parent's meta, a replay of the parent, then its own task."""
    child = meta(sid=CHILD, t=ts(40), forked_from_id=PARENT, agent_role="explorer", agent_nickname="Noether",
                 source={"subagent": {"thread_spawn": {"parent_thread_id": PARENT, "depth": 1,
                                                       "agent_nickname": "Noether", "agent_role": "explorer"}}})
    parent = meta(sid=PARENT, t=ts(0), source="vscode")

    def task(turn_id, when):
        p = {"type": "task_started", "turn_id": turn_id, "model_context_window": 258400}
        if started_at:
            p["started_at"] = when
        return p

    base = 1772442000  # 09:00:00
    return [
        line(ts(41.000), "session_meta", child),
        line(ts(41.003), "session_meta", parent),
        line(ts(41.004), "event_msg", task("019cad00-1000-7000-8000-000000000001", base + 1)),
        line(ts(41.005), "response_item", umsg("<permissions instructions>\nx\n</permissions instructions>", role="developer")),
        line(ts(41.006), "response_item", umsg("PARENT PROMPT: find the flaky test")),
        line(ts(41.006), "event_msg", {"type": "user_message", "message": "PARENT PROMPT: find the flaky test"}),
        line(ts(41.007), "event_msg", {"type": "agent_message", "message": "PARENT SAYS: looking at export tests"}),
        line(ts(41.007), "response_item", umsg("PARENT SAYS: looking at export tests", role="assistant")),
        line(ts(41.008), "event_msg", task("019cad00-2000-7000-8000-000000000002", base + 20)),
        line(ts(41.009), "response_item", umsg("PARENT PROMPT 2: now fix it")),
        line(ts(41.010), "response_item", fcall("exec_command", {"cmd": "go test ./internal/..."}, "parent_call")),
        line(ts(41.030), "event_msg", task("019cadd4-f900-7000-8000-000000000003", base + 41)),
        line(ts(41.055), "response_item", umsg("CHILD TASK: check other tests for fixed /tmp paths")),
        line(ts(41.056), "event_msg", {"type": "user_message", "message": "CHILD TASK: check other tests for fixed /tmp paths"}),
        line(ts(50.000), "response_item", fcall("exec_command", {"cmd": "go vet ./internal/reconcile/..."}, "child_call")),
        line(ts(51.000), "response_item", fout("child_call", "Exit code: 0\nWall time: 1 seconds\nOutput:\n")),
        line(ts(52.000), "response_item", umsg("CHILD SAYS: only internal/reconcile", role="assistant")),
    ]


CHILD_ROLES = [
    ("user", "CHILD TASK: check other tests for fixed /tmp paths"),
    ("command", "$ go vet ./internal/reconcile/..."),
    ("assistant", "CHILD SAYS: only internal/reconcile"),
]


def test_forked_thread_replay_is_dropped(tmp_path):
    p = write(tmp_path, _fork_lines(), sid=CHILD)
    part = one(codex.read(p))
    assert part.session_id == CHILD  # the first session_meta, not the parent's
    assert (part.kind, part.parent, part.agent) == ("subagent_fork", PARENT, "explorer")
    assert roles(part) == CHILD_ROLES


def test_fork_replay_boundary_without_start_times(tmp_path):
    # No started_at: the turn_id UUIDv7 times still separate the replayed turns
    # (before the fork) from the thread's own.
    p = write(tmp_path, _fork_lines(started_at=False), sid=CHILD)
    assert roles(one(codex.read(p))) == CHILD_ROLES
    # No time at all: the second task_started ends the replay (harness-formats).
    lines = [ln.replace('"turn_id": "019c', '"turn_id": "x19c') for ln in _fork_lines(started_at=False)]
    lines = [ln for ln in lines if "PARENT PROMPT 2" not in ln and "019cad00-2000" not in ln.replace("x19c", "019c")]
    p2 = write(tmp_path / "b", lines, sid=CHILD)
    assert roles(one(codex.read(p2))) == CHILD_ROLES


def test_fork_replay_ends_at_the_latest_when_time_moves_on(tmp_path):
    # Without any task_started after the replay, lines stamped well after the
    # fork are the thread's own.
    lines = [ln for ln in _fork_lines() if "019cadd4-f900" not in ln]
    lines = [ln for ln in lines if "CHILD TASK" not in ln]
    p = write(tmp_path, lines, sid=CHILD)
    assert roles(one(codex.read(p))) == CHILD_ROLES[1:]


def test_fork_incremental_reads_match_the_full_read(tmp_path):
    lines = _fork_lines()
    p = write(tmp_path, lines, sid=CHILD)
    full = one(codex.read(p))
    offset = 0
    for ln in lines:
        part = one(codex.read(p, offset))
        assert (part.session_id, part.kind, part.parent, part.agent) == (CHILD, "subagent_fork", PARENT, "explorer")
        want = [(m.role, m.text, m.byte_offset) for m in full.messages if m.byte_offset >= offset]
        assert [(m.role, m.text, m.byte_offset) for m in part.messages] == want, offset
        offset += len(ln) + 1


def test_resumed_session_with_two_identical_meta_keeps_everything(tmp_path):
    p = write(tmp_path, [
        line(ts(0), "session_meta", meta()),
        line(ts(1), "response_item", umsg("first run")),
        line(ts(2), "response_item", umsg("ok", role="assistant")),
        line(ts(0, minute=30), "session_meta", meta(cwd="/somewhere/else")),
        line(ts(1, minute=30), "event_msg", {"type": "task_started", "turn_id": "t2"}),
        line(ts(2, minute=30), "response_item", umsg("resumed later")),
        line(ts(3, minute=30), "response_item", umsg("still here", role="assistant")),
    ])
    part = one(codex.read(p))
    assert part.session_id == UID and part.kind == "" and part.project == "ledger-service"
    assert [t for _, t in roles(part)] == ["first run", "ok", "resumed later", "still here"]
    # also when the second meta directly follows the first
    p2 = write(tmp_path / "b", [line(ts(0), "session_meta", meta()), line(ts(0.01), "session_meta", meta()),
                                line(ts(1), "event_msg", {"type": "task_started", "turn_id": "t1"}),
                                line(ts(2), "response_item", umsg("kept"))])
    assert roles(one(codex.read(p2))) == [("user", "kept")]


def test_review_subagent_edge(tmp_path):
    p = write(tmp_path, [line(ts(0), "session_meta", meta(source={"subagent": "review"})),
                         line(ts(1), "response_item", umsg("Review the current diff against main."))])
    part = one(codex.read(p))
    assert (part.kind, part.parent, part.agent) == ("subagent", "", "review")
    assert len(part.messages) == 1


def test_spawned_thread_without_fork_keeps_its_history(tmp_path):
    src = {"subagent": {"thread_spawn": {"parent_thread_id": PARENT, "depth": 1, "agent_role": "worker"}}}
    p = write(tmp_path, [line(ts(0), "session_meta", meta(source=src)),
                         line(ts(0.1), "event_msg", {"type": "task_started", "turn_id": "t"}),
                         line(ts(0.2), "response_item", umsg("List stale branches and report them."))])
    part = one(codex.read(p))
    assert (part.kind, part.parent, part.agent) == ("subagent", PARENT, "worker")
    assert roles(part) == [("user", "List stale branches and report them.")]


# --------------------------------------------------------------------------- history.jsonl


def test_history_only_for_sessions_without_rollout(tmp_path):
    write(tmp_path, [line(ts(0), "session_meta", meta()), line(ts(1), "response_item", umsg("has a rollout"))])
    hist = tmp_path / "history.jsonl"
    hist.write_text("\n".join(json.dumps(x) for x in [
        {"session_id": UID, "ts": 1772442001, "text": "has a rollout"},
        {"session_id": "lost-1", "ts": 1772442100, "text": "how do I make golangci-lint skip mocks?"},
        {"session_id": "lost-2", "ts": 1772442200, "text": "  "},
        {"ts": 1772442300, "text": "no session id"},
    ]) + "\n" + '{"session_id": "lost-3", "ts": 17724')
    res = codex.read(str(hist))
    assert not res.error and res.malformed == 0
    assert [(s.session_id, s.project, roles(s)) for s in res.sessions] == [
        ("lost-1", "history", [("user", "how do I make golangci-lint skip mocks?")])]
    assert res.sessions[0].messages[0].ts == 1772442100000
    assert res.safe_offset < hist.stat().st_size  # torn tail left for later


# --------------------------------------------------------------------------- data samples


def test_data_samples():
    files = codex.discover({"DEJA_CODEX_ROOT": str(SAMPLES)})
    assert len(files) == 4 and files[-1].path.endswith("history.jsonl")
    parts = []
    for f in files:
        res = codex.read(f.path)
        assert not res.error and res.malformed == 0 and res.safe_offset == os.path.getsize(f.path)
        parts += res.sessions
    by_project = {}
    for s in parts:
        by_project.setdefault(s.project, []).append(s)
    go, fork = sorted(by_project["ledger-service"], key=lambda s: s.kind)
    assert go.branch == "fix/flaky-settlement-export" and fork.kind == "subagent_fork" and fork.parent == go.session_id
    assert "$ go test -race -count=5 ./internal/export/...  → exit 1" in by_role(go, "command")
    assert any("the root cause was a shared temp dir" in t.lower() for t in by_role(go, "assistant"))
    assert any("t.TempDir()" in t for t in by_role(go, "edit") + by_role(go, "assistant"))
    # the fork's replay of the parent is not indexed a second time
    first_prompt = by_role(go, "user")[0]
    assert all(first_prompt not in m.text for m in fork.messages)
    assert len(by_role(fork, "user")) == 1 and by_role(fork, "command")
    (rust,) = by_project["csvtidy"]
    assert "$ cargo build  → exit 101" in by_role(rust, "command")
    assert any("E0502" in t for t in by_role(rust, "tool-output"))
    assert any(t.endswith("/src/table.rs\n/home/dev/src/csvtidy/CHANGELOG.md") for t in by_role(rust, "files"))
    (hist,) = by_project["history"]
    assert len(hist.messages) == 1 and "golangci-lint" in hist.messages[0].text


# --------------------------------------------------------------------------- real published transcripts


def _real_codex() -> list[tuple[Path, dict]]:
    real = SHARED / "corpus" / "real"
    if not (real / "MANIFEST.tsv").is_file() or not (real / "codex").is_dir():
        pytest.skip(f"shared corpus not found at {real} (expected ../shared beside the checkout)")
    with open(real / "MANIFEST.tsv", newline="", encoding="utf-8") as fh:
        rows = [r for r in csv.DictReader(fh, delimiter="\t") if r["harness"] == "codex"]
    out = [(real / "codex" / r["file"], r) for r in rows]
    assert out and all(p.is_file() for p, _ in out)
    return out


def test_real_codex_transcripts():
    totals = Counter()
    manifest_users = manifest_assistants = 0
    for path, row in _real_codex():
        res = codex.read(str(path))
        part = one(res)
        assert res.malformed == 0 and res.safe_offset == path.stat().st_size, path.name
        assert part.session_id == codex.filename_id(str(path))  # the original file names carry the thread id
        assert part.project
        got = Counter(m.role for m in part.messages)
        totals.update(got)
        users, assistants = int(row["user_msgs"]), int(row["assistant_msgs"])
        manifest_users += users
        manifest_assistants += assistants
        # MANIFEST counts raw response_item messages by role. Assistant messages map
        # one to one (fork replays carry the parent's replies only as event_msg
        # copies, which are never used beside response items). User messages are
        # fewer: the reader drops turns that are only harness preamble (AGENTS.md,
        # <environment_context>), <turn_aborted> notices, a fork's replayed parent
        # prompt, and turns the user's `!cmd` wrote (those become command and
        # tool-output records instead).
        assert got["assistant"] == assistants, path.name
        assert got["user"] <= users, path.name
        assert got["user"] >= 1, path.name
        assert all(m.text.strip() for m in part.messages)
        assert all(m.ts is not None for m in part.messages)
        assert all(m.role in ("user", "assistant", "tool-output", "command", "files", "edit") for m in part.messages)
        # an incremental read from the middle keeps the identity
        mid = _line_start_near(path, path.stat().st_size // 2)
        later = one(codex.read(str(path), mid))
        assert (later.session_id, later.project, later.kind, later.parent) == (
            part.session_id, part.project, part.kind, part.parent)
        assert [(m.role, m.text) for m in later.messages] == [
            (m.role, m.text) for m in part.messages if m.byte_offset >= mid]
        if part.kind == "subagent_fork":
            _assert_replay_dropped(path, part)
    # Observed: 11 files, 74 user / 100 assistant against 95 / 100 raw; work:
    # 94 command, 387 tool-output, 33 files, 19 edit.
    assert totals["assistant"] == manifest_assistants
    assert 0.6 * manifest_users <= totals["user"] < manifest_users
    assert totals["command"] >= 50 and totals["tool-output"] >= 300
    assert totals["files"] >= 20 and totals["edit"] >= 10


def _line_start_near(path: Path, pos: int) -> int:
    data = path.read_bytes()
    nl = data.find(b"\n", pos)
    return 0 if nl < 0 or nl + 1 >= len(data) else nl + 1


def _assert_replay_dropped(path: Path, part) -> None:
    """Texts the file replays from its parent (before the thread's own task) are not indexed."""
    replayed = []
    metas = 0
    for raw in path.read_text(encoding="utf-8").splitlines():
        obj = json.loads(raw)
        p = obj.get("payload") or {}
        if obj.get("type") == "session_meta":
            metas += 1
            continue
        if p.get("type") == "task_started" and replayed:
            break
        if p.get("type") in ("user_message", "agent_message"):
            replayed.append(p["message"])
    assert metas == 2 and replayed
    texts = {m.text for m in part.messages}
    assert not texts & set(replayed)
