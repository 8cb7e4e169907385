"""`deja search`: the command people and agents run most. The fast entry point
(deja.pipeline.entry) calls ``search_command`` without typer; ``register``
adds the same command to the typer app for help and the command list."""

from __future__ import annotations

# typer reads the commands' annotations from this module's names
from typing import Optional  # noqa: F401
import sys

from deja.pipeline.cli_common import (
    HELP_JSON, HELP_HARNESS, HELP_PROJECT, HELP_SINCE, BOLD, RESET, color_on, elide, err, highlight,
    Fail, out_json, plural, say, term_width
)


def search_command(query: list[str], as_json: bool, harness: str | None, project: str | None, since: str | None,
                   role: str | None, limit: int, show_all: bool, session: str | None = None, regex: bool = False,
                   rebuild: bool = False, env=None, no_embed: bool = False, team: bool = False) -> None:
    from deja.pipeline import api

    if team:  # the team store's tables (deja team publish), queried where they are
        from deja.pipeline import team as team_store

        others = [name for name, on in (("--harness", harness), ("--project", project), ("--since", since),
                                        ("--role", role), ("--session", session), ("--re", regex),
                                        ("--rebuild", rebuild)) if on]
        if others:
            raise Fail(f"--team searches the team's tables by words alone; {others[0]} is for this machine's store")
        answer = team_store.search(" ".join(query), limit=100 if show_all else limit, env=env)
    else:
        answer = api.search(query, harness=harness, project=project, since=since, role=role, limit=limit,
                            show_all=show_all, session=session, regex=regex, rebuild=rebuild, env=env, notice=say,
                            embed=not no_embed)
    if as_json:
        out_json(answer)
    else:
        print_hits(answer, match_pattern(" ".join(query), regex) if color_on() else None)
    if not answer["hits"]:
        err(f"no {'team ' if team else ''}session matches " + repr(" ".join(query).strip()))


def match_pattern(text: str, regex: bool):
    """What a search's output marks as a match: the --re expression, else the
    quoted phrases, else the query's words (a close spelling or another word
    form that matched is left unmarked). None when there is nothing to mark."""
    import re

    if regex:
        try:
            return re.compile(text)
        except re.error:  # RE2 syntax Python's re does not take: unmarked
            return None
    from deja.queries.query_parse import parse_query

    content, phrases, _ = parse_query(text)
    needles = sorted(phrases or content, key=len, reverse=True)
    return re.compile("|".join(map(re.escape, needles)), re.I) if needles else None


def print_hits(answer: dict, pattern=None) -> None:
    """The hits as text: a bold head line per session on a colour terminal,
    ``pattern``'s matches marked in the title and snippets."""
    from deja.queries.search import held_whole
    from deja.stages.display import GONE_MARK, sanitize_display

    bold = color_on()
    width = term_width()
    what = {"relevance": "nothing matched every word; nearest sessions", "error": "same error signature",
            "close": "close spellings", "stemmed": "word forms"}.get(answer["tier"], "")
    total = answer["total"]
    held = held_whole(answer)
    if held:  # a few sessions hold every word, the nearest others follow them (cli-contract §5.2, thin AND)
        what = f"{held} {'holds' if held == 1 else 'hold'} every word" + (", then the nearest sessions" if total > held else "")
    by_meaning = sum(h.get("tier") == "semantic" for h in answer["hits"])
    if by_meaning and answer["tier"] != "semantic":  # (the vectors' nearest, which hold none of the words)
        what += ("; " if what else "") + f"{by_meaning} shown by meaning alone"
    print(f"{total} {plural(total, 'session')} ({answer['tier']}{': ' + what if what else ''})", file=sys.stderr)
    for hit in answer["hits"]:
        s = hit["session"]
        when = (s.get("updated") or s.get("started") or "")[:10]
        title = sanitize_display(s.get("title") or "(untitled)")
        head = f"{s['harness']}  {s['id'][:12]}  {when}  {s.get('project', '')}"
        if s.get("from"):  # synced in, or in the team store: the machine it ran on
            head += f"  from {s['from']}"
        if s.get("source_gone"):
            head += f"  {GONE_MARK}"
        if hit.get("reused"):
            head += f"  (reused {hit['reused']}× by agents recently)"
        if hit.get("tier") == "semantic" and answer["tier"] != "semantic":
            head += "  (by meaning)"
        print((BOLD + head + RESET) if bold else head)
        print("  " + highlight(elide(title, width - 2), pattern))
        for snip in hit["snippets"]:
            print("    " + highlight(elide(sanitize_display(snip), width - 4), pattern))


def register(app) -> None:
    import typer

    @app.command("search")
    def search_cmd(
        query: list[str] = typer.Argument(..., help="Words to find (all must appear); \"quoted\" for a phrase."),
        as_json: bool = typer.Option(False, "--json", help=HELP_JSON),
        harness: Optional[str] = typer.Option(None, "--harness", help=HELP_HARNESS),
        project: Optional[str] = typer.Option(None, "--project", help=HELP_PROJECT),
        since: Optional[str] = typer.Option(None, "--since", help=HELP_SINCE),
        role: Optional[str] = typer.Option(None, "--role", help="Only messages of one kind: user, assistant, tool, command, files or edit (e.g. --role user)."),
        limit: int = typer.Option(15, "--limit", help="Show at most this many sessions, 1 to 100 (default 15)."),
        show_all: bool = typer.Option(False, "--all", help="Show every matching session, not only the first 15."),
        session: Optional[str] = typer.Option(None, "--session", help="Search inside one session, by the start of its id (e.g. --session 7f1c)."),
        regex: bool = typer.Option(False, "--re", help="Read the query as a regular expression (RE2), e.g. deja search --re 'pool_size=\\d+'."),
        rebuild: bool = typer.Option(False, "--rebuild", help="Re-read every transcript first, then search (slow; like `deja index --rebuild`)."),
        no_embed: bool = typer.Option(False, "--no-embed", help="Words only: leave the vectors (`deja embed`) out of this search."),
        team: bool = typer.Option(False, "--team", help="Search the team store's tables (`deja team`) instead of this machine's history."),
    ) -> None:
        """Search every agent's history."""
        search_command(query, as_json, harness, project, since, role, limit, show_all, session, regex, rebuild,
                       no_embed=no_embed, team=team)

    @app.command()
    def demo() -> None:
        """Index the bundled sample transcripts into a temporary store and search them."""
        from deja.pipeline import api
        from deja.pipeline.cli_index import print_summary
        from deja.pipeline.demo import run_demo

        run_demo(lambda env: api.run_index(env=env, notice=say).as_json(), print_summary, search_command)
