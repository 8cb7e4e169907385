"""A store that heals, and faults of the store's own disk (issue 11).

A part torn, deleted or unreadable is named by `deja doctor`, skipped by
searches with one line on stderr, and repaired by the next `deja index` into
the store a clean build makes. A full disk leaves the previous store readable
and no partial part; a store path that cannot hold an index is one line.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
from pathlib import Path

import duckdb
import pytest

from conftest import claude_assistant, claude_user, write_jsonl

QUERIES = [["connection", "pool"], ["flaky", "test"], ["borrow", "checker"], ["pytest"], ["zebra", "cache"],
           ["race", "detector"]]
SESSION = "5a0c9d1e-1111-4222-8333-444455556666"
BIG = {"DEJA_SMALL_RUN_BYTES": "0"}


def corpus(home) -> dict:
    """The bundled samples and one more session, indexed in two runs (two
    generations of parts); the env that reads them into ``home.index``."""
    from deja.pipeline.demo import samples_dir

    root = home.root / "samples"
    shutil.copytree(samples_dir(), root, ignore=shutil.ignore_patterns("__init__.py", "__pycache__"))
    return {"DEJA_CLAUDE_ROOT": str(root / "claude" / "projects"), "DEJA_CODEX_ROOT": str(root / "codex")}


def second_run_session(home, env) -> None:
    enc = "-home-dev-src-zoo"
    p = Path(env["DEJA_CLAUDE_ROOT"]) / enc / f"{SESSION}.jsonl"
    p.parent.mkdir(parents=True)
    write_jsonl(p, [
        claude_user(SESSION, "the zebra cache evicts entries too early", "2026-03-12T10:00:00Z", "q1", cwd="/home/dev/src/zoo"),
        claude_assistant(SESSION, [{"type": "text", "text": "The zebra cache TTL is read in seconds but written in ms."}],
                         "2026-03-12T10:00:05Z", "a1", cwd="/home/dev/src/zoo"),
    ])


def build(home, extra: dict) -> dict:
    env = corpus(home)
    home.run("index", extra_env=dict(env, **extra))
    second_run_session(home, env)
    home.run("index", extra_env=dict(env, **extra))
    return env


def generation(index: Path) -> list[tuple]:
    con = duckdb.connect(str(index / "catalog.duckdb"), read_only=True)
    try:
        return con.execute("SELECT dataset, file, gen FROM generation ORDER BY gen, file").fetchall()
    finally:
        con.close()


def sessions_rows(index: Path) -> list[tuple]:
    files = [str(index / f) for d, f, _ in generation(index) if d == "sessions"]
    con = duckdb.connect()
    return con.execute("SELECT * EXCLUDE (ord) FROM read_parquet(?) ORDER BY session_key", [files]).fetchall()


def answers(home, env: dict, index: Path) -> list:
    out = []
    for q in QUERIES:
        res = home.search(*q, "--all", extra_env=dict(env, DEJA_INDEX_DIR=str(index)))
        out.append([(h["session"]["id"], h["count"], h["snippets"]) for h in res["hits"]])
    return out


def clean_build(home, env: dict) -> Path:
    clean = home.root / "clean.db"
    home.run("index", extra_env=dict(env, DEJA_INDEX_DIR=str(clean)))
    return clean


def assert_healed(home, env: dict) -> None:
    """The damaged store, after one `deja index`, answers as a clean build does."""
    proc = home.run("index", extra_env=env)
    assert "repaired" in proc.stderr
    clean = clean_build(home, env)
    assert sessions_rows(home.index) == sessions_rows(clean)
    assert answers(home, env, home.index) == answers(home, env, clean)
    doctor = json.loads(home.run("doctor", "--json", extra_env=env).stdout)
    assert doctor["index"]["state"] == "ok" and "damaged_parts" not in doctor["index"]
    on_disk = {p.relative_to(home.index).as_posix() for p in home.index.rglob("*.parquet")}
    assert on_disk == {f for _, f, _ in generation(home.index)}
    assert "up to date" in home.run("index", extra_env=env).stderr


def damage(home, dataset: str, how: str) -> str:
    """Tear (truncate to half) or delete the live part of ``dataset`` that the
    query "connection pool" reads (the first run's); returns its path."""
    from deja.stages.tokenize import bucket_of

    parts = [(f, g) for d, f, g in generation(home.index) if d == dataset]
    if dataset == "records":
        parts = [p for p in parts if "harness=claude/month=2026-03" in p[0]]
    if dataset == "postings":
        folders = {"bucket=all", f"bucket={bucket_of('connection'):02d}"}
        parts = [p for p in parts if p[0].split("/")[1] in folders]
    rel = min(parts, key=lambda p: p[1])[0]
    path = home.index / rel
    if how == "delete":
        path.unlink()
    elif how == "truncate":
        os.truncate(path, path.stat().st_size // 2)
    return rel


def damage_in_place(home, dataset: str, how: str) -> str:
    """Bytes of the part "connection pool" reads changed where they are, its size
    kept: ``whole`` (random bytes throughout) or ``pages`` (a run of its data
    pages, the footer intact)."""
    rel = damage(home, dataset, "keep")  # (the part; "keep" leaves it as it is)
    path = home.index / rel
    data = bytearray(path.read_bytes())
    rng = random.Random(7)
    if how == "whole":
        data = bytearray(rng.randrange(256) for _ in data)
    else:
        for i in range(8, len(data) // 2):
            data[i] = rng.randrange(256)
    path.write_bytes(bytes(data))
    return rel


@pytest.mark.parametrize("how", ["whole", "pages"])
def test_a_part_damaged_in_place_is_repaired_by_the_next_index_once_a_query_met_it(home, how):
    """A run checks every part's size, which damage in place keeps: the query
    that could not read the part notes it, and the next `deja index` decodes it
    whole and repairs it (it said "up to date" while every answer pointed at it)."""
    env = build(home, {})
    rel = damage_in_place(home, "records", how)
    met = []
    for words in (["connection", "pool"], ["pytest"], ["flaky", "test"]):
        proc = home.run("search", *words, check=False, extra_env=env)
        assert "Traceback" not in proc.stderr and "Exception" not in proc.stderr
        met += [line for line in proc.stderr.splitlines() if "deja index" in line]
    assert met  # the searches said what repairs it
    assert_healed(home, env)


def assert_reported(home, env: dict, rel: str, dataset: str) -> None:
    doctor = json.loads(home.run("doctor", "--json", extra_env=env).stdout)
    assert doctor["index"]["state"] == "damaged"
    assert [(d["dataset"], d["file"]) for d in doctor["index"]["damaged_parts"]] == [(dataset, rel)]
    text = home.run("doctor", extra_env=env).stdout
    assert "index: damaged" in text and rel in text and "deja index" in text


def assert_tolerated(home, env: dict, rel: str, words: list[str]) -> dict:
    proc = home.run("search", "--json", *words, extra_env=env)
    said = [line for line in proc.stderr.splitlines() if "damaged" in line]
    assert said == [f"deja: part {rel} is damaged; run `deja index` to repair it (answering from the rest)"]
    assert "Exception" not in proc.stderr and "Error" not in proc.stderr
    return json.loads(proc.stdout)


def truncated_and_tolerated(home, extra: dict, dataset: str) -> tuple[dict, str]:
    """A store with a truncated ``dataset`` part that doctor reports and search
    answers around; the second run's session, in another part, still answers."""
    env = build(home, extra)
    rel = damage(home, dataset, "truncate")
    assert_reported(home, env, rel, dataset)
    assert_tolerated(home, env, rel, ["connection", "pool"])
    res = home.search("zebra", "cache", extra_env=env)
    assert [h["session"]["id"] for h in res["hits"]] == [SESSION]
    return env, rel


@pytest.mark.parametrize("extra", [{}, BIG], ids=["small", "big"])
def test_truncated_records_part_is_reported_tolerated_and_repaired(home, extra):
    env, rel = truncated_and_tolerated(home, extra, "records")
    for q in QUERIES:  # no query prints DuckDB's error, whatever part it needs
        proc = home.run("search", *q, check=False, extra_env=env)
        assert proc.returncode == 0 and "Exception" not in proc.stderr and "Error" not in proc.stderr
    # a hook says nothing and exits 0; show gives one line at most, never a traceback
    hook = home.run("hook-prompt", extra_env=env, check=False)
    assert hook.returncode == 0 and not hook.stderr
    show = home.run("show", "3b9f6c1e", check=False, extra_env=env)
    assert "Traceback" not in show.stderr and "Exception" not in show.stderr
    assert [line for line in show.stderr.splitlines() if "damaged" in line] == [
        f"deja: part {rel} is damaged; run `deja index` to repair it (answering from the rest)"]
    assert_healed(home, env)


@pytest.mark.parametrize("extra", [{}, BIG], ids=["small", "big"])
def test_truncated_postings_part_is_reported_tolerated_and_repaired(home, extra):
    env, _ = truncated_and_tolerated(home, extra, "postings")
    assert_healed(home, env)


@pytest.mark.parametrize("extra", [{}, BIG], ids=["small", "big"])
def test_truncated_docs_part_is_reported_tolerated_and_repaired(home, extra):
    """Without a docs part its records' postings cannot be ranked: search
    answers from the other runs' records, and the index reads the records again."""
    env, _ = truncated_and_tolerated(home, extra, "docs")
    assert_healed(home, env)


@pytest.mark.parametrize("dataset", ["records", "postings", "docs", "vocab", "sessions", "deletes"])
def test_deleted_part_is_reported_tolerated_and_repaired(home, dataset):
    env = build(home, {})
    if dataset == "deletes":  # a rewritten transcript leaves a deletes part (kept while it is few)
        many = Path(env["DEJA_CLAUDE_ROOT"]) / "-home-dev-src-many" / f"{SESSION[:-4]}9999.jsonl"
        many.parent.mkdir()
        write_jsonl(many, [claude_user(SESSION[:-4] + "9999", f"turn {i} of the long migration", f"2026-03-13T10:{i % 60:02d}:00Z",
                                       f"m{i}", cwd="/home/dev/src/many") for i in range(600)])
        home.run("index", extra_env=env)
        p = next(Path(env["DEJA_CLAUDE_ROOT"]).glob("*/58e0b7a3*.jsonl"))
        lines = p.read_text().splitlines(keepends=True)
        p.write_text("".join(lines[: len(lines) // 2]))
        home.run("index", extra_env=env)
    rel = damage(home, dataset, "delete")
    assert_reported(home, env, rel, dataset)
    proc = home.run("search", "connection", "pool", check=False, extra_env=env)
    if dataset == "sessions":  # every answer names sessions: one line, what repairs it
        assert proc.returncode == 1
        assert proc.stderr.strip() == f"deja: part {rel} is damaged; run `deja index` to repair it"
    else:
        assert_tolerated(home, env, rel, ["connection", "pool"])
    assert_healed(home, env)


@pytest.mark.parametrize("how", ["torn", "empty", "garbage"])
def test_an_unreadable_catalog_is_named_then_set_aside_and_the_index_rebuilt(home, how):
    # a first run killed while DuckDB wrote the catalog's header, or a bad sector:
    # not "busy, try again" forever, but one line, and the next index heals it
    env = build(home, {})
    cat = home.index / "catalog.duckdb"
    raw = cat.read_bytes()
    cat.write_bytes({"torn": raw[:3000], "empty": b"", "garbage": b"\x00not a database\xff" * 500}[how])
    proc = home.run("search", "connection", "pool", check=False, extra_env=env)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("deja: the index catalog cannot be read")
    assert proc.stderr.strip().endswith("run `deja index` to rebuild it")
    doctor = json.loads(home.run("doctor", "--json", extra_env=env).stdout)
    assert doctor["index"]["state"] == "damaged"
    assert doctor["index"]["damaged_parts"][0]["dataset"] == "catalog"
    hook = home.run("hook-prompt", extra_env=env, check=False)
    assert hook.returncode == 0 and not hook.stdout
    run = home.run("index", extra_env=env)
    assert "set aside as catalog.duckdb.unreadable" in run.stderr
    assert (home.index / "catalog.duckdb.unreadable").exists()
    clean = clean_build(home, env)
    assert sessions_rows(home.index) == sessions_rows(clean)
    assert answers(home, env, home.index) == answers(home, env, clean)
    on_disk = {p.relative_to(home.index).as_posix() for p in home.index.rglob("*.parquet")}
    assert on_disk == {f for _, f, _ in generation(home.index)}  # the old parts were swept
    assert "up to date" in home.run("index", extra_env=env).stderr


# ---- a full disk ---------------------------------------------------------------------------


def store_state(index: Path) -> tuple:
    on_disk = sorted(p.relative_to(index).as_posix() for p in index.rglob("*") if p.is_file()
                     and not p.name.startswith("catalog") and p.name != ".lock")
    return on_disk, generation(index)


def test_disk_full_mid_run_commits_nothing_and_leaves_no_partial_part(home):
    env = corpus(home)
    home.run("index", extra_env=env)
    before = store_state(home.index)
    answers_before = answers(home, env, home.index)
    second_run_session(home, env)
    for n in (1, 2, 3):  # the records part, the postings part, the sessions part
        proc = home.run("index", check=False, extra_env=dict(env, DEJA_FAULT_ENOSPC=str(n)))
        assert proc.returncode == 1, proc.stderr
        assert proc.stderr.strip().splitlines() == [
            f"deja: no space left on the device of {home.index}: nothing was indexed and the previous index "
            "is intact (free some space and run `deja index` again)"]
        assert store_state(home.index) == before  # no part, no temp file left behind
        assert answers(home, env, home.index) == answers_before
    home.run("index", extra_env=env)
    assert [h["session"]["id"] for h in home.search("zebra", "cache", extra_env=env)["hits"]] == [SESSION]


@pytest.mark.parametrize("spill", ["postings", "records"])
def test_disk_full_in_a_big_runs_spill_commits_nothing_whichever_thread_met_it(home, spill):
    # postings are spilled by the tokenizer thread, records by the run's own
    env = corpus(home)
    home.run("index", extra_env=env)
    before = store_state(home.index)
    answers_before = answers(home, env, home.index)
    second_run_session(home, env)
    proc = home.run("index", "--rebuild", check=False, extra_env=dict(env, **BIG, DEJA_FAULT_SPILL=spill))
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"deja: no space left on the device of {home.index}: nothing was indexed and the previous index "
        "is intact (free some space and run `deja index` again)"]
    assert store_state(home.index) == before
    assert answers(home, env, home.index) == answers_before
    home.run("index", "--rebuild", extra_env=dict(env, **BIG))
    assert [h["session"]["id"] for h in home.search("zebra", "cache", extra_env=env)["hits"]] == [SESSION]


def test_disk_full_after_the_commit_says_the_index_was_updated(home):
    env = corpus(home)
    home.run("index", extra_env=env)
    second_run_session(home, env)
    proc = home.run("index", check=False, extra_env=dict(env, DEJA_FAULT="after-commit:enospc"))
    assert proc.returncode == 3
    assert "after the index was updated" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert [h["session"]["id"] for h in home.search("zebra", "cache", extra_env=env)["hits"]] == [SESSION]
    home.run("index", extra_env=env)
    on_disk = {p.relative_to(home.index).as_posix() for p in home.index.rglob("*.parquet")}
    assert on_disk == {f for _, f, _ in generation(home.index)}


@pytest.fixture
def mount_point(tmp_path):
    """A real tmpfs of 8 MB (root only); skipped where it cannot be mounted."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mnt)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (not root, or no mount permission)")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_disk_full_on_a_real_small_device(home, mount_point):
    env = corpus(home)
    index = mount_point / "index.db"
    env["DEJA_INDEX_DIR"] = str(index)
    home.run("index", extra_env=env)
    before = store_state(index)
    answers_before = answers(home, env, index)
    # transcripts whose index cannot fit in what is left of the 8 MB
    for n in range(40):
        sid = f"6b1d0000-0000-4000-8000-{n:012d}"
        p = Path(env["DEJA_CLAUDE_ROOT"]) / f"-home-dev-src-big{n}" / f"{sid}.jsonl"
        p.parent.mkdir(parents=True)
        write_jsonl(p, [claude_user(sid, " ".join(f"word{n}x{i}x{j}" for j in range(400)),
                                    f"2026-03-12T10:{i:02d}:00Z", f"u{n}-{i}", cwd=f"/home/dev/src/big{n}")
                        for i in range(40)])
    proc = home.run("index", check=False, extra_env=env)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith(f"deja: no space left on the device of {index}")
    assert "Exception" not in proc.stderr and "invalidated" not in proc.stderr
    assert store_state(index) == before
    assert answers(home, env, index) == answers_before
    subprocess.run(["mount", "-o", "remount,size=64m", str(mount_point)], check=True)
    home.run("index", extra_env=env)
    assert len(home.search("word3x7x9", extra_env=env)["hits"]) == 1


# ---- a store path that cannot hold an index -----------------------------------------------


def test_index_path_that_is_a_file_is_one_line_naming_it(home):
    env = corpus(home)
    home.index.write_text("not a directory")
    proc = home.run("index", check=False, extra_env=env)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        f"deja: the index path {home.index} is a file, not a directory (set DEJA_INDEX_DIR to a directory)"]
    nested = dict(env, DEJA_INDEX_DIR=str(home.index / "sub"))
    proc = home.run("index", check=False, extra_env=nested)
    assert proc.returncode == 1 and str(home.index) in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_unwritable_index_directory_is_one_line_naming_it(home, tmp_path):
    """Root writes through permission bits, so as root the directory is a
    tmpfs mounted read-only (skipped where mounting is not allowed); anyone
    else gets a directory without write permission."""
    env = corpus(home)
    target = tmp_path / "ro"
    target.mkdir()
    if os.geteuid() == 0:
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=32m", "tmpfs", str(target)], capture_output=True).returncode:
            pytest.skip("root, and cannot mount a read-only tmpfs here")
    try:
        index = target / "index.db"
        env["DEJA_INDEX_DIR"] = str(index)
        home.run("index", extra_env=env)  # a store made while it could be written
        if os.geteuid() == 0:
            subprocess.run(["mount", "-o", "remount,ro", str(target)], check=True)
        else:
            index.chmod(0o555)
        second_run_session(home, env)
        proc = home.run("index", check=False, extra_env=env)
        assert proc.returncode == 1
        assert proc.stderr.strip().splitlines() == [f"deja: the index directory {index} is not writable"]
        # what it holds still answers
        assert home.search("connection", "pool", extra_env=env)["hits"]
    finally:
        if os.geteuid() == 0:
            subprocess.run(["umount", "-l", str(target)], capture_output=True)
        else:
            (target / "index.db").chmod(0o755)
