"""`deja recover` for Claude Code, the /recover skill, and the real corpus.

Every case runs the real `deja` command against a temp HOME shaped like a real
Claude Code store (``~/.claude/projects/<encoded cwd>/<session>.jsonl``), with
no index built. Timestamps are relative to now, because ranking and the
live-session heuristic are about recency. Codex and the mixed-folder case are
in test_recover_codex.py.
"""

from __future__ import annotations

import base64
import csv
import itertools
import json
import os
import re
import subprocess
import sys
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

import pytest

from conftest import CORPUS, Home, deja_cmd

CWD = "/home/dev/jack.neil/shop"  # a dot in the path: the folder name has "-" there
SLUG = "-home-dev-jack-neil-shop"


# --------------------------------------------------------------------- builders


def stamp(seconds_ago: float) -> str:
    t = datetime.fromtimestamp(time.time() - seconds_ago, timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


class ClaudeLog:
    """A Claude Code transcript written the way current builds write one: one
    line per content block, a parentUuid chain, untimestamped bookkeeping."""

    def __init__(self, sid: str | None = None, cwd: str = CWD, ago: float = 3600, branch: str = "main"):
        self.sid = sid or str(uuid.uuid4())
        self.cwd, self.branch = cwd, branch
        self.ago = ago  # seconds before now of the next timestamped line
        self.lines: list[dict] = []
        self.parent = None
        self.n = itertools.count(1)

    def _line(self, typ: str, step: float = 5, chain: bool = True, **fields) -> dict:
        obj = {"parentUuid": self.parent, "isSidechain": False, "userType": "external", "cwd": self.cwd,
               "sessionId": self.sid, "version": "2.1.20", "gitBranch": self.branch, "type": typ, **fields,
               "uuid": f"{self.sid[:8]}-{next(self.n):04d}", "timestamp": stamp(self.ago)}
        self.ago = max(0.0, self.ago - step)
        if chain:
            self.parent = obj["uuid"]
        self.lines.append(obj)
        return obj

    def user(self, content, **fields) -> dict:
        return self._line("user", message={"role": "user", "content": content}, **fields)

    def say(self, text: str, msg: str | None = None) -> dict:
        return self._assistant([{"type": "text", "text": text}], msg)

    def tool(self, name: str, inp: dict, msg: str | None = None) -> str:
        tid = f"toolu_{uuid.uuid4().hex[:12]}"
        self._assistant([{"type": "tool_use", "id": tid, "name": name, "input": inp}], msg)
        return tid

    def result(self, tid: str, content: str = "ok", is_error: bool = False) -> dict:
        return self.user([{"type": "tool_result", "tool_use_id": tid, "content": content, "is_error": is_error}])

    def _assistant(self, blocks: list, msg: str | None) -> dict:
        message = {"id": msg or f"msg_{uuid.uuid4().hex[:10]}", "type": "message", "role": "assistant",
                   "model": "claude-sonnet-4-5", "content": blocks, "stop_reason": None}
        return self._line("assistant", message=message, requestId="req_1")

    def meta(self, typ: str, **fields) -> None:
        """Bookkeeping lines carry no timestamp, cwd or uuid."""
        self.lines.append({"type": typ, **fields, "sessionId": self.sid})

    def title(self, text: str) -> None:
        self.meta("ai-title", aiTitle=text)

    def last_prompt(self, text: str) -> None:
        self.meta("last-prompt", lastPrompt=text)

    def at_rest(self) -> None:
        """What a finished turn leaves at the end of the file."""
        self.last_prompt(next((_text(o) for o in reversed(self.lines) if _is_ask(o)), ""))
        self.meta("permission-mode", permissionMode="default")

    def write(self, home: Path, folder: str = SLUG, torn: str = "") -> Path:
        path = home / ".claude" / "projects" / folder / f"{self.sid}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        text = "".join(json.dumps(o, ensure_ascii=False) + "\n" for o in self.lines)
        path.write_text(text + torn, encoding="utf-8")
        return path


def _is_ask(o: dict) -> bool:
    return o.get("type") == "user" and isinstance(o["message"]["content"], str) and not o.get("isMeta")


def _text(o: dict) -> str:
    return o["message"]["content"]


def crashed(sid=None, cwd=CWD, ago=3600, ask="make checkout survive empty carts") -> ClaudeLog:
    """A session that died with a command running."""
    log = ClaudeLog(sid, cwd, ago)
    log.user(ask)
    log.say("Looking at the cart code first.")
    tid = log.tool("Edit", {"file_path": f"{cwd}/cart.py", "old_string": "items[0]", "new_string": "sum(items)"})
    log.result(tid, "The file has been updated.")
    log.tool("Bash", {"command": "pytest tests/test_cart.py -q", "description": "run the cart tests"})
    return log


def finished(sid=None, cwd=CWD, ago=7200, ask="rename the config loader") -> ClaudeLog:
    log = ClaudeLog(sid, cwd, ago)
    log.user(ask)
    log.say("Renamed it and updated the imports.")
    log.at_rest()
    return log


def listing(home: Home, *args: str, cwd: str = CWD, **kw) -> dict:
    proc = home.run("recover", "--json", "--cwd", cwd, *args, **kw)
    return json.loads(proc.stdout)


def ids(doc: dict) -> list[str]:
    return [c["id"] for c in doc["candidates"]]


def digest(home: Home, sid: str, *args: str, cwd: str = CWD, **kw) -> str:
    return home.run("recover", "--cwd", cwd, "--session", sid, "--digest", *args, **kw).stdout


def sections(text: str) -> list[str]:
    return re.findall(r"^## (.+)$", text, re.M)


def section(text: str, name: str) -> str:
    m = re.search(rf"^## {re.escape(name)}\n(.*?)(?=^## |^\[deja:|^</deja-recall>)", text, re.M | re.S)
    return m.group(1).strip() if m else ""


# ------------------------------------------------------------ resolving the folder


def test_slug_with_dots_finds_the_folder_and_lists_the_candidate(home):
    log = crashed(ago=600)
    log.title("Empty-cart checkout fix")
    log.write(home.home)
    doc = listing(home)
    [c] = doc["candidates"]
    assert c["harness"] == "claude" and c["id"] == log.sid
    assert c["title"] == "Empty-cart checkout fix"
    assert c["last_prompt"] == "make checkout survive empty carts"
    assert c["branch"] == "main" and c["messages"] == 4  # one ask, three assistant replies
    assert c["when"].endswith("Z") and c["ago"].endswith("ago")
    assert c["resume"] == f"claude --resume {log.sid}"
    assert not home.index.exists()  # no index was needed, or built


def test_a_folder_the_slug_does_not_name_is_found_by_the_cwd_inside(home):
    # e.g. a long path a newer build shortened, or characters it encodes differently
    log = crashed(ago=600)
    log.write(home.home, folder="-home-dev-jack-neil-sh-7f3a9c")
    finished(cwd="/home/dev/other").write(home.home, folder="-home-dev-other")
    doc = listing(home)
    assert ids(doc) == [log.sid]
    assert any("-home-dev-jack-neil-sh-7f3a9c by the cwd" in n for n in doc["notes"])


def test_a_stale_older_build_folder_is_ignored(home):
    # an older build kept the dot: its folder holds older sessions of the same cwd
    old = finished(ago=86400 * 30)
    old.write(home.home, folder="-home-dev-jack.neil-shop")
    current = finished(ago=7200)
    current.write(home.home)
    doc = listing(home)
    assert ids(doc) == [current.sid]
    assert any("-home-dev-jack.neil-shop" in n and "older Claude Code build" in n for n in doc["notes"])


def test_transcripts_of_another_folder_that_encodes_the_same_are_not_offered(home):
    # /home/dev/jack-neil/shop encodes to the same folder name as /home/dev/jack.neil/shop
    mine = finished(ago=7200)
    mine.write(home.home)
    other = crashed(cwd="/home/dev/jack-neil/shop", ago=600)
    other.write(home.home)
    assert ids(listing(home)) == [mine.sid]
    assert ids(listing(home, cwd="/home/dev/jack-neil/shop")) == [other.sid]


def test_a_folder_whose_transcripts_record_another_cwd_is_ignored_with_a_reason(home):
    crashed(cwd="/home/dev/jack-neil/shop", ago=60).write(home.home)
    proc = home.run("recover", "--json", "--cwd", CWD)
    doc = json.loads(proc.stdout)
    assert doc["candidates"] == []
    assert any("no transcript in it records" in n for n in doc["notes"])
    assert "no earlier session recorded for" in proc.stderr


def test_missing_folder_and_missing_store_are_empty_answers_with_a_reason(home):
    proc = home.run("recover", "--json", "--cwd", CWD)  # no ~/.claude at all
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["candidates"] == []
    assert f"deja: no earlier session recorded for {CWD}" in proc.stderr
    # one short line: the stores this machine has, not every path of every agent deja reads
    assert "agents' stores, none on this machine" in proc.stderr and len(proc.stderr) < 200
    finished(cwd="/home/dev/other").write(home.home, folder="-home-dev-other")
    proc = home.run("recover", "--cwd", CWD)
    assert proc.returncode == 0 and proc.stdout == ""
    assert "no earlier session recorded" in proc.stderr and "Claude Code: " in proc.stderr


# ------------------------------------------------------------------- candidates


def test_the_live_session_is_excluded_by_flag_then_environment(home):
    live = crashed(ago=2)  # this very session, mid-command
    live.write(home.home)
    dead = crashed(ago=900)
    dead.write(home.home)
    doc = listing(home, "--exclude", live.sid)
    assert ids(doc) == [dead.sid]
    assert doc["excluded"] == [{"harness": "claude", "id": live.sid, "reason": "the live session (--exclude)"}]
    for var in ("CLAUDE_CODE_SESSION_ID", "CLAUDE_SESSION_ID"):
        doc = listing(home, extra_env={var: live.sid})
        assert ids(doc) == [dead.sid] and var in doc["excluded"][0]["reason"]
    # an empty --exclude (the skill's "${CLAUDE_SESSION_ID}" outside Claude) falls back to the environment
    doc = listing(home, "--exclude", "", extra_env={"CLAUDE_CODE_SESSION_ID": live.sid})
    assert ids(doc) == [dead.sid]


def test_without_an_id_a_fresh_tail_still_in_traffic_is_taken_for_the_live_session(home):
    live = crashed(ago=3)
    live.write(home.home)
    resting = finished(ago=4)  # just as recent, but ended at rest: a finished session
    resting.write(home.home)
    dead = crashed(ago=1800)
    dead.write(home.home)
    doc = listing(home)
    assert ids(doc) == [resting.sid, dead.sid]
    assert doc["excluded"][0]["id"] == live.sid and "looks live" in doc["excluded"][0]["reason"]
    assert digest(home, live.sid)  # asked for by id, it is still read


def test_a_sibling_session_still_running_is_not_the_pick_when_this_sessions_id_is_known(home):
    me = ClaudeLog(ago=40)  # the session running /recover
    me.user("/recover")
    me.write(home.home)
    sibling = crashed(ago=6, ask="write the changelog")  # another terminal, a Bash call in flight
    sibling.write(home.home)
    dead = crashed(ago=600)  # the one that crashed
    dead.write(home.home)
    for args, env in ((("--exclude", me.sid), None), ((), {"CLAUDE_CODE_SESSION_ID": me.sid})):
        doc = listing(home, *args, extra_env=env)
        assert ids(doc)[0] == dead.sid and sibling.sid not in ids(doc)
        assert {e["id"]: e["reason"] for e in doc["excluded"]}[sibling.sid].startswith("looks live")


def test_candidates_rank_by_their_last_timestamped_line_not_mtime(home):
    older = finished(ago=86400)
    newer = finished(ago=3600)
    p_old, p_new = older.write(home.home), newer.write(home.home)
    now = time.time()
    os.utime(p_old, (now, now))  # touched by a backup just now
    os.utime(p_new, (now - 86400 * 7, now - 86400 * 7))
    doc = listing(home)
    assert ids(doc) == [newer.sid, older.sid]
    assert ids(listing(home, "--limit", "1")) == [newer.sid]
    assert listing(home, "--limit", "1")["more"] == 1


def test_subagent_transcripts_are_never_candidates_or_state(home):
    main = crashed(ago=1800)
    main.lines.insert(1, {**main.lines[0], "isSidechain": True, "agentId": "a1b2c3",
                          "message": {"role": "user", "content": "SUBAGENT PROMPT"}, "uuid": "side-1"})
    path = main.write(home.home)
    sub = crashed(sid=main.sid, ago=60, ask="review the diff")
    for o in sub.lines:
        o.update(isSidechain=True, agentId="a1b2c3")
    sub_path = path.parent / main.sid / "subagents" / "agent-a1b2c3.jsonl"
    sub_path.parent.mkdir(parents=True)
    sub_path.write_text("".join(json.dumps(o) + "\n" for o in sub.lines))
    legacy = crashed(ago=30, ask="old-style agent")  # 2.0.x wrote agent-<id>.jsonl beside the sessions
    (path.parent / "agent-7f3e2a1c.jsonl").write_text("".join(json.dumps(o) + "\n" for o in legacy.lines))
    doc = listing(home)
    assert ids(doc) == [main.sid]
    assert "SUBAGENT PROMPT" not in digest(home, main.sid)


def test_a_half_written_last_line_is_tolerated_and_flagged(home):
    log = crashed(ago=1200)
    path = log.write(home.home, torn='{"parentUuid":"x","type":"assistant","message":{"content":[{"type":"te')
    # a crash scar in the middle (a torn line written over by the resumed session) is skipped too
    lines = path.read_text().splitlines(keepends=True)
    lines.insert(2, '{"type":"user","message":{"role":"user","content":"tru\n')
    path.write_text("".join(lines))
    [c] = listing(home)["candidates"]
    assert c["id"] == log.sid and c["last_prompt"] == "make checkout survive empty carts"
    assert "half-written" in c["incomplete"]
    text = digest(home, log.sid)
    assert "half-written line" in section(text, "Last turn")
    assert "pytest tests/test_cart.py -q" in section(text, "Last turn")


def test_a_large_transcript_is_read_from_its_head_and_tail(home):
    log = ClaudeLog(ago=7200)
    log.title("Migrate the billing schema")  # written once, at the start
    log.user("migrate the billing schema to v2")
    for i in range(60):  # ~12 MB of tool output in the middle
        t = log.tool("Read", {"file_path": f"{CWD}/schema/part{i}.sql"}, msg=f"msg_r{i}")
        log.result(t, "x" * 200_000)
    log.user("now run the migration on staging")
    log.tool("Bash", {"command": "make migrate ENV=staging"})
    path = log.write(home.home)
    assert path.stat().st_size > 10 << 20
    [c] = listing(home)["candidates"]
    assert c["title"] == "Migrate the billing schema" and c["messages_partial"] is True
    assert c["last_prompt"] == "now run the migration on staging"
    text = digest(home, log.sid)
    assert "Only the start and the last 4 MiB of its 11 MiB transcript were read." in text.replace("\n", " ")
    assert "make migrate ENV=staging" in section(text, "Last turn")


def screenshot_paste(log: ClaudeLog, mib: float = 5) -> None:
    """The person pastes a screenshot: one user line of base64 longer than the 4 MiB tail."""
    data = base64.b64encode(os.urandom(int(mib * (1 << 20) * 3 / 4))).decode()
    log.user([{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}},
              {"type": "text", "text": "still broken, see this screenshot"}])


