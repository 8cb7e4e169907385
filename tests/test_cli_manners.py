"""The CLI as people expect it (issue 13): --version, shell completion, "did
you mean" for a mistyped command while real searches still search, usage on
bare `deja`, NO_COLOR and --color, matches marked on a terminal, `show`
paging only on a terminal, options' help, "1 session". Every test runs the
real `deja` against a temp HOME."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import Home, claude_assistant, claude_user, deja_cmd, write_jsonl

POOL = "5e550000-0000-4000-8000-000000000001"
LONG = "5e550000-0000-4000-8000-000000000002"


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Home:
    """One session about a pool, one long session (more lines than a screen)."""
    h = Home(tmp_path_factory.mktemp("manners"))
    write_jsonl(h.claude_file(POOL), [
        claude_user(POOL, "the API says connection pool exhausted under load; what is the status?",
                    "2026-03-02T10:00:00Z", "u1"),
        claude_assistant(POOL, [{"type": "text", "text": "Root cause: the pool_size was 5; raised it to 20."}],
                         "2026-03-02T10:00:30Z", "a1", parent="u1"),
    ])
    rows, parent = [], None
    for n in range(40):
        uid = f"u{n}"
        rows.append(claude_user(LONG, f"step {n} of the migration checklist", f"2026-03-03T10:{n:02d}:00Z", uid,
                                parent=parent))
        rows.append(claude_assistant(LONG, [{"type": "text", "text": f"done with step {n} of the migration"}],
                                     f"2026-03-03T10:{n:02d}:30Z", f"a{n}", msg_id=f"msg_{n}", parent=uid))
        parent = f"a{n}"
    write_jsonl(h.claude_file(LONG, cwd="/home/dev/src/infra"), rows)
    h.run("index")
    return h


def on_terminal(home: Home, *args: str, extra_env: dict | None = None, rows: int = 24) -> tuple[int, str, str]:
    """Run deja with stdout on a pseudo-terminal of ``rows`` lines, as a person would."""
    import fcntl
    import pty
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, 100, 0, 0))
    env = dict(home.env, TERM="xterm", **(extra_env or {}))
    proc = subprocess.Popen(deja_cmd() + list(args), env=env, stdin=subprocess.DEVNULL, stdout=slave,
                            stderr=subprocess.PIPE)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    err = proc.stderr.read().decode()
    proc.wait(timeout=60)
    return proc.returncode, out.decode("utf-8", "replace").replace("\r\n", "\n"), err


def test_version_prints_the_package_version(home):
    import deja

    for flag in ("--version", "-V", "version"):
        proc = home.run(flag)
        assert proc.stdout == f"deja {deja.__version__}\n" and proc.stderr == ""


def test_completion_script_is_generated_and_completes_the_commands(home):
    for shell in ("bash", "zsh", "fish"):
        script = home.run("completion", shell).stdout
        assert script.strip() and "_DEJA_COMPLETE" in script and "deja" in script
    # what the bash script asks deja for when you press TAB after `deja st`
    proc = home.run(extra_env={"_DEJA_COMPLETE": "complete_bash", "COMP_WORDS": "deja st", "COMP_CWORD": "1"})
    assert "stats" in proc.stdout.split()
    proc = home.run(extra_env={"_DEJA_COMPLETE": "complete_bash", "COMP_WORDS": "deja ", "COMP_CWORD": "1"})
    assert {"search", "show", "stats", "index", "doctor", "blame"} <= set(proc.stdout.split())
    proc = home.run("completion", "tcsh", check=False)
    assert proc.returncode == 1 and proc.stderr.startswith("deja: ")


@pytest.mark.parametrize("typo,meant", [("stat", "stats"), ("indx", "index"), ("serach", "search"),
                                        ("doctr", "doctor")])
def test_a_mistyped_command_gets_did_you_mean_and_runs_nothing(home, typo, meant):
    proc = home.run(typo, check=False)
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("deja: ") and f"did you mean `{meant}`?" in lines[0]
    assert f"deja search {typo}" in lines[0]  # how to search for the word after all


def test_real_searches_still_search(home):
    proc = home.run("connection", "pool", "exhausted")
    assert POOL[:12] in proc.stdout
    # a real word one slip from a command, a phrase holding a near-command, two words: all searches
    assert POOL[:12] in home.run("status").stdout
    for argv in (["stat pool"], ["search", "stat"]):  # `deja "stat pool"`; the word itself, asked for
        proc = home.run(*argv)
        assert proc.returncode == 0 and "did you mean" not in proc.stderr
    proc = home.run("shop", check=False)  # one letter from `show`: a word, not a typo
    assert proc.returncode == 0 and "did you mean" not in proc.stderr


def test_bare_deja_prints_usage_with_examples(home):
    proc = home.run()
    assert proc.returncode == 0
    assert proc.stdout.startswith("usage: deja") and "examples:" in proc.stdout
    assert "deja connection pool exhausted" in proc.stdout


def test_matches_are_marked_on_a_terminal(home):
    code, out, _ = on_terminal(home, "pool", "exhausted")
    assert code == 0 and "\033[1;31mpool\033[0m" in out and "\033[1;31mexhausted\033[0m" in out


def test_no_color_turns_colour_off_on_a_terminal(home):
    code, out, _ = on_terminal(home, "pool", "exhausted", extra_env={"NO_COLOR": "1"})
    assert code == 0 and POOL[:12] in out and "\033[" not in out


def test_color_flag_overrides_the_terminal_and_no_color(home):
    piped = home.run("--color", "always", "pool", "exhausted")
    assert "\033[1;31m" in piped.stdout and "\033[1m" in piped.stdout
    forced = home.run("search", "pool", "exhausted", "--color=always", extra_env={"NO_COLOR": "1"})
    assert "\033[" in forced.stdout
    code, out, _ = on_terminal(home, "--color", "never", "pool", "exhausted")
    assert code == 0 and POOL[:12] in out and "\033[" not in out
    assert "\033[" not in home.run("--color", "auto", "pool", "exhausted").stdout  # a pipe is not a terminal
    proc = home.run("--color", "sometimes", "pool", check=False)
    assert proc.returncode == 2 and proc.stderr.startswith("deja: --color takes auto, always or never")


def test_show_pages_on_a_terminal_and_never_into_a_pipe(home, tmp_path):
    paged = tmp_path / "paged.txt"
    pager = tmp_path / "pager.sh"
    pager.write_text(f"#!/bin/sh\ncat > {paged}\n")
    pager.chmod(0o755)
    env = {"PAGER": str(pager)}
    code, out, _ = on_terminal(home, "show", LONG[:8], extra_env=env)
    assert code == 0 and "step 39" in paged.read_text() and "step 39" not in out
    paged.unlink()
    proc = home.run("show", LONG[:8], extra_env=env)
    assert not paged.exists() and "step 39" in proc.stdout
    # short output fits the screen: printed as it is
    code, out, _ = on_terminal(home, "show", LONG[:8], "--limit", "2", extra_env=env)
    assert code == 0 and not paged.exists() and "step 0" in out and "step 5 " not in out


def test_counts_read_one_session_not_one_sessions(home):
    proc = home.run("connection", "pool", "exhausted")
    assert "1 session (exact)" in proc.stderr
    assert "(2 sessions)" in home.run("index").stderr
    doctor = home.run("doctor").stdout
    assert "2 sessions and 82 messages indexed" in doctor
    assert " 1 sessions" not in doctor and " 1 messages" not in doctor


def test_every_option_says_what_it_does():
    import typer.main

    from deja.pipeline.cli import app

    group = typer.main.get_command(app)
    missing = [f"{name} {p.name}" for name, cmd in group.commands.items() if not cmd.hidden
               for p in cmd.params if not getattr(p, "hidden", False) and not (getattr(p, "help", None) or "").strip()]
    assert missing == []
    jargon = ("tier", "contract", "phase 1", "phase 2", "record text")
    for name, cmd in group.commands.items():
        for p in cmd.params:
            assert not any(j in (getattr(p, "help", None) or "") for j in jargon), (name, p.name, p.help)


def test_index_and_doctor_agree_on_counts(tmp_path):
    """A transcript holding only its title (Claude Code writes one when a
    session is renamed and never used) is no session: `deja index` when up
    to date counts what doctor counts."""
    import json

    h = Home(tmp_path)
    write_jsonl(h.claude_file(POOL), [
        claude_user(POOL, "connection pool exhausted again", "2026-03-02T10:00:00Z", "u1"),
        claude_assistant(POOL, [{"type": "text", "text": "Raised pool_size."}], "2026-03-02T10:00:30Z", "a1",
                         parent="u1"),
    ])
    titled = "5e550000-0000-4000-8000-00000000717e"
    write_jsonl(h.claude_file(titled), [{"type": "ai-title", "aiTitle": "SNMP GET via AgentX", "sessionId": titled},
                                        {"type": "agent-name", "agentName": "SNMP GET", "sessionId": titled}])
    first = h.run("index").stdout
    doctor = json.loads(h.run("doctor", "--json").stdout)
    held = sum(s["indexed_sessions"] for s in doctor["stores"])
    assert held == 1 and "claude: 1 session," in first
    assert f"up to date ({held} session)" in h.run("index").stderr


def test_stats_charts_say_what_they_show(home, tmp_path):
    """The monthly bars and the heatmap carry their months and a scale for
    their shades, in the terminal, the SVG card and the HTML timeline."""
    out = home.run("stats").stdout.splitlines()
    monthly = next(i for i, ln in enumerate(out) if ln.startswith("monthly"))
    assert "messages per month" in out[monthly] and out[monthly + 1].strip() == "M"  # 2026-03
    assert any(ln.strip().startswith("· 0") and ln.endswith("messages a day") for ln in out)
    card = home.run("stats", "--card").stdout.splitlines()
    spark = next(i for i, ln in enumerate(card) if "monthly" in ln)
    assert card[spark + 1].strip("│ ") == "M"
    svg_file, html_file = tmp_path / "card.svg", tmp_path / "timeline.html"
    home.run("stats", "--card", str(svg_file))
    home.run("stats", "--html", str(html_file))
    for page in (svg_file.read_text(), html_file.read_text()):
        assert "messages per month" in page and "messages per day" in page
        assert 'class="month"' in page and ">M</text>" in page  # under the bars
        assert ">Jan</text>" in page  # above the heatmap
        assert page.count('class="legend"') >= 3 and "messages a day" in page


def test_duckdb_never_draws_its_progress_bar_on_stdout():
    """DuckDB draws a progress bar on stdout, tty or not, once a query runs past
    two seconds: on a loaded machine it would land inside --json output, a hook
    envelope or the MCP stream. Every connection deja opens has it off."""
    code = (
        "from deja.stages.store import duck\n"
        "duck.warm_up()\n"
        "for con in (duck.connect(), duck.connect(), duck.shared()):\n"
        "    assert con.execute(\"SELECT current_setting('enable_progress_bar')\").fetchone()[0] is False\n"
        "con = duck.connect()\n"
        "con.execute('SET threads = 1')\n"
        "# past the bar's two seconds (SET progress_bar_time would turn the bar back on)\n"
        "con.execute('SELECT count(*) FROM range(500000000) t(x) WHERE x % 7 = 3').fetchall()\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""


def test_the_shared_connection_is_opened_again_once_a_caller_closed_it():
    """The freshness check and the query it guards share one connection; an
    in-process caller that closed it (a test, an API user) gets a new one."""
    from deja.stages.store import duck

    con = duck.shared()
    assert duck.shared() is con
    con.close()
    again = duck.shared()
    assert again is not con and again.execute("SELECT 41 + 1").fetchone() == (42,)
    assert duck.shared() is again


def test_doctor_json_says_how_sqlite_stores_are_read_and_which_deja_this_is(home):
    """cli-contract §3.7's sqlite3 and version keys: Python's own sqlite3 reads
    the agents' databases, and no server is asked about newer versions."""
    import json

    doctor = json.loads(home.run("doctor", "--json").stdout)
    assert doctor["sqlite3"]["state"] == "ok" and doctor["sqlite3"]["library"]
    assert doctor["version"]["state"] == "offline"
    assert doctor["version"]["current"] == home.run("--version").stdout.split()[-1]


def test_index_json_carries_the_schema_version_whether_it_ran_or_had_nothing_to_do(home):
    import json

    for _ in range(2):  # (a run, then the shortcut that answers "up to date")
        assert json.loads(home.run("index", "--json").stdout)["schema_version"] == 2
