"""A warm process ranks from arrays (queries/score_arrays.py), a cold one with
sql/score_groups.sql: both must give every session the same row."""

from __future__ import annotations

import math
import random

import duckdb
import pytest

from deja.queries import rank, score_arrays
from deja.stages.store import duck


def _tables(con, rng: random.Random, n_sessions: int, n_records: int, words: list[str]) -> None:
    con.execute("CREATE OR REPLACE TEMP TABLE q_sessions (ord INTEGER, dl DOUBLE, updated BIGINT, started BIGINT, "
                "decided BOOLEAN, gave_up BOOLEAN, note BOOLEAN, admitted BOOLEAN)")
    con.executemany("INSERT INTO q_sessions VALUES (?, ?, ?, ?, ?, ?, ?, ?)", [
        (o, float(rng.randint(20, 5000)), rng.choice([None, 1_700_000_000_000 + o]), 1_690_000_000_000 + o,
         rng.random() < 0.2, rng.random() < 0.1, rng.random() < 0.05, rng.random() < 0.8)
        for o in range(n_sessions)])
    con.execute("CREATE OR REPLACE TEMP TABLE q_postings (token VARCHAR, record_id BIGINT, session INTEGER, "
                "tf INTEGER, role TINYINT, rec_len INTEGER)")
    rows = []
    for rid in rng.sample(range(1, 10**9), n_records):
        session, role, rec_len = rng.randrange(n_sessions), rng.choice([0, 1, 2, 2, 3, 4]), rng.randint(1, 20_000)
        for word in rng.sample(words, rng.randint(1, min(4, len(words)))):
            rows.append((word, rid, session, rng.randint(1, 30), role, rec_len))
    if rows:
        con.executemany("INSERT INTO q_postings VALUES (?, ?, ?, ?, ?, ?)", rows)


def _postings(con) -> score_arrays.Postings:
    """q_postings as the warm path holds them (with each record's row in the docs arrays: its rank by id)."""
    postings = score_arrays.Postings()
    for (token,) in con.execute("SELECT DISTINCT token FROM q_postings").fetchall():
        cols = con.execute("SELECT * FROM (SELECT token, record_id, session, tf, role, rec_len, "
                           "dense_rank() OVER (ORDER BY record_id) - 1 AS row FROM q_postings) WHERE token = ?",
                           [token]).fetchnumpy()
        postings.add(token, *(cols[c] for c in ("record_id", "session", "tf", "role", "rec_len", "row")))
    return postings


def _sql_rows(con, tokens: list[str], gids: list[int], k: int, and_min: int) -> list[tuple]:
    sql = rank.load_sql("score_groups").replace("$record_sums", ", ".join(
        f"sum(w) FILTER (WHERE gid = {i}) AS w{i}" for i in range(k))).replace("$session_sums", ", ".join(
        f"coalesce(sum(w{i} * CASE role WHEN 0 THEN 1.3 WHEN 1 THEN 1.0 WHEN 3 THEN 0.5 ELSE 1.3 END) "
        f"FILTER (WHERE role <> 2), 0)::DOUBLE, coalesce(sum(w{i}) FILTER (WHERE role = 2), 0)::DOUBLE"
        for i in range(k)))
    if k > 62:
        sql = sql.replace("bit_count(bit_or(1::BIGINT << gid))", "count(DISTINCT gid)")
    return con.execute(duck.inline(sql, tokens=tokens, gids=gids), {"and_min": and_min}).fetchall()


def _rows(scored) -> list[tuple]:
    return [] if scored is None else scored.rows()


