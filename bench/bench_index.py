#!/usr/bin/env python3
"""Index budgets of design.md §5, measured as a user pays them: whole processes.

    python bench/bench_index.py --mb 200 --runs 3
    python bench/bench_index.py --mb 1000 --runs 1 --only cold     # peak RSS at 1 GB
    python bench/bench_index.py --profile text --mb 200            # another corpus shape
    python bench/bench_index.py --profile text --mb 300 --sessions 1 --only cold   # one huge transcript

Generates (once, cached under bench/out/corpus-<profile>-<mb>mb-s<seed>/) a Claude Code +
Codex store with bench/gen_corpus.py --profile (default, text, tool, real; see
bench/README.md), then reports medians of:
  cold      `deja index` into an empty store: wall seconds and peak RSS
  unchanged `deja index` on an up-to-date store
  append    one turn appended to a live transcript → `deja index` → searchable
  size      the store's bytes against the corpus's
  search    `deja search --json <query>` whole process (median over queries × runs),
            in-process (DEJA_SERVE=off) and handed to a warm `deja serve`
Peak RSS: the index process's own high-water mark, and the peak of the sum over
its process tree (it and its reader processes), sampled every 20 ms from /proc.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from bench.gen_corpus import PROFILES, append_turn  # noqa: E402

SEARCHES = [
    "connection pool exhausted",
    "flaky test",
    "TypeError undefined",
    "docker compose",
    "migration rollback",
    "parse_config",
    "cargo build error",
    "timeout retry backoff",
]


def deja() -> list[str]:
    exe = Path(sys.executable).parent / "deja"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "deja"]


def corpus(profile: str, mb: int, seed: int, sessions: int | None = None) -> Path:
    out = HERE / "out" / f"corpus-{profile}-{mb}mb-s{seed}{f'-n{sessions}' if sessions else ''}"
    if not (out / ".done").exists():
        if out.exists():
            shutil.rmtree(out)
        subprocess.run([sys.executable, str(HERE / "gen_corpus.py"), "--profile", profile, "--out", str(out),
                        "--mb", str(mb), "--seed", str(seed), *(["--sessions", str(sessions)] if sessions else [])],
                       check=True)
        (out / ".done").write_text("ok")
    # the real path: a store indexed through bench/out from one clone is the
    # same store to another clone's bench (its manifest keys are paths)
    return out.resolve()


def env_for(corpus_dir: Path, index: Path) -> dict:
    return dict(
        os.environ,
        HOME=str(index.parent / "home"),
        DEJA_INDEX_DIR=str(index),
        DEJA_CLAUDE_ROOT=str(corpus_dir / "claude" / "projects"),
        DEJA_CODEX_ROOT=str(corpus_dir / "codex"),
        DEJA_SERVE="off",  # in-process figures; the served ones turn it on (serve_up)
    )


def serve_up(env: dict) -> dict:
    """Start `deja serve` for this store and wait until it answers; the env a served client uses."""
    on = dict(env, DEJA_SERVE="on", DEJA_SERVE_IDLE="600")
    subprocess.Popen(deja() + ["serve"], env=on, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL, start_new_session=True)
    for _ in range(200):
        if serve_status(on):
            return on
        time.sleep(0.05)
    raise SystemExit("deja serve did not start")


def serve_status(env: dict) -> dict | None:
    code = "import json\nfrom deja.pipeline import serve_client\nprint(json.dumps(serve_client.status()))"
    exe = Path(deja()[0]).with_name("python") if Path(deja()[0]).name == "deja" else Path(sys.executable)
    out = subprocess.run([str(exe), "-c", code], env=env, capture_output=True, text=True).stdout
    return json.loads(out or "null")


def serve_down(env: dict) -> dict | None:
    """Stop the server; its last report (memory, requests)."""
    got = serve_status(env)
    if got:
        os.kill(got["pid"], 15)
    return got


def _spawned(rollout: Path) -> bool:
    """A Codex rollout whose session_meta names the thread that spawned it."""
    with open(rollout, "rb") as fh:
        try:
            meta = json.loads(fh.readline()).get("payload") or {}
        except ValueError:
            return False
    source = meta.get("source") if isinstance(meta, dict) else None
    return isinstance(source, dict) and "subagent" in source


def timed(cmd: list[str], env: dict) -> tuple[float, int, str]:
    """(wall seconds, peak RSS of the child in MB, stdout)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr[-2000:]}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    # ru_maxrss of children is the max over all waited children: only trust a rise
    return wall, max(peak, before) // 1024 if peak > before else -1, proc.stdout


