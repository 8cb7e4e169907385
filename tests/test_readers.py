"""A big `deja index` reads in worker processes; killed, it leaves none behind
(the readers, the forkserver they fork from and its resource tracker), the
store still answers, and the next run completes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import REPO, Home, claude_assistant, claude_user, deja_cmd, write_jsonl

S1 = "7f1c0000-0000-4000-8000-0000000000a1"

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or (os.cpu_count() or 1) < 2,
                                reason="reads /proc; the reader processes need two cores")


def _children(pid: int) -> list[int]:
    out = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                out += [int(c) for c in fh.read().split()]
    except OSError:
        pass
    return out


def _tree(pid: int) -> set[int]:
    seen = {pid}
    for c in _children(pid):
        seen |= _tree(c)
    return seen


def _running(pid: int) -> bool:
    """Alive and not a zombie (an orphan's zombie waits for a reaper that may never come)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


@pytest.fixture
def big(tmp_path):
    """A store holding one small session, and a ~20 MB corpus beside it not yet
    read: more than POOL_MIN_BYTES, so the next run reads in worker processes."""
    home = Home(tmp_path)
    root = tmp_path / "corpus"
    home.env.update(DEJA_CLAUDE_ROOT=str(root / "claude" / "projects"), DEJA_CODEX_ROOT=str(root / "codex"),
                    DEJA_WORKERS="2")  # reader processes: in-process reading is the default
    p = root / "claude" / "projects" / "-home-dev-src-shop" / f"{S1}.jsonl"
    p.parent.mkdir(parents=True)
    write_jsonl(p, [
        claude_user(S1, "why does checkout return 500 when the connection pool is exhausted?",
                    "2026-03-02T10:00:00Z", "u1"),
        claude_assistant(S1, [{"type": "text", "text": "The root cause was pool_size=5 under load."}],
                         "2026-03-02T10:00:05Z", "a1", parent="u1"),
    ])
    home.run("index")
    subprocess.run([sys.executable, str(REPO / "bench" / "gen_corpus.py"), "--out", str(root), "--mb", "20",
                    "--force"], check=True, capture_output=True)
    return home


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_index_killed_while_reading_leaves_no_process_and_the_next_run_completes(big, tmp_path, sig):
    err = tmp_path / "stderr"
    with open(err, "wb") as fh:
        proc = subprocess.Popen(deja_cmd() + ["index"], env=big.env, stdout=subprocess.DEVNULL, stderr=fh)
    pids: set[int] = set()
    try:
        # wait for the readers: processes forked by the forkserver (which is one too)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            pids |= _tree(proc.pid)
            if sum("forkserver" in _cmdline(p) for p in pids) >= 3:
                break
            time.sleep(0.02)
        assert proc.poll() is None, "the run ended before its readers were seen"
        assert len(pids) >= 5, [_cmdline(p) for p in pids]  # the run, tracker, forkserver, 2 readers
        proc.send_signal(sig)
        assert proc.wait(timeout=10) == -sig
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(_running(p) for p in pids):
            time.sleep(0.05)
        assert [_cmdline(p) for p in pids if _running(p)] == []
    finally:
        for p in pids:
            if p != proc.pid and _running(p):
                os.kill(p, signal.SIGKILL)  # (only processes this test started)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "Traceback" not in err.read_text() and len(err.read_text().splitlines()) <= 1
    # the store as it was still answers, and the next run reads everything
    assert [h["session"]["id"] for h in big.search("connection", "pool")["hits"]] == [S1]
    done = json.loads(big.run("index", "--json").stdout)
    assert not done["up_to_date"] and not done["errors"] and done["sessions"] > 40
    assert big.run("index").stderr.startswith("up to date")


def test_many_small_transcripts_read_in_processes_make_the_store_one_process_makes(tmp_path):
    """Small transcripts go to the reader processes a chunk at a time and their
    records wait as columns before they are one table (pipeline/readers.py,
    pipeline/batch.py); what the run writes is what reading them one by one in
    the run's own process writes, a big transcript among them included (read
    in slices by the run meanwhile)."""
    from test_pipeline import datasets

    root = tmp_path / "corpus"
    projects = root / "claude" / "projects"
    for i in range(300):
        sid = f"7f1c0000-0000-4000-8000-{i:012d}"
        p = projects / f"-home-dev-src-p{i % 7}" / f"{sid}.jsonl"
        p.parent.mkdir(parents=True, exist_ok=True)
        write_jsonl(p, [
            claude_user(sid, f"why does job {i} time out behind the proxy? Почему {i}", f"2026-03-{1 + i % 28:02d}T10:00:00Z",
                        f"u{i}"),
            claude_assistant(sid, [{"type": "text", "text": f"client_max_body_size was 1m for upload {i}"}],
                             f"2026-03-{1 + i % 28:02d}T10:00:05Z", f"a{i}", parent=f"u{i}"),
        ])
        if i == 150:  # a transcript bigger than a chunk, among them: more than POOL_MIN_BYTES in all
            big = projects / "-home-dev-src-big" / f"{S1}.jsonl"
            big.parent.mkdir(parents=True, exist_ok=True)
            write_jsonl(big, [claude_user(S1, f"paste {k}: " + "lorem ipsum dolor " * 4000, "2026-04-02T10:00:00Z",
                                          f"b{k}") for k in range(130)])
    codex = root / "codex" / "sessions" / "2026" / "03" / "02"
    codex.mkdir(parents=True)
    for i in range(60):
        tid = f"019b0000-0000-7000-8000-{i:012d}"
        codex.joinpath(f"rollout-2026-03-02T09-00-00-{tid}.jsonl").write_text("".join(json.dumps(d) + "\n" for d in [
            {"timestamp": "2026-03-02T09:00:00.000Z", "type": "session_meta", "payload": {"id": tid, "cwd": "/home/dev/api"}},
            {"timestamp": "2026-03-02T09:00:01.000Z", "type": "response_item", "payload": {
                "type": "message", "role": "user", "content": [{"type": "input_text", "text": f"codex question {i}"}]}},
        ]))
    stores = {}
    for workers in ("1", "2"):
        (tmp_path / f"w{workers}").mkdir()
        home = Home(tmp_path / f"w{workers}")
        home.env.update(DEJA_CLAUDE_ROOT=str(projects), DEJA_CODEX_ROOT=str(root / "codex"), DEJA_WORKERS=workers,
                        DEJA_FLUSH_BYTES="200000")  # several flushes, some between the files of one table
        if workers == "2":  # and the big one read in slices by the run while the processes read the rest
            home.env["DEJA_SLICE_BYTES"] = "1000000"
        done = json.loads(home.run("index", "--json").stdout)
        assert not done["errors"] and done["sessions"] == 361
        stores[workers] = datasets(home.index)
        assert home.search("client_max_body_size", "upload", "299")["hits"][0]["session"]["id"] == (
            "7f1c0000-0000-4000-8000-000000000299")
    assert stores["1"] == stores["2"]


def test_reader_chunks_hold_small_jobs_together_and_a_big_or_unknown_one_alone():
    from deja.pipeline import readers

    sizes = [10, 20, readers.CHUNK_BYTES, 5, 1 << 40, 7] + [1] * (readers.CHUNK_JOBS + 3)
    chunks = readers._chunks(sizes, weight=lambda job: job)
    assert chunks[:4] == [[0, 1], [2], [3], [4]]
    full = 5 + readers.CHUNK_JOBS
    assert chunks[4:] == [list(range(5, full)), list(range(full, len(sizes)))]
    assert readers._chunks([], weight=lambda job: job) == []
