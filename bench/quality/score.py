#!/usr/bin/env python3
"""Score deja's retrieval quality on a labelled corpus from gen_quality.py.

    python bench/quality/score.py --corpus /tmp/deja-quality [--deja PATH] [--k 5] [--json] [--failures 20]

Indexes the corpus into a throw-away store (DEJA_INDEX_DIR, DEJA_CLAUDE_ROOT, DEJA_CODEX_ROOT and HOME
all point into a temp dir, so nothing of the real user's stores or index is read or touched), then
runs every question as its own `deja search --json --limit 10 <query>` process — the whole process,
as a user pays it — two at a time, and reports recall@1, recall@k and MRR at session level (a hit is
correct when hit.session.id is one of the question's answer_sessions), overall and per question kind,
plus the tier distribution, questions with zero hits, failed runs, and whole-process latency.

A deja that exits non-zero, prints something that isn't JSON, or times out scores zero for that
question and is counted under "errors"; the run carries on.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
KIND_ORDER = ("natural", "keyword", "error", "identifier", "phrase", "multilingual", "temporal-ish", "paraphrase")
# Variables that would point deja (or a harness reader) at the real user's data.
SCRUB = ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME")


def default_deja() -> str:
    venv = os.path.join(REPO, ".venv", "bin", "deja")
    if os.path.exists(venv):
        return venv
    return shutil.which("deja") or "deja"


def load_jsonl(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def make_env(corpus: str, work: str, extra: list[str]) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEJA_") and k not in SCRUB}
    home = os.path.join(work, "home")
    os.makedirs(home, exist_ok=True)
    env.update({
        "HOME": home,
        "DEJA_INDEX_DIR": os.path.join(work, "index"),
        "DEJA_CLAUDE_ROOT": os.path.join(corpus, "claude", "projects"),
        "DEJA_CODEX_ROOT": os.path.join(corpus, "codex"),
        "NO_COLOR": "1",
    })
    # other harnesses' stores a corpus may hold (real_set.py --set more), each as its home
    for sub, var in (("gemini", "DEJA_GEMINI_ROOT"), ("qwen", "DEJA_QWEN_ROOT"),
                     ("copilot", "DEJA_COPILOT_ROOT"), ("cursor", "DEJA_CURSOR_CLI_ROOT")):
        if os.path.isdir(os.path.join(corpus, sub)):
            env[var] = os.path.join(corpus, sub)
    for kv in extra:
        k, _, v = kv.partition("=")
        env[k] = v
    return env


def last_line(text: str) -> str:
    lines = [ln for ln in (text or "").strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


# --------------------------------------------------------------------------- running deja

def run_index(deja: str, env: dict, timeout: float) -> dict:
    t0 = time.perf_counter()
    try:
        p = subprocess.run([deja, "index", "--json"], env=env, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        return {"ok": False, "error": f"cannot run {deja!r}: not found"}
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"deja index did not finish within {timeout:.0f}s"}
    secs = time.perf_counter() - t0
    out = {"ok": p.returncode == 0, "seconds": round(secs, 2), "exit": p.returncode}
    try:
        summary = json.loads(p.stdout)
        out["sessions"] = summary.get("sessions")
        out["errors"] = (summary.get("errors") or [])[:10]
    except (json.JSONDecodeError, AttributeError):
        out["stdout_tail"] = last_line(p.stdout)
    if p.returncode != 0:
        out["error"] = last_line(p.stderr) or f"exit {p.returncode}"
    return out


def run_query(deja: str, env: dict, q: dict, limit: int, timeout: float) -> dict:
    query = q["query"]
    argv = [deja, "search", "--json", "--limit", str(limit)]
    if query.startswith("-"):
        argv.append("--")  # as a user would have to, or the query reads as an option
    argv.append(query)
    t0 = time.perf_counter()
    res = {"id": q["id"], "kind": q["kind"], "rank": None, "hits": [], "tier": None, "total": 0, "error": None}
    try:
        p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        res["ms"] = round((time.perf_counter() - t0) * 1000, 1)
        res["error"] = f"timeout after {timeout:.0f}s"
        return res
    except OSError as exc:
        res["error"] = f"cannot run {deja!r}: {exc}"
        return res
    res["ms"] = round((time.perf_counter() - t0) * 1000, 1)
    if p.returncode != 0:
        res["error"] = f"exit {p.returncode}: {last_line(p.stderr)}"
    try:
        env_json = json.loads(p.stdout) if p.stdout.strip() else None
    except json.JSONDecodeError:
        env_json = None
        res["error"] = res["error"] or f"stdout is not JSON: {p.stdout[:120]!r}"
    if not isinstance(env_json, dict):
        if env_json is not None:
            res["error"] = res["error"] or "stdout JSON is not an object"
        return res
    res["tier"] = env_json.get("tier")
    res["total"] = env_json.get("total") or 0
    ids, dupes = [], 0
    hits = env_json.get("hits")
    for hit in hits if isinstance(hits, list) else []:
        s = hit.get("session") if isinstance(hit, dict) else None
        sid = s.get("id") if isinstance(s, dict) else None
        if sid is None:
            res["malformed_hits"] = res.get("malformed_hits", 0) + 1
            continue
        if sid in ids:
            dupes += 1
            continue
        ids.append(sid)
        res["hits"].append({"id": sid, "harness": s.get("harness"), "project": s.get("project"),
                            "title": s.get("title"), "score": hit.get("score"), "tier": hit.get("tier"),
                            "snippet": (hit.get("snippets") or [""])[0] if hit.get("snippets") else ""})
    if dupes:
        res["duplicate_hits"] = dupes
    answers = set(q["answer_sessions"])
    for i, sid in enumerate(ids, 1):
        if sid in answers:
            res["rank"] = i
            break
    return res


# --------------------------------------------------------------------------- metrics

def metrics(rows: list[dict], k: int) -> dict:
    n = len(rows)
    if not n:
        return {"n": 0}
    r1 = sum(r["rank"] == 1 for r in rows)
    rk = sum(r["rank"] is not None and r["rank"] <= k for r in rows)
    mrr = sum(1 / r["rank"] for r in rows if r["rank"]) / n
    found = sum(r["rank"] is not None for r in rows)
    ms = [r["ms"] for r in rows if r.get("ms") is not None]
    return {"n": n, "recall@1": round(r1 / n, 4), f"recall@{k}": round(rk / n, 4), "mrr": round(mrr, 4),
            "found_in_results": found, "zero_hits": sum(not r["hits"] and not r["error"] for r in rows),
            "errors": sum(bool(r["error"]) for r in rows),
            "median_ms": round(statistics.median(ms), 1) if ms else None}


def latency(rows: list[dict]) -> dict:
    ms = sorted(r["ms"] for r in rows if r.get("ms") is not None)
    if not ms:
        return {}
    pick = lambda q: ms[min(len(ms) - 1, int(q * len(ms)))]  # noqa: E731
    return {"median": round(statistics.median(ms), 1), "p90": pick(0.9), "max": ms[-1], "min": ms[0]}


def failures(rows: list[dict], questions: dict, sessions: dict, n: int) -> list[dict]:
    """The n worst misses, spread across kinds: answer absent while other sessions were returned (a ranking
    failure), then answer absent with nothing returned (a matching failure), then answer found lowest."""
    missed = [r for r in rows if r["rank"] != 1]
    missed.sort(key=lambda r: (r["rank"] is not None, not r["hits"] if r["rank"] is None else 0,
                               -(r["rank"] or 0), r["id"]))
    by_kind: dict[str, list[dict]] = {}
    for r in missed:
        by_kind.setdefault(r["kind"], []).append(r)
    picked = []
    while len(picked) < n and any(by_kind.values()):
        for kind in KIND_ORDER + tuple(k for k in by_kind if k not in KIND_ORDER):
            if by_kind.get(kind) and len(picked) < n:
                picked.append(by_kind[kind].pop(0))
    out = []
    for r in picked:
        q = questions[r["id"]]
        exp = []
        for sid in q["answer_sessions"]:
            s = sessions.get(sid, {})
            exp.append({"id": sid, "harness": s.get("harness"), "project": s.get("project"), "title": s.get("title")})
        first = r["hits"][0] if r["hits"] else None
        if first:
            s = sessions.get(first["id"], {})
            first = dict(first, role=s.get("role"), scenario=s.get("scenario"))
        out.append({"id": r["id"], "kind": r["kind"], "query": q["query"], "rank": r["rank"], "hits": len(r["hits"]),
                    "tier": r["tier"], "error": r["error"], "expected": exp, "first": first})
    return out


# --------------------------------------------------------------------------- output

def fmt(x, digits=3):
    return "-" if x is None else f"{x:.{digits}f}"


def print_report(rep: dict, k: int) -> None:
    ix = rep["index"]
    print(f"deja retrieval quality — corpus {rep['corpus']}")
    print(f"  deja: {rep['deja']}")
    print(f"  {rep['corpus_sessions']} sessions in the corpus, {ix.get('sessions', '?')} indexed in {ix.get('seconds', '?')} s; "
          f"{rep['overall']['n']} questions, --limit {rep['limit']}")
    print()
    head = f"  {'kind':<14}{'n':>4}{'R@1':>8}{f'R@{k}':>8}{'MRR':>8}{'found':>7}{'zero':>6}{'err':>5}{'p50 ms':>9}"
    print(head)
    print("  " + "-" * (len(head) - 2))
    for kind, m in list(rep["per_kind"].items()) + [("ALL", rep["overall"])]:
        if kind == "ALL":
            print("  " + "-" * (len(head) - 2))
        print(f"  {kind:<14}{m['n']:>4}{fmt(m['recall@1']):>8}{fmt(m[f'recall@{k}']):>8}{fmt(m['mrr']):>8}"
              f"{m['found_in_results']:>7}{m['zero_hits']:>6}{m['errors']:>5}{fmt(m['median_ms'], 0):>9}")
    print()
    tiers = ", ".join(f"{t}: {n}" for t, n in rep["tiers"].items())
    print(f"  response tiers: {tiers}")
    print(f"  questions with zero hits: {rep['zero_hits']}   failed runs (non-zero exit / bad JSON / timeout): {rep['errors']}")
    lat = rep["latency_ms"]
    if lat:
        print(f"  whole-process latency: median {lat['median']:.0f} ms, p90 {lat['p90']:.0f} ms, "
              f"min {lat['min']:.0f} ms, max {lat['max']:.0f} ms ({rep['workers']} concurrent)")
    if rep.get("error_samples"):
        print("  sample errors:")
        for e in rep["error_samples"]:
            print(f"    {e}")
    if rep.get("duplicate_hit_questions"):
        print(f"  note: {rep['duplicate_hit_questions']} responses listed the same session more than once "
              "(ranks count distinct sessions)")
    if rep.get("malformed_hit_questions"):
        print(f"  note: {rep['malformed_hit_questions']} responses had hits without session.id (ignored)")


def print_failures(fails: list[dict]) -> None:
    print()
    print(f"worst misses ({len(fails)}):")
    for f in fails:
        where = f"rank {f['rank']}" if f["rank"] else "not in results"
        print()
        print(f"  [{f['kind']}] {f['id']} — {where}; {f['hits']} hits; tier {f['tier']}"
              + (f"; ERROR {f['error']}" if f["error"] else ""))
        print(f"    query:    {one_line(f['query'])}")
        for e in f["expected"]:
            print(f"    expected: {e['harness']} {str(e['id'])[:13]} {e['project']} — {one_line(e['title'] or '')}")
        if f["first"]:
            x = f["first"]
            role = f" ({x['role']}, {x['scenario'] or 'no scenario'})" if x.get("role") else ""
            print(f"    got #1:   {x['harness']} {str(x['id'])[:13]} {x['project']} — {one_line(x['title'] or '')}{role}")
            if x.get("snippet"):
                print(f"              {one_line(x['snippet'])}")


def one_line(s: str, width: int = 150) -> str:
    s = " ".join(str(s).split())
    return s if len(s) <= width else s[: width - 1] + "…"


# --------------------------------------------------------------------------- main

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", required=True, help="directory written by gen_quality.py")
    ap.add_argument("--deja", default=default_deja(), help="deja executable (default: the repo's .venv, else PATH)")
    ap.add_argument("--k", type=int, default=5, help="cut-off for recall@k (default 5)")
    ap.add_argument("--limit", type=int, default=10, help="--limit passed to deja search (default 10; MRR counts ranks up to it)")
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    ap.add_argument("--failures", type=int, default=0, metavar="N", help="show the N worst misses")
    ap.add_argument("--kind", action="append", help="only questions of this kind (repeatable)")
    ap.add_argument("--workers", type=int, default=2, help="concurrent deja processes (default 2)")
    ap.add_argument("--timeout", type=float, default=60, help="seconds per search before it counts as failed (default 60)")
    ap.add_argument("--index-timeout", type=float, default=1800, help="seconds for deja index (default 1800)")
    ap.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                    help="extra environment for deja (repeatable); other DEJA_* variables are not passed through")
    ap.add_argument("--embed", action="store_true",
                    help="run `deja embed` after indexing (semantic recall; compare with a run without it)")
    ap.add_argument("--keep", action="store_true", help="keep the temp index/home and print where it is")
    ap.add_argument("--reuse", metavar="DIR", help="use an index kept by --keep instead of indexing again")
    ap.add_argument("--trace", metavar="FILE",
                    help="write each semantic search's pool to FILE (JSON lines, for replay.py); with --embed")
    args = ap.parse_args(argv)

    corpus = os.path.abspath(args.corpus)
    qpath = os.path.join(corpus, "questions.jsonl")
    if not os.path.exists(qpath):
        ap.error(f"{qpath} not found — generate the corpus with gen_quality.py first")
    questions = load_jsonl(qpath)
    if args.kind:
        questions = [q for q in questions if q["kind"] in args.kind]
    spath = os.path.join(corpus, "sessions.jsonl")
    sessions = {s["id"]: s for s in load_jsonl(spath)} if os.path.exists(spath) else {}
    deja = args.deja if os.path.sep not in args.deja else os.path.abspath(args.deja)

    work = os.path.abspath(args.reuse) if args.reuse else tempfile.mkdtemp(prefix="deja-quality-")
    env = make_env(corpus, work, args.env)
    if args.trace:
        env["DEJA_FUSE_TRACE"] = os.path.abspath(args.trace)
        if os.path.exists(args.trace):
            os.remove(args.trace)  # (deja appends: a line per search of this run)
    try:
        if args.reuse:
            ix = {"ok": True, "reused": work}
        else:
            if not args.json:
                print(f"indexing {corpus} …", file=sys.stderr)
            ix = run_index(deja, env, args.index_timeout)
        if ix.get("ok") and args.embed:
            # semantic recall: vectors of the store beside it (the environment's source:
            # the local model of deja[semantic] unless --env DEJA_EMBED_URL=… is given)
            t_embed = time.perf_counter()
            p = subprocess.run([deja, "embed", "--json"], env=env, capture_output=True, text=True,
                               timeout=args.index_timeout)
            if p.returncode != 0:
                ix = {"ok": False, "error": "deja embed: " + (last_line(p.stderr) or f"exit {p.returncode}")}
            else:
                summary = json.loads(p.stdout)
                ix["embed"] = {k: summary.get(k) for k in ("model", "records", "passages", "coverage")}
                ix["embed"]["seconds"] = round(time.perf_counter() - t_embed, 2)
        if not ix.get("ok"):
            msg = f"deja index failed: {ix.get('error')}"
            if args.json:
                print(json.dumps({"corpus": corpus, "deja": deja, "index": ix, "error": msg}, indent=2))
            else:
                print(msg, file=sys.stderr)
            return 2

        done = 0
        t0 = time.perf_counter()
        tty = sys.stderr.isatty() and not args.json

        def task(q):
            return run_query(deja, env, q, args.limit, args.timeout)

        rows = []
        with ThreadPoolExecutor(max_workers=max(1, args.workers)) as pool:
            for r in pool.map(task, questions):
                rows.append(r)
                done += 1
                if tty and (done % 10 == 0 or done == len(questions)):
                    print(f"\r  {done}/{len(questions)} questions, {time.perf_counter() - t0:.0f}s", end="", file=sys.stderr)
        if tty:
            print(file=sys.stderr)

        per_kind = {}
        kinds = [k for k in KIND_ORDER if any(r["kind"] == k for r in rows)]
        kinds += sorted({r["kind"] for r in rows} - set(kinds))
        for kind in kinds:
            per_kind[kind] = metrics([r for r in rows if r["kind"] == kind], args.k)
        tiers: dict[str, int] = {}
        for r in rows:
            t = r["tier"] if r["tier"] else ("error" if r["error"] else "none")
            if not r["hits"] and not r["error"] and r["tier"]:
                t = f"{t} (0 hits)"
            tiers[t] = tiers.get(t, 0) + 1
        rep = {
            "corpus": corpus, "deja": deja, "k": args.k, "limit": args.limit, "workers": args.workers,
            "corpus_sessions": len(sessions), "index": ix,
            "overall": metrics(rows, args.k), "per_kind": per_kind,
            "tiers": dict(sorted(tiers.items(), key=lambda kv: -kv[1])),
            "zero_hits": sum(not r["hits"] and not r["error"] for r in rows),
            "errors": sum(bool(r["error"]) for r in rows),
            "error_samples": sorted({r["error"] for r in rows if r["error"]})[:5],
            "duplicate_hit_questions": sum(bool(r.get("duplicate_hits")) for r in rows),
            "malformed_hit_questions": sum(bool(r.get("malformed_hits")) for r in rows),
            "latency_ms": latency(rows),
            "wall_seconds": round(time.perf_counter() - t0, 1),
        }
        fails = failures(rows, {q["id"]: q for q in questions}, sessions, args.failures) if args.failures else []
        if args.json:
            rep["questions"] = [{"id": r["id"], "kind": r["kind"], "rank": r["rank"], "hits": len(r["hits"]),
                                 "total": r["total"], "tier": r["tier"], "ms": r.get("ms"), "error": r["error"],
                                 "top": [h["id"] for h in r["hits"][:3]]} for r in rows]
            if fails:
                rep["failures"] = fails
            print(json.dumps(rep, indent=2, ensure_ascii=False))
        else:
            print_report(rep, args.k)
            if fails:
                print_failures(fails)
        return 0
    finally:
        if args.keep and not args.reuse:
            print(f"kept index and home in {work} (rerun with --reuse {work})", file=sys.stderr)
        elif not args.reuse:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
