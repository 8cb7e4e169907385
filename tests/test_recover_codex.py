"""`deja recover` for Codex CLI, and a folder where both agents crashed.

Rollouts are written under a temp ``~/.codex/sessions/YYYY/MM/DD/`` the way
current Codex builds write them (session_meta, turn_context, response items
doubled by event_msg copies, task_started/task_complete around each turn),
with timestamps relative to now. Run through the real `deja`, no index built.
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from datetime import datetime
from pathlib import Path

from test_recover import CWD, crashed, digest, ids, listing, section, sections, stamp

BRANCH = "fix/timeouts"


class Rollout:
    def __init__(self, sid: str | None = None, cwd: str = CWD, ago: float = 3600, source="cli", branch=BRANCH):
        self.sid = sid or str(uuid.uuid4())
        self.cwd = cwd
        self.ago = ago
        self.started = time.time() - ago
        self.lines: list[dict] = []
        meta = {"id": self.sid, "timestamp": stamp(ago), "cwd": cwd, "originator": "codex-tui",
                "cli_version": "0.118.0", "instructions": "You are Codex. " * 40, "source": source,
                "model_provider": "openai"}
        if branch:
            meta["git"] = {"commit_hash": "4b825dc", "branch": branch, "repository_url": "git@example.com:acme/api.git"}
        self._line("session_meta", meta)

    def _line(self, typ: str, payload: dict, step: float = 2) -> dict:
        obj = {"timestamp": stamp(self.ago), "type": typ, "payload": payload}
        self.ago = max(0.0, self.ago - step)
        self.lines.append(obj)
        return obj

    def turn(self, ask: str) -> None:
        self._line("event_msg", {"type": "task_started", "turn_id": str(uuid.uuid4())})
        self._line("turn_context", {"cwd": self.cwd, "approval_policy": "on-request", "model": "gpt-5.4",
                                    "effort": "high", "sandbox_policy": {"type": "workspace-write"}})
        self._line("response_item", {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "# AGENTS.md instructions for /x\n\n<INSTRUCTIONS>\nbe terse\n"
                                           "</INSTRUCTIONS>"},
            {"type": "input_text", "text": f"<environment_context>\n  <cwd>{self.cwd}</cwd>\n</environment_context>"},
            {"type": "input_text", "text": ask}]})
        self._line("event_msg", {"type": "user_message", "message": ask, "kind": "plain"})

    def say(self, text: str) -> None:
        reasoning = [{"type": "summary_text", "text": "PRIVATE REASONING"}]
        self._line("response_item", {"type": "reasoning", "summary": reasoning})
        content = [{"type": "output_text", "text": text}]
        self._line("response_item", {"type": "message", "role": "assistant", "content": content})
        self._line("event_msg", {"type": "agent_message", "message": text})

    def call(self, name: str, args: dict) -> str:
        call_id = f"call_{uuid.uuid4().hex[:10]}"
        call = {"type": "function_call", "name": name, "arguments": json.dumps(args), "call_id": call_id}
        self._line("response_item", call)
        return call_id

    def output(self, call_id: str, text: str, code: int = 0) -> None:
        framed = f"Chunk ID: 1\nWall time: 0.4 seconds\nProcess exited with code {code}\nOutput:\n{text}"
        self._line("response_item", {"type": "function_call_output", "call_id": call_id, "output": framed})
        self._line("event_msg", {"type": "token_count", "info": None})

    def shell(self, cmd: str, out: str = "ok", code: int = 0) -> None:
        self.output(self.call("exec_command", {"cmd": cmd, "workdir": self.cwd}), out, code)

    def patch(self, *paths: str) -> None:
        body = "".join(f"*** Update File: {p}\n@@\n-old line\n+new line\n" for p in paths)
        call_id = f"call_{uuid.uuid4().hex[:10]}"
        self._line("response_item", {"type": "custom_tool_call", "name": "apply_patch", "call_id": call_id,
                                     "input": f"*** Begin Patch\n{body}*** End Patch", "status": "completed"})
        self._line("response_item", {"type": "custom_tool_call_output", "call_id": call_id,
                                     "output": json.dumps({"output": "Success.", "metadata": {"exit_code": 0}})})

    def plan(self, steps: list[tuple[str, str]], explanation: str = "") -> None:
        args = {"plan": [{"step": s, "status": st} for s, st in steps]}
        if explanation:
            args["explanation"] = explanation
        self.output(self.call("update_plan", args), "Plan updated")

    def done(self) -> None:
        self._line("event_msg", {"type": "task_complete", "last_agent_message": None})

    def write(self, home: Path, torn: str = "", codex_home: Path | None = None) -> Path:
        day = datetime.fromtimestamp(self.started)
        base = (codex_home or home / ".codex") / "sessions" / day.strftime("%Y/%m/%d")
        path = base / f"rollout-{day.strftime('%Y-%m-%dT%H-%M-%S')}-{self.sid}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(o) + "\n" for o in self.lines) + torn, encoding="utf-8")
        return path


def crashed_rollout(ago: float = 3600, cwd: str = CWD, ask: str = "make the client retry on timeouts") -> Rollout:
    r = Rollout(cwd=cwd, ago=ago)
    r.turn(ask)
    r.say("I'll add a retry with backoff.")
    r.patch("client/http.py")
    r.call("exec_command", {"cmd": "go test ./client/...", "workdir": cwd})  # running when it died
    return r


def finished_rollout(ago: float = 7200, cwd: str = CWD, ask: str = "explain the retry policy") -> Rollout:
    r = Rollout(cwd=cwd, ago=ago)
    r.turn(ask)
    r.say("It retries three times with jitter.")
    r.done()
    return r


# ------------------------------------------------------------------- candidates


def test_rollouts_are_matched_to_the_folder_by_the_cwd_they_record(home):
    mine = crashed_rollout(ago=1800)
    mine.write(home.home)
    other = crashed_rollout(ago=600, cwd="/home/dev/other")
    other.write(home.home)
    [c] = listing(home)["candidates"]
    assert c["harness"] == "codex" and c["id"] == mine.sid
    assert c["title"] == "make the client retry on timeouts" and c["title_from_ask"] is True
    assert c["last_prompt"] == "make the client retry on timeouts"
    assert c["branch"] == BRANCH and c["messages"] == 2  # the event_msg copies are not counted twice
    assert c["resume"] == f"codex resume {mine.sid}"
    assert ids(listing(home, cwd="/home/dev/other")) == [other.sid]


def test_codex_home_is_honoured(home):
    store = home.root / "elsewhere"
    r = crashed_rollout(ago=1800)
    r.write(home.home, codex_home=store)
    assert listing(home)["candidates"] == []
    assert ids(listing(home, extra_env={"CODEX_HOME": str(store)})) == [r.sid]


def test_rollouts_rank_by_their_last_timestamped_line_not_name_or_mtime(home):
    # started long ago (its folder and name say so) but worked on until recently
    long_running = finished_rollout(ago=86400 * 3)
    long_running.ago = 1200
    long_running.turn("one more thing")
    long_running.say("done")
    long_running.done()
    recent_start = finished_rollout(ago=3600)
    p1, p2 = long_running.write(home.home), recent_start.write(home.home)
    now = time.time()
    os.utime(p1, (now - 86400 * 9, now - 86400 * 9))
    os.utime(p2, (now, now))
    assert ids(listing(home)) == [long_running.sid, recent_start.sid]


def test_threads_codex_spawned_for_itself_are_not_candidates(home):
    mine = finished_rollout(ago=3600)
    mine.write(home.home)
    review = Rollout(ago=60, source={"subagent": "review"})
    review.turn("Review the code changes against the base branch 'main'.")
    review.say("No findings.")
    review.done()
    review.write(home.home)
    spawned = Rollout(ago=50, source={"subagent": {"thread_spawn": {"parent_thread_id": mine.sid, "depth": 1}}})
    spawned.turn("sub-task")
    spawned.write(home.home)
    assert ids(listing(home)) == [mine.sid]


def test_the_live_codex_thread_is_excluded(home):
    live = crashed_rollout(ago=3)
    live.write(home.home)
    resting = finished_rollout(ago=4)  # just as recent, but at task_complete
    resting.write(home.home)
    dead = crashed_rollout(ago=2400)
    dead.write(home.home)
    doc = listing(home, extra_env={"CODEX_THREAD_ID": live.sid})
    assert ids(doc) == [resting.sid, dead.sid] and "CODEX_THREAD_ID" in doc["excluded"][0]["reason"]
    assert ids(listing(home, "--exclude", live.sid)) == [resting.sid, dead.sid]
    doc = listing(home)  # no id anywhere: a fresh mid-turn tail is the live thread
    assert ids(doc) == [resting.sid, dead.sid] and "looks live" in doc["excluded"][0]["reason"]


def fork_of(parent: Rollout, ago: float) -> Rollout:
    """A thread forked from ``parent`` as Codex writes one: its own session_meta
    (forked_from_id), the parent's, then the parent's history replayed with the
    fork's time on every line."""
    fork = Rollout(ago=ago)
    fork.lines[0]["payload"]["forked_from_id"] = parent.sid
    at = fork.lines[0]["timestamp"]
    fork.lines += [{**o, "timestamp": at} for o in parent.lines]
    return fork


