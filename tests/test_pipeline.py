"""The index pipeline end to end: the real `deja` command against a temp HOME.

Covers the incremental cases (grow, truncate-and-regrow past the old length,
rewrite, delete, torn tail), the store layout analysts read, a run killed at
every stage, and two writers at once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from conftest import claude_assistant, claude_user, deja_cmd, write_jsonl

S1 = "7f1c0000-0000-4000-8000-000000000001"
S2 = "7f1c0000-0000-4000-8000-000000000002"


def first_session(home, session=S1):
    p = home.claude_file(session)
    write_jsonl(p, [
        claude_user(session, "why does checkout return 500 when the connection pool is exhausted?",
                    "2026-03-02T10:00:00Z", "u1"),
        claude_assistant(session, [{"type": "text", "text": "The root cause was pool_size=5 under load."}],
                         "2026-03-02T10:00:05Z", "a1", parent="u1"),
    ])
    return p


def ids(env: dict) -> list[str]:
    return [h["session"]["id"] for h in env["hits"]]


def catalog(home, sql, params=None):
    con = duckdb.connect(str(home.index / "catalog.duckdb"), read_only=True)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


def record_texts(home) -> list[str]:
    files = [str(home.index / r[0]) for r in catalog(home, "SELECT file FROM generation WHERE dataset='records'")]
    if not files:
        return []
    con = duckdb.connect()
    try:
        return [r[0] for r in con.execute("SELECT text FROM read_parquet(?) ORDER BY seq", [files]).fetchall()]
    finally:
        con.close()


def test_index_then_search_finds_the_session(home):
    first_session(home)
    out = home.run("index", "--json")
    summary = json.loads(out.stdout)
    claude = next(h for h in summary["harnesses"] if h["harness"] == "claude")
    assert claude["sessions"] == 1 and claude["messages"] == 2
    assert ids(home.search("connection", "pool")) == [S1]


def test_unchanged_store_is_skipped(home):
    first_session(home)
    home.run("index")
    again = json.loads(home.run("index", "--json").stdout)
    assert again["up_to_date"] is True
    assert "up to date (1 session)" in home.run("index").stderr


def test_grown_transcript_is_read_from_its_safe_offset(home):
    p = first_session(home)
    home.run("index")
    before = catalog(home, "SELECT safe_offset FROM manifest")[0][0]
    write_jsonl(p, [claude_user(S1, "now the database timeout shows up in staging", "2026-03-02T10:05:00Z", "u2")], "a")
    summary = json.loads(home.run("index", "--json").stdout)
    claude = next(h for h in summary["harnesses"] if h["harness"] == "claude")
    assert claude["records_added"] == 1  # only the new turn was read
    assert catalog(home, "SELECT safe_offset FROM manifest")[0][0] > before
    assert ids(home.search("database", "timeout")) == [S1]
    assert ids(home.search("connection", "pool")) == [S1]
    texts = record_texts(home)
    assert len(texts) == 3 and len(set(texts)) == 3  # nothing indexed twice


def test_truncate_and_regrow_past_old_length_replaces_the_session(home):
    p = first_session(home)
    home.run("index")
    old_size = p.stat().st_size
    # a rewind: same session, different earlier turns, longer than before
    write_jsonl(p, [
        claude_user(S1, "let us talk about the flaky websocket reconnect instead " + "x" * 50, "2026-03-02T11:00:00Z", "v1"),
        claude_assistant(S1, [{"type": "text", "text": "The reconnect backoff was missing jitter. " * 5}],
                         "2026-03-02T11:00:05Z", "v2", parent="v1"),
    ])
    assert p.stat().st_size > old_size
    home.run("index")
    assert ids(home.search("connection", "pool")) == []
    assert ids(home.search("websocket", "reconnect")) == [S1]
    assert len(record_texts(home)) == 2


def test_rewritten_file_is_replaced_not_duplicated(home):
    p = first_session(home)
    home.run("index")
    write_jsonl(p, [claude_user(S1, "short rewrite about kafka consumer lag", "2026-03-02T12:00:00Z", "w1")])
    home.run("index")
    assert ids(home.search("kafka")) == [S1]
    assert ids(home.search("exhausted")) == []
    assert record_texts(home) == ["short rewrite about kafka consumer lag"]


def test_removed_file_leaves_the_live_store_when_pruned(home):
    # issue 13: a deleted transcript's session is kept (tests/test_gone.py) until --prune-gone
    p = first_session(home)
    first_session(home, S2)
    home.run("index")
    assert sorted(ids(home.search("pool"))) == sorted([S1, S2])
    p.unlink()
    home.run("index", "--prune-gone")
    assert ids(home.search("pool")) == [S2]
    assert catalog(home, "SELECT count(*) FROM manifest")[0][0] == 1


def test_torn_tail_is_not_indexed_until_complete(home):
    p = first_session(home)
    line = json.dumps(claude_user(S1, "the grafana dashboard is blank after upgrade", "2026-03-02T10:07:00Z", "u3"))
    with open(p, "a") as fh:
        fh.write(line[:40])  # the agent is mid-write
    home.run("index")
    assert ids(home.search("grafana")) == []
    assert len(record_texts(home)) == 2
    with open(p, "a") as fh:
        fh.write(line[40:] + "\n")
    home.run("index")
    assert ids(home.search("grafana", "dashboard")) == [S1]
    assert len(record_texts(home)) == 3


def test_store_layout_is_partitioned_parquet_for_analysts(home):
    first_session(home)
    home.run("index")
    root = home.index
    assert (root / "catalog.duckdb").exists()
    assert list((root / "records").glob("harness=claude/month=2026-03/*.parquet"))
    assert list((root / "postings").glob("bucket=*/*.parquet"))
    con = duckdb.connect()
    rows = con.execute(
        f"SELECT harness, month, role, count(*) FROM read_parquet('{root}/records/*/*/*.parquet', hive_partitioning=true) "
        "GROUP BY ALL ORDER BY role"
    ).fetchall()
    assert rows == [("claude", "2026-03", "assistant", 1), ("claude", "2026-03", "user", 1)]
    sess = con.execute(f"SELECT session_key, project, title, messages FROM read_parquet('{root}/sessions/*.parquet')").fetchall()
    assert sess[0][0] == f"claude:{S1}" and sess[0][1] == "src/shop" and sess[0][3] == 2
    assert "connection pool" in sess[0][2]


def test_secrets_are_redacted_before_anything_is_written(home):
    p = home.claude_file(S1)
    secret = "sk-proj-" + "Ab3dEf9hIjKlMnOpQrStUvWxYz0123456789"
    write_jsonl(p, [claude_user(S1, f"export OPENAI_API_KEY={secret} then run the tests", "2026-03-02T10:00:00Z", "u1")])
    summary = json.loads(home.run("index", "--json").stdout)
    assert next(h for h in summary["harnesses"] if h["harness"] == "claude")["redactions"] == 1
    for path in home.index.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path
    assert record_texts(home) == ["export OPENAI_API_KEY=[redacted:credential] then run the tests"]
    red = json.loads(catalog(home, "SELECT redactions FROM manifest")[0][0])
    assert red == {"credential": 1}


def test_a_secret_in_a_path_an_agent_wrote_is_in_no_column_of_the_store(home):
    """A token inside a file path from a tool call's arguments was redacted in
    the records but kept whole in the sessions' ``touched`` files (QA,
    session 26). Every column of every dataset and of the catalog is read
    through DuckDB (compressed bytes would hide it from a byte search)."""
    token = "ghp_" + "R7kLm2Qx9Vb4Nc8Wz1Pt6Yh3Jd5Fg0Sa2Ue7"
    path = f"/home/dev/src/shop/backup-{token}/notes.md"
    write_jsonl(home.claude_file(S1), [
        claude_user(S1, "save the dew point notes", "2026-03-02T10:00:00Z", "u1"),
        claude_assistant(S1, [{"type": "tool_use", "id": "t1", "name": "Write",
                               "input": {"file_path": path, "content": "dew point"}}], "2026-03-02T10:01:00Z", "a1",
                         parent="u1"),
        claude_assistant(S1, [{"type": "tool_use", "id": "t2", "name": "Edit",
                               "input": {"file_path": path, "old_string": "dew", "new_string": "dew point"}}],
                         "2026-03-02T10:02:00Z", "a2", msg_id="msg_2", parent="a1"),
    ])
    home.run("index")
    con = duckdb.connect()
    found = []
    for part in home.index.rglob("*.parquet"):
        for (col, *_rest) in con.execute(f"DESCRIBE SELECT * FROM read_parquet('{part}')").fetchall():
            n = con.execute(f"SELECT count(*) FROM read_parquet('{part}') WHERE CAST(\"{col}\" AS VARCHAR) LIKE ?",
                            [f"%{token[4:]}%"]).fetchone()[0]
            if n:
                found.append((part.parent.name, col))
    cat = duckdb.connect(str(home.index / "catalog.duckdb"), read_only=True)
    for table, col in cat.execute("SELECT table_name, column_name FROM information_schema.columns").fetchall():
        if cat.execute(f'SELECT count(*) FROM "{table}" WHERE CAST("{col}" AS VARCHAR) LIKE ?',
                       [f"%{token[4:]}%"]).fetchone()[0]:
            found.append(("catalog", f"{table}.{col}"))
    assert found == []
    touched = con.execute(f"SELECT touched FROM read_parquet('{home.index}/sessions/*.parquet')").fetchone()[0]
    assert touched == ["/home/dev/src/shop/backup-[redacted:github-token]/notes.md"]


def test_a_tuning_variable_that_is_no_number_is_named_in_one_line(home):
    write_jsonl(home.claude_file(S1), [claude_user(S1, "flaky checkout test", "2026-03-02T10:00:00Z", "u1")])
    for name, value in (("DEJA_SLICE_BYTES", "64MB"), ("DEJA_FLUSH_BYTES", "abc"), ("DEJA_SMALL_RUN_BYTES", "nan")):
        proc = home.run("index", check=False, extra_env={name: value})
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
        assert proc.stderr.strip() == f"deja: {name} must be a whole number of at least " \
            f"{0 if name == 'DEJA_SMALL_RUN_BYTES' else 1}, not {value!r}"
    home.run("index")


def test_no_redact_opt_out_keeps_the_text(home):
    p = home.claude_file(S1)
    write_jsonl(p, [claude_user(S1, "token AKIAIOSFODNN7EXAMPLE here", "2026-03-02T10:00:00Z", "u1")])
    home.run("index", extra_env={"DEJA_NO_REDACT": "1"})
    assert record_texts(home) == ["token AKIAIOSFODNN7EXAMPLE here"]


def test_rebuild_keeps_user_state_and_gives_the_same_answers(home):
    first_session(home)
    home.run("index")
    con = duckdb.connect(str(home.index / "catalog.duckdb"))
    con.execute("INSERT INTO tombstones VALUES ('claude:gone', 'p', now(), 'test')")
    con.execute("INSERT INTO packets VALUES ('s', '/w', 'claude', now(), false, 'body')")
    con.close()
    home.run("index", "--rebuild")
    assert ids(home.search("connection", "pool")) == [S1]
    assert catalog(home, "SELECT count(*) FROM tombstones")[0][0] == 1
    assert catalog(home, "SELECT count(*) FROM packets")[0][0] == 1
    assert len(record_texts(home)) == 2


def test_many_small_appends_are_compacted(home):
    p = first_session(home)
    home.run("index")
    for i in range(12):
        write_jsonl(p, [claude_user(S1, f"iteration {i} of the zebra migration", f"2026-03-02T10:{10 + i}:00Z", f"z{i}")], "a")
        home.run("index")
    per_bucket = catalog(home, "SELECT count(*) FROM generation WHERE dataset='postings' GROUP BY regexp_extract(file, 'bucket=\\d+')")
    assert max(n for (n,) in per_bucket) <= 8
    res = home.search("zebra", "migration", "--all")
    assert ids(res) == [S1] and res["hits"][0]["count"] == 12


# ---- small runs and big runs -------------------------------------------------
# A run reading at most SMALL_RUN_BYTES keeps plain lists and writes through
# DuckDB's core (one postings part for every bucket); a bigger one goes through
# Arrow and polars. DEJA_SMALL_RUN_BYTES=0 sends any run the big way.

BIG = {"DEJA_SMALL_RUN_BYTES": "0"}


def samples_env(home, index) -> dict:
    import shutil

    from deja.pipeline.demo import samples_dir

    root = home.root / "samples"
    if not root.exists():
        shutil.copytree(samples_dir(), root, ignore=shutil.ignore_patterns("__init__.py", "__pycache__"))
    return {"DEJA_INDEX_DIR": str(index), "DEJA_CLAUDE_ROOT": str(root / "claude" / "projects"),
            "DEJA_CODEX_ROOT": str(root / "codex")}


def datasets(index) -> dict:
    """Every dataset's column types and rows, the way the readers see them."""
    con = duckdb.connect(str(index / "catalog.duckdb"), read_only=True)
    files: dict[str, list[str]] = {}
    for dataset, rel in con.execute("SELECT dataset, file FROM generation").fetchall():
        files.setdefault(dataset, []).append(str(index / rel))
    con.close()
    q = duckdb.connect()
    order = {"records": "record_id", "postings": "token, record_id", "sessions": "session_key"}
    out = {}
    for name, by in order.items():
        rel = f"read_parquet({files[name]!r}, hive_partitioning=false)"
        out[name + " types"] = q.execute(f"DESCRIBE SELECT * FROM {rel}").fetchall()
        out[name] = q.execute(f"SELECT * FROM {rel} ORDER BY {by}").fetchall()
    vocab = f"read_parquet({files['vocab']!r})"
    out["vocab types"] = q.execute(f"DESCRIBE SELECT * FROM {vocab}").fetchall()
    out["vocab"] = q.execute(f"SELECT token, stem, sum(n) FROM {vocab} GROUP BY ALL ORDER BY token").fetchall()
    return out


