"""Commands that answer from the work itself: blame, files, how, fix, friction
(logic behind deja.pipeline.api: deja.queries.work_answers, deja.stages.failures)."""

from __future__ import annotations

# typer reads the commands' annotations from this module's names
from typing import Optional  # noqa: F401
import sys

from deja.pipeline.cli_common import (
    HELP_HARNESS, HELP_JSON, HELP_PROJECT, HELP_SINCE, Fail, elide, err, out_json, say, term_width
)


from deja.pipeline.answers_text import FIX_NONE, FIX_NOT_ERROR, fix_lines, how_lines, how_none, safe as _safe


def _session_head(s: dict) -> str:
    when = (s.get("updated") or s.get("started") or "")[:10]
    return f"{s['harness']}  {s['id']}  {when}  {s.get('project', '')}"


def _print_blame(b, width: int) -> None:
    rows, answer = b.rows, b.line
    if answer is not None:
        print(_safe(answer.sentence))
        if answer.attributed:
            r = rows[0]
            print("  " + _session_head(r["session"]))
            if r["title"]:
                print("    " + elide(_safe(r["title"]), width - 4))
            rows = rows[1:]
        if rows:
            print()
    for r in rows:
        print(_session_head(r["session"]) + f"  ({r['count']} mention{'s' if r['count'] != 1 else ''})")
        print("  " + elide(_safe(r["title"] or "(untitled)"), width - 2))
        if r.get("decision"):
            print("  decided: " + elide(_safe(r["decision"]), width - 11))
        for snip in r["snippets"]:
            print("    " + elide(_safe(snip), width - 4))


def register(app) -> None:
    import typer

    @app.command("blame")
    def blame_cmd(
        target: str = typer.Argument(..., metavar="PATH[:LINE]", help="A file (absolute, relative or bare name), optionally :line."),
        as_json: bool = typer.Option(False, "--json", help=HELP_JSON),
        show_all: bool = typer.Option(False, "--all", help="List every session that mentions the file, not only the first ones."),
        project: Optional[str] = typer.Option(None, "--project", help=HELP_PROJECT),
        harness: Optional[str] = typer.Option(None, "--harness", help=HELP_HARNESS),
        since: Optional[str] = typer.Option(None, "--since", help=HELP_SINCE),
    ) -> None:
        """Sessions that discussed a file, most specific first, with what was decided; PATH:LINE
        first names the session that changed that line (git blame + the session's edit)."""
        from deja.pipeline import api
        from deja.queries import work_answers as work

        b = api.blame(target, show_all=show_all, project=project, harness=harness, since=since, notice=say)
        if as_json:
            if b.line is not None and not b.line.attributed:
                err(b.line.sentence)
            out_json(b.rows)
        else:
            _print_blame(b, term_width())
        if b.capped:
            err(f"showing the first {work.BLAME_LIMIT} sessions; --all lists every one")
        if not b.rows and (b.line is None or not b.line.attributed):
            filters = [f"{k} {v}" for k, v in (("--project", project), ("--harness", harness), ("--since", since)) if v]
            err(f"no session mentions {b.target}" + (" with " + ", ".join(filters) if filters else ""))

    @app.command("files")
    def files_cmd(
        topic: list[str] = typer.Argument(..., metavar="TOPIC…", help="Words about the work (e.g. deja files checkout flow)."),
        project: Optional[str] = typer.Option(None, "--project", help=HELP_PROJECT),
        limit: int = typer.Option(10, "--limit", help="How many files (default 10)."),
    ) -> None:
        """The files touched while a topic was being worked on."""
        from deja.pipeline import api

        res = api.files(topic, project=project, limit=limit, notice=say)
        for r in res["files"]:
            print(f"{_safe(r['path'])}  · near it in {r['sessions']} session{'s' if r['sessions'] != 1 else ''}"
                  f", last {r['last']}")
        if not res["files"]:
            text = " ".join(topic).strip()
            err(f"no session about {text!r} touched a file near it" if res["tier"] != "relevance"
                else f"no session matches {text!r}")

    @app.command("how")
    def how_cmd(
        what: list[str] = typer.Argument(..., metavar="WHAT…", help="Every word must appear in the command."),
        project: Optional[str] = typer.Option(None, "--project", help=HELP_PROJECT),
        limit: int = typer.Option(8, "--limit", help="How many commands (default 8)."),
    ) -> None:
        """Real invocations of a tool on this machine, most used and successful first."""
        from deja.pipeline import api

        res = api.how(what, project=project, limit=limit, notice=say)
        for line in how_lines(res):
            print(line)
        if not res["commands"]:
            err(how_none(res, project))

    @app.command("fix")
    def fix_cmd(
        error: Optional[str] = typer.Argument(None, metavar="ERROR", help="The error text; omit (or -) to read stdin."),
        limit: int = typer.Option(3, "--limit", help="How many answers (default 3)."),
    ) -> None:
        """What was run after the same error before, where it did not come back."""
        from deja.pipeline import api

        if error is None or error == "-":
            if sys.stdin is None or sys.stdin.isatty():
                raise Fail('fix needs the error text: deja fix "<error>" or pipe it on stdin')
            error = sys.stdin.read()
        ans = api.fix(error, limit=limit, notice=say)
        if ans["status"] == "not-error":
            err(FIX_NOT_ERROR)
            return
        for line in fix_lines(ans):
            print(line)
        if not ans["fixes"]:
            err(FIX_NONE)

    @app.command("friction")
    def friction_cmd(
        limit: int = typer.Option(10, "--limit", help="How many errors (default 10)."),
    ) -> None:
        """Errors that recur across 3 or more sessions, with the harnesses they hit."""
        from deja.pipeline import api
        from deja.queries import work_answers as work

        res = api.friction(limit=limit, notice=say)
        for r in res["errors"]:
            print(_safe(work.friction_line(r)))
        if not res["errors"]:
            n = res["sessions_with_output"]
            err(f"no error recurs in {res['min_sessions']} or more sessions "
                f"({n} session{'s' if n != 1 else ''} had tool output)")