def test_a_session_whose_last_line_is_a_huge_paste_is_still_recovered(home):
    log = crashed(ago=900)
    tid = log.lines[-1]["message"]["content"][0]["id"]
    log.result(tid, "3 passed")
    log.say("The cart tests pass now.")
    screenshot_paste(log)
    path = log.write(home.home)
    assert path.stat().st_size > 5 << 20
    [c] = listing(home)["candidates"]  # named by the head, ranked by the turns before the paste
    assert c["id"] == log.sid and c["last_prompt"] == "make checkout survive empty carts"
    assert c["messages_partial"] is True
    text = digest(home, log.sid)
    assert "The cart tests pass now." in section(text, "Last plan or answer")
    assert "pytest tests/test_cart.py -q" in section(text, "Recent tool actions")


# ------------------------------------------------------------------------ digest


AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"  # the documentation's example key


def rich_session(ago: float = 1800) -> ClaudeLog:
    """A session with every kind of state the digest rebuilds, and the noise it must leave out."""
    log = ClaudeLog(ago=ago, branch="fix/empty-cart")
    log.meta("file-history-snapshot", messageId="m0", isSnapshotUpdate=False,
             snapshot={"messageId": "m0", "trackedFileBackups": {"docs/notes.md": {}}, "timestamp": stamp(ago)})
    log.meta("permission-mode", permissionMode="acceptEdits")
    log.user("<local-command-caveat>Caveat: local commands</local-command-caveat>", isMeta=True)
    log.user("<command-name>/model</command-name>\n<command-message>model</command-message>\n"
             "<command-args></command-args>")
    log.user("<local-command-stdout>Set model to opus</local-command-stdout>")
    log.user("why does checkout 500 on empty carts?")
    log.say("Because total indexes items[0].")
    log.user("<command-message>fix-issue is running…</command-message>\n<command-name>/fix-issue</command-name>\n"
             "<command-args>482</command-args>")
    log.user("Skill body: follow these 40 steps…", isMeta=True)
    log.user([{"type": "text", "text": "<ide_opened_file>The user opened cart.py</ide_opened_file>"},
              {"type": "text", "text": f"also keep AWS_SECRET_ACCESS_KEY={AWS_SECRET} out of logs\x1b[31m"}])
    log.say("Plan below.")
    log._assistant([{"type": "thinking", "thinking": "PRIVATE REASONING", "signature": "sig"}], None)
    log.result(log.tool("ExitPlanMode", {"plan": "1. guard empty carts\n2. add a regression test"}), "User approved")
    log.result(log.tool("TodoWrite", {"todos": [{"content": "Guard empty carts", "status": "pending",
                                                 "activeForm": "Guarding"}]}), "Todos have been modified")
    t = log.tool("Edit", {"file_path": f"{CWD}/shop/cart.py", "old_string": "items[0]", "new_string": "sum(items)"})
    log.result(t, "The file has been updated.")
    t = log.tool("Write", {"file_path": f"{CWD}/tests/test_cart.py", "content": "def test_empty(): ..."})
    log.result(t, "File created")
    log.result(log.tool("TodoWrite", {"todos": [
        {"content": "Guard empty carts", "status": "completed", "activeForm": "Guarding"},
        {"content": "Add a regression test", "status": "in_progress", "activeForm": "Adding"},
        {"content": "Update the changelog", "status": "pending", "activeForm": "Updating"}]}), "Todos have been modified")
    t = log.tool("Bash", {"command": "pytest tests/test_cart.py -q", "description": "run tests"})
    log.result(t, "Exit code 1\n" + "E   AssertionError: TOOL OUTPUT NOISE\n" * 50, is_error=True)
    log.user("<system-reminder>Remember the todo list</system-reminder>")
    log._line("assistant", isApiErrorMessage=True,
              message={"role": "assistant", "model": "<synthetic>",
                       "content": [{"type": "text", "text": "Prompt is too long"}]})
    log.say("The test fails because the fixture is stale; next I will rebuild the fixture.")
    t = log.tool("Bash", {"command": "make fixtures", "description": "rebuild fixtures"})
    log.meta("mode", mode="normal")
    log.last_prompt(f"also keep AWS_SECRET_ACCESS_KEY={AWS_SECRET} out of logs")
    log.meta("custom-title", customTitle="Empty-cart 500")
    log.title("Investigate checkout errors")
    return log