def postings_folders(index) -> set[str]:
    con = duckdb.connect(str(index / "catalog.duckdb"), read_only=True)
    try:
        return {r[0] for r in con.execute(
            "SELECT DISTINCT regexp_extract(file, 'bucket=(\\w+)', 1) FROM generation WHERE dataset = 'postings'").fetchall()}
    finally:
        con.close()


def test_small_and_big_runs_write_the_same_store(home):
    small, big = home.root / "small.db", home.root / "big.db"
    queries = [["connection", "pool"], ["borrow", "checker"], ["flaky", "test"], ["pytest"]]
    for step in range(2):
        if step:  # then an appended turn, with an edit record and non-ASCII text
            p = next((home.root / "samples" / "claude" / "projects").glob("*/*.jsonl"))
            write_jsonl(p, [
                claude_user(S1, "Почему pytest падает? 使用pytest运行 the parseJSON2Config test", "2026-03-09T10:00:00Z", "n1"),
                claude_assistant(S1, [{"type": "tool_use", "id": "e1", "name": "Edit", "input": {
                    "file_path": "/home/dev/src/app/config.py", "old_string": "timeout = 5", "new_string": "timeout = 30"}}],
                    "2026-03-09T10:00:05Z", "m1"),
            ], "a")
        home.run("index", extra_env=samples_env(home, small))
        home.run("index", extra_env=dict(samples_env(home, big), **BIG))
        a, b = datasets(small), datasets(big)
        for name in b:
            assert a[name] == b[name], name
        assert a["records"] and a["postings"] and a["sessions"]
        for q in queries + [["падает"], ["config", "py"]]:
            assert home.search(*q, extra_env=samples_env(home, small)) == home.search(*q, extra_env=samples_env(home, big))
    assert postings_folders(small) == {"all"}
    assert "all" not in postings_folders(big) and len(postings_folders(big)) > 8