def test_a_codex_fork_is_recovered_without_its_parents_replayed_history(home):
    parent = Rollout(ago=7200)
    parent.turn("add rate limiting to the public API")
    parent.shell("go test ./...")
    parent.say("Added a token bucket.")
    parent.done()
    parent.write(home.home)
    fork = fork_of(parent, ago=1800)
    fork.turn("try a sliding window instead")
    fork.shell("go test ./ratelimit/...")
    fork.say("Switched to a sliding window.")
    fork.done()
    fork.write(home.home)
    c = listing(home)["candidates"][0]
    assert c["id"] == fork.sid and c["title"] == "try a sliding window instead" and c["messages"] == 2
    text = digest(home, fork.sid)
    assert "rate limiting" not in text and "go test ./..." not in text
    assert "go test ./ratelimit/..." in section(text, "Recent tool actions")


def test_a_torn_last_line_is_tolerated_and_flagged(home):
    r = crashed_rollout(ago=1800)
    r.write(home.home, torn='{"timestamp":"2026-03-02T09:00:00Z","type":"response_item","payload":{"type":"mes')
    [c] = listing(home)["candidates"]
    assert c["id"] == r.sid and "half-written" in c["incomplete"] and "go test ./client/..." in c["incomplete"]


def test_no_codex_store_is_an_empty_answer(home):
    proc = home.run("recover", "--json", "--harness", "codex", "--cwd", CWD)
    assert proc.returncode == 0 and json.loads(proc.stdout)["candidates"] == []
    assert "Codex: " in proc.stderr and "no earlier session recorded" in proc.stderr