def test_the_digest_has_the_sections_of_the_design_in_priority_order(home):
    log = rich_session()
    log.write(home.home)
    text = digest(home, log.sid)
    assert sections(text) == ["Title", "Last instruction", "Recent asks", "Last plan or answer",
                              "Todo list (TodoWrite)", "Recent tool actions", "Files touched",
                              "Branch and modes", "Last turn"]
    assert text.startswith("<deja-recall>\nWorking state of an earlier Claude Code session")
    assert section(text, "Title") == "Empty-cart 500"  # a person's rename outranks the AI title
    assert "out of logs" in section(text, "Last instruction")
    asks = section(text, "Recent asks")
    assert "why does checkout 500 on empty carts?" in asks and "/fix-issue 482" in asks
    answer = section(text, "Last plan or answer")
    assert "1. guard empty carts" in answer and "rebuild the fixture" in answer
    actions = section(text, "Recent tool actions")
    assert "Edit: shop/cart.py" in actions and "Bash: pytest tests/test_cart.py -q → exit 1" in actions
    assert "Bash: make fixtures → no result" in actions
    files = section(text, "Files touched").splitlines()
    assert files == ["- docs/notes.md", "- shop/cart.py", "- tests/test_cart.py"]
    assert section(text, "Branch and modes") == "branch fix/empty-cart; permission mode: acceptEdits; mode: normal"
    assert section(text, "Last turn").startswith(
        "Last turn may be incomplete: work was in progress on: Bash make fixtures")


