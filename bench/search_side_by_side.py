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

from bench_index import SEARCHES, env_for  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("installs", nargs="+", help="NAME=PATH-TO-deja, two or more")
    ap.add_argument("--profile", default="default")
    ap.add_argument("--mb", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=8)
    args = ap.parse_args()
    corpus = HERE / "out" / f"corpus-{args.profile}-{args.mb}mb-s1"
    index = HERE / "out" / "work" / "index.db"
    if not corpus.exists() or not index.exists():
        raise SystemExit(f"no store: run bench_index.py --profile {args.profile} --mb {args.mb} --only search first")
    env = env_for(corpus, index)
    installs = [spec.split("=", 1) for spec in args.installs]
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


if __name__ == "__main__":
    main()