# ----------------------------------------------------------------------- digest


def rich_rollout(ago: float = 1800) -> Rollout:
    r = Rollout(ago=ago)
    r.turn("why do requests hang on slow upstreams?")
    r.say("There is no timeout on the client.")
    r.turn("add timeouts and retries; key is sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdEFGH")
    r._line("response_item", {"type": "message", "role": "developer",
                              "content": [{"type": "input_text", "text": "DEVELOPER PREAMBLE"}]})
    r.plan([("Add a timeout", "in_progress"), ("Add retries", "pending")], "Timeout first, then retries.")
    r.patch("client/http.py", "client/retry.py")
    r.shell("go vet ./...")
    r.shell("go test ./client/...", out="--- FAIL: TestRetry (0.01s)\nTOOL OUTPUT NOISE", code=1)
    r._line("response_item", {"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "<user_shell_command>\n<command>git status</command>\n"
                                       "<result>\nExit code: 0\n</result>\n</user_shell_command>"}]})
    r.plan([("Add a timeout", "completed"), ("Add retries", "in_progress"), ("Document the policy", "pending")])
    r.say("TestRetry fails: the backoff never resets. Fixing the reset next.")
    r.patch("client/retry.py")
    r.call("exec_command", {"cmd": "go test ./client/... -run TestRetry", "workdir": r.cwd})
    return r