def test_a_last_prompt_that_only_picks_an_option_is_shown_beside_its_request(home):
    log = ClaudeLog(ago=600)
    log.user("migrate the session cache off memcached; which store should it use?")
    log.say("Options: (a) Redis, (b) Postgres, (c) SQLite. Which one?")
    log.user("c")
    log.say("SQLite it is; writing the migration now.")
    log.write(home.home)
    last = section(digest(home, log.sid), "Last instruction")
    assert last.startswith("migrate the session cache off memcached") and last.endswith("(latest answer: c)")


def test_the_latest_todowrite_state_is_the_todo_list(home):
    log = rich_session()
    log.write(home.home)
    todos = section(digest(home, log.sid), "Todo list (TodoWrite)").splitlines()
    assert todos == ["- [x] Guard empty carts", "- [>] Add a regression test", "- [ ] Update the changelog"]


def test_noise_is_stripped_and_secrets_redacted(home):
    log = rich_session()
    log.write(home.home)
    text = digest(home, log.sid)
    for noise in ("Caveat", "/model", "Set model to opus", "Skill body", "ide_opened_file", "PRIVATE REASONING",
                  "TOOL OUTPUT NOISE", "system-reminder", "Remember the todo list", "Prompt is too long",
                  "command-name", "\x1b"):
        assert noise not in text, noise
    assert "wJalrXUtnFEMI" not in text and "[redacted:" in text


