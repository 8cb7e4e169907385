"""Commands that answer from the work itself: blame, files, how, fix, friction.

Registered on the typer app by deja.pipeline.cli (the loop before ``main``); the logic
lives in deja.queries.work_answers and deja.stages.failures.
"""

from __future__ import annotations

import os
import sys
from typing import Optional

import typer

from deja.pipeline.cli import _check_harness, _elide, _live_or_fail, _since_ms, _term_width, app
from deja.pipeline.console import Fail, _err, _out_json


def _safe(text: str) -> str:
    from deja.stages.display import sanitize_display

    return sanitize_display(text or "")


def _session_head(s: dict) -> str:
    when = (s.get("updated") or s.get("started") or "")[:10]
    return f"{s['harness']}  {s['id']}  {when}  {s.get('project', '')}"


@app.command("blame")
def blame_cmd(
    target: str = typer.Argument(..., metavar="PATH[:LINE]", help="A file (absolute, relative or bare name), optionally :line."),
    as_json: bool = typer.Option(False, "--json", help="The contract's array of sessions."),
    show_all: bool = typer.Option(False, "--all", help="No row cap."),
    project: Optional[str] = typer.Option(None, "--project", help="Project name contains this."),
    harness: Optional[str] = typer.Option(None, "--harness"),
    since: Optional[str] = typer.Option(None, "--since", help="Active within this long (7d, 12h, 90m)."),
) -> None:
    """Sessions that discussed a file, most specific first, with what was decided; PATH:LINE
    first names the session that changed that line (git blame + the session's edit)."""
    from deja.queries import work_answers as work

    _check_harness(harness)
    since_ms = _since_ms(since) if since else None
    t = work.resolve_target(target, os.getcwd())
    if not t.base:
        raise Fail("blame needs a file path")
    live = _live_or_fail()
    try:
        answer = work.blame_line(live, t, harness, project) if t.line is not None else None
        rows = work.blame(live, t, harness, project, since_ms, None if show_all else work.BLAME_LIMIT + 1)
    finally:
        live.close()
    from deja.queries.session_obj import session_object

    capped = not show_all and len(rows) > work.BLAME_LIMIT
    rows = rows if show_all else rows[: work.BLAME_LIMIT]
    if answer is not None and answer.attributed:
        sid = answer.session["session_id"]
        rows = [r for r in rows if r["session"]["id"] != sid]
        line_row = {"session": session_object(answer.session), "title": answer.session.get("title") or "",
                    "count": 1, "snippets": [], "score": 0.0, "tier": "line", "line": t.line, "commit": answer.commit,
                    "span": answer.span}
        # no decision here: a session's conclusion is not the reason for one line it changed
        rows = [line_row] + rows
    if as_json:
        if answer is not None and not answer.attributed:
            _err(answer.sentence)
        _out_json(rows)
    else:
        width = _term_width()
        if answer is not None:
            print(_safe(answer.sentence))
            if answer.attributed:
                r = rows[0]
                print("  " + _session_head(r["session"]))
                if r["title"]:
                    print("    " + _elide(_safe(r["title"]), width - 4))
                rows = rows[1:]
            if rows:
                print()
        for r in rows:
            print(_session_head(r["session"]) + f"  ({r['count']} mention{'s' if r['count'] != 1 else ''})")
            print("  " + _elide(_safe(r["title"] or "(untitled)"), width - 2))
            if r.get("decision"):
                print("  decided: " + _elide(_safe(r["decision"]), width - 11))
            for snip in r["snippets"]:
                print("    " + _elide(_safe(snip), width - 4))
    if capped:
        _err(f"showing the first {work.BLAME_LIMIT} sessions; --all lists every one")
    if not rows and (answer is None or not answer.attributed):
        filters = [f"{k} {v}" for k, v in (("--project", project), ("--harness", harness), ("--since", since)) if v]
        _err(f"no session mentions {t.base}" + (" with " + ", ".join(filters) if filters else ""))