def test_the_codex_digest_has_the_sections_in_priority_order(home):
    r = rich_rollout()
    r.write(home.home)
    text = digest(home, r.sid)
    assert sections(text) == ["Title", "Last instruction", "Recent asks", "Last plan or answer",
                              "Todo list (update_plan)", "Recent tool actions", "Files touched",
                              "Branch and modes", "Last turn"]
    assert text.startswith("<deja-recall>\nWorking state of an earlier Codex session")
    assert section(text, "Title") == "why do requests hang on slow upstreams? (from the first ask)"
    assert section(text, "Last instruction").startswith("add timeouts and retries; key is ")
    assert section(text, "Recent asks") == "- why do requests hang on slow upstreams?"
    answer = section(text, "Last plan or answer")
    assert answer == ("Plan: Timeout first, then retries.\n"
                      "Last answer: TestRetry fails: the backoff never resets. Fixing the reset next.")
    actions = section(text, "Recent tool actions")
    assert "apply_patch: client/http.py, client/retry.py" in actions
    assert "exec_command: go test ./client/... → exit 1" in actions
    assert "exec_command: go vet ./..." in actions and "! shell: git status" in actions
    assert "exec_command: go test ./client/... -run TestRetry → no result" in actions
    assert section(text, "Files touched").splitlines() == ["- client/http.py", "- client/retry.py"]
    assert section(text, "Branch and modes") == (
        f"branch {BRANCH}; approval: on-request; sandbox: workspace-write; model: gpt-5.4; effort: high")
    assert section(text, "Last turn").startswith(
        "Last turn may be incomplete: work was in progress on: exec_command go test ./client/... -run TestRetry")
    assert text.splitlines()[-1].endswith(f"codex resume {r.sid}")


def test_plan_updates_are_the_codex_todo_list(home):
    r = rich_rollout()
    r.write(home.home)
    text = digest(home, r.sid)
    assert section(text, "Todo list (update_plan)").splitlines() == [
        "- [x] Add a timeout", "- [>] Add retries", "- [ ] Document the policy"]
    # an explanation is the plan of its turn
    r2 = Rollout(ago=900)
    r2.turn("speed up the build")
    r2.plan([("Profile", "in_progress")], "Profile before changing anything.")
    r2.write(home.home)
    assert section(digest(home, r2.sid), "Last plan or answer") == "Plan: Profile before changing anything."


def test_codex_noise_is_stripped_and_secrets_redacted(home):
    r = rich_rollout()
    r.write(home.home)
    text = digest(home, r.sid)
    for noise in ("AGENTS.md", "be terse", "environment_context", "DEVELOPER PREAMBLE", "PRIVATE REASONING",
                  "TOOL OUTPUT NOISE", "Chunk ID", "You are Codex"):
        assert noise not in text, noise
    assert "AbCdEfGhIjKlMnOp" not in text and "[redacted:" in text


def test_codex_turn_states(home):
    complete = finished_rollout(ago=1000)
    complete.write(home.home)
    open_turn = Rollout(ago=1100)
    open_turn.turn("bump the deps")
    open_turn.shell("go get -u ./...")
    open_turn.write(home.home)
    aborted = Rollout(ago=1200)
    aborted.turn("refactor everything")
    aborted._line("event_msg", {"type": "turn_aborted", "reason": "interrupted"})
    aborted.write(home.home)
    failed = Rollout(ago=1300)
    failed.turn("hello?")
    failed._line("event_msg", {"type": "error", "message": "model does not support tools"})
    failed.done()
    failed.write(home.home)
    flags = {c["id"]: c["incomplete"] for c in listing(home, "--limit", "10")["candidates"]}
    assert flags[complete.sid] == ""
    assert flags[open_turn.sid] == ("Last turn may be incomplete: it never reached task_complete "
                                    "(last action: exec_command go get -u ./...).")
    assert flags[aborted.sid] == "The last turn was interrupted by the user."
    assert flags[failed.sid] == ("Last turn may be incomplete: the last ask got no reply "
                                 "(instead, an error: model does not support tools).")