def test_the_listing_shows_a_transcripts_branch_without_its_escape_sequences(home):
    log = finished(ago=600)
    log.branch = "main\x1b]0;PWNED\x07\x1b[2J\u202eevil"
    for o in log.lines:
        if "gitBranch" in o:
            o["gitBranch"] = log.branch
    log.write(home.home)
    out = home.run("recover", "--cwd", CWD).stdout
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert re.search(r"  main ?evil  ", out.splitlines()[0])
    branch = listing(home)["candidates"][0]["branch"]
    assert branch.startswith("main") and "\x1b" not in branch and "\u202e" not in branch


def test_the_incomplete_turn_flag(home):
    running = crashed(ago=900)
    running.write(home.home)
    unanswered = finished(ago=1000)
    unanswered.user("and the admin page too?")
    unanswered.write(home.home)
    answered = finished(ago=1100)
    answered.write(home.home)
    results_back = ClaudeLog(ago=1200)
    results_back.user("run the linter")
    results_back.result(results_back.tool("Bash", {"command": "ruff check ."}), "All checks passed!")
    results_back.write(home.home)
    flags = {c["id"]: c["incomplete"] for c in listing(home, "--limit", "10")["candidates"]}
    assert flags[running.sid].startswith("Last turn may be incomplete: work was in progress on: Bash pytest")
    assert flags[unanswered.sid] == "Last turn may be incomplete: the last ask got no reply."
    assert flags[answered.sid] == ""
    assert "never answered (last action: Bash ruff check .)" in flags[results_back.sid]
    assert section(digest(home, answered.sid), "Last turn") == "The last turn ended normally."


def test_the_budget_is_kept_and_what_was_cut_is_named(home):
    log = rich_session()
    for i in range(30):
        log.user(f"follow-up question number {i} " + "with a lot of context " * 30)
        log.say(f"answer {i} " + "in many words " * 60)
    log.write(home.home)
    full = digest(home, log.sid, "--budget", "100000")
    assert "[deja: cut" not in full
    assert len(full) < 5000
    for budget in (800, 1200, 2500, 3500):
        text = digest(home, log.sid, "--budget", str(budget))
        assert len(text) <= budget, (budget, len(text))
        note = re.search(r"^\[deja: cut to the (\d+)-character budget: (.*)\]$", text, re.M)
        assert note and int(note.group(1)) == budget
        named = re.findall(r"(?:dropped|shortened) ([^;]+)", note.group(2))
        named = {n.strip() for group in named for n in group.split(", ")}
        assert named, "something had to go"
        for name in set(sections(full)) - set(sections(text)):
            assert name in named, (budget, name)  # never dropped silently
        assert text.rstrip().endswith(f"claude --resume {log.sid}")
    proc = home.run("recover", "--cwd", CWD, "--session", log.sid, "--digest", "--budget", "100", check=False)
    assert proc.returncode == 1 and proc.stderr.startswith("deja: --budget takes at least")


def test_the_digest_ends_with_the_exact_resume_command(home):
    log = crashed(ago=900)
    log.write(home.home)
    text = digest(home, log.sid)
    assert text.splitlines()[-1] == (
        f"Resume it natively (the full thread) from a fresh terminal in {CWD}: claude --resume {log.sid}")
    doc = json.loads(home.run("recover", "--cwd", CWD, "--session", log.sid[:8], "--digest", "--json").stdout)
    assert doc["resume"] == f"claude --resume {log.sid}" and doc["id"] == log.sid and doc["digest"] == text


def test_session_ids_resolve_by_prefix_and_unknown_ids_fail_in_one_line(home):
    log = crashed(sid="7f1c0000-0000-4000-8000-000000000001", ago=900)
    log.write(home.home)
    # a pasted prefix, quotes and all
    assert digest(home, "'7f1c0000'").splitlines()[-1].endswith(f"claude --resume {log.sid}")
    proc = home.run("recover", "--cwd", CWD, "--session", "ffff", "--digest", check=False)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1
    assert proc.stderr.startswith("deja: no session 'ffff' recorded for")
    proc = home.run("recover", "--cwd", CWD, "--digest", check=False)
    assert proc.returncode == 1 and "--session" in proc.stderr


# ------------------------------------------------------------- check and repair


def damaged_session(ago: float = 900) -> ClaudeLog:
    log = ClaudeLog(ago=ago)
    log.user("bump the version and tag it")
    t = log.tool("Bash", {"command": "git tag v1.2.0"})
    log.result(t, "")
    log.say("Tagged.")
    log.user("now push the tag")
    lost = log.say("Pushing.")  # this line is lost in the crash: the next one points at it
    log.lines.remove(lost)
    log.tool("Bash", {"command": "git push origin v1.2.0"})
    return log


