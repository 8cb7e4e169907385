#!/usr/bin/env python3
"""Semantic recall's costs (issue 18), measured as a user pays them: whole processes.

    python bench/bench_embed.py --profile default --mb 200 --runs 3
    python bench/bench_embed.py --profile text --mb 200 --runs 3

On the bench corpus of bench_index.py (generated once, cached under bench/out/),
indexed into bench/out/work-embed/, with the embedding source of the environment
(the local model of `pip install 'deja[semantic]'` unless DEJA_EMBED_URL is set):
  embed     `deja embed --rebuild` wall seconds (median of --runs), passages a
            second, the process's peak RSS, the vectors' bytes
  again     `deja embed` with nothing new (the incremental check)
  search    `deja search --json <query>` handed to a warm `deja serve`, with the
            vectors and with --no-embed, query by query side by side (the
            machine's noise falls on both alike); the server's memory after
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from bench.bench_index import (  # noqa: E402
    SEARCHES, cold_run, corpus, deja, env_for, print_report, serve_down, serve_up, size_of, timed)
from bench.gen_corpus import PROFILES  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", choices=list(PROFILES), default="default")
    ap.add_argument("--mb", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--search-only", action="store_true",
                    help="only the served searches, on the store and vectors the last run left "
                         "(e5 takes a quarter of an hour to embed 200 MB)")
    args = ap.parse_args()
    src = corpus(args.profile, args.mb, args.seed)
    work = (HERE / "out").resolve() / "work-embed"
    index = work / "index.db"
    env = env_for(src, index)
    report: dict = {"profile": args.profile, "corpus_mb": args.mb, "runs": args.runs}
    if args.search_only:
        if not (index / "vectors" / "meta.json").exists():
            sys.exit(f"bench_embed: no vectors in {index}: run it once without --search-only")
        report["model"] = json.loads((index / "vectors" / "meta.json").read_text())["model"]
        searches(report, env, args.runs)
        print_report(report, args.json)
        return
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    cold_run(deja() + ["index"], env)

    walls, peaks, summary = [], [], {}
    for _ in range(args.runs):
        wall, peak, _tree = cold_run(deja() + ["embed", "--rebuild"], env)
        walls.append(wall)
        peaks.append(peak)
    summary = json.loads(timed(deja() + ["embed", "--json"], env)[2])
    meta = json.loads((index / "vectors" / "meta.json").read_text())
    passages = sum(p["rows"] for p in meta["parts"])
    report.update(model=summary["model"], records=summary["records"], passages=passages,
                  embed_s=round(statistics.median(walls), 2), embed_all_s=[round(w, 2) for w in walls],
                  passages_per_s=round(passages / statistics.median(walls)),
                  embed_peak_rss_mb=round(statistics.median(peaks)),
                  vectors_mb=round(size_of(index / "vectors") / 1e6, 1),
                  store_mb=round(size_of(index) / 1e6, 1))
    again = [timed(deja() + ["embed"], env)[0] for _ in range(args.runs)]
    report["embed_nothing_new_s"] = round(statistics.median(again), 3)
    searches(report, env, args.runs)
    print_report(report, args.json)


def searches(report: dict, env: dict, runs: int) -> None:
    """Served `deja search --json`, with the vectors and with --no-embed,
    query by query side by side; the server's memory after."""
    served = serve_up(env)
    times: dict[str, list[float]] = {"vectors": [], "words": []}
    for q in SEARCHES:  # a first round warms the server's process (its vectors, its model)
        timed(deja() + ["search", "--json"] + q.split(), served)
    for _ in range(max(3, runs)):
        for q in SEARCHES:
            times["vectors"].append(timed(deja() + ["search", "--json"] + q.split(), served)[0])
            times["words"].append(timed(deja() + ["search", "--json", "--no-embed"] + q.split(), served)[0])
    for key, xs in times.items():
        report[f"search_served_{key}_median_ms"] = round(statistics.median(xs) * 1000, 1)
        report[f"search_served_{key}_p90_ms"] = round(sorted(xs)[int(len(xs) * 0.9)] * 1000, 1)
    last = serve_down(served) or {}
    report["server_pss_mb"] = last.get("pss_mb")
    report["server_warm_rss_mb"] = [w.get("rss_mb") for w in last.get("warm") or []]


if __name__ == "__main__":
    main()
