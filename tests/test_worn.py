"""The "worn" signal (cli-contract §5.3): a session agents keep recalling, by
the usage log the hooks and the MCP server write beside the index, is lifted
× min(1.5, 1 + 0.10 · log2(1 + n)), so popularity stays below relevance; and
`deja stats` counts the MCP server's recalls. Real `deja` subprocesses on a
temp HOME; the log is written by the same function the hooks use."""

from __future__ import annotations

import json
import time

import pytest

from conftest import Home, claude_assistant, claude_user, write_jsonl
from deja.hooks.packet import metric

A = "aaaa0000-0000-4000-8000-00000000000a"  # the fresher of two equal sessions
B = "bbbb0000-0000-4000-8000-00000000000b"


def _session(home: Home, sid: str, minute: int) -> None:
    ts = f"2026-03-04T10:{minute:02d}:00.000Z"
    write_jsonl(home.claude_file(sid), [
        claude_user(sid, "why is the pgbouncer pool exhausted under load?", ts, f"{sid[:4]}-u1"),
        claude_assistant(sid, [{"type": "text", "text": "The pgbouncer pool is exhausted because every worker "
                                                       "holds a connection for the whole request."}],
                         ts.replace(":00.000Z", ":30.000Z"), f"{sid[:4]}-a1", msg_id=f"msg_{sid[:4]}"),
    ])


@pytest.fixture
def home(tmp_path) -> Home:
    h = Home(tmp_path)
    _session(h, B, 0)
    _session(h, A, 1)
    h.run("index")
    return h


def _hits(home: Home) -> dict[str, dict]:
    hits = home.search("pgbouncer", "pool", "exhausted")["hits"]
    return {h["session"]["id"]: dict(h, rank=i) for i, h in enumerate(hits)}


def _served(home: Home, sid: str, times: int, kind: str = "mcp") -> None:
    for _ in range(times):
        assert metric.log(home.index, kind, bytes=812, n=1, sessions=f"claude:{sid}")


def test_a_session_agents_keep_recalling_is_lifted_above_an_equal_one(home):
    before = _hits(home)
    assert before[A]["rank"] == 0 and "reused" not in before[A] and "reused" not in before[B]
    _served(home, B, 2, "mcp")
    _served(home, B, 1, "recall")  # a hook's recall counts the same
    after = _hits(home)
    assert after[B]["rank"] == 0 and after[B]["reused"] == 3 and "reused" not in after[A]
    assert "(reused 3× by agents recently)" in home.run("search", "pgbouncer", "pool", "exhausted").stdout
    lift = after[B]["score"] / before[B]["score"]
    assert lift == pytest.approx(1 + 0.10 * 2, rel=1e-3)  # log2(1 + 3) = 2


def test_the_lift_is_capped_at_half_again(home):
    before = _hits(home)
    _served(home, B, 120)
    after = _hits(home)
    assert after[B]["reused"] == 120
    assert after[B]["score"] / before[B]["score"] == pytest.approx(1.5, rel=1e-3)
    assert after[A]["score"] == pytest.approx(before[A]["score"], rel=1e-3)


def test_recalls_older_than_two_weeks_and_other_kinds_lift_nothing(home):
    before = _hits(home)
    old = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 20 * 86400))
    with open(metric.log_path(home.index), "a", encoding="utf-8") as fh:
        for _ in range(5):
            fh.write(json.dumps({"t": old, "kind": "mcp", "bytes": 812, "n": 1, "sessions": f"claude:{B}"},
                                separators=(",", ":")) + "\n")
    _served(home, B, 4, "inject")  # a session-start digest is not an agent asking
    after = _hits(home)
    assert after[A]["rank"] == 0 and "reused" not in after[B]
    assert after[B]["score"] == pytest.approx(before[B]["score"], rel=1e-3)


def test_stats_counts_the_mcp_servers_recalls(home):
    _served(home, B, 3, "mcp")
    _served(home, A, 2, "recall")
    st = json.loads(home.run("stats", "--json").stdout)
    assert st["recall"]["mcp_calls"] == 3
    assert st["recall"]["recalls_served"] == 5 and st["recall"]["recall_sessions"] == 2
    assert "5 recalls served (3 through MCP)" in home.run("stats").stdout


def test_a_warm_process_counts_from_what_was_appended_and_starts_over_after_a_trim(home, monkeypatch):
    from deja.queries import rank
    from deja.stages.store import read

    def fresh() -> dict:  # what a process that reads the whole log finds
        read.keep_open(False)
        try:
            return rank.worn_counts(home.index)
        finally:
            read.keep_open(True)

    log = metric.log_path(home.index)
    read.keep_open(True)
    try:
        _served(home, B, 3)
        assert rank.worn_counts(home.index) == {f"claude:{B}": 3}
        _served(home, A, 2)
        assert rank.worn_counts(home.index) == fresh() == {f"claude:{B}": 3, f"claude:{A}": 2}
        # a line still being written counts once it is whole
        line = json.dumps({"t": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "kind": "mcp", "bytes": 1,
                           "n": 1, "sessions": f"claude:{A}"}, separators=(",", ":")) + "\n"
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(line[:40])
        assert rank.worn_counts(home.index)[f"claude:{A}"] == 2
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(line[40:])
        assert rank.worn_counts(home.index)[f"claude:{A}"] == 3
        # the log trimmed to its newest lines (a new file in its place): read again from its start
        monkeypatch.setattr(metric, "LOG_TRIM_BYTES", 1)
        monkeypatch.setattr(metric, "LOG_KEEP_LINES", 2)
        _served(home, B, 1)
        assert rank.worn_counts(home.index) == fresh() == {f"claude:{A}": 1, f"claude:{B}": 1}
    finally:
        read.keep_open(False)


def test_a_warm_process_stops_counting_what_the_horizon_passed(home):
    """A warm process keeps running counts: events two agents appended out of
    order count as in one pass over the log, and those the horizon passes stop
    counting, as a fresh read of the same log finds."""
    from deja.queries import rank
    from deja.stages.store import read

    def line(days_ago: float, key: str) -> str:
        t = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - days_ago * 86400))
        return json.dumps({"t": t, "kind": "mcp", "bytes": 1, "n": 1, "sessions": f"claude:{key}"},
                          separators=(",", ":")) + "\n"

    def fresh(now=None) -> dict:
        read.keep_open(False)
        try:
            return rank.worn_counts(home.index, now)
        finally:
            read.keep_open(True)

    log = metric.log_path(home.index)
    days = rank.WORN_DAYS
    read.keep_open(True)
    try:
        log.write_text(line(days + 2, A) + line(days - 1, A) + line(days - 3, B) + line(1, B))
        assert rank.worn_counts(home.index) == fresh() == {f"claude:{A}": 1, f"claude:{B}": 2}
        with open(log, "a", encoding="utf-8") as fh:  # a moment older than the line before it
            fh.write(line(0.5, A) + line(days - 2, A))
        assert rank.worn_counts(home.index) == fresh() == {f"claude:{A}": 3, f"claude:{B}": 2}
        later = time.time() + 3.5 * 86400  # the horizon passes three events
        assert rank.worn_counts(home.index, later) == fresh(later) == {f"claude:{A}": 1, f"claude:{B}": 1}
    finally:
        read.keep_open(False)
