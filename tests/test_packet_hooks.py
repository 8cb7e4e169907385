"""Compaction recovery end to end (seeds 000/001, hooks-contract §5.3): the real
`deja hook-precompact` captures a packet from a live transcript in a temp HOME,
and the next session-start, prompt or tool hook of the same session and
workspace hands it back once, framed, within 4 KiB."""

from __future__ import annotations

import base64
import json
import os
import subprocess
from pathlib import Path

import duckdb
import pytest

from conftest import Home, claude_assistant, claude_user, deja_cmd, write_jsonl

SID = "c0c0c0c0-1111-4000-8000-000000000001"
OBJECTIVE = "Migrate the billing exporter to the v2 API, but keep the CSV column order stable for finance."
SECRET = "sk-ant-api03-" + "A1b2C3d4E5f6G7h8" * 5


def _git(repo: Path, *args: str) -> str:
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")
    return subprocess.run(["git", "-C", str(repo), *args], env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


def _repo(home: Home) -> Path:
    repo = home.root / "work" / "billing"
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    (repo / "exporter.py").write_text("COLUMNS = ['id', 'amount']\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "init")
    return repo


def _tool(sid, cwd, n, name, inp, ts):
    return claude_assistant(sid, [{"type": "tool_use", "id": f"tu{n}", "name": name, "input": inp}], ts, f"a{n}",
                            msg_id=f"m{n}", cwd=cwd)


def _result(sid, cwd, n, content, ts, is_error=False):
    row = claude_user(sid, "", ts, f"r{n}", cwd=cwd)
    row["message"]["content"] = [{"type": "tool_result", "tool_use_id": f"tu{n}", "content": content,
                                  "is_error": is_error}]
    return row


def _transcript(home: Home, cwd: str, sid: str = SID, extra: list[dict] | None = None) -> Path:
    ts = "2026-11-20T10:%02d:00Z"
    rows = [
        claude_user(sid, OBJECTIVE, ts % 0, "u0", cwd=cwd),
        claude_user(sid, "Never modify the legacy/ directory; always run the tests before committing.", ts % 1,
                    "u1", cwd=cwd),
        claude_assistant(sid, [{"type": "text", "text": "Looking at the exporter first."}], ts % 2, "a2",
                         msg_id="m2", cwd=cwd),
        _tool(sid, cwd, 3, "Bash", {"command": "pytest tests/test_exporter.py -q"}, ts % 3),
        _result(sid, cwd, 3, "Exit code 1\nFAILED tests/test_exporter.py::test_columns - AssertionError", ts % 3,
                is_error=True),
        _tool(sid, cwd, 4, "Edit", {"file_path": f"{cwd}/exporter.py", "old_string": "a", "new_string": "b"},
              ts % 4),
        _result(sid, cwd, 4, f"The file {cwd}/exporter.py has been updated successfully.", ts % 4),
        _tool(sid, cwd, 5, "Bash", {"command": "pytest tests/test_exporter.py -q"}, ts % 5),
        _result(sid, cwd, 5, "4 passed in 0.31s", ts % 5),
        claude_user(sid, "continue", ts % 6, "u6", cwd=cwd),
        claude_assistant(sid, [{"type": "text", "text":
                                "The root cause was the v1 client sorting columns alphabetically; we pinned the "
                                f"order in COLUMNS (smoke-tested with {SECRET}).\n\nStill open: the refund export still uses the v1 client.\n"
                                "Conflict: finance wants ISO dates but the API returns epoch seconds."}],
                         ts % 7, "a7", msg_id="m7", cwd=cwd),
    ] + (extra or [])
    path = home.claude_file(sid, cwd)
    write_jsonl(path, rows)
    return path


def hook(home: Home, name: str, payload: dict, *args, env: dict | None = None) -> str:
    proc = subprocess.run(deja_cmd() + [name, *args], input=json.dumps(payload).encode(),
                          env=dict(home.env, **(env or {})), capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert not proc.stderr or b"Traceback" not in proc.stderr
    return proc.stdout.decode("utf-8")


def precompact(home, path, cwd, sid=SID, **env):
    out = hook(home, "hook-precompact", {"session_id": sid, "transcript_path": str(path) if path else None,
                                         "cwd": cwd, "hook_event_name": "PreCompact", "trigger": "auto"},
               env=env or None)
    assert out == ""  # PreCompact prints nothing


def start(home, cwd, sid=SID, source="compact"):
    return hook(home, "hook-context", {"session_id": sid, "cwd": cwd, "hook_event_name": "SessionStart",
                                       "source": source})


def prompt(home, cwd, text="what next?", sid=SID):
    return hook(home, "hook-prompt", {"session_id": sid, "cwd": cwd, "hook_event_name": "UserPromptSubmit",
                                      "prompt": text})


def pre_tool(home, cwd, tool="Bash", inp=None, sid=SID):
    return hook(home, "hook-tool", {"session_id": sid, "cwd": cwd, "hook_event_name": "PreToolUse",
                                    "tool_name": tool, "tool_input": inp or {"command": "ls"}, "tool_use_id": "x"})


def context_of(out: str) -> str:
    env = json.loads(out)
    return env["hookSpecificOutput"]["additionalContext"]


def packets(home: Home) -> list[tuple]:
    con = duckdb.connect(str(home.index / "catalog.duckdb"), read_only=True)
    try:
        return con.execute("SELECT session_id, workspace, harness, delivered FROM packets ORDER BY created").fetchall()
    finally:
        con.close()


@pytest.fixture
def setup(home):
    repo = _repo(home)
    path = _transcript(home, str(repo))
    home.run("index")
    return home, repo, path


def test_capture_then_delivered_once_by_session_start(setup):
    home, repo, path = setup
    cwd = str(repo)
    precompact(home, path, cwd)
    assert packets(home) == [(SID, cwd, "claude", False)]
    out = start(home, cwd)
    ctx = context_of(out)
    packet = ctx.split("</deja-recall>")[0] + "</deja-recall>"
    assert len(packet.encode("utf-8")) <= 4096
    assert packet.startswith("<deja-recall>\n")
    assert "billing exporter" in packet  # the objective
    assert "legacy/" in packet  # a standing instruction
    assert "pytest tests/test_exporter.py" in packet and "passed" in packet
    assert "refund export" in packet and "ISO dates" in packet  # open and conflict items by shape
    assert "reported" in packet.lower()  # conclusions are reported claims
    assert "unchanged" in packet.lower()  # repository verdict
    assert SECRET not in ctx and "sk-ant-api03" not in ctx  # redacted before it was stored
    # once: the packet is gone from every later hook of the session
    assert packets(home)[0][3] is True
    again = start(home, cwd)
    assert "billing exporter" not in again or again.count("deja-recall>") == 2
    assert "Keep until closed" not in again and "refund export" not in prompt(home, cwd, "how is the refund export?")


def test_a_transcript_ending_in_a_huge_paste_is_still_captured(home):
    repo = _repo(home)
    cwd = str(repo)
    paste = claude_user(SID, "", "2026-11-20T10:09:00Z", "u9", cwd=cwd)
    data = base64.b64encode(os.urandom(5 << 20)).decode()  # a screenshot's base64, longer than the 4 MiB tail
    paste["message"]["content"] = [{"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                                "data": data}}, {"type": "text", "text": "see this"}]
    path = _transcript(home, cwd, extra=[paste])
    precompact(home, path, cwd)
    assert packets(home) == [(SID, cwd, "claude", False)]
    packet = context_of(start(home, cwd))
    assert "billing exporter" in packet and "refund export" in packet  # from the turns before the paste


def test_prompt_or_tool_hook_delivers_when_no_session_start(setup):
    home, repo, path = setup
    cwd = str(repo)
    precompact(home, path, cwd)
    first = pre_tool(home, cwd)
    assert "billing exporter" in context_of(first)
    assert json.loads(first)["hookSpecificOutput"]["hookEventName"] == "PreToolUse"
    assert "billing exporter" not in pre_tool(home, cwd)
    precompact(home, path, cwd)  # a new compaction: a new packet, delivered by the prompt hook
    out = prompt(home, cwd, "ok, where were we?")
    assert "billing exporter" in context_of(out)
    assert json.loads(out)["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"


def test_identity_must_match_exactly(setup):
    home, repo, path = setup
    cwd = str(repo)
    precompact(home, path, "/somewhere/else")  # workspace the transcript never declared
    precompact(home, path, cwd, sid="c0c0c0c0-1111-4000-8000-00000000ffff")  # another session's id
    precompact(home, home.root / "missing.jsonl", cwd)  # a path that does not exist
    odd = home.root / "odd.jsonl"
    odd.write_text('{"hello": "world"}\n')
    precompact(home, odd, cwd)  # unknown format
    assert packets(home) == []
    precompact(home, path, cwd)
    assert "billing exporter" not in start(home, "/somewhere/else")  # another workspace gets nothing
    assert "billing exporter" not in prompt(home, cwd, sid="c0c0c0c0-1111-4000-8000-00000000ffff")
    assert "billing exporter" in context_of(prompt(home, cwd))


def test_verdict_changed_after_a_commit(setup):
    home, repo, path = setup
    cwd = str(repo)
    head = _git(repo, "rev-parse", "--short", "HEAD")
    precompact(home, path, cwd)
    (repo / "exporter.py").write_text("COLUMNS = ['id', 'amount', 'currency']\n")
    _git(repo, "commit", "-qam", "add currency")
    ctx = context_of(start(home, cwd))
    assert "changed" in ctx.lower() and head in ctx
    assert "unchanged" not in ctx.lower()


def test_busy_catalog_is_a_best_effort_miss(setup):
    home, repo, path = setup
    cwd = str(repo)
    con = duckdb.connect(str(home.index / "catalog.duckdb"))  # another process holds it read-write
    try:
        precompact(home, path, cwd)
    finally:
        con.close()
    assert packets(home) == []


def test_recall_off_and_exclusions_keep_nothing(setup):
    home, repo, path = setup
    cwd = str(repo)
    precompact(home, path, cwd, DEJA_RECALL="off")
    precompact(home, path, cwd, DEJA_EXCLUDE_PROJECTS="billing")
    assert packets(home) == []


def test_forget_removes_packet_and_blocks_capture(home):
    repo = _repo(home)
    path = _transcript(home, str(repo))
    cwd = str(repo)
    precompact(home, path, cwd)  # before any index run: the session is not indexed yet
    assert [p[0] for p in packets(home)] == [SID]
    proc = home.run("forget", "--session", SID[:13])
    assert "compaction-recovery packet" in proc.stdout + proc.stderr
    assert packets(home) == []
    precompact(home, path, cwd)
    assert packets(home) == []  # tombstoned: never captured again
    assert prompt(home, cwd) == ""


def test_capture_before_first_index_does_not_make_it_ready(home):
    repo = _repo(home)
    path = _transcript(home, str(repo))
    cwd = str(repo)
    precompact(home, path, cwd)
    assert len(packets(home)) == 1
    # the search index is still not built: the digest stays silent, the packet still comes back
    ctx = context_of(start(home, cwd, source="startup"))
    assert ctx.count("<deja-recall>") == 1 and "billing exporter" in ctx
    home.run("index")
    hits = home.search("billing", "exporter")["hits"]
    assert hits and hits[0]["session"]["id"] == SID


def test_rebuild_preserves_packets(setup):
    home, repo, path = setup
    cwd = str(repo)
    precompact(home, path, cwd)
    home.run("index", "--rebuild")
    assert [p[0] for p in packets(home)] == [SID]
    assert "billing exporter" in context_of(prompt(home, cwd))


def test_keep_list_carried_across_compactions(setup):
    home, repo, path = setup
    cwd = str(repo)
    precompact(home, path, cwd)
    first = context_of(start(home, cwd))
    assert "keep until closed" not in first.lower()  # nothing awaiting, no #N item, verdict or recheck yet
    # the session goes on past a compaction: the old turns are still in the file,
    # the open item is closed by the user; a new question waits on the user
    ts = "2026-11-20T11:%02d:00Z"
    more = [
        {"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted", "sessionId": SID,
         "cwd": cwd, "timestamp": ts % 0, "uuid": "cb1", "isMeta": False},
        claude_user(SID, "The refund export is done now, I merged it myself.", ts % 1, "u20", cwd=cwd),
        claude_user(SID, "Next: T13", ts % 1, "u21", cwd=cwd),
        claude_assistant(SID, [{"type": "text", "text": "Should I also regenerate the finance fixtures?"}],
                         ts % 2, "a21", msg_id="m21", cwd=cwd),
    ]
    write_jsonl(path, more, mode="a")
    precompact(home, path, cwd)
    second = context_of(start(home, cwd))
    assert "regenerate the finance fixtures" in second  # awaiting the user
    assert "legacy/" in second  # standing instructions carried
    assert "billing exporter" in second  # the first request, shown beside a step request


def test_claude_capture_found_by_session_id(setup):
    """A payload without a transcript path: the session's file is found in the projects folder."""
    home, repo, _ = setup
    cwd = str(repo)
    precompact(home, None, cwd)
    assert packets(home) == [(SID, cwd, "claude", False)]


def test_codex_capture_found_by_session_id(home):
    repo = _repo(home)
    cwd = str(repo)
    sid = "019a0000-aaaa-7000-8000-00000000c0de"
    path = home.codex_file(sid, stamp="2026-11-20T10-00-00")

    def line(kind, payload, minute=0):
        return {"timestamp": f"2026-11-20T10:{minute:02d}:00.000Z", "type": kind, "payload": payload}

    rows = [
        line("session_meta", {"id": sid, "timestamp": "2026-11-20T10:00:00.000Z", "cwd": cwd, "originator": "codex_cli_rs",
                              "cli_version": "0.50.0", "instructions": None, "git": {"branch": "main"}}),
        line("response_item", {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "Port the exporter tests to pytest and keep the fixtures small."}]}, 1),
        line("response_item", {"type": "function_call", "name": "shell", "call_id": "c1",
                               "arguments": json.dumps({"command": ["bash", "-lc", "cargo test"]})}, 2),
        line("response_item", {"type": "function_call_output", "call_id": "c1",
                               "output": json.dumps({"output": "test result: ok. 3 passed", "metadata": {"exit_code": 0}})}, 3),
        line("response_item", {"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": "Gap: the CSV fixture generator is still untested."}]}, 4),
    ]
    write_jsonl(path, rows)
    home.run("index")
    precompact(home, None, cwd, sid=sid)  # Codex may send transcript_path null
    assert [p[:3] for p in packets(home)] == [(sid, cwd, "codex")]
    ctx = context_of(prompt(home, cwd, sid=sid))
    assert "Port the exporter tests" in ctx and "CSV fixture generator" in ctx
    assert "cargo test" in ctx


def test_recovery_metric_in_stats(setup):
    home, repo, path = setup
    cwd = str(repo)
    precompact(home, path, cwd)
    ts = "2026-11-20T12:%02d:00Z"
    more = [
        _tool(SID, cwd, 30, "Read", {"file_path": f"{cwd}/exporter.py"}, ts % 0),
        _result(SID, cwd, 30, "COLUMNS = ...", ts % 0),
        _tool(SID, cwd, 31, "Grep", {"pattern": "COLUMNS"}, ts % 1),
        _result(SID, cwd, 31, "exporter.py:1", ts % 1),
        _tool(SID, cwd, 32, "Bash", {"command": "git status"}, ts % 2),
        _result(SID, cwd, 32, "clean", ts % 2),
        _tool(SID, cwd, 33, "Edit", {"file_path": f"{cwd}/exporter.py", "old_string": "a", "new_string": "b"},
              ts % 3),
    ]
    write_jsonl(path, more, mode="a")
    pre_tool(home, cwd, "Edit", {"file_path": f"{cwd}/exporter.py", "old_string": "a", "new_string": "b"})
    st = json.loads(home.run("stats", "--json").stdout)
    assert st["recovery"]["samples"] == 1 and st["recovery"]["median"] == 3
    usage = (home.index.parent / (home.index.name + ".usage")).read_text()
    assert OBJECTIVE[:20] not in usage and "exporter" not in usage.replace(str(path), "")  # ids and counts only


def test_packet_store_evicts_oldest_past_32_pairs(tmp_path):
    from deja.hooks.packet import store

    root = tmp_path / "index.db"
    con = store.connect(root, create=True)
    try:
        for i in range(34):
            assert store.save(con, root, {"v": 1, "objective": {"text": f"task {i}"}}, f"s{i:02d}", "/w", "claude")
        rows = con.execute("SELECT session_id FROM packets ORDER BY session_id").fetchall()
        assert len(rows) == 32 and ("s00",) not in rows and ("s01",) not in rows and ("s33",) in rows
        # a new capture of a kept session replaces it: still 32, no history
        store.save(con, root, {"v": 1, "objective": {"text": "task 5 again"}}, "s05", "/w", "claude")
        assert con.execute("SELECT count(*) FROM packets").fetchone()[0] == 32
        assert store.previous(con, "s05", "/w")["objective"]["text"] == "task 5 again"
        assert not store.save(con, root, {"blob": "x" * (25 * 1024)}, "big", "/w", "claude")  # over 24 KiB
    finally:
        con.close()
    assert not store.is_pending(root, "s00", "/w") and store.is_pending(root, "s33", "/w")


def test_capture_path_over_the_real_corpus(monkeypatch):
    """Every real Claude and Codex transcript, read the way PreCompact reads it
    (bounded tail + head, its own declared id and workspace), yields a packet
    within its limits; one with a user request carries an objective."""
    import csv

    from conftest import CORPUS
    from deja.hooks.packet import capture, extract, render
    from deja.stages.sources import reader

    if not (CORPUS / "MANIFEST.tsv").exists():
        pytest.skip("../shared/corpus/real is not here")
    monkeypatch.setattr(capture, "TAIL", 256 << 10)  # small, so big files take the tail-and-head path
    with open(CORPUS / "MANIFEST.tsv", newline="") as fh:
        rows = [r for r in csv.DictReader(fh, delimiter="\t") if r["harness"] in ("claude", "codex")]
    captured = with_objective = 0
    for r in rows:
        path = str(CORPUS / r["harness"] / r["file"])
        parts = [p for p in reader(r["harness"]).read(path).sessions if p.cwd and p.messages]
        if not parts:
            continue
        part = max(parts, key=lambda p: len(p.messages))
        assert capture.harness_of(path) == r["harness"], path
        messages, head, _, _ = capture.read_session(path, r["harness"], part.session_id, part.cwd)
        packet = extract.extract(messages, session_id=part.session_id, harness=r["harness"], head=head)
        assert extract.stored_size(packet) <= extract.MAX_STORED
        text = render.render(packet, {"state": "unavailable", "line": "No repository fingerprint."}, 4096)
        assert len(text.encode("utf-8")) <= 4096
        captured += 1
        if any(m.role == "user" and extract.carries_request(m.text) for m in messages + head):
            assert packet["objective"], path
            with_objective += 1
    assert captured >= 20 and with_objective >= 10


def test_doctor_counts_packets(setup):
    home, repo, path = setup
    precompact(home, path, str(repo))
    rep = json.loads(home.run("doctor", "--json").stdout)
    assert rep["index"]["recovery_packets"] == {"kept": 1, "waiting": 1}
    assert "compaction-recovery packets: 1 kept, 1 waiting" in home.run("doctor").stdout


def test_capture_requests_the_background_warmup(home):
    import time

    repo = _repo(home)
    path = _transcript(home, str(repo))
    precompact(home, path, str(repo), DEJA_NO_REFRESH="")  # no index yet: capture, then a detached `deja index`
    assert len(packets(home)) == 1
    deadline = time.time() + 60
    while time.time() < deadline:
        proc = home.run("search", "--json", "billing", "exporter", check=False)
        if proc.returncode == 0 and json.loads(proc.stdout)["hits"]:
            break
        time.sleep(0.5)
    assert json.loads(proc.stdout)["hits"][0]["session"]["id"] == SID
    assert [p[0] for p in packets(home)] == [SID]  # the index run kept the packet


def test_a_packet_kept_under_one_spelling_of_the_folder_is_delivered_under_another(setup):
    """A host that writes the workspace with a trailing slash in one hook and
    without it in the next still gets its packet back."""
    home, repo, path = setup
    precompact(home, path, str(repo) + "/")
    assert [p[1] for p in packets(home)] == [str(repo)]
    assert "The root cause was the v1 client" in context_of(start(home, str(repo)))
