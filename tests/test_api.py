"""The front door: `deja.index()`, `deja.search()` … called in-process on a temp
HOME return the same plain data `deja … --json` prints, raise one-line errors
instead of printing or exiting, and `import deja` alone loads none of it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import deja
from conftest import claude_assistant, claude_user, write_jsonl


@pytest.fixture
def indexed(home):
    home.env["XDG_CONFIG_HOME"] = str(home.root / "config")
    home.env["XDG_DATA_HOME"] = str(home.root / "data")
    for sid, ask, answer, cwd in [
        ("sess-pool-1", "why does checkout fail with pool exhausted?", "Raised pool_size in app/db.py to 20.",
         "/home/dev/src/shop"),
        ("sess-keys-1", "how do we rotate the webhook secret?", "We switched to a rotating keyring.",
         "/home/dev/work/api"),
    ]:
        write_jsonl(home.claude_file(sid, cwd), [
            claude_user(sid, ask, "2026-03-02T10:00:00Z", f"{sid}-u1", cwd),
            claude_assistant(sid, [{"type": "text", "text": answer}], "2026-03-02T10:01:00Z", f"{sid}-a1",
                             msg_id=f"{sid}-m1", cwd=cwd, parent=f"{sid}-u1"),
        ])
    first = deja.index(env=home.env)
    assert not first["up_to_date"] and first["sessions"] == 2
    return home


def _cli_json(home, *args):
    return json.loads(home.run(*args).stdout)


def test_index_returns_what_index_json_prints(indexed):
    again = deja.index(env=indexed.env)
    printed = _cli_json(indexed, "index", "--json")
    assert again == printed and again["up_to_date"]


def test_search_last_show_and_stats_return_what_their_json_prints(indexed):
    env = indexed.env
    assert deja.search("pool exhausted", env=env) == _cli_json(indexed, "search", "--json", "pool", "exhausted")
    assert deja.search(["webhook"], limit=1, env=env) == _cli_json(indexed, "search", "--json", "--limit", "1", "webhook")
    assert deja.last(5, env=env) == _cli_json(indexed, "last", "--json", "5")
    assert deja.show("sess-pool-1", harness="claude", env=env) == _cli_json(
        indexed, "show", "--json", "--harness", "claude", "sess-pool-1")
    assert deja.blame("app/db.py", env=env).rows == _cli_json(indexed, "blame", "--json", "app/db.py")
    stats = deja.stats(env=env)
    assert stats == _cli_json(indexed, "stats", "--json")
    assert not any(k.startswith("_") for k in stats)


def test_ctx_answers_markdown_and_says_when_nothing_fits(indexed):
    md = deja.ctx("webhook secret", env=indexed.env)
    assert md == indexed.run("ctx", "webhook", "secret").stdout
    with pytest.raises(deja.NotFound):
        deja.ctx("zzzqqq nothing like this", env=indexed.env)


def test_a_users_mistake_is_a_one_line_fail_and_nothing_is_printed(indexed, capsys):
    with pytest.raises(deja.Fail) as exc:
        deja.search("pool", harness="nope", env=indexed.env)
    # every registered reader is named (issue 15 adds harnesses to the registry)
    from deja.stages.sources import READERS

    assert str(exc.value) == f"unknown harness 'nope' (known: {', '.join(READERS)})"
    with pytest.raises(deja.Fail, match="--limit takes a number from 1 to 100"):
        deja.search("pool", limit=0, env=indexed.env)
    with pytest.raises(deja.Fail, match="no session matches id"):
        deja.show("nosuchid", harness="claude", env=indexed.env)
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""


def test_notices_go_to_the_callback_not_to_stderr(indexed, capsys):
    said: list[str] = []
    deja.remember("pgbouncer pool size must be 40", project="src/shop", tags=["a"] * 1 + [f"t{i}" for i in range(9)],
                  env=indexed.env, notice=said.append)
    assert said[0] == "deja: only the first 8 tags are kept"
    assert capsys.readouterr().err == ""
    assert [h["session"]["harness"] for h in deja.search("pgbouncer", env=indexed.env)["hits"]] == ["deja"]


def test_import_deja_loads_no_front_door_until_a_name_is_used():
    code = ("import sys, deja; assert 'deja.pipeline.api' not in sys.modules; "
            "deja.search; assert 'deja.pipeline.api' in sys.modules; assert 'typer' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_search_loads_no_reader_nor_what_only_readers_need(indexed):
    """A search's cost is largely its imports (150 ms in process): the plan
    it checks freshness with must not pull in the transcript readers' modules
    (jsonl, orjson, dataclasses with inspect: 14 ms when it did)."""
    code = ("import sys, deja; deja.search('pool'); "
            "print([m for m in ('deja.stages.sources.jsonl', 'orjson', 'dataclasses', 'pyarrow', 'polars') "
            "if m in sys.modules])")
    proc = subprocess.run([sys.executable, "-c", code], env=dict(indexed.env, DEJA_SERVE="off"), capture_output=True,
                          text=True, check=True)
    assert proc.stdout.strip() == "[]"
