"""One bad value costs one value, never the line, the file or the run.

Every value a reader takes from a transcript is checked where records and
session metadata are built: extreme values in Claude Code and Codex lines go
through the real `deja index` on both write paths (the small run's DuckDB
lists and the big run's Arrow tables), the run exits 0, the good lines are
searchable, the bad value is stored as unknown, and `deja doctor` names the
file and line.
"""

from __future__ import annotations

import json
import math

import duckdb
import pytest

from conftest import Home, claude_assistant, claude_user, write_jsonl
from deja.pipeline.ingest import STORE_TEXT_CAP
from deja.stages import normalize
from deja.stages.sources.base import Message, SessionPart
from deja.stages.sources.jsonl import parse_ts
from deja.stages.sources.values import NAME_CAP, PROSE_CAP, Faults

GOOD_TS = "2026-03-02T10:00:00Z"
GOOD_MS = 1772445600000
LATER_TS = "2026-03-02T10:00:05Z"
CWD = "/home/dev/src/shop"

# ---------------------------------------------------------------------------
# the timestamp forms: a sane ms value, or unknown


@pytest.mark.parametrize("value, expected", [
    (1772445600, GOOD_MS),                    # seconds
    (1772445600.5, GOOD_MS + 500),
    (GOOD_MS, GOOD_MS),                       # milliseconds
    (GOOD_MS * 1000, GOOD_MS),                # microseconds
    (GOOD_MS * 1_000_000, GOOD_MS),           # nanoseconds
    (str(GOOD_MS * 1_000_000), GOOD_MS),
    ("2026-03-02T10:00:00Z", GOOD_MS),
    ("2026-03-02 10:00:00+00:00", GOOD_MS),
    (9.3e15, None),                           # µs of year 2264
    (9_223_372_036_854_775_807, None),
    (1e300, None),
    (-1e300, None),
    (float("nan"), None),
    (float("inf"), None),
    (-5, None),
    (0, None),
    (True, None),
    (False, None),
    ("0001-01-01T00:00:00Z", None),
    ("1969-12-31T23:59:59Z", None),
    ("2200-01-01T00:00:00Z", None),
    ("9999-12-31T23:59:59Z", None),
    ("+10000-01-01T00:00:00Z", None),
    ("9" * 5000, None),
    ("1e300", None),
    ("NaN", None),
    ("", None),
    ({"a": 1}, None),
    ([GOOD_MS], None),
])
def test_every_timestamp_form_is_a_sane_time_or_unknown(value, expected):
    assert parse_ts(value) == expected


# ---------------------------------------------------------------------------
# the normalised record's fields, at the one place they are built


def _part(**msg) -> SessionPart:
    return SessionPart("claude", "s1", project="shop", cwd=CWD,
                       messages=[Message("user", "keep me", GOOD_MS, byte_offset=0),
                                 Message(msg.pop("role", "command"), "$ make test", **msg)])


@pytest.mark.parametrize("field, value", [
    ("ts", 1 << 80), ("ts", -1), ("ts", 9_300_000_000_000_000), ("ts", 1.5), ("ts", "2026-03-02"),
    ("exit_code", 1 << 15), ("exit_code", -(1 << 15) - 1), ("exit_code", 1 << 80), ("exit_code", True),
    ("exit_code", "1"),
    ("is_error", "yes"), ("is_error", 1),
    ("tool", {"name": "Bash"}), ("tool", 7),
    ("byte_offset", -1), ("byte_offset", 1 << 63), ("byte_offset", "12"),
])
def test_an_out_of_range_record_value_becomes_unknown_and_is_noted(field, value):
    faults = Faults()
    part = _part(**{"byte_offset": 120, field: value})
    cols, meta = normalize.to_columns([part], "/t/s1.jsonl", faults=faults)
    assert cols["text"] == ["keep me", "$ make test"]  # the line stays
    column = cols[field][1]
    assert column in (None, 0)
    assert faults.count == 1 and len(faults.first) == 1
    normalize.to_table(cols)  # every column fits its Arrow type


def test_a_huge_tool_name_is_cut_not_dropped():
    faults = Faults()
    cols, _ = normalize.to_columns([_part(tool="T" * (NAME_CAP + 10), byte_offset=7)], "/p", faults=faults)
    assert cols["tool"][1] == "T" * NAME_CAP and faults.first[0][0] == 7


