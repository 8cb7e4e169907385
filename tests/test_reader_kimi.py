"""Kimi Code's wire.jsonl (harness-formats 14): built to the reference, no real
transcripts published."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from deja.stages.sources import kimi, locate

SAMPLES = Path(__file__).resolve().parents[1] / "data_samples"


def _store(tmp_path: Path) -> Path:
    home = tmp_path / ".kimi-code"
    shutil.copytree(SAMPLES / "kimi", home)
    return next(home.rglob("wire.jsonl"))


def test_kimi_roles_streamed_reply_joined_work_records_and_state(tmp_path):
    wire = _store(tmp_path)
    (wire.parent.parent / "sub1").mkdir()
    shutil.copy(wire, wire.parent.parent / "sub1" / "wire.jsonl")  # a subagent's wire: not the session
    assert locate.kimi_files({"HOME": str(tmp_path)}) == [str(wire)]
    [s] = kimi.read(str(wire)).sessions
    assert (s.session_id, s.cwd, s.title) == ("5d1e-kimi-demo", "/home/dev/src/portal", "flaky login e2e test")
    assert [m.role for m in s.messages] == ["user", "assistant", "command", "tool-output", "files", "edit",
                                             "tool-output", "assistant"]
    assert s.messages[1].text == "Let me run the login spec a few times to catch the flake."  # parts joined, think dropped
    assert s.messages[2].text == "$ npx playwright test login.spec.ts --repeat-each 5"
    assert s.messages[5].text.startswith("/home/dev/src/portal/tests/login.spec.ts\nawait page.waitForTimeout(500);")
    times = [m.ts for m in s.messages]
    assert times == sorted(times)


def test_kimi_reply_cut_mid_stream_is_kept_and_append_reads_on(tmp_path):
    wire = _store(tmp_path)
    first = kimi.read(str(wire))
    with open(wire, "a") as fh:
        fh.write(json.dumps({"type": "context.append_message", "time": "2026-03-05T09:05:00Z",
                             "message": {"role": "user", "content": "does it pass now?"}}) + "\n")
        fh.write(json.dumps({"type": "context.append_loop_event", "time": "2026-03-05T09:05:02Z",
                             "event": {"type": "content.part", "part": {"type": "text", "text": "Twenty runs, all green"}}}) + "\n")
        fh.write("garbage line\n")
    more = kimi.read(str(wire), first.safe_offset)
    assert [(m.role, m.text) for m in more.sessions[0].messages] == [
        ("user", "does it pass now?"), ("assistant", "Twenty runs, all green")]
    assert more.malformed == 1 and more.safe_offset == wire.stat().st_size


def test_kimi_state_of_an_unexpected_shape_costs_only_the_title(tmp_path):
    wire = _store(tmp_path)
    (wire.parents[2] / "state.json").write_text('["not", "an", "object"]')
    [s] = kimi.read(str(wire)).sessions
    assert s.title == "" and s.cwd == "" and len(s.messages) == 8
