#!/usr/bin/env python3
"""The team store (`deja team`) at the size of a team: ten machines' 200 MB
histories published to one lake, then searched.

    python bench/bench_team.py [--machines 10] [--profiles default,real,text,tool] [--mb 200]
                               [--catalog DSN] [--searches 15] [--json]

Each machine is its own HOME (its team.toml, watermarks) over the index of one
generated corpus (the profiles in turn, so the lake holds several shapes;
built once under bench/out/team/). With no --catalog a Postgres is started
in a temp folder (Debian's postgresql). The data folder is made anew. Reports
per machine the records published and the publish's wall time (whole
process: pyiceberg's import, the redaction again, the Parquet writes, the
commit), the lake's size, then `deja search --team --json` from an eleventh
machine: the first search after the last publish (it lists the tables'
files), and the median of --searches more (file lists cached; each asks the
catalog for the tables' metadata pointer), over words of the store's vocabulary.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_index import corpus, deja, env_for  # noqa: E402


def start_postgres() -> tuple[str, callable]:
    import glob

    bindir = os.path.dirname(sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))[-1])
    tmp = Path(tempfile.mkdtemp(prefix="deja-bench-pg-"))
    data, sock = tmp / "data", tmp / "sock"
    sock.mkdir()
    as_user: list[str] = []
    if os.geteuid() == 0:
        as_user = ["runuser", "-u", "postgres", "--"]
        os.chmod(tmp, 0o755)
        data.mkdir()
        for p in (data, sock):
            shutil.chown(p, "postgres")
    user = "postgres" if as_user else os.environ.get("USER") or "postgres"
    subprocess.run(as_user + [f"{bindir}/initdb", "-D", str(data), "-A", "trust", "-U", user], check=True,
                   capture_output=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    subprocess.run(as_user + [f"{bindir}/pg_ctl", "-D", str(data), "-w", "-l", str(data / "log"), "-o",
                              f"-p {port} -k {sock} -c listen_addresses=''", "start"], check=True, capture_output=True)

    def stop() -> None:
        subprocess.run(as_user + [f"{bindir}/pg_ctl", "-D", str(data), "-m", "fast", "stop"], capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)

    return f"host={sock} port={port} dbname=postgres user={user}", stop


def index_of(profile: str, mb: int) -> Path:
    """The index of one generated corpus, built once."""
    src = corpus(profile, mb, 1)
    index = HERE / "out" / "team" / f"{profile}-{mb}mb" / "index.db"
    if not (index.parent / ".done").exists():
        shutil.rmtree(index.parent, ignore_errors=True)
        index.parent.mkdir(parents=True)
        subprocess.run(deja() + ["index"], env=env_for(src, index), check=True, capture_output=True)
        (index.parent / ".done").write_text("ok")
    return index


def machine_env(root: Path, name: str, index: Path | None) -> dict:
    home = root / name
    home.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, HOME=str(home), DEJA_SERVE="off", DEJA_NO_REFRESH="1", DEJA_MACHINE=name)
    env["DEJA_INDEX_DIR"] = str(index) if index else str(home / "index.db")
    return env


def run(cmd: list[str], env: dict) -> tuple[float, str]:
    t = time.perf_counter()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    took = time.perf_counter() - t
    if p.returncode:
        raise SystemExit(f"{' '.join(cmd)}: {p.stderr.strip()}")
    return took, p.stdout


def vocab_queries(index: Path, n: int) -> list[str]:
    import duckdb

    words = [w for (w,) in duckdb.connect().execute(
        "SELECT token FROM read_parquet(?) WHERE length(token) BETWEEN 6 AND 12 AND NOT regexp_matches(token, '[0-9_]') "
        "ORDER BY n DESC LIMIT ?", [str(index / "vocab" / "*.parquet"), 2 * n]).fetchall()]
    return [f"{a} {b}" for a, b in zip(words[0::2], words[1::2])]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--machines", type=int, default=10)
    ap.add_argument("--profiles", default="default,real,text,tool")
    ap.add_argument("--mb", type=int, default=200)
    ap.add_argument("--catalog")
    ap.add_argument("--searches", type=int, default=15)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    profiles = args.profiles.split(",")
    indexes = {p: index_of(p, args.mb) for p in profiles}
    dsn, stop = (args.catalog, lambda: None) if args.catalog else start_postgres()
    root = HERE / "out" / "team" / "run"
    shutil.rmtree(root, ignore_errors=True)
    lake = root / "lake"
    report: dict = {"machines": [], "profiles": profiles, "mb": args.mb}
    try:
        for i in range(args.machines):
            profile = profiles[i % len(profiles)]
            name = f"m{i:02d}-{profile}"
            env = machine_env(root / "homes", name, indexes[profile])
            run(deja() + ["team", "init", "--catalog", dsn, "--data", str(lake), "--machine", name], env)
            took, out = run(deja() + ["team", "publish", "--json"], env)
            got = json.loads(out)
            report["machines"].append({"machine": name, "records": got["records"], "sessions": got["sessions"],
                                       "seconds": round(took, 2), "records_per_s": round(got["records"] / took)})
            print(f"{name}: {got['records']} records, {got['sessions']} sessions in {took:.1f} s", file=sys.stderr)
        report["lake_mb"] = round(sum(f.stat().st_size for f in lake.rglob("*") if f.is_file()) / 1e6, 1)
        reader = machine_env(root / "homes", "reader", None)
        run(deja() + ["team", "init", "--catalog", dsn, "--data", str(lake), "--machine", "reader"], reader)
        queries = vocab_queries(indexes[profiles[0]], args.searches + 1)
        first, _ = run(deja() + ["search", "--team", "--json", *queries[0].split()], reader)
        times, hits = [], []
        for q in queries[1:]:
            took, out = run(deja() + ["search", "--team", "--json", *q.split()], reader)
            times.append(took)
            hits.append(json.loads(out)["total"])
        report["search_first_ms"] = round(first * 1000, 1)
        report["search_median_ms"] = round(statistics.median(times) * 1000, 1)
        report["search_p90_ms"] = round(sorted(times)[int(0.9 * (len(times) - 1))] * 1000, 1)
        report["search_hits_median"] = statistics.median(hits)
        total_records = sum(m["records"] for m in report["machines"])
        total_s = sum(m["seconds"] for m in report["machines"])
        report["records"] = total_records
        report["publish_records_per_s"] = round(total_records / total_s)
    finally:
        stop()
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"published {report['records']} records from {args.machines} machines at "
          f"{report['publish_records_per_s']} records/s (median publish "
          f"{statistics.median(m['seconds'] for m in report['machines']):.1f} s); lake {report['lake_mb']} MB")
    print(f"search --team: first {report['search_first_ms']} ms, then median {report['search_median_ms']} ms "
          f"(p90 {report['search_p90_ms']} ms, {report['search_hits_median']} sessions a query)")


if __name__ == "__main__":
    main()
