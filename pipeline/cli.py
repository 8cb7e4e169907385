"""The `deja` command: a thin typer layer over the library.

Results go to stdout, notices and progress to stderr. Every failure a user can
cause prints one line, ``deja: <message>``, and exits 1; never a traceback.
"""

from __future__ import annotations

import os
import sys
from typing import Optional

import typer

from deja.stages.store import config

app = typer.Typer(
    add_completion=False,
    no_args_is_help=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="A local memory for AI coding agents, built from the transcripts they already write.",
    pretty_exceptions_enable=False,
)


from deja.pipeline.console import (  # noqa: F401  (shared with the fast entry point)
    Fail,
    _elide,
    _err,
    _out_json,
    _print_hits,
    _refresh,
    _search_cmd,
    _since_ms,
    _term_width,
)


# ---------------------------------------------------------------------------
# index

from deja.pipeline.cli_index import _print_summary, _run_index, index_command  # noqa: E402,F401  (demo uses both)


@app.command()
def index(
    rebuild: bool = typer.Option(False, "--rebuild", help="Re-read every store from scratch."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Build or refresh the index in the foreground."""
    index_command(rebuild, as_json)


# ---------------------------------------------------------------------------
# doctor


@app.command()
def doctor(as_json: bool = typer.Option(False, "--json", help="Print the report as JSON.")) -> None:
    """Report each agent store, what the index holds, unreadable files, and the store's size."""
    from deja.pipeline.doctor import report, render

    rep = report(os.environ)
    if as_json:
        _out_json(rep)
    else:
        print(render(rep))


# ---------------------------------------------------------------------------
# search


@app.command("search")
def search_cmd(
    query: list[str] = typer.Argument(..., help="Words to find (all must appear); \"quoted\" for a phrase."),
    as_json: bool = typer.Option(False, "--json"),
    harness: Optional[str] = typer.Option(None, "--harness"),
    project: Optional[str] = typer.Option(None, "--project"),
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
    _search_cmd(query, as_json, harness, project, since, role, limit, show_all, session, regex, rebuild)


# ---------------------------------------------------------------------------
# demo


@app.command()
def demo() -> None:
    """Index the bundled sample transcripts into a temporary store and search them."""
    from deja.pipeline.demo import run_demo

    run_demo(_run_index, _search_cmd)


# ---------------------------------------------------------------------------
# recover


@app.command("recover")
def recover_cmd(
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output (phase 1 of the /recover skill)."),
    cwd: Optional[str] = typer.Option(None, "--cwd", help="The folder the session ran in (default: here)."),
    exclude: Optional[str] = typer.Option(None, "--exclude", help="The live session's id, never offered."),
    limit: Optional[int] = typer.Option(None, "--limit", help="How many sessions to list (1-50, default 5)."),
    harness: Optional[str] = typer.Option(None, "--harness", help="Only this agent's sessions."),
    session: Optional[str] = typer.Option(None, "--session", help="The session to rebuild, check or repair."),
    digest: bool = typer.Option(False, "--digest", help="Print the session's working-state digest (phase 2)."),
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
            from deja.hooks.install import install_skills

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


# last, show, ctx (logic in deja.queries.show and deja.queries.session_brief)


def _live_or_fail():
    from deja.stages.store.read import Busy, Damaged, NoIndex, open_live

    _refresh()  # reading commands answer from a fresh store (cli-contract §1)
    try:
        live = open_live(config.index_dir())
        if live.damage_notice():
            print(live.damage_notice(), file=sys.stderr)
        return live
    except (NoIndex, Damaged) as exc:
        raise Fail(str(exc))
    except Busy:
        raise Fail("the index is busy being written; try again in a moment")


def _check_harness(harness: Optional[str]) -> Optional[str]:
    """The harness id a --harness value names (`notes` is deja's own); unknown → error."""
    from deja.stages.sources import harnesses

    if harness == "notes" and "deja" in harnesses():
        return "deja"
    if harness and harness not in harnesses():
        raise Fail(f"unknown harness {harness!r} (known: {', '.join(harnesses())})")
    return harness


@app.command("last")
def last_cmd(
    n: Optional[int] = typer.Argument(None, metavar="N", help="How many sessions (default 10)."),
    as_json: bool = typer.Option(False, "--json"),
    project: Optional[str] = typer.Option(None, "--project", help="Project name contains this."),
    harness: Optional[str] = typer.Option(None, "--harness"),
    since: Optional[str] = typer.Option(None, "--since", help="Active within this long (7d, 12h, 90m)."),
    role: Optional[str] = typer.Option(None, "--role", help="Only sessions holding records of this role."),
    origin: Optional[str] = typer.Option(None, "--from", help="`local`, or the machine a session came from."),
) -> None:
    """Recent sessions, newest first."""
    from deja.queries import show as sh

    n = 10 if n is None else n
    if n < 1:
        raise Fail("last takes a number of sessions ≥ 1")
    harness = _check_harness(harness)
    if role and role not in sh.ROLE_COUNT:
        raise Fail(f"unknown role {role!r} (user, assistant, tool, tool-output, files, command, edit, summary)")
    since_ms = _since_ms(since) if since else None
    live = _live_or_fail()
    try:
        sessions = sh.last(live, n, harness, project, since_ms, role, origin)
        stored = sh.session_count(live) if not sessions else len(sessions)
    finally:
        live.close()
    if as_json:
        _out_json({"schema_version": 2, "sessions": sessions})
    else:
        width = _term_width()
        for s in sessions:
            print(sh.last_line(s, width))
    if not sessions:
        filters = [f"{k} {v}" for k, v in (("--project", project), ("--harness", harness), ("--since", since),
                                           ("--role", role), ("--from", origin)) if v]
        _err("no session matches " + ", ".join(filters) if stored and filters
             else "the index holds no sessions yet; run `deja index`")


@app.command("show")
def show_cmd(
    ident: str = typer.Argument(..., metavar="ID-PREFIX", help="The session's id, or the start of it."),
    harness: Optional[str] = typer.Option(None, "--harness"),
    as_json: bool = typer.Option(False, "--json", help="JSON (needs the exact id and --harness)."),
    offset: Optional[int] = typer.Option(None, "--offset", help="Skip this many messages."),
    limit: Optional[int] = typer.Option(None, "--limit", help="At most this many messages (JSON: 50, max 200)."),
) -> None:
    """Print one session: its messages, with commands, files and edits as compact lines."""
    from deja.queries import show as sh
    from deja.stages.sources import harnesses

    harness = _check_harness(harness)
    named, ident = sh.split_harness(sh.clean_id(ident), harnesses())
    if named and harness and named != harness:
        raise Fail(f"the id names harness {named!r} but --harness is {harness!r}")
    harness = harness or named
    if as_json:
        if not harness:
            raise Fail("show --json needs --harness <h> and the exact id (JSON names one session exactly)")
        limit = sh.JSON_LIMIT_DEFAULT if limit is None else limit
        if not 1 <= limit <= sh.JSON_LIMIT_MAX:
            raise Fail(f"--limit takes a number from 1 to {sh.JSON_LIMIT_MAX}")
    live = _live_or_fail()
    try:
        res = sh.resolve(live, ident, harness, exact=as_json)
        win = sh.window(live, res, offset or 0, limit, work=not as_json)
        parent, children = sh.spawn_edges(live, res)
    except sh.ShowError as exc:
        raise Fail(str(exc))
    finally:
        live.close()
    if res.notice:
        print(res.notice, file=sys.stderr)
    if as_json:
        _out_json(sh.show_json(res, win))
    else:
        sys.stdout.write(sh.render_text(res, win, tty=sys.stdout.isatty()))
        if (offset is not None or limit is not None) and win.messages:
            print(f"messages {win.offset + 1}–{win.offset + len(win.messages)} of {win.total}", file=sys.stderr)
        elif offset is not None or limit is not None:
            print(f"no messages from offset {win.offset} (the session has {win.total})", file=sys.stderr)
        elif win.total > sh.TEXT_MENTION_FLAGS_ABOVE:
            print(f"{win.total} messages; --offset N --limit N prints a slice", file=sys.stderr)
    if parent:
        title = " ".join((parent.get("title") or "").split())
        print(f"spawned from {parent['harness']} {parent['session_id']}" + (f" ({_elide(title, 60)})" if title else ""),
              file=sys.stderr)
    if children:
        listed = ", ".join(c["session_id"] for c in children[:5]) + (", …" if len(children) > 5 else "")
        print(f"spawned {len(children)} session{'s' if len(children) != 1 else ''}: {listed}", file=sys.stderr)


@app.command("ctx", context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
def ctx_cmd(
    query: Optional[list[str]] = typer.Argument(None, metavar="QUERY|ID-PREFIX"),
) -> None:
    """Markdown digest of the best-matching session (problem, decisions, outcome) for a prompt."""
    from deja.queries import session_brief as cx
    from deja.stages.sources import harnesses

    words = list(query or [])
    flags = [w for w in words if w.startswith("--")]
    if flags:
        raise Fail(f"ctx takes no flags (got {flags[0]}); give it a query or a session id")
    text = " ".join(words).strip()
    if not text:
        raise Fail("ctx needs a query or a session id")
    live = _live_or_fail()
    try:
        try:
            res, notes, nearest = cx.find(live, text, harnesses())
            digest = cx.build(live, res, nearest)
        except cx.CtxNotFound as exc:
            _err(str(exc))
            return
        except ValueError as exc:
            raise Fail(str(exc))
    finally:
        live.close()
    for note in notes:
        print(note, file=sys.stderr)
    sys.stdout.write(digest)


# ---------------------------------------------------------------------------


# Command groups that live in their own modules register themselves on `app`.
# Each module holds `from .cli import app, Fail, ...` and decorates its commands.
for _mod in ("deja.pipeline.cli_work", "deja.pipeline.cli_memory", "deja.pipeline.cli_hooks"):
    try:
        __import__(_mod)
    except ModuleNotFoundError as _exc:
        if _exc.name != _mod:
            raise


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    commands = {c.name or c.callback.__name__ for c in app.registered_commands}
    # `deja <words>` searches unless the first word is a command
    if argv and argv[0] not in commands and argv[0] not in ("-h", "--help"):
        argv.insert(0, "search")
    try:
        app(argv, prog_name="deja", standalone_mode=False)
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
        from deja.pipeline.console import error_line
        from deja.stages.store.catalog import StoreError

        _err(str(exc) if isinstance(exc, StoreError) else error_line(exc))
        if os.environ.get("DEJA_DEBUG"):
            raise
        sys.exit(1)
