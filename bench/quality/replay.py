#!/usr/bin/env python3
"""Rank the pools of a traced run again, without searching again: the fusion
as deja ran it (queries/semantic.fuse), the words alone and the vectors
alone, with what each gets right that the fusion does not.

    score.py --corpus DIR --embed --trace pools.jsonl --json > report.json
    replay.py --corpus DIR --trace pools.jsonl --report report.json

A pool (one JSON line per search that fused, queries/semantic.trace) holds
the lexical candidates and their normalised scores, the share of the
question's words found, every session's likeness and its lifts and damps.
Questions whose search did not fuse (a pasted error line, a question the
model does not read) keep the rank the report gave them; without
``--report`` they are left out and counted.

To try another ranking, import this module and pass ``score`` a function of
a pool that returns session ids best first (``fused`` is deja's own); see
bench/README.md ("Four more, tried in session 24").
"""

from __future__ import annotations

import argparse
import json
import os
import sys


def load(corpus: str, trace: str, report: str | None = None) -> tuple[list[dict], int]:
    """(one row per question: kind, answers, pool or None, the report's rank),
    how many questions had neither a pool nor a report rank."""
    questions = [json.loads(line) for line in open(os.path.join(corpus, "questions.jsonl"), encoding="utf-8")]
    pools = {}
    for line in open(trace, encoding="utf-8"):
        p = json.loads(line)
        pools[p["q"]] = p  # (the same question asked twice fused the same pool)
    ranks = {}
    if report:
        ranks = {r["id"]: r.get("rank") for r in json.load(open(report, encoding="utf-8"))["questions"]}
    rows, missing = [], 0
    for q in questions:
        pool = pools.get(q["query"])
        if pool is None and q["id"] not in ranks:
            missing += 1
            continue
        rows.append({"kind": q["kind"], "answers": set(q["answer_sessions"]), "pool": pool,
                     "rank": ranks.get(q["id"])})
    return rows, missing


def fused(pool: dict) -> list[str]:
    """The fusion as deja ran it."""
    from deja.queries import semantic

    calib = semantic.Calibration(**pool["calib"])
    lexical = [(s, score) for s, score in pool["lexical"]]
    held = {s for s, _ in lexical}
    # (a lexical score carries its session's lifts and damps; only the others get them here)
    signal = {s: v for s, v in pool["signal"].items() if s not in held}
    return [s for s, _, _ in semantic.fuse(lexical, pool["likeness"], pool["found"], signal,
                                           coverage=pool["coverage"], calib=calib)]


def vectors_alone(pool: dict) -> list[str]:
    like = pool["likeness"]
    return sorted(like, key=lambda s: -like[s])


def words_alone(pool: dict) -> list[str]:
    held = [s for s, _ in pool["lexical"]]
    seen = set(held)
    return held + [s for s in vectors_alone(pool) if s not in seen]


def rank_of(order: list[str], answers: set[str]) -> int | None:
    return next((i + 1 for i, s in enumerate(order) if s in answers), None)


def ranks(rows: list[dict], rank_fn) -> list[int | None]:
    return [rank_of(rank_fn(r["pool"]), r["answers"]) if r["pool"] is not None else r["rank"] for r in rows]


def metrics(rs: list[int | None], k: int = 5) -> dict:
    n = len(rs) or 1
    return {"n": len(rs), "recall@1": sum(r == 1 for r in rs) / n,
            f"recall@{k}": sum(bool(r) and r <= k for r in rs) / n,
            "mrr": sum(1 / r for r in rs if r) / n}


def score(rows: list[dict], rank_fn, k: int = 5) -> dict:
    """R@1, R@k and MRR of a ranking, overall and per kind."""
    rs = ranks(rows, rank_fn)
    out = {"overall": metrics(rs, k), "per_kind": {}}
    for kind in sorted({r["kind"] for r in rows}):
        out["per_kind"][kind] = metrics([x for x, r in zip(rs, rows) if r["kind"] == kind], k)
    return out


def headroom(rows: list[dict]) -> dict:
    """Questions a single signal puts first and the fusion does not (and the other way round)."""
    f, v, w = (ranks(rows, fn) for fn in (fused, vectors_alone, words_alone))
    pooled = [i for i, r in enumerate(rows) if r["pool"] is not None]
    return {"pooled": len(pooled),
            "vectors first, fusion not": sum(v[i] == 1 and f[i] != 1 for i in pooled),
            "words first, fusion not": sum(w[i] == 1 and f[i] != 1 for i in pooled),
            "fusion first, neither alone": sum(f[i] == 1 and v[i] != 1 and w[i] != 1 for i in pooled),
            "none first": sum(f[i] != 1 and v[i] != 1 and w[i] != 1 for i in pooled)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", required=True, help="the scored corpus (its questions.jsonl)")
    ap.add_argument("--trace", required=True, help="the pools written by score.py --trace")
    ap.add_argument("--report", help="score.py's --json report: the ranks of questions that did not fuse")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    try:
        rows, missing = load(args.corpus, args.trace, args.report)
    except (OSError, ValueError, KeyError) as exc:
        print(f"replay: cannot read the run: {exc}", file=sys.stderr)
        return 2
    out = {name: score(rows, fn, args.k) for name, fn in
           (("fusion", fused), ("words alone", words_alone), ("vectors alone", vectors_alone))}
    out["headroom"] = headroom(rows)
    out["left out"] = missing
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    k = f"recall@{args.k}"
    for name in ("fusion", "words alone", "vectors alone"):
        o = out[name]["overall"]
        kinds = "  ".join(f"{kind} {m['recall@1']:.3f}" for kind, m in out[name]["per_kind"].items())
        print(f"{name:14s} R@1 {o['recall@1']:.3f}  R@{args.k} {o[k]:.3f}  MRR {o['mrr']:.3f}   {kinds}")
    print("  ".join(f"{key}: {n}" for key, n in out["headroom"].items()))
    if missing:
        print(f"{missing} questions left out: no pool traced and no --report rank")
    return 0


if __name__ == "__main__":
    sys.exit(main())
