"""`deja resume` (a session reopened in its own agent and folder) and `deja
handoff` (its working state handed to another agent), run as the real command
against a temp HOME with real-shaped Claude Code, Codex and aider stores."""

from __future__ import annotations

import json
import os
import shlex
import stat

import pytest

from conftest import Home
from handover_home import CODEX, S_NEW, S_OLD, build, run_in


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    home = Home(tmp_path_factory.mktemp("handover"))
    project = build(home)
    return home, project


# --------------------------------------------------------------------------- resume


def test_resume_prints_the_native_command_in_the_sessions_folder(store):
    home, project = store
    elsewhere = home.root
    out = run_in(home, elsewhere, "resume", S_OLD[:13], "--print").stdout
    assert out == f"cd {shlex.quote(str(project))} && claude --resume {S_OLD}\n"


def test_resume_takes_an_id_like_show_does(store):
    home, project = store
    assert run_in(home, home.root, "resume", f"claude:{S_NEW}", "--print").stdout.endswith(f"claude --resume {S_NEW}\n")
    # a prefix shared by two sessions picks the most recent and says so
    proc = run_in(home, home.root, "resume", "5e1f0a2b", "--print")
    assert proc.stdout.endswith(f"claude --resume {S_NEW}\n") and S_NEW in proc.stderr
    assert run_in(home, home.root, "resume", f"'{CODEX[:13]}'", "--print").stdout == \
        f"cd {shlex.quote(str(project))} && codex resume {CODEX}\n"


def test_resume_json_names_the_folder_and_argv(store):
    home, project = store
    got = json.loads(run_in(home, home.root, "resume", CODEX, "--json").stdout)
    assert got["harness"] == "codex" and got["id"] == CODEX and got["cwd"] == str(project)
    assert got["argv"] == ["codex", "resume", CODEX]


def test_resume_execs_the_agent_in_the_sessions_folder(store, tmp_path):
    home, project = store
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    record = tmp_path / "claude.argv"
    fake = bin_dir / "claude"
    fake.write_text(f'#!/bin/sh\npwd > "{record}"\nfor a in "$@"; do echo "$a" >> "{record}"; done\n')
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    proc = run_in(home, tmp_path, "resume", S_OLD[:13], "--exec",
                  env={"PATH": f"{bin_dir}{os.pathsep}{home.env['PATH']}"})
    assert record.read_text().splitlines() == [str(project), "--resume", S_OLD]
    assert f"claude --resume {S_OLD}" in proc.stderr and proc.stdout == ""


def test_resume_without_the_agent_installed_is_one_line(store, tmp_path):
    home, _ = store
    proc = run_in(home, tmp_path, "resume", S_OLD[:13], "--exec", env={"PATH": str(tmp_path)}, check=False)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.startswith("deja: claude is not on PATH") and proc.stderr.count("\n") == 1


def test_a_harness_that_cannot_resume_says_why_in_one_line(store):
    home, _ = store
    aider_id = json.loads(run_in(home, home.root, "last", "--harness", "aider", "--json").stdout)["sessions"][0]["id"]
    proc = run_in(home, home.root, "resume", aider_id, "--print", check=False)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr == f"deja: cannot resume aider session {aider_id}: aider keeps no session it could reopen\n"


def test_a_session_whose_folder_is_gone_is_not_resumed(tmp_path):
    home = Home(tmp_path)
    project = build(home)
    os.rename(project, project.with_name("shop-moved"))
    proc = run_in(home, tmp_path, "resume", S_OLD, "--print", check=False)
    assert proc.returncode == 1
    assert proc.stderr == f"deja: claude session {S_OLD} ran in {project}, which is not a folder on this machine\n"


def test_an_unknown_id_is_one_line(store):
    home, _ = store
    proc = run_in(home, home.root, "resume", "ffffffff", "--print", check=False)
    assert proc.returncode == 1 and proc.stderr == "deja: no session matches id 'ffffffff'\n"


# --------------------------------------------------------------------------- handoff


