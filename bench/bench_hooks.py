#!/usr/bin/env python3
"""Hook latency, whole process, as an agent pays it (issue 17's budgets, warm:
hook-context ≤ 20 ms, hook-prompt ≤ 40 ms, hook-tool ≤ 20 ms, silent ≤ 15 ms).

    python bench/bench_hooks.py INDEX_DIR [--runs 15] [--cwd /path/of/a/project]

Runs `deja hook-context`, `hook-prompt` and `hook-tool` as fresh processes with
hooks-contract payloads on stdin against an existing index dir (DEJA_INDEX_DIR)
three ways: in-process (DEJA_SERVE=off, the cold path), `deja hook-*` served by a
warm `deja serve`, and the compiled hook client the launcher runs (when a C
compiler is here); it prints the median, p90 and min wall time of each, plus
whether it answered.
The "already shown" ledger is removed before every run so each run does the
full work (no dedupe short-cut). Without --cwd, the project of the most
busiest project in the index is used, with its most touched file and most
run command, so the hooks have history (pick_cwd).
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
    """(cwd, a file, a command) with the most history: the busiest project's
    directory, the file its sessions touched most, the command they ran in
    most sessions. The hooks then do their full work (the worst case), and
    the pick does not move when the bench appends turns to the corpus."""
    from deja.stages.store.read import open_live

    live = open_live(index)
    try:
        con = live.con
        row = con.execute("SELECT cwd FROM sessions WHERE coalesce(cwd, '') <> '' "
                          "GROUP BY cwd ORDER BY count(*) DESC, cwd LIMIT 1").fetchone()
        if not row:
            return os.getcwd(), os.path.join(os.getcwd(), "README.md"), "pytest -q"
        cwd = row[0]
        touched = con.execute("SELECT t FROM (SELECT unnest(touched) AS t FROM sessions WHERE cwd = ?) "
                              "GROUP BY t ORDER BY count(*) DESC, t LIMIT 1", [cwd]).fetchone()
        from deja.hooks.tool import is_inspection, normalise

        commands = con.execute(
            "SELECT regexp_replace(text, '  → exit.*$', '') AS c FROM records WHERE role = 'command' "
            "AND session_key IN (SELECT session_key FROM sessions WHERE cwd = ?) "
            "GROUP BY c ORDER BY count(DISTINCT session_key) DESC, c LIMIT 50", [cwd]).fetchall() \
            if live.has("records") else []
        cmd = next((c[2:] for (c,) in commands if not is_inspection(normalise(c[2:]))), "pytest -q")
    finally:
        live.close()
    return cwd, touched[0] if touched else os.path.join(cwd, "README.md"), cmd


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("index", type=Path)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--cwd")
    ap.add_argument("--soak", type=int, default=0,
                    help="then N more requests (every hook and a search, in turn), the server's memory every N/10")
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
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from bench.bench_index import serve_down, serve_up

    payloads["hook-tool (silent)"] = dict(payloads["hook-tool (Bash)"], tool_input={"command": "make frobnicate-quux"})
    env = dict(os.environ, DEJA_INDEX_DIR=str(index), DEJA_SERVE="off")
    served = serve_up(env)
    ledger = [index.with_name(index.name + ".hookseen")]
    client = hook_client()
    print(f"index {index}\ncwd {cwd}\nruns {args.runs} per hook (whole process): in-process (DEJA_SERVE=off), "
          "served (`deja hook-*` asking a warm deja serve) and client (the compiled hook client the\n"
          "hook launcher runs, as an agent pays it)\n")
    print(f"{'hook':<30} {'median':>8} {'p90':>8} {'min':>8}  answered")
    rows = [(name, payload, env, deja()) for name, payload in payloads.items()]
    rows += [(f"{name} served", payload, served, deja()) for name, payload in payloads.items()]
    if client:
        real = dict(served, DEJA_REAL=deja()[0])
        rows += [(f"{name} client", payload, real, [client]) for name, payload in payloads.items()]
    for name, payload, env, cmd in rows:
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
            proc = subprocess.run(cmd + [sub], input=data, env=env, capture_output=True)
            dt = time.perf_counter() - t0
            if i == 0:
                continue  # warm the page cache
            times.append(dt * 1000)
            answered += bool(proc.stdout.strip())
        times.sort()
        p90 = times[min(len(times) - 1, int(round(0.9 * (len(times) - 1))))]
        print(f"{name:<30} {statistics.median(times):>6.1f}ms {p90:>6.1f}ms {times[0]:>6.1f}ms  {answered}/{len(times)}")
    last = serve_down(served) or {}
    cold_starts(min(args.runs, 7), payloads["hook-prompt"], served, ledger)
    if args.soak:
        served = serve_up(env)
        soak(args.soak, payloads, served, client, ledger)
        last = serve_down(served) or {}
    warm = last.get("warm") or []
    print(f"\nserver: {last.get('rss_mb')} MB resident (main) + {len(warm)} warm "
          f"({', '.join(str(w.get('rss_mb')) for w in warm)} MB); {last.get('pss_mb')} MB proportional in all, "
          f"after {last.get('requests')} requests")
    if not client:
        print("(no C compiler: the hook client rows are missing)")


def cold_starts(n: int, payload: dict, env: dict, ledger: list[Path]) -> None:
    """The first request when no server runs: it starts one, detached, and
    answers in-process this time (then the server is stopped again)."""
    from bench.bench_index import serve_down, serve_status

    data = json.dumps(payload).encode()
    times = []
    for _ in range(n):
        for _ in range(100):
            if not serve_status(env):
                break
            serve_down(env)
            time.sleep(0.1)
        for p in ledger:
            p.unlink(missing_ok=True)
        t0 = time.perf_counter()
        subprocess.run(deja() + ["hook-prompt"], input=data, env=env, capture_output=True)
        times.append((time.perf_counter() - t0) * 1000)
        time.sleep(0.5)  # the server it started comes up
    serve_down(env)
    times.sort()
    print(f"{'hook-prompt, no server yet':<30} {statistics.median(times):>6.1f}ms {times[-1]:>6.1f}ms "
          f"{times[0]:>6.1f}ms  (starts one, answers in-process; median, max, min of {n})")


def soak(n: int, payloads: dict, env: dict, client: str | None, ledger: list[Path]) -> None:
    """The server's resident memory over ``n`` requests: it must stay flat (a
    warm process past its limit gives way to a fresh one)."""
    from bench.bench_index import serve_status

    jobs = [(name.split()[0], json.dumps(p).encode()) for name, p in payloads.items()]
    print(f"\nsoak: {n} requests; the server's memory (main + warm, RSS; all, proportional):")
    t0 = time.perf_counter()
    for i in range(n):
        sub, data = jobs[i % (len(jobs) + 1)] if i % (len(jobs) + 1) < len(jobs) else ("search", None)
        if i % 50 == 0:
            for p in ledger:
                p.unlink(missing_ok=True)
        if sub == "search":
            subprocess.run(deja() + ["search", "--json", "connection", "pool", "timeout"], env=env, capture_output=True)
        else:
            subprocess.run(([client] if client else deja()) + [sub], input=data, capture_output=True,
                           env=dict(env, DEJA_REAL=deja()[0]))
        if (i + 1) % max(1, n // 10) == 0:
            st = serve_status(env) or {}
            warm = st.get("warm") or []
            print(f"  {i + 1:>6} requests  {time.perf_counter() - t0:6.0f} s  main {st.get('rss_mb')} MB  "
                  f"warm {[w.get('rss_mb') for w in warm]} MB  all {st.get('pss_mb')} MB proportional  "
                  f"(served {st.get('requests')}, warm {st.get('warm_requests')}, failed {st.get('failed')})")


def hook_client() -> str | None:
    """The compiled hook client (hooks/client_build.py), built in a temp dir."""
    import tempfile

    from deja.hooks import client_build

    where = Path(tempfile.mkdtemp(prefix="deja-bench-client-")) / "deja-hook"
    client_build.build(where, dict(os.environ, DEJA_HOOK_CLIENT="on"))
    path = client_build.client_path(where)
    return str(path) if path.exists() else None


if __name__ == "__main__":
    main()
