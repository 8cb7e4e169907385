"""The pieces of the command line that the fast entry point needs without typer:
one-line errors, JSON output, and the search command itself."""

from __future__ import annotations

import os
import sys

from deja.stages.store import config


class Fail(Exception):
    """A user-facing error: printed as one line, exit ``status`` (1)."""

    status = 1


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


def _err(msg: str) -> None:
    print(f"deja: {msg}", file=sys.stderr)


def _out_json(obj) -> None:
    import json  # (not at the top: a search without --json need not load it)

    sys.stdout.write(json.dumps(obj, ensure_ascii=False, indent=2) + "\n")


def _search_cmd(
    query: list[str],
    as_json: bool,
    harness: str | None,
    project: str | None,
    since: str | None,
    role: str | None,
    limit: int,
    show_all: bool,
    session: str | None = None,
    regex: bool = False,
    rebuild: bool = False,
) -> None:
    from deja.queries.search import ROLE_ALIASES, ROLE_CODE, Query, search
    from deja.stages.store.read import Busy, Damaged, NoIndex, open_live
    from deja.stages.sources import harnesses

    text = " ".join(query).strip()
    if not text:
        raise Fail("search needs a query")
    if harness and harness not in harnesses():
        raise Fail(f"unknown harness {harness!r} (known: {', '.join(harnesses())})")
    if role and ROLE_ALIASES.get(role, role) not in ROLE_CODE:
        raise Fail(f"unknown role {role!r} (user, assistant, tool, tool-output, files, command, edit, summary)")
    if not 1 <= limit <= 100:
        raise Fail("--limit takes a number from 1 to 100")
    since_ms = _since_ms(since) if since else None
    if rebuild:  # the work in front of you, like `deja index --rebuild`
        from deja.pipeline.run import run_index
        from deja.stages.store.catalog import Busy as WriterBusy

        try:
            run_index(rebuild=True, notice=_err)
        except WriterBusy as exc:
            raise Fail(f"{exc}; try again when it finishes")
    from deja.stages.store import duck

    if duck.warming():
        # DuckDB is still starting on its thread (which releases the GIL): load
        # what the ladder's spelling rung and the output need in time that would
        # otherwise be spent waiting
        import json  # noqa: F401
        import rapidfuzz.distance  # noqa: F401
    # the freshness check lists the transcripts before it needs DuckDB (which
    # may still be warming up), and on a fresh store leaves the catalog
    # attached for the query
    attached = not rebuild and _refresh(keep_attached=True) == "fresh"
    con = duck.shared()  # one DuckDB instance for the freshness check and the query
    session = session.strip().strip("'\"`‘’“”") if session else None
    query = Query(text, limit, show_all, harness, project, since_ms, role, session, regex)
    for attempt in range(3):
        try:
            live = open_live(config.index_dir(), con=con, attached=attached, records_view=False)
            attached = False  # (a retry attaches again)
        except (NoIndex, Damaged) as exc:
            raise Fail(str(exc))
        except Busy:
            raise Fail("the index is busy being written; try again in a moment")
        notes: list[str] = []

        def attempt():
            notes.clear()
            return search(live, query, notes)

        try:
            env = live.tolerant(attempt)  # a damaged part: answered from the rest, said once below
            break
        except (ValueError, Damaged) as exc:
            raise Fail(str(exc))
        except duck.IOException:
            # a run committed between listing the live files and reading them, and
            # cleaned up what it replaced: list them again
            if attempt == 2:
                raise
            con = duck.connect()
        finally:
            live.close()
    if live.damage_notice():
        print(live.damage_notice(), file=sys.stderr)
    for n in notes:
        print(n, file=sys.stderr)
    if as_json:
        _out_json(env)
    else:
        _print_hits(env)
    if not env["hits"]:
        _err("no session matches " + repr(text))


def _refresh(keep_attached: bool = False) -> str | None:
    """Appended turns are searchable at once; heavier refreshes run in the background.
    Returns what ensure_fresh said (None on an error)."""
    from deja.pipeline.fresh import ensure_fresh

    try:
        state = ensure_fresh(keep_attached=keep_attached)
    except Exception as exc:  # freshness is best effort: the store as it is still answers, and says so
        _err(f"could not refresh the index ({type(exc).__name__}: {exc}); answering from the store as it is")
        return None
    if state == "background":
        print("deja: refreshing the index in the background; answering from the store as it is", file=sys.stderr)
    return state


def _since_ms(value: str) -> int:
    import re
    import time

    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(d|h|m|s)\s*", value)
    if not m:
        raise Fail(f"--since takes a duration like 7d, 12h or 90m, not {value!r}")
    n, unit = float(m.group(1)), m.group(2)
    secs = n * {"d": 86400, "h": 3600, "m": 60, "s": 1}[unit]
    return int((time.time() - secs) * 1000)


def _print_hits(env: dict) -> None:
    from deja.stages.display import sanitize_display

    tty = sys.stdout.isatty()
    width = _term_width()
    what = {"relevance": "nothing matched every word; nearest sessions", "error": "same error signature",
            "close": "close spellings", "stemmed": "word forms"}.get(env["tier"], "")
    print(f"{env['total']} sessions ({env['tier']}{': ' + what if what else ''})", file=sys.stderr)
    for hit in env["hits"]:
        s = hit["session"]
        when = (s.get("updated") or s.get("started") or "")[:10]
        title = sanitize_display(s.get("title") or "(untitled)")
        head = f"{s['harness']}  {s['id'][:12]}  {when}  {s.get('project', '')}"
        print(("\033[1m" + head + "\033[0m") if tty else head)
        print("  " + _elide(title, width - 2))
        for snip in hit["snippets"]:
            print("    " + _elide(sanitize_display(snip), width - 4))


def _term_width() -> int:
    try:
        return max(40, os.get_terminal_size().columns)
    except OSError:
        return 120


def _elide(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(1, width - 1)] + "…"


