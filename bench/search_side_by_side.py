#!/usr/bin/env python3
"""`deja search --json` whole process, in-process (DEJA_SERVE=off), of two or
more installs against one store, query by query in turn: the machine's noise
falls on every install alike. Wall and CPU (user + system of the process)
medians; CPU is the steadier figure on a loaded machine.

    python bench/search_side_by_side.py --profile default --rounds 8 \\
        before=/tmp/va/bin/deja after=/tmp/vb/bin/deja

The store is bench_index.py's (bench/out/work, indexed from the cached corpus
of that profile): run `bench_index.py --profile P --mb 200 --only search` once
first. Build each install clean: `git archive REV | tar -x -C DIR && python3
-m venv V && V/bin/pip install DIR`.

--served: each install asks its own warm `deja serve` (a HOME of its own, so
a server of its own code), on the store with vectors that bench_embed.py left
(bench/out/work-embed; installs with the semantic extra, `pip install
'DIR[semantic]'`): every query with the vectors and with --no-embed, and
--hook-prompt the prompt hook's payloads instead, as the agent's hook client
sends them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_index import SEARCHES, env_for, serve_down  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("installs", nargs="+", help="NAME=PATH-TO-deja, two or more")
    ap.add_argument("--profile", default="default")
    ap.add_argument("--mb", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--served", action="store_true", help="warm servers, on bench_embed.py's store with vectors")
    ap.add_argument("--hook-prompt", action="store_true", help="with --served: the prompt hook, not search")
    args = ap.parse_args()
    corpus = HERE / "out" / f"corpus-{args.profile}-{args.mb}mb-s1"
    index = HERE / "out" / ("work-embed" if args.served else "work") / "index.db"
    if not corpus.exists() or not index.exists():
        first = "bench_embed.py" if args.served else "bench_index.py"
        raise SystemExit(f"no store: run {first} --profile {args.profile} --mb {args.mb} once first")
    env = env_for(corpus, index)
    installs = [spec.split("=", 1) for spec in args.installs]
    if args.served:
        served(args, env, index, installs)
        return
    wall: dict[str, list[float]] = {n: [] for n, _ in installs}
    cpu: dict[str, list[float]] = {n: [] for n, _ in installs}
    for r in range(args.rounds):
        for q in SEARCHES:
            for name, exe in (installs if r % 2 == 0 else installs[::-1]):
                t = time.perf_counter()
                p = subprocess.Popen([exe, "search", "--json", *q.split()], env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                _, status, usage = os.wait4(p.pid, 0)
                wall[name].append(time.perf_counter() - t)
                cpu[name].append(usage.ru_utime + usage.ru_stime)
                if os.waitstatus_to_exitcode(status) not in (0, 1):
                    raise SystemExit(f"{name}: deja search {q!r} failed")
    for name, _ in installs:
        print(f"{name:12s} wall median {statistics.median(wall[name]) * 1000:6.1f} ms   "
              f"cpu median {statistics.median(cpu[name]) * 1000:6.1f} ms   ({len(wall[name])} searches)")


# the prompt hook's payloads: questions a person asks an agent (bench_hooks.py's first)
PROMPTS = ["why does the integration test time out when the database pool is exhausted?",
           "the uploads keep failing behind the proxy, what did we change last time",
           "how did we stop the worker from leaking memory",
           "what was decided about retries for the payment webhook",
           "can you look at why the cache keeps serving stale prices"]


def served(args, env: dict, index: Path, installs: list[list[str]]) -> None:
    """Served, side by side: each install's warm server (its own HOME), the
    same requests in turn, medians and 90th percentiles."""
    import json

    from bench_hooks import pick_cwd

    envs = {}
    for name, _ in installs:
        home = index.parent / f"home-{name}"
        home.mkdir(exist_ok=True)
        envs[name] = dict(env, HOME=str(home), DEJA_SERVE="on", DEJA_SERVE_IDLE="900", DEJA_NO_REFRESH="1")
    cwd = pick_cwd(index)[0]
    ledger = index.with_name(index.name + ".hookseen")
    if args.hook_prompt:
        asks = [("hook-prompt", p) for p in PROMPTS]
    else:
        asks = [(mode, q) for q in SEARCHES for mode in ("vectors", "words")]

    def ask(name: str, exe: str, mode: str, text: str) -> float:
        if mode == "hook-prompt":
            ledger.unlink(missing_ok=True)  # (every run does the full work)
            cmd, data = [exe, "hook-prompt"], json.dumps({
                "session_id": "bench", "transcript_path": None, "cwd": cwd,
                "hook_event_name": "UserPromptSubmit", "prompt": text}).encode()
        else:
            cmd, data = [exe, "search", "--json", *(["--no-embed"] if mode == "words" else []), *text.split()], b""
        t = time.perf_counter()
        p = subprocess.run(cmd, input=data, env=envs[name], capture_output=True)
        if p.returncode not in (0, 1):
            raise SystemExit(f"{name}: {' '.join(cmd[1:])} failed: {p.stderr.decode()[-300:]}")
        return time.perf_counter() - t

    for name, exe in installs:
        # each server started and warm (its model and vectors loaded, which takes it
        # seconds; until then a client answers in process): asked until three answers
        # in a row are as fast as its fastest yet. With the first kind of request only:
        # a warm process before 52913b3 whose first request left the vectors unread
        # left after every search that read them
        first = [a for a in asks if a[0] == asks[0][0]]
        best, steady = float("inf"), 0
        for i in range(60):
            took = ask(name, exe, *first[i % len(first)])
            best = min(best, took)
            steady = steady + 1 if took < 2 * best else 0
            if steady >= 3 and i >= 8:
                break
    took: dict[tuple[str, str], list[float]] = {}
    for r in range(args.rounds):
        for mode, text in asks:
            for name, exe in (installs if r % 2 == 0 else installs[::-1]):
                took.setdefault((name, mode), []).append(ask(name, exe, mode, text))
    for (name, mode), ts in took.items():
        ts.sort()
        print(f"{name:12s} {mode:12s} median {statistics.median(ts) * 1000:6.1f} ms   "
              f"p90 {ts[int(0.9 * (len(ts) - 1))] * 1000:6.1f} ms   ({len(ts)})")
    for name, _ in installs:
        serve_down(envs[name])


if __name__ == "__main__":
    main()