def _same(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(
        math.isclose(x, y, rel_tol=1e-12, abs_tol=1e-12) if isinstance(x, float) or isinstance(y, float) else x == y
        for x, y in zip(a, b))


@pytest.mark.parametrize("seed", range(6))
def test_arrays_give_every_session_the_sql_row(seed: int) -> None:
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(rng.randint(2, 9))]
    con = duckdb.connect()
    _tables(con, rng, n_sessions=rng.choice([1, 7, 60]), n_records=rng.choice([1, 40, 900]), words=words)
    postings, sessions = _postings(con), score_arrays.Sessions(con)
    for _ in range(8):
        k = rng.randint(1, 4)
        # a group is a word and its forms; a word may stand in two groups, or
        # be a word no posting holds
        groups = [rng.sample(words + ["absent"], rng.randint(1, 3)) for _ in range(k)]
        tokens = [t for g in groups for t in g]
        gids = [i for i, g in enumerate(groups) for _ in g]
        and_min = rng.randint(1, k)
        want = sorted(_sql_rows(con, tokens, gids, k, and_min))
        got = sorted(_rows(score_arrays.score_rows(postings, sessions, tokens, gids, k, and_min)))
        assert [r[0] for r in got] == [r[0] for r in want]
        for g, w in zip(got, want):
            assert _same(g, w), (g, w)


def test_arrays_count_groups_past_a_bit_sets_width() -> None:
    rng = random.Random(7)
    words = [f"w{i}" for i in range(70)]
    con = duckdb.connect()
    _tables(con, rng, n_sessions=5, n_records=300, words=words)
    tokens, gids = words, list(range(70))
    want = sorted(_sql_rows(con, tokens, gids, 70, 2))
    got = sorted(_rows(score_arrays.score_rows(_postings(con), score_arrays.Sessions(con), tokens, gids, 70, 2)))
    assert len(got) == len(want) and all(_same(g, w) for g, w in zip(got, want))


def test_no_postings_no_rows() -> None:
    con = duckdb.connect()
    _tables(con, random.Random(1), n_sessions=3, n_records=0, words=["a"])
    assert score_arrays.score_rows(_postings(con), score_arrays.Sessions(con), ["a"], [0], 1, 1) is None


@pytest.mark.parametrize("seed", range(4))
def test_a_warm_process_scores_every_session_as_the_loop_does_to_the_bit(seed: int) -> None:
    """rank's loop over rows (a cold process) and its columns at once (a warm
    one) give the same sessions, in the same order, with the same scores."""
    rng = random.Random(100 + seed)
    words = [f"w{i}" for i in range(6)]
    con = duckdb.connect()
    _tables(con, rng, n_sessions=60, n_records=900, words=words)
    postings, sessions = _postings(con), score_arrays.Sessions(con)
    ranker = rank.SessionRanker.__new__(rank.SessionRanker)
    ords = [o for (o,) in con.execute("SELECT ord FROM q_sessions WHERE admitted").fetchall()]
    ranked = []
    for _ in range(8):
        k = rng.randint(1, 4)
        groups = [rng.sample(words, rng.randint(1, 2)) for _ in range(k)]
        tokens = [t for g in groups for t in g]
        gids = [i for i, g in enumerate(groups) for _ in g]
        and_min = rng.randint(1, k)
        scored = score_arrays.score_rows(postings, sessions, tokens, gids, k, and_min)
        ranker._worn = rng.choice([{}, {o: rng.randint(1, 40) for o in rng.sample(ords, 5)}])
        now = 1_700_000_000_000
        windows = rng.choice([[], [(now - 5e9, now)], [(0, 1_690_000_000_010), (now, now + 1)]])
        args = (k, 60, 900.0, rng.random() < 0.5, rng.randint(1, k), and_min, rng.random() < 0.5, windows,
                now + rng.random() * 1e10)
        loop = ranker._rank_rows(scored.rows(), *args)
        columns = ranker._rank_columns(scored, *args)
        assert [(r.ord, r.score, r.matched, r.nrec, r.updated, r.best) for r in columns] == \
            [(r.ord, r.score, r.matched, r.nrec, r.updated, r.best) for r in loop]
        ranked.append(bool(loop))
    assert any(ranked)
