"""DeepSeek Harness: zstd-framed JSONL (harness-formats 14), built to the
reference; no real transcripts published."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import zstandard

from deja.stages.sources import deepseek, locate

SAMPLES = Path(__file__).resolve().parents[1] / "data_samples"


def _store(tmp_path: Path) -> Path:
    home = tmp_path / ".dsh"
    shutil.copytree(SAMPLES / "deepseek", home)
    return next(home.rglob("session.jsonl.zstd"))


def test_deepseek_zstd_frames_roles_title_and_plugin_turns_left_out(tmp_path):
    path = _store(tmp_path)
    assert locate.deepseek_files({"HOME": str(tmp_path)}) == [str(path)]
    res = deepseek.read(str(path))
    assert res.error == "" and res.malformed == 0
    assert res.safe_offset == 0  # a compressed file is read whole when it changes
    [s] = res.sessions
    assert (s.session_id, s.cwd, s.title) == ("session-7c0d4e1a-2b3c-4d5e-8f90-a1b2c3d4e5f6", "/home/dev/src/atlas",
                                               "stale tiles after deploy")
    assert [(m.role, m.text) for m in s.messages] == [
        ("user", "the tile cache serves stale map tiles after a deploy"),
        ("assistant", "The cache key leaves out the build hash, so tiles from the old build keep being served."),
        ("command", "$ go test ./tiles/..."),
        ("tool-output", "--- FAIL: TestCacheKeyIncludesBuild"),
        ("assistant", "Adding the build hash to the key fixes it."),  # packed chunks, time from time0
    ]
    assert s.messages[-1].ts == 1772787611000


def test_deepseek_zstd_cut_short_keeps_what_came_before_and_counts_the_cut(tmp_path):
    path = _store(tmp_path)
    raw = path.read_bytes()
    first_frame = len(zstandard.ZstdCompressor().compress(b"x"))  # any frame is longer than this
    path.write_bytes(raw[:-7])
    res = deepseek.read(str(path))
    assert res.error == "" and res.malformed == 1
    assert any("zstd stream cut short" in what for _, what in res.faults)
    assert [m.role for m in res.sessions[0].messages][:1] == ["user"]
    path.write_bytes(raw[:first_frame])  # cut inside the first frame: nothing readable
    bad = deepseek.read(str(path))
    assert bad.error.startswith("zstd stream cut short") and bad.sessions == []


def test_deepseek_plain_jsonl_takes_the_offset_path(tmp_path):
    folder = tmp_path / ".dsh" / "sessions" / "slug" / "session-11111111-2222-4333-8444-555555555555"
    folder.mkdir(parents=True)
    path = folder / "session.jsonl"
    path.write_text(json.dumps({"type": "session", "id": "session-1111", "createdAt": 1772787600000, "cwd": "/w/a"}) + "\n")
    first = deepseek.read(str(path))
    with open(path, "a") as fh:
        fh.write(json.dumps({"type": "user/message", "seq": 1, "time": 1772787601000,
                             "data": {"source": {"kind": "user"}, "message": {"content": "why is the build slow"}}}) + "\n")
    more = deepseek.read(str(path), first.safe_offset)
    [s] = more.sessions
    assert (s.session_id, s.cwd, [m.text for m in s.messages]) == ("session-1111", "/w/a", ["why is the build slow"])
    assert more.safe_offset == path.stat().st_size


def test_deja_indexes_a_cut_zstd_file_and_the_run_completes(home):
    path = _store(home.home)
    path.write_bytes(path.read_bytes()[:20])
    out = json.loads(home.run("index", "--json").stdout)
    by = {h["harness"]: h for h in out["harnesses"]}
    assert by["deepseek"]["sessions"] == 0
    assert "deepseek" in json.dumps(out)