def test_handoff_writes_the_working_state_and_prints_the_command_that_starts_the_agent(store):
    home, project = store
    proc = run_in(home, project, "handoff", "--to", "codex")
    path = home.root / "index.db.handoff" / f"claude-{S_NEW}-to-codex.md"
    assert proc.stdout == f'codex "$(cat {shlex.quote(str(path))})"\n'
    text = path.read_text()
    # the live session of this folder: the most recently active, its last ask and files
    assert "from a claude session" in text and S_NEW in text
    assert "drop the hard-coded stripe key from cart.py" in text and "src/cart.py" in text
    assert "sk_live_51HxQmR2eZvKYlo2C8f3d9a7b6c5e4d3" not in text and "[redacted:" in text
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_each_handoff_is_counted_by_stats_from_the_usage_log(store):
    home, project = store  # (shared by this file's tests: counted from here on)
    before = json.loads(home.run("stats", "--json").stdout)["handoffs_received"]
    run_in(home, project, "handoff", "--to", "codex")
    run_in(home, project, "handoff", "--to", "gemini", "--print")
    assert json.loads(home.run("stats", "--json").stdout)["handoffs_received"] == before + 2
    events = [json.loads(line) for line in (home.root / "index.db.usage").read_text().splitlines()]
    handoffs = [e for e in events if e["kind"] == "handoff"][-2:]
    assert [(e["to"], e["sessions"]) for e in handoffs] == [("codex", f"claude:{S_NEW}"), ("gemini", f"claude:{S_NEW}")]
    assert all("stripe" not in json.dumps(e) for e in events)  # ids and counts only


def test_handoff_to_gemini_and_qwen_uses_their_interactive_prompt_flag(store):
    home, project = store
    assert run_in(home, project, "handoff", "--to", "gemini").stdout.startswith('gemini -i "$(cat ')
    assert run_in(home, project, "handoff", "--to", "qwen").stdout.startswith('qwen -i "$(cat ')
    assert run_in(home, project, "handoff", "--to", "claude").stdout.startswith('claude "$(cat ')


def test_handoff_of_a_named_session_from_another_folder(store):
    home, project = store
    proc = run_in(home, home.root, "handoff", "--to", "claude", "--cwd", str(project), CODEX[:13])
    path = home.root / "index.db.handoff" / f"codex-{CODEX}-to-claude.md"
    assert proc.stdout == f'cd {shlex.quote(str(project))} && claude "$(cat {shlex.quote(str(path))})"\n'
    assert "from a codex session" in path.read_text()


def test_handoff_of_an_explicit_id_works_from_any_folder_as_resume_does(store):
    home, project = store
    for ident in (CODEX[:13], f"codex:{CODEX}"):
        proc = run_in(home, home.root, "handoff", "--to", "claude", ident)
        path = home.root / "index.db.handoff" / f"codex-{CODEX}-to-claude.md"
        assert proc.stdout == f'cd {shlex.quote(str(project))} && claude "$(cat {shlex.quote(str(path))})"\n'
        assert "from a codex session" in path.read_text()


def test_handoff_print_writes_the_prompt_to_stdout_and_no_file(tmp_path):
    home = Home(tmp_path)
    project = build(home)
    proc = run_in(home, project, "handoff", "--to", "gemini", "--print", f"claude:{S_OLD}")
    assert proc.stdout.startswith(f"This work was handed to you from a claude session ({S_OLD})")
    assert "make cart totals round to cents" in proc.stdout and "<deja-recall>" in proc.stdout
    assert not (home.root / "index.db.handoff").exists()


def test_handoff_to_an_agent_it_cannot_start_is_one_line(store):
    home, project = store
    proc = run_in(home, project, "handoff", "--to", "notepad", check=False)
    assert proc.returncode == 1
    assert proc.stderr == "deja: handoff --to takes claude, codex, gemini, qwen, cursor (got 'notepad')\n"


def test_handoff_in_a_folder_with_no_session_is_one_line(store, tmp_path):
    home, _ = store
    proc = run_in(home, tmp_path, "handoff", "--to", "codex", check=False)
    assert proc.returncode == 1 and proc.stderr.startswith(f"deja: no session with a conversation is recorded for {tmp_path}")