def part_sessions_match(index) -> None:
    """Every records part's generation.session_keys is exactly the sessions in it."""
    con = duckdb.connect(str(index / "catalog.duckdb"), read_only=True)
    try:
        rows = con.execute("SELECT file, session_keys FROM generation WHERE dataset = 'records'").fetchall()
    finally:
        con.close()
    assert rows
    q = duckdb.connect()
    for rel, keys in rows:
        held = [r[0] for r in q.execute("SELECT DISTINCT session_key FROM read_parquet(?) ORDER BY 1",
                                        [str(index / rel)]).fetchall()]
        assert keys == held, rel


def test_the_catalog_names_each_records_parts_sessions_on_every_path(home):
    big, small = home.root / "big.db", home.root / "small.db"
    # a big run flushing several times, then small appended runs, then compaction
    home.run("index", extra_env=dict(samples_env(home, big), DEJA_SMALL_RUN_BYTES="0", DEJA_FLUSH_BYTES="2000"))
    part_sessions_match(big)
    home.run("index", extra_env=samples_env(home, small))
    p = next((home.root / "samples" / "claude" / "projects").glob("*/*.jsonl"))
    for i in range(10):  # more small parts than a folder keeps: compaction merges them
        write_jsonl(p, [claude_user(S1, f"appended turn {i} about the zebra cache", f"2026-03-09T10:{i:02d}:00Z",
                                    f"z{i}")], "a")
        home.run("index", extra_env=samples_env(home, small))
        home.run("index", extra_env=dict(samples_env(home, big), DEJA_SMALL_RUN_BYTES="0"))
    part_sessions_match(small)
    part_sessions_match(big)
    # a store written before the column: the next index run learns it, a search never needs it
    con = duckdb.connect(str(small / "catalog.duckdb"))
    con.execute("UPDATE generation SET session_keys = NULL")
    con.close()
    env = samples_env(home, small)
    assert home.search("zebra", "cache", extra_env=env)["hits"]
    home.run("index", extra_env=env)
    part_sessions_match(small)


@pytest.mark.parametrize("top", [10**6, 2**62])  # ids packed with ranks in one int64; ids too far apart for it
def test_a_buckets_postings_sort_by_token_bytes_then_record_id(top):
    import random

    import pyarrow as pa

    from deja.stages.store.write import postings_order

    rng = random.Random(7)
    words = ["pool", "Pool", "pool_size", "zürich", "zurich", "使用", "ß", "a", "", "𝐀x", "pool2", "poo"]
    rows = {(rng.choice(words) + rng.choice(["", "s", "é"]), rng.randrange(top)) for _ in range(3000)}
    rows = list(rows)
    rng.shuffle(rows)
    table = pa.table({"token": [t for t, _ in rows], "record_id": pa.array([r for _, r in rows], pa.int64()),
                      "tf": pa.array(range(len(rows)), pa.int32())})
    got = table.take(postings_order(table))
    assert list(zip(got["token"].to_pylist(), got["record_id"].to_pylist())) == sorted(
        rows, key=lambda r: (r[0].encode(), r[1]))
    assert len(postings_order(table.slice(0, 0))) == 0


def test_small_runs_compact_their_vocabulary_parts_without_rewriting_a_big_runs(home):
    # the big part holds a year's words: rewriting it every eighth appended turn cost ~1 s
    env = samples_env(home, home.index)
    home.run("index", extra_env=dict(env, DEJA_SMALL_RUN_BYTES="0"))
    vocab = lambda: [r[0] for r in catalog(home, "SELECT file FROM generation WHERE dataset = 'vocab'")]
    (big,) = vocab()
    p = next((home.root / "samples" / "claude" / "projects").glob("*/*.jsonl"))
    for i in range(12):
        write_jsonl(p, [claude_user(S1, f"appended turn {i} about the okapi{i} cache", f"2026-03-09T11:{i:02d}:00Z",
                                    f"k{i}")], "a")
        home.run("index", extra_env=env)
    assert big in vocab() and len(vocab()) <= 8
    assert ids(home.search("okapi0", extra_env=env)) == [S1] and ids(home.search("okapi11", extra_env=env)) == [S1]


def test_big_runs_cut_records_row_groups_by_role_and_write_each_part_once(home):
    index = home.root / "big.db"
    home.run("index", extra_env=dict(samples_env(home, index), DEJA_SMALL_RUN_BYTES="0", DEJA_FLUSH_BYTES="2000"))
    con = duckdb.connect(str(index / "catalog.duckdb"), read_only=True)
    files = {d: [] for d in ("records", "vocab", "postings")}
    for d, rel, gen in con.execute("SELECT dataset, file, gen FROM generation").fetchall():
        if d in files:
            files[d].append(str(index / rel))
    con.close()
    q = duckdb.connect()
    # several flushes, yet one records part per partition, one postings part per
    # bucket and one vocabulary part: every part waits for the run's end
    per_folder = q.execute("SELECT max(n) FROM (SELECT count(*) AS n FROM (SELECT unnest(?) AS f) "
                           "GROUP BY regexp_replace(f, '/[^/]*$', ''))", [files["records"]]).fetchone()[0]
    per_bucket = q.execute("SELECT max(n) FROM (SELECT count(*) AS n FROM (SELECT unnest(?) AS f) "
                           "GROUP BY regexp_extract(f, 'bucket=(\\w+)', 1))", [files["postings"]]).fetchone()[0]
    assert per_folder == 1 and per_bucket == 1 and len(files["vocab"]) == 1
    vocab = q.execute("SELECT token, n FROM read_parquet(?)", [files["vocab"]]).fetchall()
    counted = q.execute("SELECT token, count(*) FROM read_parquet(?) GROUP BY token", [files["postings"]]).fetchall()
    assert sorted(vocab) == sorted(counted)
    # each row group holds one role
    roles_per_group = q.execute(
        "SELECT file_name, row_group_id, stats_min, stats_max FROM parquet_metadata(?) WHERE path_in_schema = 'role'",
        [files["records"]]).fetchall()
    assert roles_per_group and all(lo == hi for _, _, lo, hi in roles_per_group)
    assert len({(f, g) for f, g, _, _ in roles_per_group}) > len(files["records"])


