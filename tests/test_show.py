"""`deja last`, `deja show` and `deja ctx` (cli-contract §2.1, §3.1, §3.3, §3.4),
run as the real command against a temp HOME holding Claude Code and Codex
sessions (Codex rollouts written per harness-formats §4)."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone

import pytest

from conftest import Home, claude_assistant, claude_user, write_jsonl

# two Claude sessions sharing the prefix a1b2c3d4, the second more recent
SA = "a1b2c3d4-0000-4000-8000-000000000001"
SB = "a1b2c3d4-0000-4000-8000-000000000002"
SIDE = "a5e1dec4a1b2c3d4e"  # a sidechain agent inside SB's transcript
LONG = "f00d0000-0000-4000-8000-00000000beef"  # 1001 messages
RECENT = "c0ffee00-0000-4000-8000-000000000abc"  # active an hour ago
FILLERS = [f"0f111e00-0000-4000-8000-00000000000{i}" for i in range(6)]
CX = "019c0000-1111-7000-8000-00000000c0de"  # Codex thread
CX_FORK = "019c0000-2222-7000-8000-00000000f04c"  # forked from CX

ALLOWED_SESSION_KEYS = {
    "harness", "id", "project", "source", "started", "updated", "path", "title", "agent_title", "touched",
    "gave_up", "words", "orig_id", "from", "lifecycle", "lifecycle_note", "lifecycle_at", "kind", "parent", "agent",
    "project_root",
}
ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


# --------------------------------------------------------------------------- the store


def _tool_result(session, tool_id, content, ts, uuid, is_error=False, cwd="/home/dev/src/shop"):
    row = claude_user(session, "", ts, uuid, cwd=cwd)
    row["message"]["content"] = [{"type": "tool_result", "tool_use_id": tool_id, "content": content,
                                  "is_error": is_error}]
    return row


def _claude_sa(home: Home) -> None:
    s = SA
    write_jsonl(home.claude_file(s), [
        claude_user(s, "checkout returns 500 when the connection pool is exhausted under load. why?",
                    "2026-03-02T10:00:00Z", "u1"),
        claude_assistant(s, [{"type": "text", "text": "Let me run the pool tests first."},
                             {"type": "tool_use", "id": "toolu_1", "name": "Bash",
                              "input": {"command": "pytest tests/test_pool.py -q"}}],
                         "2026-03-02T10:00:05Z", "a1", msg_id="m1"),
        _tool_result(s, "toolu_1", "Exit code 1\nFAILED tests/test_pool.py::test_burst - TimeoutError",
                     "2026-03-02T10:00:09Z", "t1", is_error=True),
        claude_assistant(s, [{"type": "text", "text": "The root cause was pool_size=5 under the checkout burst. "
                                                      "We set pool_size=20 and close the leaked sessions."},
                             {"type": "tool_use", "id": "toolu_2", "name": "Edit",
                              "input": {"file_path": "/home/dev/src/shop/app/db.py", "old_string": "pool_size=5",
                                        "new_string": "pool_size=20"}}],
                         "2026-03-02T10:01:00Z", "a2", msg_id="m2"),
        _tool_result(s, "toolu_2", "The file /home/dev/src/shop/app/db.py has been updated successfully.",
                     "2026-03-02T10:01:02Z", "t2"),
        claude_assistant(s, [{"type": "tool_use", "id": "toolu_3", "name": "Bash",
                              "input": {"command": "pytest tests/test_pool.py -q"}}],
                         "2026-03-02T10:01:10Z", "a3", msg_id="m3"),
        _tool_result(s, "toolu_3", "2 passed in 0.41s", "2026-03-02T10:01:15Z", "t3"),
        claude_assistant(s, [{"type": "text", "text": "Both pool tests pass now: checkout no longer 500s because "
                                                      "the pool has room for the burst and the inventory task "
                                                      "returns its connection after every run. Nothing else in the "
                                                      "app opens sessions outside a context manager."}],
                         "2026-03-02T10:01:20Z", "a4", msg_id="m4"),
        claude_user(s, "ok", "2026-03-02T10:04:00Z", "u2"),
        claude_assistant(s, [{"type": "text", "text": "Done."}], "2026-03-02T10:05:00Z", "a5", msg_id="m5"),
    ])


def _claude_sb(home: Home) -> None:
    s, cwd = SB, "/home/dev/src/blog"
    write_jsonl(home.claude_file(s, cwd=cwd), [
        claude_user(s, "the static site generator drops the RSS feed on deploy", "2026-03-05T08:00:00Z", "u1",
                    cwd=cwd),
        claude_assistant(s, [{"type": "text", "text": "The feed template is not copied; I added it to the build."}],
                         "2026-03-05T08:00:10Z", "a1", cwd=cwd),
        dict(claude_user(s, "check the other templates for the same problem", "2026-03-05T08:01:00Z", "s1",
                         cwd=cwd), isSidechain=True, agentId=SIDE),
        dict(claude_assistant(s, [{"type": "text", "text": "Only feed.xml was missing from the copy list."}],
                              "2026-03-05T08:01:30Z", "s2", msg_id="m9", cwd=cwd),
             isSidechain=True, agentId=SIDE, attributionAgent="Explore"),
        claude_user(s, "great, thanks — ship it", "2026-03-05T08:02:00Z", "u2", cwd=cwd),
    ])


def _claude_long(home: Home) -> None:
    s, cwd = LONG, "/home/dev/src/chatty"
    base = datetime(2026, 2, 1, 9, 0, tzinfo=timezone.utc)
    rows = []
    for i in range(1001):
        t = (base + timedelta(seconds=i)).strftime("%Y-%m-%dT%H:%M:%SZ")
        if i % 2 == 0:
            rows.append(claude_user(s, f"question number {i} about the chatty service", t, f"u{i}", cwd=cwd))
        else:
            rows.append(claude_assistant(s, [{"type": "text", "text": f"answer number {i}"}], t, f"a{i}",
                                         msg_id=f"m{i}", cwd=cwd))
    write_jsonl(home.claude_file(s, cwd=cwd), rows)


def _claude_recent(home: Home) -> None:
    s, cwd = RECENT, "/home/dev/src/today"
    now = datetime.now(timezone.utc) - timedelta(hours=1)
    t0, t1 = now.strftime("%Y-%m-%dT%H:%M:%SZ"), (now + timedelta(seconds=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    write_jsonl(home.claude_file(s, cwd=cwd), [
        claude_user(s, "rename the todays module to daily", t0, "u1", cwd=cwd),
        claude_assistant(s, [{"type": "text", "text": "Renamed."}], t1, "a1", cwd=cwd),
    ])


def _fillers(home: Home) -> None:
    for i, s in enumerate(FILLERS):
        cwd = "/home/dev/src/filler"
        write_jsonl(home.claude_file(s, cwd=cwd), [
            claude_user(s, f"filler question {i}", f"2026-01-0{i + 1}T12:00:00Z", "u1", cwd=cwd),
            claude_assistant(s, [{"type": "text", "text": f"filler answer {i}"}], f"2026-01-0{i + 1}T12:00:05Z",
                             "a1", cwd=cwd),
        ])


def _codex_line(t: str, typ: str, payload: dict) -> dict:
    return {"timestamp": t, "type": typ, "payload": payload}


def _msg(role: str, text: str) -> dict:
    kind = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


def _codex(home: Home) -> None:
    cwd = "/home/ann/src/api"
    rows = [
        _codex_line("2026-03-04T09:00:00.000Z", "session_meta",
                    {"id": CX, "timestamp": "2026-03-04T09:00:00.000Z", "cwd": cwd, "cli_version": "0.60.0",
                     "git": {"branch": "fix/timeouts", "commit_hash": "4b825dc"}}),
        _codex_line("2026-03-04T09:00:01.000Z", "response_item", _msg("user", "run the integration tests")),
        _codex_line("2026-03-04T09:00:01.010Z", "event_msg",
                    {"type": "user_message", "message": "run the integration tests", "kind": "plain"}),
        _codex_line("2026-03-04T09:00:03.000Z", "response_item",
                    {"type": "function_call", "name": "exec_command",
                     "arguments": json.dumps({"cmd": "go test ./integration/..."}), "call_id": "call_7"}),
        _codex_line("2026-03-04T09:00:09.000Z", "response_item",
                    {"type": "function_call_output", "call_id": "call_7",
                     "output": "Chunk ID: 1\nWall time: 5.9 seconds\nProcess exited with code 1\nOutput:\n"
                               "--- FAIL: TestCheckout (5.00s)"}),
        _codex_line("2026-03-04T09:00:12.000Z", "response_item",
                    _msg("assistant", "TestCheckout times out: the gateway stub sleeps 5s. We switched the stub "
                                      "to return immediately. The suite passes now.")),
        _codex_line("2026-03-04T09:00:13.000Z", "response_item",
                    {"type": "custom_tool_call", "name": "apply_patch", "call_id": "call_8", "status": "completed",
                     "input": "*** Begin Patch\n*** Update File: integration/stub.go\n@@\n-\ttime.Sleep(5 * time.Second)\n"
                              "+\treturn\n*** End Patch\n"}),
        _codex_line("2026-03-04T09:00:14.000Z", "response_item",
                    {"type": "custom_tool_call_output", "call_id": "call_8", "output": "Exit code: 0\nSuccess."}),
    ]
    write_jsonl(home.codex_file(CX, day="2026/03/04", stamp="2026-03-04T09-00-00"), rows)
    fork = [
        _codex_line("2026-03-04T09:10:00.000Z", "session_meta",
                    {"id": CX_FORK, "forked_from_id": CX, "timestamp": "2026-03-04T09:10:00.000Z", "cwd": cwd}),
        _codex_line("2026-03-04T09:10:01.000Z", "response_item",
                    _msg("user", "look for other stubs that sleep in the integration suite")),
        _codex_line("2026-03-04T09:10:05.000Z", "response_item", _msg("assistant", "No other stub sleeps.")),
    ]
    write_jsonl(home.codex_file(CX_FORK, day="2026/03/04", stamp="2026-03-04T09-10-00"), fork)


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Home:
    h = Home(tmp_path_factory.mktemp("show"))
    _claude_sa(h)
    _claude_sb(h)
    _claude_long(h)
    _claude_recent(h)
    _fillers(h)
    _codex(h)
    h.run("index")
    return h


def js(proc) -> dict:
    return json.loads(proc.stdout)


def one_line_error(proc, needle: str = "") -> None:
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert proc.stderr.startswith("deja: "), proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert needle in proc.stderr, proc.stderr


# --------------------------------------------------------------------------- last


def test_last_json_is_newest_first_with_contract_session_objects(store):
    env = js(store.run("last", "--json"))
    assert set(env) == {"schema_version", "sessions"} and env["schema_version"] == 2
    sessions = env["sessions"]
    assert len(sessions) == 10  # the default
    ids = [s["id"] for s in sessions]
    assert ids[:6] == [RECENT, SB, CX_FORK, CX, SA, SIDE] or ids[:6] == [RECENT, SB, SIDE, CX_FORK, CX, SA]
    updated = [s["updated"] for s in sessions]
    assert updated == sorted(updated, reverse=True)
    for s in sessions:
        assert set(s) <= ALLOWED_SESSION_KEYS, set(s) - ALLOWED_SESSION_KEYS
        assert "messages" not in s
        assert s["harness"] in ("claude", "codex")
        assert isinstance(s["id"], str) and s["id"]
        assert isinstance(s["project"], str)
        assert s["source"] == {"origin": "local"}
        assert ISO.match(s["started"]) and ISO.match(s["updated"]) and s["started"] <= s["updated"]
        assert isinstance(s.get("title", ""), str)
    by_id = {s["id"]: s for s in sessions}
    sa = by_id[SA]
    assert (sa["harness"], sa["project"], sa["started"], sa["updated"]) == (
        "claude", "src/shop", "2026-03-02T10:00:00Z", "2026-03-02T10:05:00Z")
    assert sa["path"].endswith(f"{SA}.jsonl")
    assert sa["title"] and "connection pool" in sa["title"]
    assert sa["touched"] == ["/home/dev/src/shop/app/db.py"]
    cx = by_id[CX]
    assert (cx["harness"], cx["project"], cx["started"], cx["updated"]) == (
        "codex", "src/api", "2026-03-04T09:00:01Z", "2026-03-04T09:00:14Z")
    assert "integration/stub.go" in " ".join(cx["touched"])
    fork = by_id[CX_FORK]
    assert (fork["kind"], fork["parent"]) == ("subagent_fork", CX)
    side = by_id[SIDE]
    assert (side["kind"], side["parent"], side["agent"]) == ("sidechain", SB, "Explore")
    assert "kind" not in sa and "parent" not in sa


def test_last_count_and_filters(store):
    assert len(js(store.run("last", "3", "--json"))["sessions"]) == 3
    assert len(js(store.run("last", "50", "--json"))["sessions"]) == 13
    codex = js(store.run("last", "--json", "--harness", "codex"))["sessions"]
    assert [s["id"] for s in codex] == [CX_FORK, CX]
    shop = js(store.run("last", "--json", "--project", "SHOP"))["sessions"]  # substring, any case
    assert [s["id"] for s in shop] == [SA]
    recent = js(store.run("last", "--json", "--since", "1d"))["sessions"]
    assert [s["id"] for s in recent] == [RECENT]
    both = js(store.run("last", "--json", "--since", "400d", "--project", "filler", "--harness", "claude"))
    assert [s["id"] for s in both["sessions"]] == list(reversed(FILLERS))
    edits = js(store.run("last", "--json", "--role", "edit"))["sessions"]
    assert {s["id"] for s in edits} == {SA, CX}


def test_last_text_is_one_line_per_session(store):
    proc = store.run("last", "6")
    lines = proc.stdout.splitlines()
    assert len(lines) == 6
    assert lines[0].startswith("claude") and RECENT[:12] in lines[0] and "src/today" in lines[0]
    assert "rename the todays module" in lines[0]
    assert re.search(r"\b\d{4}-\d\d-\d\d \d\d:\d\d\b", lines[0])
    codex_line = next(line for line in lines if CX[:12] in line)
    assert codex_line.startswith("codex") and " src/api " in codex_line


def test_last_empty_and_bad_input(store):
    proc = store.run("last", "--project", "nosuchproject")
    assert proc.returncode == 0 and proc.stdout == ""
    assert "no session matches --project nosuchproject" in proc.stderr
    proc = store.run("last", "--json", "--project", "nosuchproject")
    assert js(proc) == {"schema_version": 2, "sessions": []}
    one_line_error(store.run("last", "--harness", "nosuch", check=False), "unknown harness")
    one_line_error(store.run("last", "0", check=False))
    one_line_error(store.run("last", "--since", "soon", check=False), "--since")
    one_line_error(store.run("last", "--bogus", check=False))


def test_no_index_and_empty_index(home):
    one_line_error(home.run("last", check=False), "no index")
    one_line_error(home.run("show", SA, check=False), "no index")
    one_line_error(home.run("ctx", "pool", check=False), "no index")
    home.run("index")  # no agent stores at all: an index with no sessions
    proc = home.run("last")
    assert proc.stdout == "" and "no sessions" in proc.stderr
    proc = home.run("ctx", "connection pool")
    assert proc.returncode == 0 and proc.stdout == "" and "no sessions" in proc.stderr
    one_line_error(home.run("show", SA, check=False), "no session matches id")


# --------------------------------------------------------------------------- show (text)


def test_show_prints_every_message_with_work_lines(store):
    proc = store.run("show", SA)
    out = proc.stdout
    assert out.splitlines()[0].startswith("checkout returns 500")
    assert f"claude {SA}" in out and "src/shop" in out
    assert "checkout returns 500 when the connection pool is exhausted" in out
    assert "The root cause was pool_size=5" in out
    assert "FAILED tests/test_pool.py::test_burst" in out  # tool output is a message
    assert "  $ pytest tests/test_pool.py -q  → exit 1" in out  # work records as compact lines
    assert "  edit: /home/dev/src/shop/app/db.py (1 line replaced)" in out
    assert "  files: /home/dev/src/shop/app/db.py" in out
    headers = re.findall(r"^\[(user|assistant|tool-output|summary)\] ", out, re.M)
    total = js(store.run("show", SA, "--harness", "claude", "--json"))["window"]["total"]
    assert len(headers) == total
    # order: ts, then seq
    assert out.index("checkout returns 500 when") < out.index("Let me run") < out.index("FAILED tests") \
        < out.index("The root cause") < out.index("Both pool tests") < out.index("Done.")
    assert "spawned" not in proc.stderr


@pytest.mark.parametrize("pasted", [f"'{SA}'", f'"{SA}"', f"`{SA}`", f"“{SA}”", f"  `'{SA}'`  ", f"‘{SA[:-1]}1’"])
def test_show_cleans_pasted_ids(store, pasted):
    proc = store.run("show", pasted)
    assert f"claude {SA}" in proc.stdout
    assert "matches" not in proc.stderr


def test_show_ambiguous_prefix_picks_the_most_recent_and_says_so(store):
    proc = store.run("show", "a1b2c3d4")
    assert f"claude {SB}" in proc.stdout  # SB is the more recent of SA/SB
    assert "matches 2 sessions" in proc.stderr and SB in proc.stderr
    assert f"also claude {SA}" in proc.stderr  # the other, by the id that names it
    proc = store.run("show", "A1B2C3D4-0000-4000-8000-000000000001")  # case does not matter
    assert f"claude {SA}" in proc.stdout


def test_show_unknown_id_is_one_line_error(store):
    one_line_error(store.run("show", "deadbeef", check=False), "no session matches id 'deadbeef'")
    one_line_error(store.run("show", SA, "--harness", "codex", check=False), "no session matches id")
    one_line_error(store.run("show", "''", check=False))
    one_line_error(store.run("show", SA, "--harness", "nosuch", check=False), "unknown harness")
    one_line_error(store.run("show", check=False))


def test_show_harness_prefixed_id(store):
    proc = store.run("show", f"codex:{CX[:10]}")
    assert f"codex {CX}" in proc.stdout
    one_line_error(store.run("show", f"codex:{CX}", "--harness", "claude", check=False))


def test_show_text_slice_and_the_flags_hint_above_1000_messages(store):
    proc = store.run("show", LONG)
    assert len(re.findall(r"^\[(user|assistant)\] ", proc.stdout, re.M)) == 1001
    assert "answer number 999" in proc.stdout and "question number 1000 " in proc.stdout
    assert "1001 messages" in proc.stderr and "--offset" in proc.stderr and "--limit" in proc.stderr
    proc = store.run("show", LONG, "--offset", "10", "--limit", "5")
    heads = re.findall(r"^\[(user|assistant)\] ", proc.stdout, re.M)
    assert len(heads) == 5
    assert "question number 10 " in proc.stdout and "question number 14 " in proc.stdout
    assert "answer number 9\n" not in proc.stdout and "answer number 15" not in proc.stdout
    assert "messages 11–15 of 1001" in proc.stderr
    small = store.run("show", SA)
    assert "--offset" not in small.stderr  # only above 1000


def test_show_spawn_edges_on_stderr(store):
    parent = store.run("show", CX)
    assert f"spawned 1 session: {CX_FORK}" in parent.stderr
    assert "spawned" not in parent.stdout
    child = store.run("show", CX_FORK)
    assert f"spawned from codex {CX}" in child.stderr
    side = store.run("show", SIDE)
    assert f"spawned from claude {SB}" in side.stderr
    assert "spawned 1 session" in store.run("show", SB).stderr
    js_proc = store.run("show", CX_FORK, "--harness", "codex", "--json")
    assert f"spawned from codex {CX}" in js_proc.stderr and js(js_proc)["session"]["parent"] == CX


# --------------------------------------------------------------------------- show --json


def test_show_json_needs_harness_and_the_exact_id(store):
    one_line_error(store.run("show", SA, "--json", check=False), "--harness")
    one_line_error(store.run("show", SA[:8], "--harness", "claude", "--json", check=False), f"the start of claude {SB}")
    one_line_error(store.run("show", SA[:30], "--harness", "claude", "--json", check=False), "exact id")
    one_line_error(store.run("show", CX, "--harness", "claude", "--json", check=False), "no session matches id")
    one_line_error(store.run("show", SA, "--harness", "claude", "--json", "--limit", "201", check=False), "200")
    one_line_error(store.run("show", SA, "--harness", "claude", "--json", "--limit", "0", check=False))
    one_line_error(store.run("show", SA, "--harness", "claude", "--json", "--offset", "-1", check=False))
    env = js(store.run("show", f"`{SA}`", "--harness", "claude", "--json"))  # pasted quotes still cleaned
    assert env["session"]["id"] == SA


def test_show_json_shape(store):
    env = js(store.run("show", SA, "--harness", "claude", "--json"))
    assert set(env) == {"schema_version", "session", "window"} and env["schema_version"] == 2
    s = env["session"]
    assert set(s) - {"messages"} <= ALLOWED_SESSION_KEYS
    assert (s["harness"], s["id"], s["project"], s["source"]) == ("claude", SA, "src/shop", {"origin": "local"})
    assert (s["started"], s["updated"]) == ("2026-03-02T10:00:00Z", "2026-03-02T10:05:00Z")
    same = [x for x in js(store.run("last", "50", "--json"))["sessions"] if x["id"] == SA][0]
    assert {k: v for k, v in s.items() if k != "messages"} == same  # one session object for every command
    msgs = s["messages"]
    for m in msgs:
        assert set(m) == {"role", "text", "time"}
        assert m["role"] in ("user", "assistant", "tool-output", "summary")  # work roles never in JSON
        assert ISO.match(m["time"])
    assert [m["role"] for m in msgs] == ["user", "assistant", "tool-output", "assistant", "tool-output",
                                         "tool-output", "assistant", "user", "assistant"]
    assert msgs[0] == {"role": "user", "time": "2026-03-02T10:00:00Z",
                       "text": "checkout returns 500 when the connection pool is exhausted under load. why?"}
    assert msgs[-1]["text"] == "Done."
    assert [m["time"] for m in msgs] == sorted(m["time"] for m in msgs)
    assert env["window"] == {"offset": 0, "limit": 50, "total": 9, "returned": 9}


def test_show_json_window_semantics(store):
    def page(offset=None, limit=None):
        args = ["show", LONG, "--harness", "claude", "--json"]
        args += ["--offset", str(offset)] if offset is not None else []
        args += ["--limit", str(limit)] if limit is not None else []
        return js(store.run(*args))

    first = page()
    assert first["window"] == {"offset": 0, "limit": 50, "total": 1001, "returned": 50}
    assert first["session"]["messages"][0]["text"] == "question number 0 about the chatty service"
    assert first["session"]["messages"][49]["text"] == "answer number 49"
    big = page(limit=200)
    assert big["window"] == {"offset": 0, "limit": 200, "total": 1001, "returned": 200}
    assert big["session"]["messages"][:50] == first["session"]["messages"]
    mid = page(offset=50, limit=3)
    assert [m["text"] for m in mid["session"]["messages"]] == [
        "question number 50 about the chatty service", "answer number 51",
        "question number 52 about the chatty service"]
    tail = page(offset=1000)
    assert tail["window"] == {"offset": 1000, "limit": 50, "total": 1001, "returned": 1}
    assert tail["session"]["messages"][0]["text"] == "question number 1000 about the chatty service"
    past = page(offset=5000, limit=10)
    assert past["window"] == {"offset": 5000, "limit": 10, "total": 1001, "returned": 0}
    assert past["session"]["messages"] == [] and past["session"]["id"] == LONG


# --------------------------------------------------------------------------- ctx


def test_ctx_by_id_is_a_markdown_digest(store):
    proc = store.run("ctx", SA)
    md = proc.stdout
    assert len(md.encode()) <= 8192
    assert md.startswith("# ") and "connection pool" in md.splitlines()[0]
    assert f"claude session `{SA}`" in md and "src/shop" in md and "2026-03-02 10:00 UTC" in md
    problem = md.split("## Problem", 1)[1].split("##", 1)[0]
    assert "checkout returns 500 when the connection pool is exhausted" in problem
    assert "- ok" not in problem  # acknowledgements are not the problem
    decisions = md.split("## Decisions", 1)[1].split("\n## ", 1)[0]
    assert "The root cause was pool_size=5 under the checkout burst. We set pool_size=20" in decisions
    outcome = md.split("## Outcome", 1)[1].split("\n## ", 1)[0]
    assert "Both pool tests pass now" in outcome and "Done." in outcome  # short sign-off keeps the real answer
    commands = md.split("## Commands run", 1)[1].split("\n## ", 1)[0]
    assert "- `pytest tests/test_pool.py -q` → exit 1" in commands
    assert "- `pytest tests/test_pool.py -q`\n" in commands + "\n"
    assert "`/home/dev/src/shop/app/db.py`" in md.split("## Files touched", 1)[1]
    assert md.index("## Problem") < md.index("## Decisions") < md.index("## Outcome") \
        < md.index("## Commands run") < md.index("## Files touched")


def test_ctx_by_query(store):
    proc = store.run("ctx", "connection", "pool", "exhausted")
    assert f"`{SA}`" in proc.stdout
    proc = store.run("ctx", "integration tests gateway stub")
    md = proc.stdout
    assert f"codex session `{CX}`" in md and "project src/api" in md
    assert "We switched the stub to return immediately." in md
    assert "- `go test ./integration/...` → exit 1" in md
    assert "integration/stub.go" in md


def test_ctx_short_or_unknown_token_is_a_query_not_an_id(store):
    # 'rss' is below the 6-character id threshold and 'feed.xml' matches no id: both search
    assert f"`{SB}`" in store.run("ctx", "rss").stdout
    proc = store.run("ctx", "templates")
    assert f"`{SB}`" in proc.stdout or f"`{SIDE}`" in proc.stdout


def test_ctx_ambiguous_id_prefix_says_so(store):
    proc = store.run("ctx", "a1b2c3d4")
    assert f"`{SB}`" in proc.stdout and "matches 2 sessions" in proc.stderr


def test_ctx_nothing_found_and_flags(store):
    proc = store.run("ctx", "zyzzyva", "quuxplatypus")
    assert proc.returncode == 0 and proc.stdout == "" and "no session matches" in proc.stderr
    one_line_error(store.run("ctx", "--json", "pool", check=False), "no flags")
    one_line_error(store.run("ctx", "pool", "--limit", "3", check=False), "no flags")
    one_line_error(store.run("ctx", check=False), "needs a query")


def test_ctx_fits_the_budget(tmp_path):
    h = Home(tmp_path)
    s = "b16b16b1-0000-4000-8000-000000000001"
    rows = [claude_user(s, "the nightly export is slow " + "and it times out " * 40, "2026-03-02T10:00:00Z", "u0")]
    for i in range(80):
        t = f"2026-03-02T10:{i // 60 + 1:02d}:{i % 60:02d}Z"
        rows.append(claude_assistant(s, [
            {"type": "text", "text": f"Attempt {i}: the fix is batching number {i}. " + "detail " * 120},
            {"type": "tool_use", "id": f"toolu_{i}", "name": "Bash",
             "input": {"command": f"pytest tests/integration/exports/nightly/test_export_{'x' * 120}.py -k case{i} -q"}}],
            t, f"a{i}", msg_id=f"m{i}"))
        rows.append(_tool_result(s, f"toolu_{i}", f"Exit code {i % 3}\nresult {i}", t, f"t{i}",
                                 is_error=bool(i % 3)))
    write_jsonl(h.claude_file(s), rows)
    h.run("index")
    md = h.run("ctx", s[:8]).stdout
    assert len(md.encode()) <= 8192
    for section in ("## Problem", "## Decisions", "## Outcome", "## Commands run"):
        assert section in md
    decisions = md.split("## Decisions", 1)[1].split("\n## ", 1)[0]
    assert decisions.startswith("\n\n- Attempt 0: the fix is batching number 0.")
    assert re.search(r"- … \d+ more left out", decisions)
    commands = md.split("## Commands run", 1)[1]
    assert re.search(r"- … \d+ earlier left out", commands)  # the earliest go first: the last say where it ended
    assert "-k case79 -q` → exit 1" in commands
    assert len(re.findall(r"^- `pytest", commands, re.M)) >= 5


def test_reading_commands_see_turns_appended_since_the_index(tmp_path):
    h = Home(tmp_path)
    s = "ad0ad0ad-0000-4000-8000-000000000001"
    path = h.claude_file(s)
    write_jsonl(path, [claude_user(s, "first question about the cache", "2026-03-02T10:00:00Z", "u1")])
    h.run("index")
    write_jsonl(path, [claude_assistant(s, [{"type": "text", "text": "We set the cache ttl to 60s."}],
                                        "2026-03-02T10:00:30Z", "a1", parent="u1")], mode="a")
    fresh = {"DEJA_NO_REFRESH": "0"}  # conftest turns the freshness check off by default
    assert "We set the cache ttl to 60s." in h.run("show", s, extra_env=fresh).stdout
    assert js(h.run("last", "--json", extra_env=fresh))["sessions"][0]["updated"] == "2026-03-02T10:00:30Z"
