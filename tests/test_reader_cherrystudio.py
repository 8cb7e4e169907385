"""Cherry Studio: its agents are Claude Code run with CLAUDE_CONFIG_DIR inside
the app profile, so the transcripts are Claude Code's, read by Claude's reader
and filed as ``cherrystudio``. The sample is composed (no real transcript is
published); the streamed snapshots of one reply follow deja-vu's report."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from deja.stages.sources import cherrystudio, claude, locate

SAMPLES = Path(__file__).resolve().parents[1] / "data_samples"
SID = "8c2d4e6f-0a1b-4c3d-8e5f-6a7b8c9d0e1f"


def _lay(profile: Path, claude_dir: str = "Data/Agents/.claude") -> Path:
    dest = profile / claude_dir / "projects"
    shutil.copytree(SAMPLES / "cherrystudio" / "projects", dest)
    return next(dest.rglob("*.jsonl"))


def test_cherrystudio_agent_transcripts_in_both_profile_generations(tmp_path):
    profile = tmp_path / ".config" / "CherryStudio"
    v2 = _lay(profile)
    v1 = _lay(profile, ".claude")
    env = {"HOME": str(tmp_path)}
    assert locate.cherrystudio_files(env) == sorted([str(v2), str(v1)])
    xdg = tmp_path / "xdg"
    moved = _lay(xdg / "CherryStudio")
    assert locate.cherrystudio_files({"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(xdg)}) == [str(moved)]
    mac = _lay(tmp_path / "mac" / "Library" / "Application Support" / "CherryStudio")
    assert locate.cherrystudio_files({"HOME": str(tmp_path / "mac")}) == [str(mac)]
    assert locate.cherrystudio_files({"HOME": str(tmp_path), "DEJA_CHERRYSTUDIO_ROOTS": str(v1.parent.parent)}) == [str(v1)]
    # the Claude store is not Cherry Studio's, and Cherry Studio's is not Claude's
    assert locate.claude_files(env) == []


def test_cherrystudio_reads_as_claude_code_under_its_own_harness(tmp_path):
    path = _lay(tmp_path / ".config" / "CherryStudio")
    res = cherrystudio.read(str(path))
    assert res.error == "" and res.malformed == 0 and res.safe_offset == path.stat().st_size
    [s] = res.sessions
    assert (s.harness, s.session_id, s.cwd, s.branch) == ("cherrystudio", SID, "/home/dev/src/lantern", "main")
    assert [m.role for m in s.messages] == ["user", "assistant", "command", "tool-output", "files", "edit",
                                            "tool-output", "assistant"]
    times = [m.ts for m in s.messages]
    assert times == sorted(times) and times[0] == 1773050400000
    assert [m.text for m in s.messages if m.role == "command"] == ["$ pytest tests/test_export.py -q"]
    assert [m.text for m in s.messages if m.role == "edit"] == [
        "/home/dev/src/lantern/lantern/export.py\nstamp = dt.isoformat()"]


def test_cherrystudio_keeps_a_streamed_reply_once_and_whole(tmp_path):
    path = _lay(tmp_path / ".config" / "CherryStudio")
    plain = [m.text for m in claude.read(str(path)).sessions[0].messages if m.role == "assistant"]
    assert plain[:3] == ["I'll check how the", "I'll check how the exporter fo", "I'll check how the exporter formats dates"]
    kept = [m.text for m in cherrystudio.read(str(path)).sessions[0].messages if m.role == "assistant"]
    assert kept[0] == "I'll check how the exporter formats dates" and len(kept) == len(plain) - 2


def test_cherrystudio_append_torn_line_and_vanished_file(tmp_path):
    path = _lay(tmp_path / ".config" / "CherryStudio")
    first = cherrystudio.read(str(path))
    with open(path, "a") as fh:
        fh.write(json.dumps({"parentUuid": None, "isSidechain": False, "type": "user", "sessionId": SID,
                             "cwd": "/home/dev/src/lantern", "uuid": "22222222-aaaa-4bbb-8ccc-000000000001",
                             "timestamp": "2026-03-09T10:05:00.000Z",
                             "message": {"role": "user", "content": "and the CSV export?"}}) + "\n")
        fh.write("not json\n")
        fh.write('{"type":"assistant","message":{"role":"assis')  # torn: mid-write
    more = cherrystudio.read(str(path), first.safe_offset)
    [s] = more.sessions
    assert s.harness == "cherrystudio" and [(m.role, m.text) for m in s.messages] == [("user", "and the CSV export?")]
    assert more.malformed == 1 and more.safe_offset < path.stat().st_size
    path.unlink()
    gone = cherrystudio.read(str(path), more.safe_offset)
    assert gone.error and gone.sessions == []


def test_absent_cherrystudio_costs_nothing(tmp_path):
    assert locate.cherrystudio_roots({"HOME": str(tmp_path)}) == []
    assert locate.cherrystudio_files({"HOME": str(tmp_path)}) == []


def test_deja_indexes_cherrystudio_apart_from_claude(home):
    _lay(home.home / ".config" / "CherryStudio")
    out = json.loads(home.run("index", "--json").stdout)
    by = {h["harness"]: h for h in out["harnesses"]}
    assert by["cherrystudio"]["sessions"] == 1
    assert by.get("claude", {}).get("sessions", 0) == 0
    assert "cherrystudio" in json.dumps(home.search("isoformat", "UTC"))
