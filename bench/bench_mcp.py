#!/usr/bin/env python3
"""`recall` latency inside one `deja mcp` process, and its memory over many calls.

    python bench/bench_mcp.py INDEX_DIR [--calls 1000] [--distinct] [--settle S] [--queries "a b" "c d" ...]

Starts `deja mcp` against an existing index (DEJA_INDEX_DIR, freshness checks
left on, as an agent runs it), initializes, then sends ``--calls`` recall
calls one after another, cycling through the queries (by default words drawn
from the index's own vocabulary, so each finds sessions; ``--distinct``: a
query never asked before on every call, pairs of 150 common words, so nothing
a warm store keeps of one query serves the next). Prints the median,
p90 and min latency as the client sees it (write the request, read the
answer), and the server's resident memory after the first 20 calls, after
every tenth of the calls, and after the last (growth that does not level off
would be a leak). ``--settle S``: a first call, untimed, then S seconds of
quiet before the timed ones (an agent's first recall, then its work: the
server reads the rest of the store into memory meanwhile).
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


def common_words(index: Path, n: int) -> list[str]:
    """The index's ``n`` most common plain words (5 to 12 letters)."""
    import duckdb

    con = duckdb.connect()
    return [w for (w,) in con.execute(
        "SELECT token FROM read_parquet(?) WHERE length(token) BETWEEN 5 AND 12 AND NOT regexp_matches(token, '[0-9]') "
        "ORDER BY n DESC LIMIT ?", [str(index / "vocab" / "*.parquet"), n]).fetchall()]


def default_queries(index: Path, n: int = 20) -> list[str]:
    """Pairs of common words of the index's vocabulary: queries that match."""
    words = common_words(index, 2 * n)
    return [f"{a} {b}" for a, b in zip(words[0::2], words[1::2])]


def distinct_queries(index: Path, n: int) -> list[str]:
    """``n`` different pairs of the index's 150 most common words, in a fixed shuffled order."""
    import itertools
    import random

    pairs = [f"{a} {b}" for a, b in itertools.combinations(common_words(index, 150), 2)]
    random.Random(1).shuffle(pairs)
    return pairs[:n]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("index", type=Path)
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--queries", nargs="*")
    ap.add_argument("--distinct", action="store_true", help="a new query on every call")
    ap.add_argument("--settle", type=float, default=0.0,
                    help="seconds to wait after a first, untimed call (an agent's first recall, then its work): "
                         "the server reads the rest of the store in that quiet time")
    args = ap.parse_args()
    queries = args.queries or (distinct_queries(args.index, args.calls) if args.distinct else default_queries(args.index))
    env = dict(os.environ, DEJA_INDEX_DIR=str(args.index))
    proc = subprocess.Popen(deja() + ["mcp"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def ask(ident, method, params=None) -> dict:
        proc.stdin.write((json.dumps({"jsonrpc": "2.0", "id": ident, "method": method, "params": params or {}})
                          + "\n").encode())
        proc.stdin.flush()
        return json.loads(proc.stdout.readline())

    ask(0, "initialize", {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "bench"}})
    proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
    if args.settle:
        ask(-1, "tools/call", {"name": "recall", "arguments": {"query": "settle"}})
        time.sleep(args.settle)
    times, answered, early, seen = [], 0, None, []
    for i in range(args.calls):
        t = time.perf_counter()
        msg = ask(i + 1, "tools/call", {"name": "recall", "arguments": {"query": queries[i % len(queries)]}})
        times.append((time.perf_counter() - t) * 1000)
        answered += "No past session" not in json.dumps(msg)
        if i == 19:
            early = rss_mb(proc.pid)
        if (i + 1) % max(1, args.calls // 10) == 0:
            seen.append(f"{i + 1}: {rss_mb(proc.pid):.0f}")
    late = rss_mb(proc.pid)
    proc.stdin.close()
    proc.wait(timeout=60)
    times.sort()
    print(f"recall in one server: median {statistics.median(times):.1f} ms, p90 {times[int(len(times) * 0.9)]:.1f} ms, "
          f"min {times[0]:.1f} ms over {len(times)} calls ({answered} found sessions)")
    print(f"server RSS: {early:.0f} MB after 20 calls, {late:.0f} MB after {len(times)} "
          f"(calls: MB, every tenth: {', '.join(seen)})")


if __name__ == "__main__":
    main()
