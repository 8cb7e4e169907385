"""What every command module shares, without typer (the fast entry point uses
it too): one-line errors, JSON output, the terminal's width."""

from __future__ import annotations

import os
import sys

from deja.pipeline.errors import Fail  # noqa: F401  (the commands raise it)
from deja.stages.store import config


def error_line(exc: BaseException) -> str:
    """The one line an unforeseen error gets: a damaged store part says what
    repairs it, anything else its type and first line (DuckDB's messages go on
    with the query they came from)."""
    import re

    msg = str(exc)
    root = str(config.index_dir())
    m = re.search(re.escape(root) + r"/([^'\"\s]+\.parquet)", msg)
    if m:
        return f"part {m.group(1)} of the index is damaged; run `deja index` to repair it"
    first = (msg.strip().splitlines() or [""])[0]
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


# every --project filter takes the same values (queries/project_match.py)
PROJECT_HELP = "Only this project: its name (github/volcano), the end of its path (volcano), or a path (~/src/volcano)."
