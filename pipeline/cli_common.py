"""What every command module shares, without typer (the fast entry point uses
it too): one-line errors, JSON output, the terminal's width."""

from __future__ import annotations

import os
import sys

from deja.pipeline.errors import Fail  # noqa: F401  (the commands raise it)
from deja.stages.display import plural  # noqa: F401  (the commands count with it)
from deja.stages.store import config


# Help for the options many commands share; each says what it does, with an example.
HELP_JSON = "Print JSON instead of text, for scripts (e.g. `deja last --json | jq .`)."
HELP_HARNESS = "Only one agent's sessions: its id as `deja sources` lists it (e.g. --harness codex)."
# every --project filter takes the same values (queries/project_match.py)
HELP_PROJECT = ("Only this project: its name, the end of its path, or a path "
                "(e.g. --project github/volcano, --project volcano, --project ~/src/volcano).")
HELP_SINCE = "Only sessions active within this long: days, hours or minutes (e.g. --since 7d, 12h, 90m)."


# What DuckDB says of Parquet bytes it cannot decode, when it names no file
_UNDECODABLE = (r"don't know what type|TProtocolException|[Dd]ecompression failure|[Cc]orrupt|"
                r"Invalid Input Error: (?:File|Failed to read)|not a parquet file|magic bytes")


def error_line(exc: BaseException, root=None) -> str:
    """The one line an unforeseen error gets: a damaged store part says what
    repairs it, anything else its type and first line (DuckDB's messages go on
    with the query they came from). A part that could not be read is noted for
    the next `deja index`, which decodes it whole: bytes damaged in place keep
    a part's size, which is all a run checks of every part."""
    import re

    from deja.stages.store.catalog import ANY, note_suspects

    msg = str(exc)
    root = str(root or config.index_dir())
    m = re.search(re.escape(root) + r"/([^'\"\s]+\.parquet)", msg)
    if m:
        note_suspects(root, [m.group(1)])
        return f"part {m.group(1)} of the index is damaged; run `deja index` to repair it"
    first = (msg.strip().splitlines() or [""])[0]
    if type(exc).__module__.startswith(("duckdb", "_duckdb")) and re.search(_UNDECODABLE, msg):
        note_suspects(root, [ANY])
        return f"the index could not be read ({first[:120]}); run `deja index` to check and repair it"
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def err(msg: str) -> None:
    print(f"deja: {msg}", file=sys.stderr)


def say(line: str) -> None:
    """A notice line from the library, printed as it is (stderr)."""
    print(line, file=sys.stderr)


def out_json(obj) -> None:
    import json  # (not at the top: a search without --json need not load it)

    sys.stdout.write(json.dumps(obj, ensure_ascii=False, indent=2) + "\n")


def term_width() -> int:
    try:
        return max(40, os.get_terminal_size().columns)
    except OSError:
        return 120


def elide(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(1, width - 1)] + "…"


# --color: `auto` colours a terminal unless NO_COLOR is set (no-color.org);
# `always` and `never` override both (the flag is the user's latest word).
COLOR_MODES = ("auto", "always", "never")
_color = "auto"


def set_color(mode: str) -> None:
    global _color
    _color = mode


def color_on(stream=None) -> bool:
    if _color != "auto":
        return _color == "always"
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    stream = sys.stdout if stream is None else stream
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


BOLD, MATCH, RESET = "\033[1m", "\033[1;31m", "\033[0m"


def highlight(text: str, pattern) -> str:
    """``text`` with each match of ``pattern`` (a compiled regex, or None)
    marked in bold red, the way grep and ripgrep mark theirs."""
    if pattern is None:
        return text
    return pattern.sub(lambda m: MATCH + m.group(0) + RESET if m.group(0) else "", text)


def page(text: str) -> None:
    """Write ``text`` to stdout; on a terminal, text taller than the screen
    goes through the pager ($DEJA_PAGER, else $PAGER, else `less`; LESS=FRX
    unless set, so colours show and a short text just prints). An empty
    pager variable or `cat` means none; stdout that is not a terminal never
    pages."""
    import shlex
    import subprocess

    cmd = os.environ.get("DEJA_PAGER", os.environ.get("PAGER", "less"))
    try:
        rows = os.get_terminal_size(sys.stdout.fileno()).lines or 24
        tty = sys.stdout.isatty()
    except (OSError, ValueError):
        rows, tty = 0, False
    if not tty or not cmd.strip() or cmd.strip() == "cat" or text.count("\n") < rows - 1:
        sys.stdout.write(text)
        return
    sys.stdout.flush()
    env = dict(os.environ)
    env.setdefault("LESS", "FRX")
    try:
        proc = subprocess.Popen(shlex.split(cmd), stdin=subprocess.PIPE, env=env)
    except (OSError, ValueError):  # no such pager: print as if there were none
        sys.stdout.write(text)
        return
    try:
        proc.stdin.write(text.encode("utf-8", "replace"))
        proc.stdin.close()
    except BrokenPipeError:  # the reader quit the pager early: it has what it wanted
        pass
    try:
        proc.wait()
    except KeyboardInterrupt:
        proc.wait()