def test_seq_past_int32_is_unknown():
    faults = Faults()
    cols, _ = normalize.to_columns([_part(byte_offset=9)], "/p", seq_start={"claude:s1": (1 << 31) - 1}, faults=faults)
    assert cols["seq"] == [(1 << 31) - 1, None] and faults.count == 1
    normalize.to_table(cols)


@pytest.mark.parametrize("field, value, stored", [
    ("cwd", {"x": 1}, ""), ("cwd", "c" * (NAME_CAP + 1), "c" * NAME_CAP),
    ("branch", ["main"], ""), ("branch", 12, ""),
    ("project", 3.5, ""), ("kind", {"k": 1}, ""), ("parent", ["p"], ""), ("agent", False, ""),
    ("title", {"t": 1}, ""), ("title", "t" * (PROSE_CAP + 5), "t" * PROSE_CAP),
    ("last_prompt", ["x"], ""),
    ("title_rank", 1 << 40, 0), ("title_rank", "2", 0),
])
def test_session_metadata_out_of_range_becomes_unknown(field, value, stored):
    faults = Faults()
    part = _part()
    if field == "project":
        part.cwd = ""  # with a cwd the project comes from it, not from the reader's name
    setattr(part, field, value)
    _, meta = normalize.to_columns([part], "/p", faults=faults)
    assert meta["claude:s1"][field] == stored and faults.count == 1


@pytest.mark.parametrize("sid", [{"id": 1}, 42, "", "s" * (NAME_CAP + 1)])
def test_an_unusable_session_id_gets_a_stable_stand_in(sid):
    faults = Faults()
    part = _part()
    part.session_id = sid
    cols, meta = normalize.to_columns([part], "/p", faults=faults)
    (key,) = meta
    assert key.startswith("claude:invalid-") and faults.count == 1
    part2 = _part()
    part2.session_id = sid
    assert list(normalize.to_columns([part2], "/p")[1]) == [key]  # the same id every run


def test_touched_paths_that_are_not_text_are_dropped():
    faults = Faults()
    part = _part()
    part.touched = ["/a.py", {"p": 1}, 7, "/b.py"]
    _, meta = normalize.to_columns([part], "/p", faults=faults)
    assert meta["claude:s1"]["touched"] == ["/a.py", "/b.py"] and faults.count == 2


# ---------------------------------------------------------------------------
# the real command, Claude Code and Codex, both write paths


def _claude_cases():
    """(name, lines, expected: {ts of the first record, or a check}) per Claude file."""
    cases = {}

    def user(sid, text, ts, uuid, **extra):
        return dict(claude_user(sid, text, ts, uuid), **extra)

    for i, bad in enumerate([9.3e15, 1e300, -5, True, "10000-01-01T00:00:00Z", "1969-12-31T23:59:59Z",
                             "2300-01-01T00:00:00Z", {"a": 1}, [1], "x" * 100_000, 9_223_372_036_854_775_807]):
        cases[f"claude-ts-{i}"] = ("ts", bad)
    cases["claude-cwd"] = ("cwd", "p" * (NAME_CAP + 100))
    cases["claude-branch"] = ("gitBranch", "b" * (NAME_CAP + 100))
    cases["claude-sid"] = ("sessionId", "s" * (NAME_CAP + 100))
    cases["claude-exit"] = ("exit", 10 ** 12)
    cases["claude-title"] = ("title", "t" * (PROSE_CAP + 100))
    cases["claude-text"] = ("text", "huge " * 600_000)
    out = {}
    for n, (name, (field, bad)) in enumerate(cases.items()):
        sid = f"7f1c0000-0000-4000-8000-{n:012d}"
        good = f"goodword{n} survives"
        first = user(sid, f"badline{n} carries the value", GOOD_TS, f"u{n}a")
        lines = [first]
        if field == "ts":
            first["timestamp"] = bad
        elif field == "cwd":
            first["cwd"] = bad
        elif field == "gitBranch":
            first["gitBranch"] = bad
        elif field == "sessionId":
            first["sessionId"] = bad
        elif field == "title":
            lines.append({"type": "custom-title", "customTitle": bad, "sessionId": sid})
        elif field == "text":
            first["message"]["content"] = f"badline{n} " + bad
        elif field == "exit":
            first = claude_assistant(sid, [{"type": "tool_use", "id": f"toolu_{n}", "name": "Bash",
                                            "input": {"command": "make test"}}], GOOD_TS, f"a{n}")
            first["message"]["content"][0]["input"]["command"] = f"make test badline{n}"
            result = user(sid, [{"type": "tool_result", "tool_use_id": f"toolu_{n}",
                                 "content": f"Exit code {bad}\nfailed", "is_error": True}],
                          GOOD_TS, f"u{n}r")
            lines = [first, result]
        lines.append(user(sid if field != "sessionId" else bad, good, LATER_TS, f"u{n}b"))
        out[name] = (field, bad, lines, f"goodword{n}", f"badline{n}")
    return out


