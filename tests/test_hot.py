"""A warm process holds the store's parts in memory (stages/store/hot.py):
it answers exactly as a cold process does, whatever its budget lets it hold,
lets go of parts that left the live store, and reads a part again when its
file changed."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from conftest import Home, at_one_moment, claude_session


# long printed texts (held compressed), non-Latin words, words spread over months and projects
LOG = "\n".join(f"tests/test_ledger.py::test_case_{i} PASSED  ожидание {i} 超时 {i}" for i in range(60))


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    home = Home(tmp_path_factory.mktemp("hot"))
    claude_session(home, 1, [
        ("user", "the ledger export times out when the connection pool is exhausted"),
        ("assistant", "Raised pool_size to 20 in app/db.py and added a statement timeout."),
        ("bash", "pytest -q"),
        ("output", LOG + "\nFAILED tests/test_ledger.py::test_export - TimeoutError: pool exhausted"),
    ], cwd="/home/dev/src/ledger", day="2026-01-12")
    claude_session(home, 2, [
        ("user", "сборка падает на шаге миграции базы"),
        ("assistant", "Миграция ждала блокировку; добавил lock_timeout и повторил сборку."),
    ], cwd="/home/dev/src/ledger", day="2026-02-03")
    claude_session(home, 3, [
        ("user", "连接超时 when the web app calls the ledger service"),
        ("assistant", "The web client reused a closed connection; the pool now pings before use."),
        ("bash", "pytest -q"), ("output", LOG.replace("ledger", "web")),
    ], cwd="/home/dev/src/web", day="2026-03-09")
    home.run("index")
    # an appended turn: its run adds small parts beside the first run's
    claude_session(home, 4, [
        ("user", "quokka deploy pipeline flakes on the export step"),
        ("assistant", "The quokka step raced the export; it now waits for the ledger pool."),
    ], cwd="/home/dev/src/web", day="2026-03-10")
    home.run("index")
    return home


QUERIES = ["connection pool exhausted", "pool", "ledger export", "TimeoutError", "test_case_7 PASSED",
           "сборка миграции", "连接超时", "quokka export", "lock_timeout", "zzz nothing here", "pool timeout web"]


def _answers(home: Home, monkeypatch, warm: bool, hold_mb: str | None = None, queries: list[str] = QUERIES) -> list:
    from deja.pipeline import api
    from deja.stages.store import hot, read

    if hold_mb is None:
        monkeypatch.delenv("DEJA_HOLD_MB", raising=False)
    else:
        monkeypatch.setenv("DEJA_HOLD_MB", hold_mb)
    hot.keep_only(())
    env = dict(home.env)
    if not warm:
        return [api.search(q, env=env) for q in queries]
    read.keep_open(True)
    try:
        return [[api.search(q, env=env) for q in queries] for _ in range(2)]
    finally:
        read.keep_open(False)


def _held(kind) -> list:
    from deja.stages.store import hot

    return [path for path, (_, part) in hot._held.items() if isinstance(part, kind)]


def test_a_warm_process_answers_as_a_cold_one_whatever_its_budget_holds(store, monkeypatch):
    from deja.stages.store import hot

    at_one_moment(monkeypatch)
    cold = _answers(store, monkeypatch, warm=False)
    assert sum(bool(a["hits"]) for a in cold) >= 8
    assert any("test_case_7" in s for a in cold for h in a["hits"] for s in h["snippets"])  # printed text shown

    # the default budget holds every part the searches met: postings, vocabulary, texts
    assert _answers(store, monkeypatch, warm=True) == [cold, cold]
    assert _held(hot.Keyed) and _held(hot.Texts)
    assert not [p for p, (_, part) in hot._held.items() if part is None]
    assert all(n > 0 for n in hot.held_bytes().values())

    # a budget that holds some parts and not others: the rest are read from Parquet
    sizes = sorted(part.size for _, (_, part) in hot._held.items())
    tight = str((sizes[len(sizes) // 2] + sizes[0]) / (1 << 20) / (1 - hot.TEXT_SHARE))
    assert _answers(store, monkeypatch, warm=True, hold_mb=tight) == [cold, cold]
    assert _held(hot.Keyed) and [p for p, (_, part) in hot._held.items() if part is None]

    # nothing held: every part from Parquet
    assert _answers(store, monkeypatch, warm=True, hold_mb="0") == [cold, cold]
    assert not _held(hot.Keyed) and not _held(hot.Texts)
    hot.keep_only(())


def test_held_parts_leave_with_their_generation_and_a_changed_file_is_read_again(store, tmp_path, monkeypatch):
    from deja.pipeline import api
    from deja.stages.store import duck, hot, read

    monkeypatch.delenv("DEJA_HOLD_MB", raising=False)
    home = Home(tmp_path)
    shutil.copytree(store.home, home.home, dirs_exist_ok=True, symlinks=True)
    home.run("index")
    env = dict(home.env)
    hot.keep_only(())
    read.keep_open(True)
    try:
        before = api.search("quokka export", env=env)
        live = read.open_live(home.index, con=duck.shared())
        first = set(hot._held)
        assert first and first <= {p for paths in live.files.values() for p in paths}

        # a new generation (`deja index --rebuild` writes every part anew): the old parts are let go
        home.run("index", "--rebuild")
        assert api.search("quokka export", env=env)["hits"][0]["session"]["id"] == before["hits"][0]["session"]["id"]
        live = read.open_live(home.index, con=duck.shared())
        assert not first & set(hot._held)
        assert set(hot._held) <= {p for paths in live.files.values() for p in paths}

        # a part whose file changed under the same name is read again, not trusted
        path = next(p for p in hot._held if "/postings/" in p)
        part = hot._held[path][1]
        data = open(path, "rb").read()
        open(path, "wb").write(data)  # same bytes, a new mtime: still read again
        hot.keep_only(p for paths in live.files.values() for p in paths)
        assert path not in hot._held
        assert hot.postings(live.con, path) is not part
    finally:
        read.keep_open(False)
        hot.keep_only(())


def test_every_key_of_a_part_is_found_whatever_order_it_was_written_in(tmp_path):
    """Keys are found by a binary search over their bytes: prefixes, non-Latin
    words and the empty string among them, in a part written sorted and in
    one written in no order (sorted when read)."""
    import duckdb

    from deja.stages.store import duck, hot

    words = ["pool", "poolsize", "po", "ожидание", "超时", "", "e\u0301", "\u00e9", "Zeta", "zeta", "naïve", "🧪"]
    rows = [(w, rid, i + 1) for i, w in enumerate(words) for rid in range(i % 3 + 1)]
    con = duckdb.connect()
    con.execute("CREATE TABLE p (token VARCHAR, record_id BIGINT, tf INTEGER)")
    con.executemany("INSERT INTO p VALUES (?, ?, ?)", rows)
    for name, order in (("sorted", "ORDER BY token, record_id"), ("shuffled", "ORDER BY hash(token, record_id)")):
        path = str(tmp_path / f"{name}.parquet")
        con.execute(f"COPY (SELECT * FROM p {order}) TO '{path}' (FORMAT parquet)")
        part = hot.postings(duck.connect(), path)
        assert len(part.keys) == len(words)
        for i, w in enumerate(words):
            lo, hi = part.run(w)
            assert hi - lo == i % 3 + 1, (name, w)
            assert set(part.columns["tf"][lo:hi].tolist()) == {i + 1}
            assert sorted(part.columns["record_id"][lo:hi].tolist()) == list(range(i % 3 + 1))
        for missing in ("missing", "poo", "poolsizes", "e", "ZETA", "\U0010ffff"):
            assert part.run(missing) == (0, 0)
    hot.keep_only(())


def test_held_texts_come_back_whole_long_or_short():
    from deja.stages.store import hot

    texts = ["short", LOG, "", "emoji 🧪 and a lone \udcff byte", LOG * 20]
    rows = list(zip([3, 5, 8, 13, 21], texts))
    held = hot.Texts.of([rows[:2], rows[2:]])
    assert [held.get(r) for r in (3, 5, 8, 13, 21)] == texts
    assert held.get(4) is None and held.get(99) is None and held.get(-1) is None
    assert held.packed.tolist() == [False, True, False, False, True]
    assert held.size < len(LOG) * 5  # long texts are held compressed
    # past the room given: not held, and told before the rest is read
    batches = iter([rows[:2], rows[2:], None])
    assert hot.Texts.of(batches, room=10) is None and next(batches) == rows[2:]


def test_the_rest_is_read_between_calls_never_during_one(store, monkeypatch):
    """deja mcp reads the parts no call has read yet on a background thread,
    only once it has been quiet a while: a call under way, or calls in quick
    succession, never share the machine with it."""
    from deja.pipeline import api
    from deja.pipeline.mcp_server import Calls
    from deja.stages.store import duck, hot, read

    monkeypatch.delenv("DEJA_HOLD_MB", raising=False)
    monkeypatch.setattr(Calls, "QUIET", 0.3)
    hot.keep_only(())
    read.keep_open(True)
    try:
        api.search("quokka", env=dict(store.env))
        live = read.kept_store()
        every = {p for d in ("vocab", "postings", "records") for p in live.files[d]}
        first = set(hot._held)
        assert first and first < every  # one search read only the parts it needed
        calls = Calls()
        calls.begin()  # a call under way
        hot.preload(duck.shared(), live.files, calls)
        hot._preload["thread"].join(timeout=1.0)
        assert set(hot._held) == first and hot._preload["thread"].is_alive()
        calls.end()
        hot._preload["thread"].join(timeout=30)
        assert not hot._preload["thread"].is_alive()
        assert set(hot._held) == every and all(part is not None for _, part in hot._held.values())
        assert [api.search(q, env=dict(store.env)) for q in QUERIES[:4]]  # and answers from them
    finally:
        read.keep_open(False)
        hot.keep_only(())


@pytest.fixture(scope="module")
def real_store(tmp_path_factory):
    """Published Claude Code and Codex transcripts (../shared/corpus/real), in
    a HOME laid out as the agents write it."""
    import csv

    from conftest import CORPUS

    if not (CORPUS / "MANIFEST.tsv").is_file():
        pytest.skip("../shared/corpus/real is not here")
    home = Home(tmp_path_factory.mktemp("hot-real"))
    with open(CORPUS / "MANIFEST.tsv", newline="") as fh:
        rows = [r for r in csv.DictReader(fh, delimiter="\t") if r["harness"] in ("claude", "codex")]
    for i, r in enumerate(rows):
        if int(r["bytes"]) > 3 << 20:  # (the test's time: the rest still spans both agents and many projects)
            continue
        name = r["source_path"].rsplit("/", 1)[-1]
        if r["harness"] == "claude":
            dest = home.home / ".claude" / "projects" / f"-real-{i}" / name
        else:
            dest = home.home / ".codex" / "sessions" / "2026" / "01" / "01" / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.symlink_to(CORPUS / r["harness"] / r["file"])
    home.run("index")
    return home


def test_on_real_transcripts_a_warm_process_answers_as_a_cold_one(real_store, monkeypatch):
    """The same answers cold, warm with every part held, and warm with a budget
    that holds only some, for the store's own commonest words and for
    questions as people type them."""
    import duckdb

    from deja.stages.store import hot

    con = duckdb.connect()
    words = [w for (w,) in con.execute(
        "SELECT token FROM read_parquet(?) "
        "WHERE length(token) BETWEEN 4 AND 12 AND NOT regexp_matches(token, '[0-9_]') "
        "GROUP BY token ORDER BY sum(n) DESC, token LIMIT 24",
        [str(real_store.index / "vocab" / "**" / "*.parquet")]).fetchall()]
    queries = [f"{a} {b}" for a, b in zip(words[0::2], words[1::2])] + [
        "why does the build fail", "git commit message", "TypeError undefined", "test passes locally"]
    at_one_moment(monkeypatch)
    cold = _answers(real_store, monkeypatch, warm=False, queries=queries)
    assert sum(bool(a["hits"]) for a in cold) >= len(queries) - 2
    assert _answers(real_store, monkeypatch, warm=True, queries=queries) == [cold, cold]
    sizes = sorted(part.size for _, (_, part) in hot._held.items() if part is not None)
    tight = str(sizes[len(sizes) // 2] * 3 / (1 << 20))
    assert _answers(real_store, monkeypatch, warm=True, hold_mb=tight, queries=queries) == [cold, cold]
    assert [p for p, (_, part) in hot._held.items() if part is None]
    hot.keep_only(())
