"""An index run holds DEJA_MEMORY_LIMIT on a store many times its size: the
merges at the end of a cold run, the purge of a replaced transcript and a
compaction finish under the smallest limit deja takes (16 MB) and leave the
same store as a run without one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import REPO, deja_cmd, store_digest, unsorted_parts

GEN = REPO / "bench" / "gen_corpus.py"


def _env(corpus: Path, tmp: Path, name: str, **extra) -> dict:
    return {"PATH": os.environ.get("PATH", ""), "DEJA_SERVE": "off", "LANG": "C.UTF-8", "HOME": str(tmp / "home"),
            "DEJA_INDEX_DIR": str(tmp / name), "DEJA_NO_REFRESH": "1",
            "DEJA_CLAUDE_ROOT": str(corpus / "claude" / "projects"), "DEJA_CODEX_ROOT": str(corpus / "codex"),
            # many small flushes: dozens of parts per folder for the merges to take in
            "DEJA_FLUSH_BYTES": "300000", **extra}


def _index(env: dict, *args: str) -> None:
    proc = subprocess.run(deja_cmd() + ["index", "--json", *args], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr


def test_a_cold_index_and_its_merges_hold_a_16mb_limit_and_build_the_same_store(tmp_path):
    corpus = tmp_path / "corpus"
    subprocess.run([sys.executable, str(GEN), "--profile", "text", "--out", str(corpus), "--mb", "12", "--seed", "5"],
                   check=True, capture_output=True)
    free = _env(corpus, tmp_path, "free.db")
    tight = _env(corpus, tmp_path, "tight.db", DEJA_MEMORY_LIMIT="16MB")
    _index(free)
    _index(tight)
    assert store_digest(tmp_path / "tight.db") == store_digest(tmp_path / "free.db")
    assert unsorted_parts(tmp_path / "tight.db") == []

    # a replaced transcript: its records are purged from the live parts (a rewrite of each)
    victim = max((corpus / "claude" / "projects").rglob("*.jsonl"), key=lambda p: p.stat().st_size)
    lines = victim.read_bytes().splitlines(keepends=True)
    victim.write_bytes(b"".join(lines[: len(lines) // 2]))
    _index(free)
    _index(tight)
    digest = store_digest(tmp_path / "tight.db")
    assert digest == store_digest(tmp_path / "free.db")
    assert unsorted_parts(tmp_path / "tight.db") == []


def test_a_compaction_holds_a_16mb_limit(tmp_path):
    """Compaction on its own (every folder merged, the deletes cleared) under the limit."""
    corpus = tmp_path / "corpus"
    subprocess.run([sys.executable, str(GEN), "--profile", "text", "--out", str(corpus), "--mb", "6", "--seed", "6"],
                   check=True, capture_output=True)
    env = _env(corpus, tmp_path, "index.db", DEJA_FLUSH_BYTES="200000", DEJA_SMALL_RUN_BYTES="0")
    # a big run writes a part per folder once; three runs over a growing corpus
    # leave three per folder, and a replaced transcript a deletes part
    files = sorted((corpus / "claude" / "projects").rglob("*.jsonl"))
    held = tmp_path / "held"
    for i, f in enumerate(files):
        if i % 3:
            dest = held / f.relative_to(corpus)
            dest.parent.mkdir(parents=True, exist_ok=True)
            f.rename(dest)
    for step in (1, 2):
        _index(env)
        for i, f in enumerate(files):
            if i % 3 == step:
                (held / f.relative_to(corpus)).rename(f)
    _index(env)
    lines = files[0].read_bytes().splitlines(keepends=True)
    files[0].write_bytes(b"".join(lines[: len(lines) // 2]))
    _index(env)
    before = store_digest(tmp_path / "index.db")
    code = (
        "import os\n"
        "from deja.stages.store.catalog import Store\n"
        "from deja.stages.store.compact import compact\n"
        "store = Store(os.environ['DEJA_INDEX_DIR'])\n"
        "with store.writer_lock(10):\n"
        "    print(compact(store, 999_999, force=True))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], env=dict(env, DEJA_MEMORY_LIMIT="16MB"),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout) > 0
    assert store_digest(tmp_path / "index.db") == before
    assert unsorted_parts(tmp_path / "index.db") == []


def test_a_merge_cut_into_key_ranges_writes_what_one_sort_writes(tmp_path):
    """stages/merge.copy_sorted with ranges far smaller than the parts: every
    dataset's merge equals DuckDB's single ORDER BY, row for row."""
    import duckdb

    from deja.stages.store import layout, merge, write

    corpus = tmp_path / "corpus"
    subprocess.run([sys.executable, str(GEN), "--profile", "text", "--out", str(corpus), "--mb", "3", "--seed", "7"],
                   check=True, capture_output=True)
    env = _env(corpus, tmp_path, "index.db", DEJA_FLUSH_BYTES="100000", DEJA_SMALL_RUN_BYTES="0")
    _index(env)
    index = tmp_path / "index.db"
    con = duckdb.connect()
    con.execute("SET preserve_insertion_order = true")
    cases = {
        "records": ("records/*/*/*.parquet", "SELECT * FROM read_parquet($files, hive_partitioning=false) WHERE $range",
                    layout.RECORDS_KEYS, "role"),
        "postings": ("postings/*/*.parquet", "SELECT * FROM read_parquet($files, hive_partitioning=false) WHERE $range",
                     layout.POSTINGS_KEYS, None),
        "vocab": ("vocab/*.parquet", "SELECT token, any_value(stem) AS stem, sum(n)::BIGINT AS n "
                  "FROM read_parquet($files) WHERE $range GROUP BY token", layout.VOCAB_KEYS, None),
    }
    for name, (glob, select, keys, runs_of) in cases.items():
        files = sorted(str(p) for p in index.glob(glob))
        order = ", ".join(k for k, _ in keys)
        assert merge.cut_points(con, files, keys, 50_000), name  # the merge is cut into several ranges
        n = merge.copy_sorted(con, select, files, keys, tmp_path, f"{name}-ranges.parquet", 1000, 50_000, runs_of)
        one = write.copy_query(con, select.replace("$files", "?").replace("$range", "TRUE") + f" ORDER BY {order}",
                               [files], tmp_path, f"{name}-one.parquet")
        assert n == one > 0
        cols = "*" if name != "records" else "* EXCLUDE (ts), epoch_ms(ts)"
        a = con.execute(f"SELECT {cols} FROM read_parquet(?)", [str(tmp_path / f"{name}-ranges.parquet")]).fetchall()
        b = con.execute(f"SELECT {cols} FROM read_parquet(?)", [str(tmp_path / f"{name}-one.parquet")]).fetchall()
        assert a == b, name


def test_a_run_on_a_borrowed_connection_gives_its_settings_back(tmp_path):
    """A search ingests an appended turn on the process's own connection (a
    warm server's, which answers request after request on it): the run's
    memory limit, spill folder, threads and unkept insertion order end with it."""
    from conftest import Home, claude_assistant, claude_user, write_jsonl
    from deja.pipeline.run import run_index
    from deja.stages.store import duck

    home = Home(tmp_path)
    sid = "cccc0000-0000-4000-8000-00000000000c"
    path = home.claude_file(sid)
    write_jsonl(path, [claude_user(sid, "why is the pool exhausted?", "2026-03-04T10:00:00.000Z", "u1")])
    home.run("index")
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(__import__("json").dumps(claude_assistant(
            sid, [{"type": "text", "text": "every worker holds a connection"}], "2026-03-04T10:00:30.000Z", "a1",
            msg_id="msg_a1")) + "\n")
    con = duck.connect()
    names = ("memory_limit", "temp_directory", "preserve_insertion_order", "threads")

    def settings() -> dict:
        return {n: con.execute(f"SELECT current_setting('{n}')").fetchone()[0] for n in names}

    before = settings()
    run_index(dict(home.env, DEJA_MEMORY_LIMIT="16MB"), con=con)
    assert settings() == before
    assert home.search("worker", "connection")["hits"]
