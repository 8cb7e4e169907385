"""`deja search`: the command people and agents run most. The fast entry point
(deja.pipeline.entry) calls ``search_command`` without typer; ``register``
adds the same command to the typer app for help and the command list."""

from __future__ import annotations

# typer reads the commands' annotations from this module's names
from typing import Optional  # noqa: F401
import sys

from deja.pipeline.cli_common import elide, err, PROJECT_HELP, out_json, say, term_width


def search_command(query: list[str], as_json: bool, harness: str | None, project: str | None, since: str | None,
                   role: str | None, limit: int, show_all: bool, session: str | None = None, regex: bool = False,
                   rebuild: bool = False, env=None) -> None:
    from deja.pipeline import api

    answer = api.search(query, harness=harness, project=project, since=since, role=role, limit=limit,
                        show_all=show_all, session=session, regex=regex, rebuild=rebuild, env=env, notice=say)
    if as_json:
        out_json(answer)
    else:
        print_hits(answer)
    if not answer["hits"]:
        err("no session matches " + repr(" ".join(query).strip()))


def print_hits(answer: dict) -> None:
    from deja.stages.display import sanitize_display

    tty = sys.stdout.isatty()
    width = term_width()
    what = {"relevance": "nothing matched every word; nearest sessions", "error": "same error signature",
            "close": "close spellings", "stemmed": "word forms"}.get(answer["tier"], "")
    print(f"{answer['total']} sessions ({answer['tier']}{': ' + what if what else ''})", file=sys.stderr)
    for hit in answer["hits"]:
        s = hit["session"]
        when = (s.get("updated") or s.get("started") or "")[:10]
        title = sanitize_display(s.get("title") or "(untitled)")
        head = f"{s['harness']}  {s['id'][:12]}  {when}  {s.get('project', '')}"
        print(("\033[1m" + head + "\033[0m") if tty else head)
        print("  " + elide(title, width - 2))
        for snip in hit["snippets"]:
            print("    " + elide(sanitize_display(snip), width - 4))


def register(app) -> None:
    import typer

    @app.command("search")
    def search_cmd(
        query: list[str] = typer.Argument(..., help="Words to find (all must appear); \"quoted\" for a phrase."),
        as_json: bool = typer.Option(False, "--json"),
        harness: Optional[str] = typer.Option(None, "--harness"),
        project: Optional[str] = typer.Option(None, "--project", help=PROJECT_HELP),
        since: Optional[str] = typer.Option(None, "--since"),
        role: Optional[str] = typer.Option(None, "--role"),
        limit: int = typer.Option(15, "--limit"),
        show_all: bool = typer.Option(False, "--all"),
        session: Optional[str] = typer.Option(None, "--session", help="Only this session (id prefix)."),
        regex: bool = typer.Option(False, "--re", help="The query is a regular expression over record text."),
        rebuild: bool = typer.Option(False, "--rebuild", help="Rebuild the index in the foreground first."),
        no_embed: bool = typer.Option(False, "--no-embed", help="Skip the semantic tier (there is none yet)."),
    ) -> None:
        """Search every agent's history."""
        search_command(query, as_json, harness, project, since, role, limit, show_all, session, regex, rebuild)

    @app.command()
    def demo() -> None:
        """Index the bundled sample transcripts into a temporary store and search them."""
        from deja.pipeline import api
        from deja.pipeline.cli_index import print_summary
        from deja.pipeline.demo import run_demo

        run_demo(lambda env: api.run_index(env=env, notice=say).as_json(), print_summary, search_command)