def _text_per_row_group(files: list[str]) -> list[tuple[int, int]]:
    """(rows, bytes of text) of every row group of these records parts."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    out = []
    for f in files:
        pf = pq.ParquetFile(f)
        for g in range(pf.metadata.num_row_groups):
            text = pf.read_row_group(g, columns=["text"]).column(0)
            out.append((len(text), pc.sum(pc.binary_length(text)).as_py() or 0))
    return out


def test_records_row_groups_hold_half_a_megabyte_of_text_at_most(home):
    """A snippet is read by decompressing its record's row group, and 2,048 long
    tool outputs were megabytes of it. A big run's parts and the parts
    compaction merges cut records by size: at most RECORDS_GROUP_BYTES of
    text a row group (a big run's and a large merge's, cut by role as well),
    or about that (a small merge, by DuckDB's COPY: no pyarrow to import in an
    appended turn's run)."""
    import random

    from deja.stages.sources.values import PROSE_CAP
    from deja.stages.store import layout, merge

    rng = random.Random(7)
    words = [f"{a}{b}" for a in ("build", "link", "test", "pkg", "step") for b in ("ok", "warn", "fail", "skip", "done")]
    rows = [claude_user(S1, "run the release build and show the logs", "2026-03-02T10:00:00Z", "u0")]
    for i in range(40):
        body = " ".join(rng.choices(words, k=9_000))  # ~70 KB, kept to 64 KiB (values.PROSE_CAP)
        rows.append(claude_assistant(S1, [{"type": "tool_use", "id": f"toolu_{i:03d}", "name": "Bash",
                                           "input": {"command": f"make release-{i}"}}],
                                     f"2026-03-02T10:{i:02d}:10Z", f"a{i}", msg_id=f"msg_{i}"))
        rows.append({**claude_user(S1, "", f"2026-03-02T10:{i:02d}:20Z", f"r{i}"),
                     "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{i:03d}",
                                                              "content": f"release-{i}\n{body}"}]}})
    write_jsonl(home.claude_file(S1), rows)
    home.run("index", extra_env={"DEJA_SMALL_RUN_BYTES": "0"})
    files = [str(home.index / r[0]) for r in catalog(home, "SELECT file FROM generation WHERE dataset = 'records'")]
    groups = _text_per_row_group(files)
    cap = layout.RECORDS_GROUP_BYTES
    assert sum(b for _, b in groups) > 4 * cap
    assert all(b <= cap for _, b in groups) and sum(b > cap // 2 for _, b in groups) >= 4
    # compaction's merge of those parts (the pyarrow path, as for a small one)
    con = duckdb.connect()
    con.execute("CREATE TEMP TABLE dead (record_id BIGINT)")
    select = ("SELECT * FROM read_parquet($files, hive_partitioning=false) "
              "WHERE $range AND record_id NOT IN (SELECT record_id FROM dead)")
    for chunk in (1 << 40, cap):  # one range (DuckDB's COPY, no pyarrow), and several (pyarrow)
        rel = f"merged-{chunk}.parquet"
        n = merge.copy_sorted(con, select, files, layout.RECORDS_KEYS, home.root, rel, layout.RECORDS_ROW_GROUP,
                              chunk, "role")
        merged = _text_per_row_group([str(home.root / rel)])
        assert n == sum(r for r, _ in groups) == sum(r for r, _ in merged)
        # (COPY closes a row group at the record that passes the size: one record's text over at most)
        assert all(b <= cap + PROSE_CAP for _, b in merged) and len(merged) >= 5


def test_a_small_run_writes_one_postings_part_and_never_loads_arrow(home):
    p = first_session(home)
    home.run("index")
    write_jsonl(p, [claude_user(S1, "the zebra migration stalls on the orders table", "2026-03-02T10:10:00Z", "z1")], "a")
    script = (
        "import json, sys\n"
        "from deja.pipeline.run import run_index\n"
        "run_index()\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('pyarrow', 'polars', 'numpy', 'duckdb'))))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], env=home.env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []
    parts = [r[0] for r in catalog(home, "SELECT file FROM generation WHERE dataset='postings' AND gen = 2")]
    assert len(parts) == 1 and parts[0].startswith("postings/bucket=all/")
    assert ids(home.search("zebra", "migration")) == [S1]


def test_appended_turns_compact_their_records_without_loading_arrow(home):
    """Every few appended turns a run merges a partition's small records parts:
    that merge runs in DuckDB too, as the run itself does (pyarrow's import
    would double such a turn's time to searchable)."""
    p = first_session(home)
    home.run("index")
    script = (
        "import json, sys\n"
        "from deja.pipeline.run import run_index\n"
        "run_index()\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('pyarrow', 'polars'))))\n"
    )
    records = lambda: len(catalog(home, "SELECT file FROM generation WHERE dataset = 'records'"))  # noqa: E731
    merged = False
    for i in range(12):
        write_jsonl(p, [claude_user(S1, f"appended turn {i}: the okapi{i} cache " + "logs " * 300,
                                    f"2026-03-02T11:{i:02d}:00Z", f"t{i}")], "a")
        before = records()
        proc = subprocess.run([sys.executable, "-c", script], env=home.env, capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout) == [], i
        merged |= records() < before + 1
    assert merged  # (a merge happened among them)
    assert ids(home.search("okapi0")) == [S1] and ids(home.search("okapi11")) == [S1]


def test_small_run_postings_merge_then_go_to_their_buckets(home, monkeypatch):
    from deja.stages.store import compact
    from deja.pipeline.run import run_index

    p = first_session(home)
    env = dict(home.env)
    run_index(env)
    for i in range(10):
        write_jsonl(p, [claude_user(S1, f"iteration {i} of the quokka rollout", f"2026-03-02T10:{10 + i}:00Z", f"q{i}")], "a")
        run_index(env)
    all_parts = catalog(home, "SELECT rows FROM generation WHERE file LIKE 'postings/bucket=all/%'")
    assert 1 <= len(all_parts) <= compact.MAX_PARTS  # merged among themselves while small
    assert ids(home.search("quokka", "rollout")) == [S1]
    monkeypatch.setattr(compact, "SPLIT_ROWS", 1)
    write_jsonl(p, [claude_user(S1, "the last quokka step", "2026-03-02T10:30:00Z", "q-last")], "a")
    run_index(env)
    from deja.stages.store.catalog import Store

    compact.compact(Store(home.index), 99, force=True)
    assert catalog(home, "SELECT count(*) FROM generation WHERE file LIKE 'postings/bucket=all/%'") == [(0,)]
    res = home.search("quokka", "--all")
    assert ids(res) == [S1] and res["hits"][0]["count"] == 11
    on_disk = {f.relative_to(home.index).as_posix() for f in home.index.rglob("*.parquet")}
    assert on_disk == {r[0] for r in catalog(home, "SELECT file FROM generation")}


def test_replaced_file_dead_postings_are_ignored_then_cleared(home):
    p = first_session(home)
    write_jsonl(home.claude_file(S2), [claude_user(S2, f"note {i} on the billing export", f"2026-03-03T10:{i:02d}:00Z", f"b{i}")
                                       for i in range(50)])
    home.run("index")
    write_jsonl(p, [claude_user(S1, "a wombat appears in the logs", "2026-03-02T10:00:00Z", "u1")])  # rewritten
    home.run("index")
    # 2 dead of 51 records: below the share that has compaction rewrite every postings part
    assert catalog(home, "SELECT count(*) FROM generation WHERE dataset = 'deletes'") == [(1,)]
    assert ids(home.search("connection", "pool")) == []
    assert ids(home.search("wombat")) == [S1]
    from deja.stages.store import duck
    from deja.stages.store.compact import compact
    from deja.stages.store.catalog import Store

    compact(Store(home.index), 99, force=True, con=duck.connect())
    assert catalog(home, "SELECT count(*) FROM generation WHERE dataset = 'deletes'") == [(0,)]
    assert ids(home.search("connection", "pool")) == [] and ids(home.search("wombat")) == [S1]


# ---- crashes and concurrency ------------------------------------------------

@pytest.mark.parametrize("path", ["small", "big"])
@pytest.mark.parametrize("fault", ["after-read", "after-write", "before-commit", "after-commit"])
def test_run_killed_at_any_stage_leaves_a_readable_store_and_the_next_run_repairs(home, fault, path):
    extra = BIG if path == "big" else {}
    p = first_session(home)
    home.run("index", extra_env=extra)
    write_jsonl(p, [claude_user(S1, "the celery worker keeps dying with SIGKILL", "2026-03-02T10:09:00Z", "u9")], "a")
    first_session(home, S2)
    proc = home.run("index", check=False, extra_env=dict(extra, DEJA_FAULT=fault))
    assert proc.returncode == -signal.SIGKILL
    # the previous store still answers
    assert S1 in ids(home.search("connection", "pool"))
    home.run("index", extra_env=extra)
    assert ids(home.search("celery", "worker")) == [S1]
    assert sorted(ids(home.search("connection", "pool"))) == sorted([S1, S2])
    texts = record_texts(home)
    assert len(texts) == len(set(texts)) + 2  # S1 and S2 share two texts; nothing else repeated
    # no orphan part survives the repair
    live = {r[0] for r in catalog(home, "SELECT file FROM generation")}
    on_disk = {p.relative_to(home.index).as_posix() for p in home.index.rglob("*.parquet")}
    assert on_disk == live


def test_sigkill_at_random_moments_never_corrupts(home):
    # many sessions so a run lasts long enough to be interrupted mid-way
    for n in range(40):
        sid = f"7f1c0000-0000-4000-8000-{n:012d}"
        p = home.claude_file(sid, cwd=f"/home/dev/src/proj{n % 5}")
        rows = []
        for i in range(60):
            rows.append(claude_user(sid, f"question {i} about service{n} latency and retries " * 20,
                                    f"2026-03-02T10:{i:02d}:00Z", f"u{n}-{i}"))
        write_jsonl(p, rows)
    for delay in (0.3, 0.6, 0.9, 1.2):
        proc = subprocess.Popen(deja_cmd() + ["index"], env=home.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if (home.index / "catalog.duckdb").exists():
            home.run("search", "--json", "latency", check=False)  # never a crash of the reader
    home.run("index")
    res = home.search("latency", "--all")
    assert len(res["hits"]) == 40
    assert len(record_texts(home)) == 40 * 60


def test_second_writer_waits_then_says_busy(home):
    from deja.stages.store.catalog import Store

    first_session(home)
    home.run("index")
    store = Store(home.index)
    with store.writer_lock(wait=1):
        proc = home.run("index", check=False, extra_env={"DEJA_LOCK_WAIT": "0.5"})
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1].startswith("deja: another deja index is running")
    assert "Traceback" not in proc.stderr


def test_two_concurrent_index_runs_both_finish_and_agree(home):
    for n in range(10):
        first_session(home, f"7f1c0000-0000-4000-8000-{n:012d}")
    procs = [subprocess.Popen(deja_cmd() + ["index"], env=home.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for _ in range(2)]
    codes = [p.wait(timeout=120) for p in procs]
    assert codes == [0, 0]
    assert len(home.search("pool", "--all")["hits"]) == 10
    assert len(record_texts(home)) == 20


# ---- command-line behaviour -----------------------------------------------

def test_doctor_reports_stores_counts_and_size(home):
    first_session(home)
    home.run("index")
    rep = json.loads(home.run("doctor", "--json").stdout)
    claude = next(s for s in rep["stores"] if s["name"] == "claude")
    assert claude["state"] == "ok" and claude["files"] == 1 and claude["indexed_sessions"] == 1
    codex = next(s for s in rep["stores"] if s["name"] == "codex")
    assert codex["state"] == "missing"
    assert rep["index"]["state"] == "ok" and rep["index"]["size_bytes"] > 0
    text = home.run("doctor").stdout
    assert "claude" in text and "index: ok" in text


def test_doctor_deep_reads_transcripts_again_and_exits_1_when_the_store_drifted(home):
    """cli-contract 2.4: --deep reads a sample of the sources again and
    resolves postings, and exits non-zero on drift. Drift here: a transcript
    rewritten in place to the same size and mtime, which a normal index run
    (size and mtime) does not see."""
    p = first_session(home)
    first_session(home, S2)
    home.run("index")
    ok = home.run("doctor", "--deep", "--offline", "--json")
    deep = json.loads(ok.stdout)["deep"]
    assert ok.returncode == 0 and deep["state"] == "ok" and deep["files"] == 2 and deep["drift"] == []
    assert deep["words"] > 0 and deep["dangling"] == []
    assert "deep check: ok" in home.run("doctor", "--deep").stdout
    st = p.stat()
    raw = p.read_bytes()
    p.write_bytes(raw.replace(b"connection pool", b"connectiom pool"))
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    bad = home.run("doctor", "--deep", "--json", check=False)
    assert bad.returncode == 1
    deep = json.loads(bad.stdout)["deep"]
    assert deep["state"] == "drift" and [d["path"] for d in deep["drift"]] == [str(p)]
    assert deep["drift"][0]["why"] == "records that differ"
    text = home.run("doctor", "--deep", check=False)
    assert text.returncode == 1 and "deja index --rebuild" in text.stdout
    home.run("index", "--rebuild")
    assert home.run("doctor", "--deep").returncode == 0


def test_doctor_counts_malformed_lines(home):
    p = first_session(home)
    with open(p, "a") as fh:
        fh.write("{this is not json\n")
    write_jsonl(p, [claude_user(S1, "after the bad line", "2026-03-02T10:09:00Z", "u5")], "a")
    home.run("index")
    rep = json.loads(home.run("doctor", "--json").stdout)
    assert rep["ingest_health"]["claude"]["malformed_lines"] == 1
    text = home.run("doctor").stdout
    assert "1 malformed line or values" in text and f"{p}:3: line is not JSON" in text
    assert ids(home.search("after", "bad", "line")) == [S1]  # the rest of the file still indexed


def test_bad_flags_and_missing_index_are_one_line_errors(home):
    proc = home.run("search", "pool", check=False)
    assert proc.returncode == 1 and proc.stderr.startswith("deja: no index")
    proc = home.run("index", "--bogus", check=False)
    assert proc.returncode == 1 and proc.stderr.startswith("deja: ") and "Traceback" not in proc.stderr
    first_session(home)
    home.run("index")
    proc = home.run("search", "--harness", "nosuch", "pool", check=False)
    assert proc.returncode == 1 and "unknown harness" in proc.stderr
    proc = home.run("search", "--limit", "0", "pool", check=False)
    assert proc.returncode == 1


def test_empty_result_is_exit_zero_with_reason(home):
    first_session(home)
    home.run("index")
    proc = home.run("search", "nonexistentword")
    assert proc.stdout.strip() == "" and "no session matches" in proc.stderr


def test_demo_runs_on_the_bundled_samples(tmp_path):
    env = {"HOME": str(tmp_path), "PATH": os.environ.get("PATH", ""), "DEJA_SERVE": "off"}
    proc = subprocess.run(deja_cmd() + ["demo"], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "claude:" in proc.stdout and "codex:" in proc.stdout
    assert "gemini:" in proc.stdout and "qwen:" in proc.stdout  # (harness-formats §5, §9 samples)
    assert "$ deja connection pool exhausted" in proc.stdout
    assert "[redacted:" in proc.stdout
    assert not (tmp_path / ".cache").exists()  # the demo never touches the real store


# ---- freshness before answering ----------------------------------------------

def test_appended_turn_is_searchable_without_running_index(home):
    p = first_session(home)
    home.run("index")
    write_jsonl(p, [claude_user(S1, "the kubelet eviction threshold bites again", "2026-03-02T10:20:00Z", "u7")], "a")
    res = home.search("kubelet", "eviction", extra_env={"DEJA_NO_REFRESH": "0"})
    assert ids(res) == [S1]


def test_heavier_changes_refresh_in_the_background_while_the_store_answers(home):
    first_session(home)
    home.run("index")
    p2 = home.claude_file(S2)
    write_jsonl(p2, [claude_user(S2, "terraform state lock stuck on dynamodb", "2026-03-03T09:00:00Z", "t1")])
    proc = home.run("search", "--json", "connection", "pool", extra_env={"DEJA_NO_REFRESH": "0"})
    assert ids(json.loads(proc.stdout)) == [S1]  # answered from the store as it was
    assert "refreshing the index in the background" in proc.stderr
    deadline = time.time() + 60
    while time.time() < deadline:
        if ids(home.search("terraform", "lock")) == [S2]:
            break
        time.sleep(0.5)
    assert ids(home.search("terraform", "lock")) == [S2]


def _index_runs(index) -> int:
    """`deja index` processes of this store (by their environment)."""
    mark = f"DEJA_INDEX_DIR={index}".encode()
    n = 0
    for d in Path("/proc").iterdir():
        try:
            if d.name.isdigit() and b"index" in (d / "cmdline").read_bytes() and mark in (d / "environ").read_bytes():
                n += 1
        except OSError:
            pass
    return n


def test_a_burst_of_searches_while_an_index_run_works_starts_no_second(home):
    """Each search that finds heavier work than it may do inline hands it to
    a background run, but not while one holds the writer lock: it, or the one
    a later search starts, takes the changes. (One each, they piled up waiting
    for the lock, 70 MB apiece.)"""
    import fcntl

    first_session(home)
    home.run("index")
    write_jsonl(home.claude_file(S2), [claude_user(S2, "terraform state lock stuck on dynamodb", "2026-03-03T09:00:00Z", "t1")])
    fd = os.open(home.index / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # an index run at work
        for _ in range(4):
            proc = home.run("search", "--json", "connection", "pool", extra_env={"DEJA_NO_REFRESH": "0"})
            assert ids(json.loads(proc.stdout)) == [S1]
        time.sleep(0.5)
        assert _index_runs(home.index) == 0
    finally:
        os.close(fd)
    # the run gone and the work still there: the next search starts one
    home.run("search", "connection", "pool", extra_env={"DEJA_NO_REFRESH": "0"})
    deadline = time.time() + 60
    while time.time() < deadline and ids(home.search("terraform", "lock")) != [S2]:
        time.sleep(0.5)
    assert ids(home.search("terraform", "lock")) == [S2]


def test_a_background_run_that_finds_another_at_work_leaves_at_once(home):
    import fcntl

    from deja.stages.store.refresh import background_failure, background_index, refresh_log

    first_session(home)
    home.run("index")
    env = dict(home.env)
    fd = os.open(home.index / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        # a query raced this one past the probe: its run must not wait the lock out
        from deja.stages.store import refresh

        probe = refresh.writer_running
        refresh.writer_running = lambda root: False
        try:
            background_index(env)
        finally:
            refresh.writer_running = probe
        deadline = time.time() + 60  # well before DEJA_LOCK_WAIT's 120 s
        while time.time() < deadline and "another deja index is running" not in refresh_log(env).read_text():
            time.sleep(0.2)
        assert "another deja index is running" in refresh_log(env).read_text()
        while time.time() < deadline and _index_runs(home.index):
            time.sleep(0.2)
        assert _index_runs(home.index) == 0
        assert background_failure(env) == ""  # not a failure the next search reports
    finally:
        os.close(fd)


def _records(home) -> list[tuple]:
    from deja.stages.store.read import open_live

    live = open_live(home.index)
    try:
        return live.con.execute(f"SELECT session_id, role, text FROM {live.records_source()} "
                                "ORDER BY session_id, record_id").fetchall()
    finally:
        live.close()


def test_a_store_reached_by_another_path_is_the_same_sessions_not_a_second_copy(home):
    """~/.claude moved (a new HOME, a disk mounted elsewhere, a root given
    through a symlink): its transcripts are the same files at new paths. Their
    records are in the store once, and what is appended at the new path after
    the move is read from there."""
    first_session(home)
    p2 = home.claude_file(S2)
    write_jsonl(p2, [claude_user(S2, "terraform state lock stuck on dynamodb", "2026-03-03T09:00:00Z", "t1")])
    home.run("index")
    before = _records(home)
    moved = home.root / "elsewhere" / "projects"
    moved.parent.mkdir()
    (home.home / ".claude" / "projects").rename(moved)
    env = {"DEJA_CLAUDE_ROOT": str(moved)}
    out = json.loads(home.run("index", "--json", extra_env=env).stdout)
    assert _records(home) == before
    assert ids(home.search("terraform", "lock", extra_env=env)) == [S2]
    # the move and a turn appended at the new path, in one run
    (home.root / "elsewhere").rename(home.root / "again")
    env = {"DEJA_CLAUDE_ROOT": str(home.root / "again" / "projects")}
    p2 = home.root / "again" / "projects" / p2.parent.name / p2.name
    write_jsonl(p2, [claude_user(S2, "the lock table had a stale digest row", "2026-03-03T09:05:00Z", "t2")], "a")
    home.run("index", extra_env=env)
    after = _records(home)
    assert len(after) == len(before) + 1 and len(set(after)) == len(after)
    assert ids(home.search("stale", "digest", extra_env=env)) == [S2]
    assert out["harnesses"][0]["files"] == 2


def _codex_rollout(home, sid: str, ask: str, answer: str, minute: int):
    stamp = f"2026-03-02T09-{minute:02d}-00"
    rows = [{"timestamp": f"2026-03-02T09:{minute:02d}:00.000Z", "type": "session_meta",
             "payload": {"id": sid, "cwd": "/home/dev/src/ledger", "cli_version": "0.118.0"}}]
    for i, (role, kind, text) in enumerate((("user", "input_text", ask), ("assistant", "output_text", answer))):
        rows.append({"timestamp": f"2026-03-02T09:{minute:02d}:{10 + i}.000Z", "type": "response_item",
                     "payload": {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}})
    path = home.codex_file(sid, stamp=stamp)
    write_jsonl(path, rows)
    return path


def test_a_codex_thread_archived_or_unarchived_is_the_same_session_found_once(home):
    """Codex's app and IDE extension archive a thread by moving its rollout,
    whole, from sessions/YYYY/MM/DD/ to archived_sessions/ (and back when
    unarchived). An archived thread is still history: found, once, whichever
    folder holds it, and one archived before deja ever ran is read too."""
    a, b = "019cb000-0000-7000-8000-00000000000a", "019cb000-0000-7000-8000-00000000000b"
    pa = _codex_rollout(home, a, "why does the settlement export flake on mondays", "the cron ran twice", 0)
    archived = home.home / ".codex" / "archived_sessions"
    archived.mkdir(parents=True)
    pb = _codex_rollout(home, b, "rotate the kafka consumer group offsets", "reset to earliest", 5)
    pb.rename(archived / pb.name)  # archived before deja ran
    (home.home / ".codex" / "history.jsonl").write_text(
        json.dumps({"session_id": b, "ts": 1772442300, "text": "rotate the kafka consumer group offsets"}) + "\n")
    home.run("index")
    before = _records(home)
    assert ids(home.search("kafka", "offsets")) == [b]
    assert sum(1 for r in before if r[0] == b and r[1] == "user") == 1  # not again from history.jsonl
    pa.rename(archived / pa.name)  # archived
    out = json.loads(home.run("index", "--json").stdout)
    assert _records(home) == before
    assert ids(home.search("settlement", "export")) == [a]
    assert out["harnesses"][0]["files"] == 3
    (archived / pa.name).rename(pa)  # unarchived
    home.run("index")
    assert _records(home) == before and ids(home.search("settlement", "export")) == [a]
    # archived under a deja that did not read the folder: kept as a deleted
    # transcript; read where it is now, its kept copy leaves
    pa.rename(home.root / pa.name)
    home.run("index")
    (home.root / pa.name).rename(archived / pa.name)
    home.run("index")
    assert _records(home) == before and ids(home.search("settlement", "export")) == [a]


def test_a_codex_rollout_compressed_where_it_lay_stays_one_session_and_a_damaged_one_keeps_it(home):
    """Codex compresses a rollout a week cold to rollout-*.jsonl.zst and removes
    the .jsonl: the same thread, neither lost (kept as a gone file) nor in the
    store twice (the .jsonl's records beside the .zst's). A .zst archived is a
    move too; one that turns out damaged is its file's error and keeps what
    the index holds of it."""
    import zstandard

    def compress(path, to=None):
        to = to or path.with_name(path.name + ".zst")
        to.write_bytes(zstandard.ZstdCompressor(level=3).compress(path.read_bytes()))
        path.unlink()
        return to

    a, b = "019cb000-0000-7000-8000-00000000000a", "019cb000-0000-7000-8000-00000000000b"
    pa = _codex_rollout(home, a, "why does the settlement export flake on mondays", "the cron ran twice", 0)
    _codex_rollout(home, b, "rotate the kafka consumer group offsets", "reset to earliest", 5)
    home.run("index")
    before = _records(home)
    za = compress(pa)
    out = json.loads(home.run("index", "--json").stdout)
    assert out["harnesses"][0]["files"] == 2 and not out.get("errors")
    assert _records(home) == before and ids(home.search("settlement", "export")) == [a]
    archived = home.home / ".codex" / "archived_sessions"
    archived.mkdir()
    za = za.rename(archived / za.name)  # a compressed thread archived
    home.run("index")
    assert _records(home) == before and ids(home.search("settlement", "export")) == [a]
    za.write_bytes(za.read_bytes()[:20])  # damaged: a per-file error, what it held stays
    out = json.loads(home.run("index", "--json").stdout)
    assert any(za.name in e and "compressed rollout unreadable" in e for e in out["errors"]), out["errors"]
    assert _records(home) == before and ids(home.search("settlement", "export")) == [a]


def test_a_new_file_is_a_move_only_when_it_begins_with_what_was_read_under_its_name(tmp_path):
    from deja.pipeline import manifest as mf

    def row(path, harness="claude"):
        data = open(path, "rb").read()
        return {"harness": harness, "size": len(data), "mtime_ns": 1, "safe_offset": len(data), "records": 2,
                "prefix_hash": mf.prefix_hash(str(path), len(data)), "content_version": mf.CONTENT_VERSION}

    def at(*parts):
        p = tmp_path.joinpath(*parts)
        p.parent.mkdir(parents=True, exist_ok=True)
        return p

    def kinds(acts):
        return sorted((a.kind, os.path.relpath(a.path, tmp_path).split(os.sep)[0]) for a in acts)

    old = at("a", "proj", "s1.jsonl")
    old.write_bytes(b'{"turn": 1}\n{"turn": 2}\n')
    manifest = {str(old): row(old)}
    new = at("b", "proj", "s1.jsonl")
    new.write_bytes(old.read_bytes() + b'{"turn": 3}\n')  # moved, then grew
    old.unlink()
    assert kinds(mf.plan([(str(new), "claude")], manifest)) == [("new", "b"), ("remove", "a")]
    new.write_bytes(b'{"turn": 1}\n{"other": 2}\n')  # the same name, other contents: another file
    assert kinds(mf.plan([(str(new), "claude")], manifest)) == [("gone", "a"), ("new", "b")]
    other = at("b", "proj", "s2.jsonl")  # another name, the same contents: a copy, not a move
    other.write_bytes(b'{"turn": 1}\n{"turn": 2}\n')
    assert kinds(mf.plan([(str(other), "claude")], manifest)) == [("gone", "a"), ("new", "b")]
    elsewhere = at("c", "other-proj", "s1.jsonl")  # the same name in a folder of another name
    elsewhere.write_bytes(b'{"turn": 1}\n{"turn": 2}\n')
    assert kinds(mf.plan([(str(elsewhere), "claude")], manifest)) == [("gone", "a"), ("new", "c")]
    assert kinds(mf.plan([(str(other), "codex")], manifest)) == [("new", "b")]  # claude's store unseen: left alone
    # a name with a UUID in it is the file's own in any folder (Codex archives to a flat folder)
    rollout = at("d", "sessions", "2026", "03", "02", "rollout-2026-03-02T09-00-00-019cb000-0000-7000-8000-00000000000a.jsonl")
    rollout.write_bytes(b'{"turn": 1}\n')
    codex_manifest = {str(rollout): row(rollout, "codex")}
    flat = at("d", "archived_sessions", rollout.name)
    rollout.rename(flat)
    assert kinds(mf.plan([(str(flat), "codex")], codex_manifest)) == [("new", "d"), ("remove", "d")]
    # moved before deja knew moves: the old path marked gone, the new one read too.
    # `deja index` takes the copy out; a query's freshness check leaves it to it
    new.write_bytes(b'{"turn": 1}\n{"turn": 2}\n{"turn": 3}\n')
    manifest = {str(old): dict(manifest[str(old)], gone_at=1), str(new): dict(row(new), mtime_ns=os.stat(new).st_mtime_ns)}
    assert kinds(mf.plan([(str(new), "claude")], manifest, verify=True)) == [("remove", "a"), ("skip", "b")]
    assert kinds(mf.plan([(str(new), "claude")], manifest)) == [("skip", "b")]


def test_a_store_this_environment_cannot_see_is_kept_not_removed(home):
    first_session(home)
    home.run("index")
    # the same index, run from an environment whose HOME has no Claude store
    other = home.root / "elsewhere"
    other.mkdir()
    home.run("index", extra_env={"HOME": str(other)})
    assert ids(home.search("connection", "pool")) == [S1]
    # a file removed from a store that is visible does leave
    first_session(home, S2).unlink()
    home.run("index")
    assert ids(home.search("connection", "pool")) == [S1]


def test_a_partition_too_big_to_sort_in_memory_is_written_a_role_at_a_time_alike(tmp_path, monkeypatch):
    """A big run's records wait on disk by partition, a big flush's in a batch
    per role (stages/store/spill.py); a partition too big to hold is written a
    role at a time, reading only that role's batches and those of every role,
    into the same rows and one-role row groups as the in-memory sort, even
    when the spill had to close its file and continue in another."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from deja.stages.store import spill as spill_mod
    from deja.stages.store import write
    from deja.stages.sources.base import ROLES

    monkeypatch.setattr(spill_mod, "MAX_OPEN", 2)
    roles = ["user", "assistant", "tool-output", "command"]
    n = 5000
    table = pa.table({"record_id": pa.array(range(n), pa.int64()),
                      "role": [roles[(i * 7) % 4] for i in range(n)],
                      "text": [f"line {i} " * (i % 9 + 1) for i in range(n)]})
    s = spill_mod.Spill(tmp_path, 1, "records")
    for lo in range(0, n, 700):  # three keys through two open files: segments
        for key in ("a", "b", "c"):
            part = table.slice(lo, 700)
            if lo % 1400:  # (a small flush: one batch of every role)
                s.append(key, part)
                continue
            for (role,), rows in write.runs_of(part, {"role": part.column("role")}):
                s.append(key, rows, role)
    assert len(s.segments["a"]) > 1
    held = write.write_records_part(s.read("a"), tmp_path, "held.parquet")
    streamed = write.write_records_streamed(lambda role: write.of_role(s.tagged("a", role), role), ROLES, tmp_path,
                                            "streamed.parquet")
    s.close()
    assert held == streamed == n
    a, b = pq.read_table(tmp_path / "held.parquet"), pq.read_table(tmp_path / "streamed.parquet")
    assert a.equals(b)
    for name in ("held.parquet", "streamed.parquet"):
        meta = pq.ParquetFile(tmp_path / name).metadata
        stats = [meta.row_group(g).column(1).statistics for g in range(meta.num_row_groups)]
        assert all(st.min == st.max for st in stats)
    assert not (tmp_path / ".tmp" / "spill-000001-records").exists()


def test_a_vocabulary_too_big_to_sort_in_memory_is_merged_from_disk_into_the_same_part(home):
    """Past DEJA_VOCAB_AT_ONCE words (half a million by default) a big
    run's vocabulary waits on disk by bucket and DuckDB merges it under the
    run's memory limit: the same store, the vocabulary one sorted part."""
    from conftest import store_digest, unsorted_parts

    held, merged = home.root / "held.db", home.root / "merged.db"
    base = dict(DEJA_SMALL_RUN_BYTES="0", DEJA_FLUSH_BYTES="2000")
    home.run("index", extra_env=dict(samples_env(home, held), **base))
    home.run("index", extra_env=dict(samples_env(home, merged), **base, DEJA_VOCAB_AT_ONCE="50",
                                     DEJA_MEMORY_LIMIT="16MB"))
    assert store_digest(merged) == store_digest(held)
    assert unsorted_parts(merged) == []
    con = duckdb.connect(str(merged / "catalog.duckdb"), read_only=True)
    vocab = [f for d, f in con.execute("SELECT dataset, file FROM generation").fetchall() if d == "vocab"]
    con.close()
    assert len(vocab) == 1 and not list((merged / ".tmp").glob("vocab-*"))


def test_a_transcript_whose_name_is_not_utf8_is_skipped_and_named_and_the_rest_indexes(home):
    first_session(home)
    good = home.claude_file(S1)
    bad = os.path.join(os.fsencode(good.parent), b"caf\xe9.jsonl")
    with open(bad, "wb") as fh:
        fh.write(good.read_bytes())
    summary = json.loads(home.run("index", "--json").stdout)
    assert any("caf\\udce9.jsonl" in e and "not UTF-8" in e for e in summary["errors"]), summary["errors"]
    assert ids(home.search("pool")) == [S1]
    assert home.run("index").returncode == 0


@pytest.mark.parametrize(("turns", "title"), [
    (["修复连接池耗尽的问题", "好的"], "修复连接池耗尽的问题"),  # no spaces: a request, not a greeting
    (["接続プールが枯渇する原因を調べて", "はい"], "接続プールが枯渇する原因を調べて"),
    (["fix pool", "yes"], "fix pool"),  # the next turn says less: the first stands
    (["hi", "why does checkout return 500 on empty carts?"], "why does checkout return 500 on empty carts?"),
    (["你好", "帮我看看连接池为什么耗尽"], "帮我看看连接池为什么耗尽"),
])
def test_a_sessions_title_is_its_first_request_unless_that_is_a_greeting_the_next_says_more_than(turns, title):
    from deja.stages.normalize import derive_title

    assert derive_title(turns, "", "") == (title, False)


def test_control_characters_in_a_sessions_id_folder_or_branch_never_reach_a_terminal(home):
    """An id, folder or branch is printed in every answer and handed to hooks
    and agents: an escape sequence in one (ESC ] 0 ; sets a terminal's title,
    ESC [ 2 J clears it) is dropped at the door, and counted."""
    sid = "esc\x1b]0;PWNED\x07\x1b[2J"
    path = home.claude_file("esc")
    write_jsonl(path, [dict(claude_user(sid, "terminal escape test", "2026-03-02T10:00:00Z", "u1",
                                        cwd="/tmp/esc\x1b[2J"), gitBranch="main\x1b]0;x\x07")])
    summary = json.loads(home.run("index", "--json").stdout)
    assert summary["harnesses"][0]["malformed"] >= 1
    for out in (home.run("last").stdout, home.run("last", "--json").stdout, home.run("search", "terminal").stdout,
                home.run("show", "esc").stdout):
        assert "\x1b" not in out and "\x07" not in out and "\\u001b" not in out, out
    hit = home.search("terminal", "escape")["hits"][0]["session"]
    assert hit["id"] == "esc]0;PWNED[2J" and hit["project"] == "tmp/esc[2J"


def test_session_rows_load_a_slice_at_a_time_into_one_table(monkeypatch):
    """write.load_lists binds its columns LOAD_ROWS rows at a time (a statement
    binding every session at once held them all as DuckDB values): the table
    is the same whole, and an empty load still makes the typed table."""
    from deja.stages.store import write

    monkeypatch.setattr(write, "LOAD_ROWS", 2)
    types = (("k", "VARCHAR"), ("t0", "TIMESTAMPTZ"), ("tags", "VARCHAR[]"), ("n", "BIGINT"))
    cols = {"k": ["a", "b", "c", "d", "e"], "t0": [0, 1_000, None, 3_000, 4_000],
            "tags": [["x"], [], None, ["y", "z"], ["w"]], "n": [1, 2, 3, None, 5]}
    con = duckdb.connect()
    write.load_lists(con, "t", types, cols)
    rows = con.execute("SELECT k, epoch_ms(t0), tags, n FROM t ORDER BY k").fetchall()
    assert rows == [("a", 0, ["x"], 1), ("b", 1000, [], 2), ("c", None, None, 3), ("d", 3000, ["y", "z"], None),
                    ("e", 4000, ["w"], 5)]
    write.load_lists(con, "t", types, {name: [] for name, _ in types})
    assert con.execute("SELECT count(*) FROM t").fetchone() == (0,)
    assert [r[1] for r in con.execute("DESCRIBE t").fetchall()] == ["VARCHAR", "TIMESTAMP WITH TIME ZONE", "VARCHAR[]",
                                                                    "BIGINT"]


@pytest.mark.parametrize("slice_bytes,batch", [("1500", BIG), ("9000", BIG), ("1500", {})])
def test_a_transcript_read_in_slices_makes_the_store_a_whole_read_makes(home, slice_bytes, batch):
    """A transcript too big to read at once is read a slice at a time
    (pipeline/run.py, read_sliced): each slice ends at a line's end, held back at
    a call whose result lies past it, and the next is read as an append. The
    records, their sequence, commands' exit codes, sessions and postings are
    those of one whole read, by either batch (but how often a file was touched, which counts
    the reads that touched it, as appended reads do); the file is then up to
    date, and a turn appended later is read on from where the slices ended."""
    whole, sliced = home.root / "whole.db", home.root / "sliced.db"
    home.run("index", extra_env=dict(samples_env(home, whole), **batch))
    home.run("index", extra_env=dict(samples_env(home, sliced), **batch, DEJA_SLICE_BYTES=slice_bytes))
    a, b = datasets(whole), datasets(sliced)
    touched = [n for n, _, *_ in a["sessions types"]].index("touched")
    for rows in (a["sessions"], b["sessions"]):
        rows[:] = [r[:touched] + (sorted(r[touched] or []),) + r[touched + 1:] for r in rows]
    for name in a:
        assert a[name] == b[name], name
    env = dict(samples_env(home, sliced), DEJA_SLICE_BYTES=slice_bytes)
    assert home.run("index", extra_env=env).stderr.startswith("up to date")
    p = next((home.root / "samples" / "claude" / "projects").glob("*/*.jsonl"))
    write_jsonl(p, [claude_user(S1, "one more question about the quokka cache", "2026-03-09T10:00:00Z", "q1")], "a")
    home.run("index", extra_env=env)
    assert home.search("quokka", extra_env=env)["hits"]


def test_a_session_read_first_with_no_records_numbers_its_appended_turns_on(home):
    """A Codex rollout read when it held only its session line, then appended
    one turn at a time: each turn's records take the next numbers (a kept
    highest number of 0 once read as none, and the next turn took 0 again)."""
    tid = "019b0000-0000-7000-8000-0000000000c1"
    p = home.codex_file(tid)
    line = lambda d: json.dumps(d) + "\n"  # noqa: E731
    p.write_text(line({"timestamp": "2026-03-02T09:00:00.000Z", "type": "session_meta",
                       "payload": {"id": tid, "cwd": "/home/dev/src/api"}}))
    home.run("index")
    for i, word in enumerate(["wombat", "numbat", "quokka"]):
        with open(p, "a") as fh:
            fh.write(line({"timestamp": f"2026-03-02T09:0{i + 1}:00.000Z", "type": "response_item", "payload": {
                "type": "message", "role": "user", "content": [{"type": "input_text", "text": f"the {word} cache"}]}}))
        home.run("index")
    files = [str(home.index / r[0]) for r in catalog(home, "SELECT file FROM generation WHERE dataset='records'")]
    con = duckdb.connect()
    seqs = con.execute("SELECT seq, text FROM read_parquet(?) ORDER BY seq", [files]).fetchall()
    assert seqs == [(0, "the wombat cache"), (1, "the numbat cache"), (2, "the quokka cache")]
