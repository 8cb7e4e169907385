"""The executable's dispatch: the fast search path and the typer app agree."""

from __future__ import annotations

from deja.pipeline import cli, entry


def test_entry_knows_every_command():
    names = {c.name or c.callback.__name__ for c in cli.app.registered_commands}
    assert entry.COMMANDS == names


def test_help_and_unknown_options_are_one_line(home):
    proc = home.run("--help")
    assert proc.returncode == 0 and "search" in proc.stdout
    proc = home.run("search", "--nope", "x", check=False)
    assert proc.returncode == 1 and proc.stderr.strip() == "deja: no such option: --nope"
    proc = home.run("index", "--nope", check=False)
    assert proc.returncode == 1 and proc.stderr.startswith("deja: ")


def test_a_reader_closing_the_pipe_ends_the_search_quietly(tmp_path):
    """`deja search … | head -c 1` with more output than a pipe holds: no
    error line, no traceback."""
    import subprocess

    from conftest import Home, claude_assistant, claude_user, deja_cmd, write_jsonl

    home = Home(tmp_path)
    for n in range(150):
        sid = f"7f1c0000-0000-4000-8000-{n:012d}"
        write_jsonl(home.claude_file(sid, cwd=f"/home/dev/src/p{n}"), [
            claude_user(sid, f"the flaky cache in service {n} drops keys under load", "2026-03-02T10:00:00Z", "u1",
                        cwd=f"/home/dev/src/p{n}"),
            claude_assistant(sid, [{"type": "text", "text": "The flaky cache evicted keys early: " + "x" * 400}],
                             "2026-03-02T10:00:30Z", "a1", parent="u1", cwd=f"/home/dev/src/p{n}"),
        ])
    home.run("index")
    for env in (home.env, dict(home.env, DEJA_SERVE="off")):  # served, and in this process
        proc = subprocess.run(["bash", "-c", " ".join(deja_cmd()) + ' search --json --all flaky cache | head -c 1;'
                               ' echo " ${PIPESTATUS[0]}"'], env=env, capture_output=True, text=True, timeout=60)
        assert proc.stdout == "{ 0\n", (proc.stdout, proc.stderr)
        assert "BrokenPipe" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_a_reader_gone_before_the_answer_ends_any_command_quietly(home):
    """The reader closed the pipe before a short answer (kept in stdout's buffer
    until exit) was written: exit 0 and nothing on stderr, where the
    interpreter's own flush used to print "Exception ignored … BrokenPipeError"
    and exit 120."""
    import os
    import subprocess

    from conftest import claude_user, deja_cmd, write_jsonl

    sid = "7f1c0000-0000-4000-8000-000000000001"
    write_jsonl(home.claude_file(sid), [claude_user(sid, "the pool ran dry", "2026-03-02T10:00:00Z", "u1")])
    home.run("index")
    for args in (["search", "--json", "pool"], ["last", "--json"], ["pool"]):
        for env in (home.env, dict(home.env, DEJA_SERVE="off")):
            read, write = os.pipe()
            os.close(read)
            try:
                proc = subprocess.run(deja_cmd() + args, env=env, stdout=write, stderr=subprocess.PIPE, text=True,
                                      timeout=60)
            finally:
                os.close(write)
            assert proc.returncode == 0, (args, proc.returncode, proc.stderr)
            assert "Exception" not in proc.stderr and "BrokenPipe" not in proc.stderr, (args, proc.stderr)


def _c_list(name: str) -> set[str]:
    """A NULL-ended list of strings in hooks/client.c, the compiled client."""
    import re
    from pathlib import Path

    source = (Path(entry.__file__).resolve().parents[1] / "hooks" / "client.c").read_text()
    body = re.search(rf"static const char \*{name}\[\] = \{{(.*?)NULL\}};", source, re.S).group(1)
    return set(re.findall(r'"([^"]+)"', body))


def test_the_compiled_deja_knows_what_the_server_answers():
    """`deja` compiled from hooks/client.c decides, before any Python runs,
    what goes to the server: the same commands, hooks and bare words as entry.main."""
    from deja.pipeline import serve_client

    assert _c_list("COMMANDS") == entry.COMMANDS
    assert _c_list("HOOKS") == entry.HOOKS
    assert _c_list("SERVED") | entry.HOOKS == serve_client.SERVED


def test_a_hook_this_deja_does_not_have_says_nothing_and_exits_0(home):
    """Wired by another version or tool, an agent runs it on every turn: read as
    bare words it printed a search into the agent's context."""
    import subprocess

    from conftest import deja_cmd

    home.run("remember", "hook-plan check: the plan hook")
    home.run("index")
    assert home.search("hook-plan")["hits"]  # the words are there to be found
    for env in (home.env, dict(home.env, DEJA_SERVE="off")):
        for _ in range(2):  # (the first may start the warm server, the second asks it)
            proc = subprocess.run(deja_cmd() + ["hook-plan"], input="{}", env=env, capture_output=True, text=True,
                                  timeout=60)
            assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")


def test_harness_notes_means_deja_and_an_empty_harness_is_one_line(home):
    home.run("remember", "the staging VPN needs split tunnelling off")
    home.run("index")
    assert [h["session"]["harness"] for h in home.search("--harness", "notes", "tunnelling")["hits"]] == ["deja"]
    for args in (["search", "--harness", "", "vpn"], ["last", "--harness", ""], ["stats", "--harness", ""]):
        proc = home.run(*args, check=False)
        assert proc.returncode != 0 and proc.stderr.strip().startswith("deja: --harness needs"), (args, proc.stderr)


def test_a_share_reads_100_percent_only_when_it_is_whole():
    from deja.stages.display import share

    assert [share(x) for x in (1.0, 201 / 202, 0.9999, 0.5, 0.004, 0.0)] == [
        "100%", "99.5%", "99.9%", "50%", "0.4%", "0%"]