def _codex_cases():
    cases = {}
    for i, bad in enumerate([9.3e15, 1e300, -5, False, "0001-01-01T00:00:00Z", "2300-01-01T00:00:00Z",
                             {"a": 1}, "x" * 100_000]):
        cases[f"codex-ts-{i}"] = ("ts", bad)
    cases["codex-cwd"] = ("cwd", "c" * (NAME_CAP + 100))
    cases["codex-sid"] = ("id", "i" * (NAME_CAP + 100))
    cases["codex-exit"] = ("exit", 1 << 40)
    cases["codex-exit-neg"] = ("exit", -(1 << 20))
    out = {}
    for n, (name, (field, bad)) in enumerate(cases.items()):
        sid = f"019cbee1-22d4-7f6b-89d7-{n:012d}"
        meta = {"timestamp": GOOD_TS, "type": "session_meta",
                "payload": {"id": sid, "timestamp": GOOD_TS, "cwd": CWD, "originator": "codex_cli_rs",
                            "cli_version": "0.118.0", "git": {"branch": "main"}}}
        bad_line = {"timestamp": GOOD_TS, "type": "response_item",
                    "payload": {"type": "message", "role": "user",
                                "content": [{"type": "input_text", "text": f"cxbadline{n} carries the value"}]}}
        good = {"timestamp": LATER_TS, "type": "response_item",
                "payload": {"type": "message", "role": "user",
                            "content": [{"type": "input_text", "text": f"cxgoodword{n} survives"}]}}
        lines = [meta, bad_line, good]
        if field == "ts":
            bad_line["timestamp"] = bad
            meta["timestamp"] = meta["payload"]["timestamp"] = bad  # no earlier good time to carry
        elif field == "cwd":
            meta["payload"]["cwd"] = bad
        elif field == "id":
            meta["payload"]["id"] = bad
        elif field == "exit":
            call = {"timestamp": GOOD_TS, "type": "response_item",
                    "payload": {"type": "function_call", "name": "shell", "call_id": f"c{n}",
                                "arguments": json.dumps({"command": ["bash", "-lc", f"make test cxbadline{n}"]})}}
            output = {"timestamp": GOOD_TS, "type": "response_item",
                      "payload": {"type": "function_call_output", "call_id": f"c{n}",
                                  "output": json.dumps({"output": "failed", "metadata": {"exit_code": bad}})}}
            lines = [meta, call, output, good]
        out[name] = (field, bad, lines, f"cxgoodword{n}", f"cxbadline{n}")
    return out


CLAUDE = _claude_cases()
CODEX = _codex_cases()
HISTORY_BAD = 1e300


def _records(home) -> list[dict]:
    con = duckdb.connect(str(home.index / "catalog.duckdb"), read_only=True)
    files = [str(home.index / r[0]) for r in con.execute("SELECT file FROM generation WHERE dataset='records'").fetchall()]
    con.close()
    q = duckdb.connect()
    rows = q.execute("SELECT session_id, text, epoch_ms(ts), exit_code, source_path FROM read_parquet(?)", [files]).fetchall()
    q.close()
    return [dict(zip(("session_id", "text", "ts", "exit_code", "path"), r)) for r in rows]


def _sessions(home) -> list[dict]:
    con = duckdb.connect()
    rows = con.execute(f"SELECT session_id, cwd, branch, title, epoch_ms(started) FROM read_parquet('{home.index}/sessions/*.parquet')").fetchall()
    con.close()
    return [dict(zip(("session_id", "cwd", "branch", "title", "started"), r)) for r in rows]


