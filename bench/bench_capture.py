#!/usr/bin/env python3
"""Compaction capture latency (issue: capture ≤ 1 s on a 50 MB transcript).

    python bench/bench_capture.py [--mb 50] [--runs 7] [--corpus bench/out/corpus-200mb-s1]

Builds one long Claude Code transcript of about --mb MB by replaying the
generated corpus's Claude sessions as a single session in one workspace (a
git repository made for it), then times `deja hook-precompact` as the agent
runs it: a fresh process, the PreCompact payload on stdin. It reports the
median, p90 and min wall time and checks that each run stored a packet.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SID = "bench000-0000-4000-8000-000000000050"


def deja() -> list[str]:
    exe = Path(sys.executable).parent / "deja"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "deja"]


def corpus(path: Path) -> Path:
    if not (path / "claude").is_dir():
        subprocess.run([sys.executable, str(HERE / "gen_corpus.py"), "--out", str(path), "--mb", "200", "--seed", "1"],
                       check=True)
    return path


def long_transcript(src: Path, out: Path, cwd: str, mb: int) -> int:
    """Lines of many generated sessions, re-labelled as one session in ``cwd``."""
    limit = mb * 1_000_000
    size = 0
    with open(out, "w", encoding="utf-8") as fh:
        for f in sorted((src / "claude" / "projects").rglob("*.jsonl")):
            for line in f.open(encoding="utf-8"):
                try:
                    o = json.loads(line)
                except ValueError:
                    continue
                if "sessionId" in o:
                    o["sessionId"] = SID
                if "cwd" in o:
                    o["cwd"] = cwd
                s = json.dumps(o, ensure_ascii=False) + "\n"
                fh.write(s)
                size += len(s.encode("utf-8"))
                if size >= limit:
                    return size
    return size


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=50)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--corpus", type=Path, default=HERE / "out" / "corpus-200mb-s1")
    args = ap.parse_args()
    src = corpus(args.corpus)
    with tempfile.TemporaryDirectory(prefix="deja-capture-") as tmp:
        tmp = Path(tmp)
        repo = tmp / "repo"
        repo.mkdir()
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        (repo / "a.txt").write_text("a\n")
        transcript = tmp / f"{SID}.jsonl"
        size = long_transcript(src, transcript, str(repo), args.mb)
        env = dict(os.environ, DEJA_INDEX_DIR=str(tmp / "index.db"), DEJA_NO_REFRESH="1", HOME=str(tmp))
        payload = json.dumps({"session_id": SID, "transcript_path": str(transcript), "cwd": str(repo),
                              "hook_event_name": "PreCompact", "trigger": "auto"}).encode()
        times, stored = [], 0
        for i in range(args.runs + 1):
            t0 = time.perf_counter()
            subprocess.run(deja() + ["hook-precompact"], input=payload, env=env, capture_output=True, check=True)
            dt = time.perf_counter() - t0
            if i == 0:
                continue  # the first run also creates the catalog and warms the page cache
            times.append(dt * 1000)
            stored += (tmp / "index.db.pending").is_dir() and any((tmp / "index.db.pending").iterdir())
        times.sort()
        p90 = times[min(len(times) - 1, int(round(0.9 * (len(times) - 1))))]
        print(f"transcript {size / 1e6:.1f} MB, {args.runs} runs (whole process)")
        print(f"hook-precompact  median {statistics.median(times):.0f}ms  p90 {p90:.0f}ms  min {times[0]:.0f}ms  "
              f"stored {stored}/{len(times)}")


if __name__ == "__main__":
    main()
