"""The recovery metric: tool calls from capture to the first edit, from the usage log."""

from __future__ import annotations

import json
import os

import pytest

from deja.hooks.packet import metric


# --------------------------------------------------------------------------- transcripts


def claude_line(*tools: str, uid: str = "") -> str:
    blocks = [{"type": "text", "text": "working"}]
    for i, name in enumerate(tools):
        blocks.append({"type": "tool_use", "id": f"toolu_{uid}{name}{i}", "name": name,
                       "input": {"file_path": "/p/a.py"}})
    return json.dumps({"type": "assistant", "uuid": uid or "u",
                       "message": {"role": "assistant", "content": blocks}})


def claude_result(uid: str) -> str:
    return json.dumps({"type": "user", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": f"toolu_{uid}", "content": "Edit ok tool_use"}]}})


def codex_call(kind: str, name: str = "", call_id: str = "c", **extra) -> str:
    payload = {"type": kind, "call_id": call_id, **extra}
    if name:
        payload["name"] = name
    return json.dumps({"timestamp": "2026-03-02T09:00:00Z", "type": "response_item", "payload": payload})


def shell(cmd, call_id: str, name: str = "exec_command") -> str:
    key = "cmd" if name == "exec_command" else "command"
    return codex_call("function_call", name, call_id, arguments=json.dumps({key: cmd}))


def write(path, lines) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("".join(ln + "\n" for ln in lines))


def capture(path, harness="claude", session="s1") -> dict:
    size = os.path.getsize(path)  # what capture.py logs: the size read and the head's hash
    return {"kind": "capture", "session": session, "harness": harness, "path": str(path), "offset": size,
            "head_hash": metric.head_hash(str(path), size)}


def measure(cap: dict, **kw) -> dict:
    return metric.measure(cap["path"], cap["harness"], cap["offset"], cap["head_hash"], **kw)


@pytest.fixture
def claude(tmp_path):
    p = tmp_path / "s1.jsonl"
    write(p, [json.dumps({"type": "user", "message": {"role": "user", "content": "fix the bug"}}),
              claude_line("Read", "Edit", uid="before")])  # an edit before capture does not count
    return p


# --------------------------------------------------------------------------- measure


def test_claude_counts_calls_before_first_edit(claude):
    cap = capture(claude)
    write(claude, [claude_line("Read", "Grep", uid="a"), claude_result("aRead0"),
                   claude_line("Bash", uid="b"),
                   claude_line("Glob", "Edit", "Read", uid="c"),  # Glob counts, the Edit ends it
                   claude_line("Write", uid="d")])
    assert measure(cap) == {"state": "measured", "calls": 4}


def test_claude_each_edit_tool_ends_the_interval(claude):
    for tool in ("Edit", "MultiEdit", "Write", "NotebookEdit"):
        cap = capture(claude)
        write(claude, [claude_line("Read", uid=tool), claude_line(tool, uid=tool + "x")])
        assert measure(cap) == {"state": "measured", "calls": 1}, tool


def test_claude_repeated_line_is_one_call_and_no_calls_is_zero(claude):
    cap = capture(claude)
    write(claude, [claude_line("Read", uid="r"), claude_line("Read", uid="r"), claude_line("Edit", uid="e")])
    assert measure(cap) == {"state": "measured", "calls": 1}
    cap = capture(claude)
    write(claude, [claude_line("Edit", uid="e2")])
    assert measure(cap) == {"state": "measured", "calls": 0}


def test_pending_until_the_edit_is_written(claude):
    cap = capture(claude)
    write(claude, [claude_line("Read", "Bash", uid="p")])
    assert measure(cap) == {"state": "pending"}
    with open(claude, "a") as fh:  # a torn last line is not read as an edit
        fh.write(claude_line("Edit", uid="torn")[:40])
    assert measure(cap) == {"state": "pending"}
    with open(claude, "a") as fh:
        fh.write(claude_line("Edit", uid="torn")[40:] + "\n")
    assert measure(cap) == {"state": "measured", "calls": 2}


def test_codex_counts_native_calls_until_apply_patch(tmp_path):
    p = tmp_path / "rollout.jsonl"
    write(p, [json.dumps({"type": "session_meta", "payload": {"id": "t1", "cwd": "/p"}})])
    cap = capture(p, harness="codex", session="t1")
    write(p, [
        shell("rg -n apply_patch src", "c1"),  # mentions apply_patch but is a search
        codex_call("function_call_output", call_id="c1", output="x"),
        json.dumps({"type": "event_msg", "payload": {"type": "exec_command_begin", "call_id": "c1"}}),
        json.dumps({"type": "response_item", "payload": {"type": "message", "role": "assistant",
                                                        "content": [{"type": "output_text", "text": "apply_patch"}]}}),
        codex_call("web_search_call", call_id="c2", action={"type": "search"}),
        shell(["bash", "-lc", "cat README.md"], "c3", name="shell"),
        codex_call("custom_tool_call", "apply_patch", "c4", input="*** Begin Patch\n*** End Patch"),
    ])
    assert measure(cap) == {"state": "measured", "calls": 3}


@pytest.mark.parametrize("edit", [
    shell("apply_patch <<'EOF'\n*** Begin Patch\n*** End Patch\nEOF", "e"),
    shell("cd /p && apply_patch <<'EOF'\n*** Begin Patch\nEOF", "e"),
    shell(["apply_patch", "*** Begin Patch\n*** End Patch"], "e", name="shell"),
    shell(["bash", "-lc", "apply_patch <<'EOF'\n*** Begin Patch\nEOF"], "e", name="shell"),
    shell("apply_patch <<'EOF'\n*** Begin Patch\nEOF", "e", name="shell_command"),
    codex_call("local_shell_call", call_id="e", action={"type": "exec", "command": ["apply_patch", "*** Begin"]}),
    codex_call("function_call", "apply_patch", "e", arguments="{}"),
])
def test_codex_editing_shapes(tmp_path, edit):
    p = tmp_path / "rollout.jsonl"
    write(p, [json.dumps({"type": "session_meta", "payload": {"id": "t1"}})])
    cap = capture(p, harness="codex", session="t1")
    write(p, [shell("ls", "c1"), edit])
    assert measure(cap) == {"state": "measured", "calls": 1}


def test_codex_pending(tmp_path):
    p = tmp_path / "rollout.jsonl"
    write(p, [json.dumps({"type": "session_meta", "payload": {"id": "t1"}})])
    cap = capture(p, harness="codex", session="t1")
    write(p, [shell("git status", "c1"), shell("echo apply_patch", "c2")])
    assert measure(cap) == {"state": "pending"}


def test_rewritten_transcripts_are_unmeasured(claude, tmp_path):
    cap = capture(claude)
    claude.write_text(claude_line("Edit", uid="z") + "\n")  # shorter than the capture offset
    assert measure(cap) == {"state": "unmeasured", "why": "rewritten"}

    p = tmp_path / "other.jsonl"
    write(p, [claude_line("Read", uid="a")])
    cap = capture(p)
    text = p.read_text()
    p.write_text(text.replace("Read", "Grep") + claude_line("Edit", uid="b") + "\n")  # same length, new head
    assert measure(cap) == {"state": "unmeasured", "why": "rewritten"}


def test_short_transcript_that_grows_is_not_a_rewrite(tmp_path):
    p = tmp_path / "tiny.jsonl"
    write(p, ["{}"])
    cap = capture(p)
    write(p, [claude_line("Read", uid="a"), claude_line("Edit", uid="b")])
    assert measure(cap) == {"state": "measured", "calls": 1}


def test_unreadable_evidence(claude, tmp_path):
    cap = capture(claude)
    assert metric.measure(str(tmp_path / "gone.jsonl"), "claude", cap["offset"], cap["head_hash"]) == \
        {"state": "unmeasured", "why": "unreadable"}
    assert metric.measure(cap["path"], "gemini", cap["offset"], cap["head_hash"])["why"] == "unreadable"
    assert metric.measure(cap["path"], "claude", cap["offset"], "")["why"] == "unreadable"


def test_interval_beyond_the_window_is_unmeasured(claude):
    cap = capture(claude)
    write(claude, [claude_line("Read", uid=f"r{i}") for i in range(50)])
    assert measure(cap, window=2000) == {"state": "unmeasured", "why": "window"}
    write(claude, [claude_line("Edit", uid="late")])
    assert measure(cap, window=2000) == {"state": "unmeasured", "why": "window"}
    assert measure(cap) == {"state": "measured", "calls": 50}


def test_edit_inside_the_window_is_measured_even_if_the_file_is_longer(claude):
    cap = capture(claude)
    write(claude, [claude_line("Read", uid="a"), claude_line("Edit", uid="b")])
    write(claude, [claude_line("Read", uid=f"r{i}") for i in range(50)])
    assert measure(cap, window=2000) == {"state": "measured", "calls": 1}


# --------------------------------------------------------------------------- the log and the summary


def test_log_keeps_ids_and_counts_only(tmp_path):
    root = tmp_path / "index"
    assert metric.log(root, "capture", session="s", offset=3, text={"secret": "x"}, note="y" * 5000)
    [ev] = metric.events(root)
    assert (tmp_path / "index.usage").is_file()
    assert ev["kind"] == "capture" and ev["session"] == "s" and ev["offset"] == 3
    assert ev["text"] is None and len(ev["note"]) == metric.MAX_STR
    assert ev["t"].endswith("Z")


def test_events_skip_bad_lines_and_filter_kinds(tmp_path):
    root = tmp_path / "index"
    metric.log(root, "capture", session="a")
    with open(metric.log_path(root), "a") as fh:
        fh.write("not json\n[1,2]\n")
    metric.log(root, "recovery", session="a")
    assert [e["kind"] for e in metric.events(root)] == ["capture", "recovery"]
    assert [e["kind"] for e in metric.events(root, "recovery")] == ["recovery"]
    assert metric.events(tmp_path / "none") == []


def test_log_is_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(metric, "LOG_TRIM_BYTES", 4000)
    monkeypatch.setattr(metric, "LOG_KEEP_LINES", 20)
    root = tmp_path / "index"
    for i in range(200):
        metric.log(root, "capture", session=f"s{i}", offset=i)
    evs = metric.events(root)
    assert metric.log_path(root).stat().st_size <= 4000 + 200
    assert len(evs) <= 20 + 50 and evs[-1]["session"] == "s199"
    assert [e["offset"] for e in evs] == sorted(e["offset"] for e in evs)


def test_summary_and_settling(tmp_path):
    root = tmp_path / "index"
    # five sessions: three reach an edit after 1, 4 and 9 calls, one is still going, one was rewritten
    caps = {}
    for sid, calls in (("a", 1), ("b", 4), ("c", 9), ("d", None), ("e", None)):
        p = tmp_path / f"{sid}.jsonl"
        write(p, [claude_line("Read", uid=sid + "0")])
        cap = capture(p, session=sid)
        metric.log(root, "capture", **{k: v for k, v in cap.items() if k != "kind"})
        caps[sid] = (p, cap)
        if calls is not None:
            write(p, [claude_line("Bash", uid=f"{sid}{i}x") for i in range(calls)] + [claude_line("Edit", uid=sid)])
    caps["e"][0].write_text("{}\n")
    # the same capture logged twice counts once
    metric.log(root, "capture", **{k: v for k, v in caps["a"][1].items() if k != "kind"})

    assert metric.summary(root) == {"samples": 0, "median": None, "p75": None, "pending": 5, "unmeasured": 0}

    # the tool hook settles only its own session
    got = metric.settle_pending(root, "b")
    assert [(g["session"], g["state"]) for g in got] == [("b", "measured")]
    assert metric.summary(root)["samples"] == 1

    # stats settles the rest; "d" has no edit yet and stays pending
    metric.settle_pending(root)
    s = metric.summary(root)
    assert s == {"samples": 3, "median": 4, "p75": 6.5, "pending": 1, "unmeasured": 1}

    # results are recorded once, and pending is never recorded
    metric.settle_pending(root)
    recs = metric.events(root, "recovery")
    assert sorted(r["session"] for r in recs) == ["a", "b", "c", "e"]
    assert all("path" not in r and "head_hash" not in r for r in recs)
    assert not metric.record_measurement(root, caps["a"][1], {"state": "measured", "calls": 99})
    assert not metric.record_measurement(root, caps["d"][1], {"state": "pending"})

    # "d" edits later; the next settle records it
    write(caps["d"][0], [claude_line("Grep", uid="dg"), claude_line("Edit", uid="de")])
    metric.settle_pending(root, "d", "claude")
    assert metric.summary(root) == {"samples": 4, "median": 2.5, "p75": 5.25, "pending": 0, "unmeasured": 1}


def test_summary_on_an_empty_log(tmp_path):
    assert metric.summary(tmp_path / "index") == \
        {"samples": 0, "median": None, "p75": None, "pending": 0, "unmeasured": 0}
    assert metric.settle_pending(tmp_path / "index") == []