@pytest.fixture(scope="module", params=["small", "big"])
def store(request, tmp_path_factory):
    """Every case in one store (one file each), indexed once per write path."""
    home = Home(tmp_path_factory.mktemp(request.param))
    paths = {}
    for name, (_, _, lines, _, _) in CLAUDE.items():
        p = home.claude_file(name)
        write_jsonl(p, lines)
        paths[name] = p
    for n, (name, (_, _, lines, _, _)) in enumerate(CODEX.items()):
        p = home.codex_file(name, stamp=f"2026-03-02T09-00-{n:02d}")
        write_jsonl(p, lines)
        paths[name] = p
    history = home.home / ".codex" / "history.jsonl"
    write_jsonl(history, [{"session_id": "h-1", "ts": HISTORY_BAD, "text": "historybad line"},
                          {"session_id": "h-1", "ts": 1772445600, "text": "historygood line"}])
    paths["history"] = history
    env = {"DEJA_SMALL_RUN_BYTES": "0"} if request.param == "big" else {}
    proc = home.run("index", "--json", extra_env=env)
    summary = json.loads(proc.stdout)
    doctor = json.loads(home.run("doctor", "--json").stdout)
    return home, paths, summary, doctor, _records(home), _sessions(home)


def test_the_run_with_extreme_values_completes(store):
    home, paths, summary, _, records, _ = store
    assert not summary["errors"]
    by = {h["harness"]: h for h in summary["harnesses"]}
    assert by["claude"]["read"] == len(CLAUDE) and by["codex"]["read"] == len(CODEX) + 1
    assert by["claude"]["malformed"] >= len(CLAUDE) - 1 and by["codex"]["malformed"] >= len(CODEX)
    # a second run over the same files is up to date: nothing is retried forever
    again = json.loads(home.run("index", "--json").stdout)
    assert again["up_to_date"]


@pytest.mark.parametrize("name", list(CLAUDE) + list(CODEX))
def test_an_extreme_value_costs_only_that_value(store, name):
    home, paths, _, doctor, records, sessions = store
    field, bad, _, good, badword = (CLAUDE | CODEX)[name]
    path = str(paths[name])
    mine = [r for r in records if r["path"] == path]
    assert any(good in r["text"] for r in mine), "the good line is indexed"
    carrier = [r for r in mine if badword in r["text"] and (field != "exit" or r["text"].startswith("$ "))]
    assert carrier, "the line with the bad value is kept"
    if field == "ts":
        assert all(r["ts"] is None for r in carrier)
    elif field == "exit":
        assert all(r["exit_code"] is None for r in carrier)
    elif field == "text":
        assert all(len(r["text"].encode()) <= STORE_TEXT_CAP for r in carrier)
    for r in mine:
        assert r["ts"] is None or 0 < r["ts"] < 7_258_118_400_000
    sess = [s for s in sessions if s["session_id"] == mine[0]["session_id"]]
    assert len(sess) == 1
    if field in ("cwd", "gitBranch"):
        assert len(sess[0]["cwd" if field == "cwd" else "branch"]) == NAME_CAP
    if field in ("sessionId", "id"):
        assert len(sess[0]["session_id"]) <= NAME_CAP
    if field == "title":
        assert len(sess[0]["title"]) <= PROSE_CAP
    if field == "text":
        return  # clipped at the parse cap and the storage cut: a cut, not a malformed value
    # doctor names the file and the line
    harness = "claude" if name.startswith("claude") else "codex"
    named = {f["path"]: f for f in doctor["ingest_health"][harness]["malformed"]}
    assert path in named and named[path]["count"] >= 1
    assert all(w.startswith("line ") for w in named[path]["first"])


def test_the_good_lines_are_searchable(store):
    home = store[0]
    for name in ("claude-ts-1", "claude-exit", "codex-ts-1", "codex-exit"):
        good = (CLAUDE | CODEX)[name][3]
        assert home.search(good)["total"] >= 1, good
    assert home.search("historygood")["total"] >= 1


def test_doctor_names_file_and_line_of_a_bad_timestamp(store):
    home, paths, _, _, _, _ = store
    text = home.run("doctor").stdout
    assert f"{paths['claude-ts-1']}:1: timestamp 1e+300 is not a time in 1970-2200" in text
    assert f"{paths['codex-ts-1']}:2: timestamp 1e+300 is not a time in 1970-2200" in text
    assert f"{paths['history']}:1: ts 1e+300 is not a time in 1970-2200" in text


def test_nan_in_a_line_costs_that_line_only(home):
    """JSON has no NaN: a writer that emits one writes a line no parser reads."""
    p = home.claude_file("7f1c0000-0000-4000-8000-00000000aaaa")
    p.write_text(json.dumps(claude_user("s", "nanline", GOOD_TS, "u1") | {"timestamp": math.nan}) + "\n"
                 + json.dumps(claude_user("s", "nanneighbour kept", LATER_TS, "u2")) + "\n")
    home.run("index")
    assert home.search("nanneighbour")["total"] == 1
    assert f"{p}:1: line is not JSON" in home.run("doctor").stdout
