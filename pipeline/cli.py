"""The `deja` command: a thin typer layer over the library.

Results go to stdout, notices and progress to stderr. Every failure a user can
cause prints one line, ``deja: <message>``, and exits 1; never a traceback.
"""

from __future__ import annotations

import os
import sys
from typing import Optional

import typer

from deja.pipeline import cli_handover, cli_hooks, cli_index, cli_memory, cli_search, cli_sessions, cli_sync, cli_team, cli_work
from deja.pipeline.cli_common import HELP_HARNESS, HELP_JSON, Fail, err as _err, out_json as _out_json  # (the recover command's names)
from deja.stages.store import config

app = typer.Typer(
    add_completion=True,  # --install-completion / --show-completion; `deja completion SHELL` prints the script
    no_args_is_help=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="A local memory for AI coding agents, built from the transcripts they already write. "
         "`deja <words>` searches every session (e.g. `deja connection pool exhausted`).",
    epilog="Every command also takes --color auto|always|never (NO_COLOR=1 turns colour off); "
           "`deja --version` prints the version.",
    pretty_exceptions_enable=False,
)


# ---------------------------------------------------------------------------
# recover


def recover_cmd(
    as_json: bool = typer.Option(False, "--json", help=HELP_JSON),
    cwd: Optional[str] = typer.Option(None, "--cwd", help="The folder the session ran in (default: here)."),
    exclude: Optional[str] = typer.Option(None, "--exclude", help="A session id never to offer (the one you are in now)."),
    limit: Optional[int] = typer.Option(None, "--limit", help="How many sessions to list (1-50, default 5)."),
    harness: Optional[str] = typer.Option(None, "--harness", help=HELP_HARNESS),
    session: Optional[str] = typer.Option(None, "--session", help="The session to rebuild, check or repair."),
    digest: bool = typer.Option(False, "--digest", help="Print what the session was doing: its goal, files, last steps (needs --session)."),
    budget: Optional[int] = typer.Option(None, "--budget", help="Digest size in characters (default 8000)."),
    check: bool = typer.Option(False, "--check", help="Report crash damage in the session's transcript."),
    repair: bool = typer.Option(False, "--repair", help="Write a repaired copy of the transcript to --out."),
    out: Optional[str] = typer.Option(None, "--out", help="Where --repair writes (a new file)."),
    install_skill: bool = typer.Option(False, "--install-skill", hidden=True),
) -> None:
    """Find the session last active in this folder and rebuild its working state after a crash."""
    from deja.queries import recover as rc
    from deja.queries import recover_repair as rr

    env = os.environ
    try:
        if install_skill:
            from deja.hooks.install_skills import install_skills

            written = install_skills(config.home(env), env=env)
            print("\n".join(map(str, written)) or "the /recover skill is up to date")
            return
        where = rc.resolve_cwd(cwd)
        limit = rc.DEFAULT_LIMIT if limit is None else limit
        budget = rc.DEFAULT_BUDGET if budget is None else budget
        if not session:
            if digest or check or repair:
                raise Fail("--digest, --check and --repair need --session <id> (list them with --json)")
            if not 1 <= limit <= 50:
                raise Fail("--limit takes a number from 1 to 50")
            listing = rc.find_candidates(where, env, exclude, harness, limit)
            if as_json:
                _out_json(rc.listing_json(listing))
            elif listing.entries:
                print(rc.render_listing(listing))
            for note in listing.notes:
                _err(note)
            if not listing.entries:
                _err(rc.nothing_found(listing))
            return
        if digest + check + repair != 1:
            raise Fail("--session takes one of --digest, --check or --repair")
        cand, mod, notice = rc.resolve_session(session, where, env, harness)
        if notice:
            _err(notice)
        if digest:
            state = mod.recover_state(cand.path, cand.session_id)
            result = rc.build_digest(state, budget)
            if as_json:
                _out_json(rc.digest_json(cand, result, budget))
            else:
                sys.stdout.write(result.text)
        elif check:
            problems = rr.check(cand, mod)
            if as_json:
                _out_json(rr.check_json(cand, problems))
            else:
                print(rr.render_check(cand, problems))
        else:
            if not out:
                raise Fail("--repair needs --out FILE (the original is never touched)")
            fixes, new_id = rr.repair(cand, mod, out)
            if as_json:
                _out_json(rr.repair_json(cand, out, fixes, new_id))
            else:
                print(rr.render_repair(cand, out, fixes, new_id))
    except rc.RecoverError as exc:
        raise Fail(str(exc))