@app.command("files")
def files_cmd(
    topic: list[str] = typer.Argument(..., metavar="TOPIC…"),
    project: Optional[str] = typer.Option(None, "--project", help="Project name contains this."),
    limit: int = typer.Option(10, "--limit", help="How many files (default 10)."),
) -> None:
    """The files touched while a topic was being worked on."""
    from deja.queries import work_answers as work

    text = " ".join(topic).strip()
    if not text:
        raise Fail("files needs a topic")
    if limit < 1:
        raise Fail("--limit takes a number ≥ 1")
    live = _live_or_fail()
    try:
        try:
            rows, tier = work.files(live, text, project, limit)
        except ValueError as exc:
            raise Fail(str(exc))
    finally:
        live.close()
    for r in rows:
        print(f"{_safe(r['path'])}  · near it in {r['sessions']} session{'s' if r['sessions'] != 1 else ''}"
              f", last {r['last']}")
    if not rows:
        _err(f"no session about {text!r} touched a file near it" if tier != "relevance"
             else f"no session matches {text!r}")


@app.command("how")
def how_cmd(
    what: list[str] = typer.Argument(..., metavar="WHAT…", help="Every word must appear in the command."),
    project: Optional[str] = typer.Option(None, "--project", help="Project name contains this."),
    limit: int = typer.Option(8, "--limit", help="How many commands (default 8)."),
) -> None:
    """Real invocations of a tool on this machine, most used and successful first."""
    from deja.queries import work_answers as work

    words = work.how_words(what)
    if not words:
        raise Fail("how needs a word the command should contain")
    if limit < 1:
        raise Fail("--limit takes a number ≥ 1")
    live = _live_or_fail()
    try:
        rows = work.how(live, words, project, limit)
    finally:
        live.close()
    for r in rows:
        mark = f"  → exit {r['exit']}" if r["exit"] else ""
        print(_safe(r["command"]) + mark)
        print(f"  ran {r['runs']} time{'s' if r['runs'] != 1 else ''} in {r['sessions']} "
              f"session{'s' if r['sessions'] != 1 else ''}, last {r['last']}")
    if not rows:
        _err(f"No command on this machine mentions {' '.join(words)!r}"
             + (f" in a project matching {project!r}" if project else "") + ".")


@app.command("fix")
def fix_cmd(
    error: Optional[str] = typer.Argument(None, metavar="ERROR", help="The error text; omit (or -) to read stdin."),
    limit: int = typer.Option(3, "--limit", help="How many answers (default 3)."),
) -> None:
    """What was run after the same error before, where it did not come back."""
    from deja.queries import work_answers as work

    if error is None or error == "-":
        if sys.stdin is None or sys.stdin.isatty():
            raise Fail('fix needs the error text: deja fix "<error>" or pipe it on stdin')
        error = sys.stdin.read()
    if not error.strip():
        raise Fail("fix needs the error text")
    if limit < 1:
        raise Fail("--limit takes a number ≥ 1")
    live = _live_or_fail()
    try:
        ans = work.fix(live, error, limit)
    finally:
        live.close()
    if ans.status == "not-error":
        _err("that does not read like an error line (paste the line the tool printed)")
        return
    for r in ans.rows:
        print(f"{_safe(r['error'])} ({r['date']})")
        print(f"  ran next: {_safe(r['command'])}")
    if not ans.rows:
        _err("No session on this machine ran a command after that error.")


@app.command("friction")
def friction_cmd(
    limit: int = typer.Option(10, "--limit", help="How many errors (default 10)."),
) -> None:
    """Errors that recur across 3 or more sessions, with the harnesses they hit."""
    from deja.queries import work_answers as work

    if limit < 1:
        raise Fail("--limit takes a number ≥ 1")
    live = _live_or_fail()
    try:
        res = work.friction(live, limit)
    finally:
        live.close()
    for r in res.rows:
        print(_safe(work.friction_line(r)))
    if not res.rows:
        _err(f"no error recurs in {work.FRICTION_MIN_SESSIONS} or more sessions "
             f"({res.sessions_with_output} session{'s' if res.sessions_with_output != 1 else ''} had tool output)")