def _decoded(path: Path) -> list[dict]:
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out


def _chain_ok(path: Path) -> tuple[bool, set, set]:
    """Whether the thread from the last line back is unbroken; the tool_use ids
    on it and the tool_result ids in the file."""
    objs = _decoded(path)
    by_uuid = {o["uuid"]: o for o in objs if o.get("uuid")}
    node = [o for o in objs if o.get("uuid")][-1]
    uses, results, unbroken = set(), set(), True
    while node:
        content = node.get("message", {}).get("content")
        for b in content if isinstance(content, list) else []:
            if b.get("type") == "tool_use":
                uses.add(b["id"])
        parent = node.get("parentUuid")
        if parent and parent not in by_uuid:
            unbroken = False
        node = by_uuid.get(parent)
    for o in objs:
        content = o.get("message", {}).get("content")
        for b in content if isinstance(content, list) else []:
            if b.get("type") == "tool_result":
                results.add(b["tool_use_id"])
    return unbroken, uses, results


def test_check_reports_what_the_crash_did(home):
    log = damaged_session()
    path = log.write(home.home, torn='{"type":"user","message":{"role":"us')
    doc = json.loads(home.run("recover", "--cwd", CWD, "--session", log.sid, "--check", "--json").stdout)
    assert doc["damaged"] is True
    kinds = {p["kind"]: p["line"] for p in doc["problems"]}
    assert kinds == {"broken-parent": 6, "dangling-tool-call": 6, "torn-tail": 7}
    assert "never got a result" in next(p["detail"] for p in doc["problems"] if p["kind"] == "dangling-tool-call")
    clean = finished(ago=100)
    clean.write(home.home)
    out = home.run("recover", "--cwd", CWD, "--session", clean.sid, "--check").stdout
    assert out.strip().endswith("no crash damage found")
    assert path.exists()


def test_repair_writes_a_clean_copy_and_never_touches_the_original(home, tmp_path):
    log = damaged_session()
    path = log.write(home.home, torn='{"type":"user","message":{"role":"us')
    before = path.read_bytes()
    out = tmp_path / "repaired.jsonl"
    proc = home.run("recover", "--cwd", CWD, "--session", log.sid, "--repair", "--out", str(out))
    assert path.read_bytes() == before
    assert "dropped a half-written line" in proc.stdout and "re-attached" in proc.stdout
    assert len(_decoded(out)) == len(out.read_text().splitlines())  # every line of the copy parses
    unbroken, uses, results = _chain_ok(out)
    assert unbroken and uses and uses <= results  # every call on the live thread has its result
    assert _chain_ok(path)[0] is False  # (the original's thread was broken)
    fixed = json.loads(home.run("recover", "--cwd", CWD, "--session", log.sid, "--check", "--json").stdout)
    assert fixed["damaged"]  # still: the original is as it was
    again = home.run("recover", "--cwd", CWD, "--session", log.sid, "--repair", "--out", str(out), check=False)
    assert again.returncode == 1 and "exists" in again.stderr
    same = home.run("recover", "--cwd", CWD, "--session", log.sid, "--repair", "--out", str(path), check=False)
    assert same.returncode == 1 and path.read_bytes() == before


def test_a_repaired_copy_written_into_the_store_is_a_new_resumable_session(home):
    log = damaged_session()
    path = log.write(home.home)
    new = str(uuid.uuid4())
    proc = home.run("recover", "--cwd", CWD, "--session", log.sid, "--repair", "--out", str(path.parent / f"{new}.jsonl"))
    assert f"claude --resume {new}" in proc.stdout
    copy = path.parent / f"{new}.jsonl"
    assert {json.loads(line)["sessionId"] for line in copy.read_text().splitlines()} == {new}
    assert set(ids(listing(home))) == {log.sid, new}
    assert json.loads(home.run("recover", "--cwd", CWD, "--session", new, "--check", "--json").stdout)["damaged"] is False


def test_a_harness_added_later_brings_its_recovery_through_the_interface(home, monkeypatch):
    """A reader registered in deja.stages.sources with a deja.stages.recover.<harness> module
    takes part in phase 1 and phase 2 with no change to the command."""
    import types

    from deja.queries import recover
    from deja.stages import sources

    claude = crashed(ago=1800)
    claude.write(home.home)
    mod = types.ModuleType("deja.stages.recover.gemini")
    chat = home.home / ".gemini" / "tmp" / "shop" / "chats" / "session-1.jsonl"
    mod.recover_candidates = lambda cwd, env: recover.FolderScan(
        [recover.Candidate("gemini", "g-1234", str(chat), int((time.time() - 600) * 1000))], ["Gemini CLI: ~/.gemini"])
    mod.recover_state = lambda path, sid: recover.WorkingState(
        "gemini", sid, path, cwd=CWD, title="Gemini work", last_prompt="tidy the css", messages=3)
    monkeypatch.setitem(sys.modules, mod.__name__, mod)
    monkeypatch.setitem(sources.READERS, "gemini", "deja.stages.sources.gemini")
    env = {"HOME": str(home.home)}
    got = recover.find_candidates(CWD, env)
    got_ids = [(e.candidate.harness, e.candidate.session_id) for e in got.entries]
    assert got_ids == [("gemini", "g-1234"), ("claude", claude.sid)]
    cand, found, _ = recover.resolve_session("g-12", CWD, env)
    text = recover.build_digest(found.recover_state(cand.path, cand.session_id)).text
    assert "## Last instruction\ntidy the css" in text and text.splitlines()[-1].endswith("gemini --resume g-1234")


