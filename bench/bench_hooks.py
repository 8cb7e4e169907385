#!/usr/bin/env python3
"""Hook latency (design.md §5: median ≤ 150 ms, whole process), as an agent pays it.

    python bench/bench_hooks.py INDEX_DIR [--runs 15] [--cwd /path/of/a/project]

Runs `deja hook-context`, `hook-prompt` and `hook-tool` as fresh processes with
hooks-contract payloads on stdin against an existing index dir (DEJA_INDEX_DIR),
and prints the median, p90 and min wall time of each, plus whether it answered.
The "already shown" ledger is removed before every run so each run does the
full work (no dedupe short-cut). Without --cwd, the project of the most
recently updated session in the index is used, so the hooks have history.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path


def deja() -> list[str]:
    exe = Path(sys.executable).parent / "deja"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "deja"]


def pick_cwd(index: Path) -> tuple[str, str, str]:
    """(cwd, a file it touched, a command it ran) from the newest session with a cwd."""
    from deja.queries.store_read import open_live

    live = open_live(index)
    try:
        row = live.con.execute(
            "SELECT session_key, cwd, touched FROM sessions WHERE coalesce(cwd, '') <> '' "
            "ORDER BY updated DESC NULLS LAST LIMIT 1").fetchone()
        cmd = None
        if row and live.has("records"):
            cmd = live.con.execute(
                "SELECT text FROM records WHERE role = 'command' AND session_key = ? LIMIT 1", [row[0]]).fetchone()
    finally:
        live.close()
    if not row:
        return os.getcwd(), os.path.join(os.getcwd(), "README.md"), "pytest -q"
    touched = (row[2] or [os.path.join(row[1], "README.md")])[0]
    command = (cmd[0][2:].split("  → exit")[0] if cmd else "pytest -q")
    return row[1], touched, command


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("index", type=Path)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--cwd")
    ap.add_argument("--prompt", default="why does the integration test time out when the database pool is exhausted?")
    args = ap.parse_args()
    index = args.index.expanduser().resolve()
    cwd, touched, command = pick_cwd(index)
    cwd = args.cwd or cwd
    payloads = {
        "hook-context": {"session_id": "bench", "transcript_path": None, "cwd": cwd,
                         "hook_event_name": "SessionStart", "source": "startup"},
        "hook-prompt": {"session_id": "bench", "transcript_path": None, "cwd": cwd,
                        "hook_event_name": "UserPromptSubmit", "prompt": args.prompt},
        "hook-tool": {"session_id": "bench", "transcript_path": None, "cwd": cwd, "hook_event_name": "PreToolUse",
                      "tool_name": "Edit", "tool_input": {"file_path": touched, "old_string": "a", "new_string": "b"},
                      "tool_use_id": "t1"},
        "hook-tool (Bash)": {"session_id": "bench", "transcript_path": None, "cwd": cwd,
                             "hook_event_name": "PreToolUse", "tool_name": "Bash",
                             "tool_input": {"command": command}, "tool_use_id": "t2"},
    }
    env = dict(os.environ, DEJA_INDEX_DIR=str(index))
    ledger = [index.with_name(index.name + ".hookseen")]
    print(f"index {index}\ncwd {cwd}\nruns {args.runs} per hook (whole process)\n")
    print(f"{'hook':<18} {'median':>8} {'p90':>8} {'min':>8}  answered")
    for name, payload in payloads.items():
        sub = name.split()[0]
        data = json.dumps(payload).encode()
        times, answered = [], 0
        for i in range(args.runs + 1):
            for p in ledger:
                try:
                    p.unlink()
                except OSError:
                    pass
            t0 = time.perf_counter()
            proc = subprocess.run(deja() + [sub], input=data, env=env, capture_output=True)
            dt = time.perf_counter() - t0
            if i == 0:
                continue  # warm the page cache
            times.append(dt * 1000)
            answered += bool(proc.stdout.strip())
        times.sort()
        p90 = times[min(len(times) - 1, int(round(0.9 * (len(times) - 1))))]
        print(f"{name:<18} {statistics.median(times):>6.0f}ms {p90:>6.0f}ms {times[0]:>6.0f}ms  {answered}/{len(times)}")


if __name__ == "__main__":
    main()
