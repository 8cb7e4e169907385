"""Reading sessions: `deja last`, `deja show`, `deja ctx` (logic behind
deja.pipeline.api: deja.queries.show and deja.queries.session_brief)."""

from __future__ import annotations

# typer reads the commands' annotations from this module's names
from typing import Optional  # noqa: F401
import sys

from deja.pipeline.cli_common import (
    HELP_JSON, HELP_HARNESS, HELP_PROJECT, HELP_SINCE, Fail, color_on, elide, err, out_json, page,
    plural, say, term_width
)


def register(app) -> None:
    import typer

    @app.command("last")
    def last_cmd(
        n: Optional[int] = typer.Argument(None, metavar="N", help="How many sessions (default 10)."),
        as_json: bool = typer.Option(False, "--json", help=HELP_JSON),
        project: Optional[str] = typer.Option(None, "--project", help=HELP_PROJECT),
        harness: Optional[str] = typer.Option(None, "--harness", help=HELP_HARNESS),
        since: Optional[str] = typer.Option(None, "--since", help=HELP_SINCE),
        role: Optional[str] = typer.Option(None, "--role", help="Only sessions with messages of this kind: user, assistant, tool, command, files or edit."),
        origin: Optional[str] = typer.Option(None, "--from", help="Only sessions from one machine: local, or the machine's name (e.g. --from laptop)."),
    ) -> None:
        """Recent sessions, newest first."""
        from deja.pipeline import api
        from deja.queries import show as sh

        n = 10 if n is None else n
        if n >= 1:
            harness = api.check_harness(harness)  # (the name it means, for the message below)
        res = api.last(n, harness=harness, project=project, since=since, role=role, origin=origin, extras=True,
                       notice=say)
        sessions, stored = res["sessions"], res.pop("_stored")
        if as_json:
            out_json(res)
        else:
            width = term_width()
            for s in sessions:
                print(sh.last_line(s, width))
        if not sessions:
            filters = [f"{k} {v}" for k, v in (("--project", project), ("--harness", harness), ("--since", since),
                                               ("--role", role), ("--from", origin)) if v]
            err("no session matches " + ", ".join(filters) if stored and filters
                else "the index holds no sessions yet; run `deja index`")

    @app.command("show")
    def show_cmd(
        ident: str = typer.Argument(..., metavar="ID-PREFIX", help="The session's id, or the start of it."),
        harness: Optional[str] = typer.Option(None, "--harness", help=HELP_HARNESS),
        as_json: bool = typer.Option(False, "--json", help="Print JSON for scripts; needs the full id and --harness (e.g. --json --harness codex)."),
        offset: Optional[int] = typer.Option(None, "--offset", help="Start after this many messages (e.g. --offset 100 --limit 20)."),
        limit: Optional[int] = typer.Option(None, "--limit", help="Print at most this many messages (e.g. --limit 20; JSON prints 50 unless told, 200 at most)."),
    ) -> None:
        """Print one session: its messages, with commands, files and edits as compact lines."""
        from deja.pipeline import api
        from deja.queries import show as sh

        s = api.session(ident, harness=harness, offset=offset, limit=limit, exact=as_json, work=not as_json,
                        notice=say)
        win = s.window
        if as_json:
            out_json(s.as_json())
        else:
            page(sh.render_text(s.resolved, win, tty=color_on()))
            if (offset is not None or limit is not None) and win.messages:
                print(f"messages {win.offset + 1}–{win.offset + len(win.messages)} of {win.total}", file=sys.stderr)
            elif offset is not None or limit is not None:
                print(f"no messages from offset {win.offset} (the session has {win.total})", file=sys.stderr)
            elif win.total > sh.TEXT_MENTION_FLAGS_ABOVE:
                print(f"{win.total} {plural(win.total, 'message')}; --offset N --limit N prints a slice", file=sys.stderr)
        if s.parent:
            title = " ".join((s.parent.get("title") or "").split())
            print(f"spawned from {s.parent['harness']} {s.parent['session_id']}"
                  + (f" ({elide(title, 60)})" if title else ""), file=sys.stderr)
        if s.children:
            listed = ", ".join(c["session_id"] for c in s.children[:5]) + (", …" if len(s.children) > 5 else "")
            print(f"spawned {len(s.children)} {plural(len(s.children), 'session')}: {listed}",
                  file=sys.stderr)

    @app.command("ctx", context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
    def ctx_cmd(
        query: Optional[list[str]] = typer.Argument(None, metavar="QUERY|ID-PREFIX", help="What you are about to work on, or a session's id (e.g. deja ctx flaky checkout test)."),
    ) -> None:
        """Markdown digest of the best-matching session (problem, decisions, outcome) for a prompt."""
        from deja.pipeline import api

        words = list(query or [])
        team = "--team" in words
        words = [w for w in words if w != "--team"]
        flags = [w for w in words if w.startswith("--")]
        if flags:
            raise Fail(f"ctx takes no flags but --team (got {flags[0]}); give it a query or a session id")
        if team:  # the team store's tables (deja team), not this machine's store
            from deja.pipeline import team as team_store

            if not words:
                raise Fail("ctx --team needs a query")
            sys.stdout.write(team_store.ctx(" ".join(words)))
            return
        try:
            digest = api.ctx(words, notice=say)
        except api.NotFound as exc:
            err(str(exc))
            return
        sys.stdout.write(digest)