# ------------------------------------------------------------------------ skill


def test_install_skill_puts_it_where_claude_and_codex_read_skills_idempotently(home):
    first = home.run("recover", "--install-skill").stdout.split()
    claude_skill = home.home / ".claude" / "skills" / "recover" / "SKILL.md"
    codex_skill = home.home / ".agents" / "skills" / "recover" / "SKILL.md"
    assert sorted(first) == sorted([str(claude_skill), str(codex_skill)])
    text = claude_skill.read_text()
    assert text.startswith("---\nname: recover\ndescription: ") and "crashed" in text.split("---")[1]
    assert home.run("recover", "--install-skill").stdout.strip() == "the /recover skill is up to date"
    claude_skill.write_text(text + "\nmy own note\n")  # the user edited it
    home.run("recover", "--install-skill")
    assert claude_skill.read_text() == text
    assert (claude_skill.parent / "SKILL.md.bak").read_text().endswith("my own note\n")
    config = home.root / "claude-config"
    home.run("recover", "--install-skill", extra_env={"CLAUDE_CONFIG_DIR": str(config)})
    assert (config / "skills" / "recover" / "SKILL.md").read_text() == text


def test_the_skill_flow_runs_as_a_script_through_the_installed_command(home, tmp_path):
    """Phase 1 JSON, pick, phase 2, exactly as SKILL.md tells the agent to run them."""
    project = tmp_path / "work" / "shop.app"
    project.mkdir(parents=True)
    cwd = str(project.resolve())
    slug = re.sub(r"[^A-Za-z0-9]", "-", cwd)
    live = crashed(cwd=cwd, ago=1)  # the session /recover runs in
    live.write(home.home, folder=slug)
    dead = rich_session(ago=1200)
    dead.cwd = cwd
    for o in dead.lines:
        if "cwd" in o:
            o["cwd"] = cwd
    dead.write(home.home, folder=slug)
    older = finished(cwd=cwd, ago=86400)
    older.write(home.home, folder=slug)
    home.run("recover", "--install-skill")
    skill = (home.home / ".claude" / "skills" / "recover" / "SKILL.md").read_text()
    blocks = re.findall(r"```sh\n(.*?)\n```", skill, re.S)
    phase1, phase2 = blocks[0], blocks[1]
    assert phase1.startswith("deja recover --json") and "<id>" in phase2

    env = dict(home.env, PATH=f"{Path(deja_cmd()[0]).parent}{os.pathsep}{home.env['PATH']}",
               CLAUDE_SESSION_ID=live.sid)  # what Claude substitutes for ${CLAUDE_SESSION_ID}
    run = lambda cmd: subprocess.run(["bash", "-c", cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    first = run(phase1)
    assert first.returncode == 0, first.stderr
    doc = json.loads(first.stdout)
    pick, *alternates = doc["candidates"]
    assert pick["id"] == dead.sid and [a["id"] for a in alternates] == [older.sid]
    assert {"title", "last_prompt", "when", "ago", "branch", "harness", "incomplete", "resume"} <= set(pick)
    second = run(phase2.replace("<id>", pick["id"]))
    assert second.returncode == 0, second.stderr
    text = second.stdout
    assert text.startswith("<deja-recall>") and "## Last instruction" in text
    assert text.splitlines()[-1].endswith(f"claude --resume {dead.sid}")
    assert len(text) <= 8000
    # the wrong-pick branch: the user names an alternate
    alt = run(phase2.replace("<id>", alternates[0]["id"]))
    assert alt.stdout.splitlines()[-1].endswith(f"claude --resume {older.sid}")


def test_nothing_to_recover_is_an_honest_empty_answer_for_the_skill(home, tmp_path):
    proc = home.run("recover", "--json", "--cwd", str(tmp_path))
    assert proc.returncode == 0 and json.loads(proc.stdout)["candidates"] == []
    assert proc.stderr.startswith("deja: no earlier session recorded for")


# ------------------------------------------------------------------ lightness


def test_recovery_imports_nothing_heavy(home):
    log = crashed(ago=900)
    log.write(home.home)
    script = (
        "import sys\n"
        "from deja.pipeline.cli import main\n"
        "for argv in (['recover', '--json', '--cwd', sys.argv[1]],\n"
        "             ['recover', '--cwd', sys.argv[1], '--session', sys.argv[2], '--digest']):\n"
        "    try:\n"
        "        main(argv)\n"
        "    except SystemExit:\n"
        "        pass\n"
        "heavy = sorted(m for m in ('pyarrow', 'polars', 'duckdb', 'numpy') if m in sys.modules)\n"
        "print('HEAVY', heavy)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script, CWD, log.sid], env=home.env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith("HEAVY []")


# ------------------------------------------------------------------ real corpus


def corpus_rows() -> list[dict]:
    with open(CORPUS / "MANIFEST.tsv", newline="") as fh:
        return [r for r in csv.DictReader(fh, delimiter="\t") if r["harness"] in ("claude", "codex")]


@pytest.fixture(scope="module")
def real_home(tmp_path_factory):
    if not (CORPUS / "MANIFEST.tsv").exists():
        pytest.skip("../shared/corpus/real is not here")
    from test_real_corpus import lay_out

    home = Home(tmp_path_factory.mktemp("real-recover"))
    rows = corpus_rows()
    lay_out(home.home, rows)
    return home, rows


def _recorded_cwds(rows) -> set[str]:
    """The folders the published sessions ran in, as their own lines record them."""
    cwds = set()
    for r in rows:
        if "subagents" in r["source_path"] or "/agent-" in r["source_path"]:
            continue
        for line in open(CORPUS / r["harness"] / r["file"], encoding="utf-8", errors="replace"):
            o = json.loads(line) if line.strip() else {}
            cwd = o.get("cwd") if r["harness"] == "claude" else (o.get("payload") or {}).get("cwd")
            if isinstance(cwd, str) and cwd:
                cwds.add(cwd)
                break
    return cwds


def _last_instruction_oracle(path: Path, harness: str) -> str:
    """What the harness itself recorded as the person's last instruction, if anything:
    Claude's last-prompt line, Codex's last user_message event."""
    last = ""
    for line in open(path, encoding="utf-8", errors="replace"):
        try:
            o = json.loads(line)
        except ValueError:
            continue
        if harness == "claude" and o.get("type") == "last-prompt" and isinstance(o.get("lastPrompt"), str):
            last = o["lastPrompt"]
        p = o.get("payload") if isinstance(o.get("payload"), dict) else {}
        if harness == "codex" and p.get("type") == "user_message" and isinstance(p.get("message"), str):
            last = p["message"]
    return last


def test_every_real_session_digest_fits_its_budget_and_names_the_last_instruction(real_home):
    """Phase 1 through the command for every folder the published sessions ran
    in; phase 2 for every candidate through the calls the command makes (a
    process per digest would only add start-up time)."""
    from deja.queries import recover
    from deja.stages.display import one_line

    home, rows = real_home
    budgets = itertools.cycle((2000, 4000, 8000))
    seen = set()
    for cwd in sorted(_recorded_cwds(rows)):
        doc = listing(home, "--limit", "50", cwd=cwd)
        for c in doc["candidates"]:
            budget = next(budgets)
            cand, mod, _ = recover.resolve_session(c["id"], recover.resolve_cwd(cwd), home.env)
            text = recover.build_digest(mod.recover_state(cand.path, cand.session_id), budget).text
            assert len(text) <= budget, (c["id"], budget, len(text))
            assert text.splitlines()[-1].endswith(c["resume"]) and c["resume"]
            want = _last_instruction_oracle(Path(c["path"]), c["harness"])
            if want:
                head = one_line(recover.clean(want), 10_000)[:40].rstrip(" …")
                assert head in one_line(section(text, "Last instruction"), 100_000), (c["id"], head)
            seen.add(c["id"])
    assert seen == _recoverable_ids(rows)


def _recoverable_ids(rows) -> set[str]:
    """Sessions a person ran that hold any conversation: not subagent transcripts,
    not threads Codex spawned for itself, not files with no user or assistant line."""
    out = set()
    for r in rows:
        if "subagents" in r["source_path"] or "/agent-" in r["source_path"]:
            continue
        if int(r["user_msgs"]) + int(r["assistant_msgs"]) == 0:
            continue
        if r["harness"] == "codex":
            with open(CORPUS / "codex" / r["file"], encoding="utf-8") as fh:
                source = json.loads(fh.readline())["payload"].get("source")
            if isinstance(source, dict) and "subagent" in source:
                continue
        out.add(re.search(r"([0-9a-f-]{36})\.jsonl$", r["source_path"]).group(1))
    return out


def test_every_real_transcript_rebuilds_within_any_budget():
    if not (CORPUS / "MANIFEST.tsv").exists():
        pytest.skip("../shared/corpus/real is not here")
    from deja.queries.recover import build_digest
    from deja.stages.recover import claude as claude_recover, codex as codex_recover

    for r in corpus_rows():
        mod = claude_recover if r["harness"] == "claude" else codex_recover
        state = mod.recover_state(str(CORPUS / r["harness"] / r["file"]), "x")
        for budget in (800, 3000, 8000):
            assert len(build_digest(state, budget).text) <= budget, (r["file"], budget)


def test_an_incomplete_turns_note_ending_in_a_commands_own_dots_gets_no_period_more():
    from types import SimpleNamespace

    from deja.stages.recover.base import incomplete_note

    running = SimpleNamespace(tool="exec_command", detail="go test -race ./...")
    for note in (incomplete_note("result", [running], [], True, "", noun="rollout", output="output", unanswered=""),
                 incomplete_note("interrupt", [], [running], False, "", noun="rollout", output="output",
                                 unanswered="")):
        assert note.endswith("go test -race ./...") and not note.endswith("....")
    plain = incomplete_note("interrupt", [], [], False, "", noun="rollout", output="output", unanswered="")
    assert plain == "The last turn was interrupted by the user."


def test_from_a_folder_reached_through_a_symlink_the_sessions_run_at_its_real_path_are_offered(home):
    """A session run at the repository's real path is filed under that
    spelling's folder; asked from the link, recover finds it as well as the
    ones run through the link."""
    import re

    real = home.root / "data" / "shop"
    real.mkdir(parents=True)
    link = home.root / "code-shop"
    link.symlink_to(real)
    at_real = crashed(cwd=str(real), ago=900, ask="fix the cart totals at the real path")
    at_real.write(home.home, folder=re.sub(r"[^A-Za-z0-9]", "-", str(real)))
    via_link = finished(cwd=str(link), ago=1800, ask="rename the loader through the link")
    via_link.write(home.home, folder=re.sub(r"[^A-Za-z0-9]", "-", str(link)))
    assert set(ids(listing(home, cwd=str(link)))) == {at_real.sid, via_link.sid}
    assert ids(listing(home, cwd=str(real))) == [at_real.sid]  # (the link's spelling cannot be known from here)
