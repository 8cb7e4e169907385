"""The history map (stages/store/history_map.py): what the store has history
for, read without DuckDB, so the tool hook's usual answer — nothing, for a
command or a file never seen — costs a small read. It must never say "no
history" where the store has some: it follows every index run, and is not
trusted once anything else wrote the catalog."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import Home, claude_assistant, claude_user, deja_cmd, write_jsonl

CWD = "/home/dev/src/shop"


def _session(home: Home, n: int, command: str, edit: str, day: int = 2) -> None:
    sid = f"4a5b{n:04d}-0000-4000-8000-000000000000"
    ts = f"2026-03-{day:02d}T10:00:00Z"
    write_jsonl(home.claude_file(sid, CWD), [
        claude_user(sid, f"task number {n}", ts, f"u{n}"),
        claude_assistant(sid, [{"type": "tool_use", "id": f"t{n}", "name": "Bash", "input": {"command": command}},
                               {"type": "tool_use", "id": f"e{n}", "name": "Edit",
                                "input": {"file_path": edit, "old_string": "a", "new_string": "b"}}],
                         ts, f"a{n}", msg_id=f"m{n}"),
        claude_user(sid, [{"type": "tool_result", "tool_use_id": f"t{n}", "content": "done"}], ts, f"r{n}"),
    ])


def _may_say(home: Home, kind: str, what: str) -> bool:
    """tool.may_say in a process where DuckDB cannot even be imported."""
    code = ("import sys, json\nsys.modules['_duckdb'] = None\nsys.modules['duckdb'] = None\n"
            "from deja.hooks import tool\n"
            f"print(json.dumps(tool.may_say({kind!r}, {what!r}, {CWD!r}, __import__('os').environ)))\n")
    proc = subprocess.run([sys.executable, "-c", code], env=dict(home.env), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _hook(home: Home, tool: str, tool_input: dict) -> str:
    payload = {"session_id": "live", "cwd": CWD, "hook_event_name": "PreToolUse", "tool_name": tool,
               "tool_input": tool_input}
    proc = subprocess.run(deja_cmd() + ["hook-tool"], input=json.dumps(payload), env=dict(home.env),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    return proc.stdout


def _lint_indexed(tmp_path) -> Home:
    """A store of one session that ran `make lint` and edited app/a.py."""
    home = Home(tmp_path)
    _session(home, 1, "make lint", f"{CWD}/app/a.py")
    home.run("index")
    return home


def test_a_command_or_file_never_seen_is_known_silent_without_duckdb(tmp_path):
    home = Home(tmp_path)
    for n in range(5):
        _session(home, n, "make   Deploy-Staging", f"{CWD}/app/billing.py")
    home.run("index")
    assert _may_say(home, "command", "make deploy-staging") is True  # as the hook normalises it
    assert _may_say(home, "command", "make deploy-prod") is False
    assert _may_say(home, "file", "app/billing.py") is True
    assert _may_say(home, "file", f"{CWD}/lib/other/billing.py") is True  # the same name: it may be the one
    assert _may_say(home, "file", "app/never.py") is False
    # a program this machine lacks may still be named (missing_program): not silent
    assert _may_say(home, "command", "frobnicator-9000 --all") is True
    # and the hook answers what it answered before, silent or not
    assert "5 sessions" in _hook(home, "Bash", {"command": "make deploy-staging"})
    assert _hook(home, "Bash", {"command": "make deploy-prod"}) == ""


def test_the_map_follows_every_index_run(tmp_path):
    home = _lint_indexed(tmp_path)
    assert _may_say(home, "command", "cargo build --release") is False
    for n in (2, 3):  # new sessions, and an appended command in an old one
        _session(home, n, "cargo build --release", f"{CWD}/app/b.py")
    home.run("index")
    assert _may_say(home, "command", "cargo build --release") is True
    assert _may_say(home, "command", "make lint") is True
    assert _may_say(home, "file", "app/b.py") is True
    assert "2 sessions" not in _hook(home, "Bash", {"command": "make lint"})


def test_a_catalog_written_by_anything_else_is_not_vouched_for(tmp_path):
    """A promote writes the catalog (the CLI then runs the index; the front
    door may leave it for later): the map no longer describes the catalog, so
    every hook takes the full path until the next run, which reads the whole
    store again."""
    home = _lint_indexed(tmp_path)
    assert _may_say(home, "command", "make other") is False
    subprocess.run([sys.executable, "-c", "import deja; deja.promote('4a5b0001', state='accepted', reindex_now=False)"],
                   env=dict(home.env), check=True, timeout=60)
    assert _may_say(home, "command", "make other") is True  # unknown, so maybe
    home.run("index")
    assert _may_say(home, "command", "make other") is False
    assert _may_say(home, "command", "make lint") is True


def test_a_store_from_before_the_map_gets_a_whole_one(tmp_path):
    home = _lint_indexed(tmp_path)
    map_file = tmp_path / "index.db.history"
    assert map_file.exists()
    map_file.unlink()  # what a store indexed by an older deja has
    assert _may_say(home, "command", "make other") is True
    _session(home, 2, "make docs", f"{CWD}/app/d.py")
    home.run("index")
    assert _may_say(home, "command", "make lint") is True and _may_say(home, "command", "make docs") is True
    assert _may_say(home, "command", "make other") is False


def test_a_torn_map_is_unknown(tmp_path):
    home = _lint_indexed(tmp_path)
    map_file = tmp_path / "index.db.history"
    map_file.write_bytes(map_file.read_bytes()[:-3])
    assert _may_say(home, "command", "make other") is True
    map_file.write_bytes(b"\x00garbage")
    assert _may_say(home, "command", "make other") is True
    home.run("index", "--rebuild")
    assert _may_say(home, "command", "make other") is False and _may_say(home, "command", "make lint") is True
