"""The executable's dispatch: the fast search path and the typer app agree."""

from __future__ import annotations

from deja import cli, entry


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