def test_the_codex_digest_keeps_its_budget_and_names_cuts(home):
    r = rich_rollout()
    for i in range(20):
        r.turn(f"question {i} " + "with context " * 40)
        r.say(f"answer {i} " + "in words " * 80)
    r.done()
    r.write(home.home)
    for budget in (800, 1500, 3000):
        text = digest(home, r.sid, "--budget", str(budget))
        assert len(text) <= budget
        assert re.search(rf"^\[deja: cut to the {budget}-character budget: .*(dropped|shortened) ", text, re.M)
        assert text.splitlines()[-1].endswith(f"codex resume {r.sid}")


# ------------------------------------------------------------- check and repair


def test_codex_check_and_repair(home, tmp_path):
    r = crashed_rollout(ago=1800)
    path = r.write(home.home, torn='{"timestamp":"2026-03-02T09:00:00Z","type":"event_msg","pay')
    before = path.read_bytes()
    doc = json.loads(home.run("recover", "--cwd", CWD, "--session", r.sid, "--check", "--json").stdout)
    assert {p["kind"] for p in doc["problems"]} == {"dangling-tool-call", "torn-tail"}
    out = tmp_path / "repaired.jsonl"
    home.run("recover", "--cwd", CWD, "--session", r.sid, "--repair", "--out", str(out))
    assert path.read_bytes() == before
    objs = [json.loads(line) for line in out.read_text().splitlines()]  # every line parses
    calls = {o["payload"]["call_id"] for o in objs if o["payload"].get("type") in ("function_call", "custom_tool_call")}
    outputs = {o["payload"]["call_id"] for o in objs if o["payload"].get("type", "").endswith("_output")}
    assert calls and calls <= outputs
    # written into the store under a new rollout name, it is a thread codex can resume
    new = str(uuid.uuid4())
    dest = path.parent / f"rollout-2026-03-02T09-00-00-{new}.jsonl"
    proc = home.run("recover", "--cwd", CWD, "--session", r.sid, "--repair", "--out", str(dest), "--json")
    doc = json.loads(proc.stdout)
    assert doc["new_id"] == new and doc["resume"] == f"codex resume {new}"
    assert any("dropped a half-written line" in f for f in doc["fixes"])
    assert json.loads(dest.read_text().splitlines()[0])["payload"]["id"] == new
    assert new in ids(listing(home))
    check = home.run("recover", "--cwd", CWD, "--session", new, "--check", "--json")
    assert json.loads(check.stdout)["damaged"] is False


# ------------------------------------------------------------ both agents crashed


def test_a_folder_where_both_agents_crashed_offers_both_by_recency(home):
    claude = crashed(ago=1200)
    claude.write(home.home)
    codex = crashed_rollout(ago=2400)
    codex.write(home.home)
    doc = listing(home)
    assert [(c["harness"], c["id"]) for c in doc["candidates"]] == [("claude", claude.sid), ("codex", codex.sid)]
    assert all(c["incomplete"] for c in doc["candidates"])
    assert [c["resume"] for c in doc["candidates"]] == [f"claude --resume {claude.sid}", f"codex resume {codex.sid}"]
    newer = crashed_rollout(ago=600)
    newer.write(home.home)
    doc = listing(home)
    assert [c["id"] for c in doc["candidates"]] == [newer.sid, claude.sid, codex.sid]
    assert ids(listing(home, "--harness", "claude")) == [claude.sid]
    # a Claude Code started from a Codex shell: both live ids are in the environment, both are left out
    live_claude, live_codex = crashed(ago=2), crashed_rollout(ago=2)
    live_claude.write(home.home)
    live_codex.write(home.home)
    doc = listing(home, "--exclude", live_claude.sid, extra_env={"CODEX_THREAD_ID": live_codex.sid})
    assert ids(doc) == [newer.sid, claude.sid, codex.sid]
    assert {e["reason"] for e in doc["excluded"]} == {"the live session (--exclude)", "the live session (CODEX_THREAD_ID)"}
    proc = home.run("recover", "--json", "--harness", "nope", "--cwd", CWD, check=False)
    assert proc.returncode == 1 and proc.stderr.startswith("deja: unknown harness 'nope'")