def _tree_rss_kb(pid: int) -> tuple[int, int]:
    """(resident KB of ``pid`` and every descendant — the reader processes and
    the forkserver of a big run —, ``pid``'s own high-water mark), from /proc."""
    total, hwm, todo = 0, 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS"):
                        total += int(line.split()[1])
                    elif line.startswith("VmHWM") and p == pid:
                        hwm = int(line.split()[1])
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except (OSError, ValueError):
            pass
    return total, hwm


def cold_run(cmd: list[str], env: dict) -> tuple[float, float, float]:
    """(wall seconds, the main process's peak RSS in MB, the process tree's
    peak RSS in MB, sampled every 20 ms: the budget counts the readers too)."""
    import tempfile

    err = tempfile.TemporaryFile()  # (a pipe nobody reads could fill and stall the run)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err)
    tree = main = 0
    while proc.poll() is None:
        total, hwm = _tree_rss_kb(proc.pid)
        tree, main = max(tree, total), max(main, hwm)
        time.sleep(0.02)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        err.seek(0)
        raise SystemExit(f"deja index failed: {err.read().decode(errors='replace')[-500:]}")
    return wall, main / 1024, tree / 1024


def size_of(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", choices=list(PROFILES), default="default", help="corpus shape (bench/README.md)")
    ap.add_argument("--mb", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sessions", type=int, help="this many sessions (--sessions 1: one huge transcript)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", choices=["cold", "unchanged", "append", "search"], action="append")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    only = set(args.only or ["cold", "unchanged", "append", "search"])
    src = corpus(args.profile, args.mb, args.seed, args.sessions)
    corpus_bytes = size_of(src / "claude") + size_of(src / "codex")
    work = HERE / "out" / "work"
    report: dict = {"profile": args.profile, "corpus_mb": round(corpus_bytes / 1e6, 1), "runs": args.runs}

    cold, rss, tree = [], [], []
    index = work / "index.db"
    for i in range(args.runs if "cold" in only else 1):
        if work.exists():
            shutil.rmtree(work)
        work.mkdir(parents=True)
        wall, main_mb, tree_mb = cold_run(deja() + ["index", "--json"], env_for(src, index))
        cold.append(wall)
        rss.append(main_mb)
        tree.append(tree_mb)
    def progress(key):
        print(f"{key}: {report[key]}", file=sys.stderr, flush=True)

    if "cold" in only:
        report["cold_index_s"] = round(statistics.median(cold), 2)
        report["cold_index_all_s"] = [round(x, 2) for x in cold]
        report["peak_rss_mb"] = round(statistics.median(rss))
        report["peak_tree_rss_mb"] = round(statistics.median(tree))
        report["peak_tree_rss_all_mb"] = [round(x) for x in tree]
        progress("cold_index_all_s")
        progress("peak_tree_rss_all_mb")
    store_bytes = size_of(index)
    report["store_mb"] = round(store_bytes / 1e6, 1)
    report["store_ratio"] = round(store_bytes / corpus_bytes, 3)

    env = env_for(src, index)
    if "unchanged" in only:
        xs = [timed(deja() + ["index"], env)[0] for _ in range(max(3, args.runs))]
        report["unchanged_index_s"] = round(statistics.median(xs), 3)

    if "append" in only:
        rng = random.Random(7)
        # sessions a person continues: not a subagent's transcript (Claude's agent-*.jsonl,
        # a Codex thread its session_meta says a subagent spawned), which deja leaves
        # out unless DEJA_INCLUDE_SUBAGENTS=1; the real profile has both
        files = [f for f in sorted((src / "claude" / "projects").rglob("*.jsonl")) if not f.name.startswith("agent-")]
        files += [f for f in sorted((src / "codex" / "sessions").rglob("*.jsonl")) if not _spawned(f)]

        def append(rng) -> str:
            """A new turn appended to a random session (one with a turn to continue)."""
            while True:
                f = rng.choice(files)
                try:
                    return append_turn(str(f), "claude" if "/claude/" in str(f) else "codex")["marker"]
                except ValueError:  # no user or assistant line to continue (a summary-only file)
                    continue

        scratch = work / "live"
        idx_t, total_t = [], []
        for i in range(max(3, args.runs)):
            marker = append(rng)
            t0 = time.perf_counter()
            timed(deja() + ["index"], env)
            t1 = time.perf_counter()
            _, _, out = timed(deja() + ["search", "--json", marker], env)
            t2 = time.perf_counter()
            hits = json.loads(out)["hits"]
            if not hits:
                raise SystemExit(f"appended marker {marker} not searchable")
            idx_t.append(t1 - t0)
            total_t.append(t2 - t0)
        # and as a person with a warm server pays it: no index run, the served
        # search ingests the appended turn in front of its answer
        served = serve_up(env)
        timed(deja() + ["search", "--json", "warm", "up"], served)
        found_t = []
        for i in range(max(3, args.runs)):
            marker = append(rng)
            t0 = time.perf_counter()
            _, _, out = timed(deja() + ["search", "--json", marker], served)
            found_t.append(time.perf_counter() - t0)
            if not json.loads(out)["hits"]:
                raise SystemExit(f"appended marker {marker} not found by the served search")
        serve_down(served)
        del scratch
        report["append_index_s"] = round(statistics.median(idx_t), 3)
        report["append_to_found_s"] = round(statistics.median(total_t), 3)
        report["append_to_found_served_s"] = round(statistics.median(found_t), 3)
        report["note_append"] = "appends modify the cached corpus; it is regenerated when deleted"

    if "search" in only:
        # in-process and served side by side, query by query: the machine's
        # noise then falls on both alike
        served = serve_up(env)
        times: dict[str, list[float]] = {"": [], "_served": []}
        for _ in range(max(3, args.runs)):
            for q in SEARCHES:
                for key, e in (("", env), ("_served", served)):
                    times[key].append(timed(deja() + ["search", "--json"] + q.split(), e)[0])
        # and served back to back, as an agent's searches and hooks come: the
        # in-process runs between them above leave the warm process's memory
        # cold in the CPU's caches (a few ms of every figure there)
        times["_served_burst"] = []
        for _ in range(max(3, args.runs)):
            for q in SEARCHES:
                times["_served_burst"].append(timed(deja() + ["search", "--json"] + q.split(), served)[0])
        for key, xs in times.items():
            report[f"search_json{key}_median_ms"] = round(statistics.median(xs) * 1000)
            report[f"search_json{key}_p90_ms"] = round(sorted(xs)[int(len(xs) * 0.9)] * 1000)
        last = serve_down(served) or {}
        report["server_rss_mb"] = last.get("rss_mb")  # the main process
        report["server_warm_rss_mb"] = [w.get("rss_mb") for w in last.get("warm") or []]
        report["server_pss_mb"] = last.get("pss_mb")  # main and warm processes, shared pages counted once

    print_report(report, args.json)


def print_report(report: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps(report, indent=2))
    else:
        width = max(map(len, report))
        for k, v in report.items():
            print(f"{k:>{width}}: {v}")


if __name__ == "__main__":
    main()