# ---------------------------------------------------------------------------
# completion, version


def completion_cmd(
    shell: str = typer.Argument(..., metavar="bash|zsh|fish",
                                help="The shell to complete in, e.g. `eval \"$(deja completion bash)\"` in ~/.bashrc."),
) -> None:
    """Print a shell completion script (commands, options, values) for bash, zsh or fish."""
    from typer._completion_shared import get_completion_script

    from deja.pipeline.entry import COMPLETE_VAR

    if shell not in ("bash", "zsh", "fish"):
        raise Fail(f"completion takes bash, zsh or fish (got {shell!r})")
    sys.stdout.write(get_completion_script(prog_name="deja", complete_var=COMPLETE_VAR, shell=shell).strip() + "\n")


def mcp_cmd() -> None:
    """Serve deja to an agent over MCP on stdin/stdout: recall, recall_context, blame, fix, how,
    remember, and recent sessions as resources (`deja install` wires it into each agent)."""
    from deja.pipeline import mcp_server

    mcp_server.serve()


def serve_cmd() -> None:
    """Keep deja warm for the hooks and the hot commands (search, last, show, ctx, blame, how,
    fix): they hand their work to this process. Started on demand by the first of them; exits
    after DEJA_SERVE_IDLE seconds without a request (default 1800). DEJA_SERVE=off disables it."""
    from deja.pipeline import serve

    raise typer.Exit(serve.serve())


def version_cmd() -> None:
    """Print deja's version (same as `deja --version`)."""
    from deja.pipeline.usage import version

    print(f"deja {version()}")


# ---------------------------------------------------------------------------
# every command, in the order `deja --help` lists them; each module registers its own

cli_index.register(app)  # index, doctor
cli_search.register(app)  # search, demo
app.command("recover")(recover_cmd)
cli_sessions.register(app)  # last, show, ctx
cli_handover.register(app)  # resume, handoff, restore, share
cli_work.register(app)  # blame, files, how, fix, friction
cli_memory.register(app)  # remember, promote, forget, stats, view
cli_sync.register(app)  # sync
cli_team.register(app)  # team
cli_hooks.register(app)  # hook-*, install, uninstall
app.command("mcp")(mcp_cmd)
app.command("serve")(serve_cmd)
app.command("completion")(completion_cmd)
app.command("version")(version_cmd)


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    commands = {c.name or c.callback.__name__ for c in app.registered_commands}
    # `deja <words>` searches unless the first word is a command
    if argv and argv[0] not in commands and argv[0] not in ("-h", "--help"):
        argv.insert(0, "search")
    try:
        code = app(argv, prog_name="deja", standalone_mode=False)
        if isinstance(code, int) and code:  # (typer.Exit(n) comes back as n without standalone mode)
            sys.exit(code)
    except Fail as exc:
        _err(str(exc))
        sys.exit(exc.status)
    except SystemExit:
        raise
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:  # usage errors and anything unforeseen: one line, not a traceback
        if hasattr(exc, "format_message"):  # click's (vendored by typer) usage errors
            _err(exc.format_message())
            sys.exit(1)
        if type(exc).__name__ == "Abort":
            sys.exit(1)
        from deja.pipeline.cli_common import error_line
        from deja.stages.store.catalog import StoreError

        _err(str(exc) if isinstance(exc, StoreError) else error_line(exc))
        if os.environ.get("DEJA_DEBUG"):
            raise
        sys.exit(1)
