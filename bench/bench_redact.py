#!/usr/bin/env python3
"""Redaction's cost on the index path, against an older rule set in the same run.

    python bench/bench_redact.py --corpus bench/out/corpus-text-200mb-s1 --files 120
    python bench/bench_redact.py --before HEAD~3 --runs 3

Reads the message texts of the first ``--files`` transcripts of a corpus (the
texts `deja index` hands the redactor, unredacted), then times
``redact_many`` over all of them: per text (``vectorized=False``, what the
index's reader processes run) and batched (polars prefilters, the one-process
path). With ``--before REV`` the redactor as committed at REV is loaded beside
the current one and the two are timed alternately, so machine noise falls on
both; each figure is the median of ``--runs``.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def corpus_texts(corpus: Path, files: int) -> list[str]:
    from deja.pipeline.ingest import REDACT_WINDOW
    from deja.stages import normalize
    from deja.stages.sources import reader
    from deja.stages.sources.values import Faults

    paths = sorted((corpus / "claude").rglob("*.jsonl"))[: files // 2 + files % 2]
    paths += sorted((corpus / "codex" / "sessions").rglob("*.jsonl"))[: files // 2]
    texts: list[str] = []
    for path in paths:
        harness = "claude" if "/claude/" in str(path) else "codex"
        res = reader(harness).read(str(path), 0)
        cols, _ = normalize.to_columns(res.sessions, str(path), {}, {}, Faults())
        texts += [t[:REDACT_WINDOW] for t in cols["text"]]
    return texts


def load_before(rev: str):
    """stages/redact.py as of ``rev``, as a sibling module of the current one."""
    src = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:stages/redact.py"],
                         check=True, capture_output=True, text=True).stdout
    path = Path("/tmp") / f"deja_redact_before_{rev.replace('/', '_').replace('~', '_')}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("deja.stages._redact_before", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def timed(fn, texts: list[str], vectorized: bool) -> tuple[float, dict]:
    t0 = time.perf_counter()
    _, counts = fn(texts, vectorized)
    return time.perf_counter() - t0, counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=HERE / "out" / "corpus-text-200mb-s1")
    ap.add_argument("--files", type=int, default=120)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--before", help="git revision whose stages/redact.py to time alongside")
    args = ap.parse_args()
    from deja.stages import redact

    texts = corpus_texts(args.corpus, args.files)
    chars = sum(map(len, texts))
    print(f"{len(texts)} texts, {chars / 1e6:.1f} M characters from {args.files} files of {args.corpus}")
    contenders = [("after", redact.redact_many)]
    if args.before:
        contenders.insert(0, (f"before ({args.before})", load_before(args.before).redact_many))
    for _, fn in contenders:  # warm-up: imports (polars) and regex compilation
        fn(texts[:2000], True)
    for vectorized in (False, True):
        times: dict[str, list[float]] = {name: [] for name, _ in contenders}
        counts: dict[str, dict] = {}
        for _ in range(args.runs):
            for name, fn in contenders:  # alternate, so noise falls on both
                t, counts[name] = timed(fn, texts, vectorized)
                times[name].append(t)
        mode = "batched (polars)" if vectorized else "per text"
        for name, _ in contenders:
            med = statistics.median(times[name])
            total = sum(counts[name].values())
            print(f"{mode:17} {name:22} median {med:6.2f} s  ({chars / med / 1e6:5.1f} M chars/s)"
                  f"  {total} redactions {dict(sorted(counts[name].items()))}")


if __name__ == "__main__":
    main()
