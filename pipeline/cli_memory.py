"""Curating memory and looking at it whole: remember, promote, forget, stats, view.

The work is behind deja.pipeline.api (deja.pipeline.curate writes notes,
lifecycle states and tombstones; deja.queries.stats counts); the drawings are
in deja.pipeline.stats_view.
"""

from __future__ import annotations

# typer reads the commands' annotations from this module's names
from typing import Optional  # noqa: F401
import os
import sys
from pathlib import Path

from deja.pipeline.cli_common import (
    HELP_HARNESS, HELP_JSON, HELP_PROJECT, HELP_SINCE, Fail, color_on, elide, err, out_json, say
)
from deja.stages.store import config


def _forget(session, project, before, dry_run: bool, all_matches: bool) -> None:
    from deja.pipeline import curate
    from deja.stages.display import local_day

    plan = curate.forget_plan(session, project, before, all_matches, os.environ, say)
    matches, packets = plan["sessions"], plan["packets"]
    if not matches and not packets:
        err("no session matches; nothing forgotten")
        return
    for m in matches:
        print(f"{m['key']}  {local_day(m['updated'] or m['started'])}  {m['project'] or ''}  "
              f"{elide(' '.join((m['title'] or '').split()), 60)}".rstrip())
    for p in packets:
        print(f"{p['key']}  {local_day(p['created'])}  {p['workspace']}  (compaction-recovery packet)")
    if dry_run:
        n = len(matches) + len(packets)
        err(f"would forget {n} session{'s' if n != 1 else ''} or packet{'s' if n != 1 else ''} "
            "(dry run: nothing changed)")
        return
    curate.forget_apply(plan, curate.forget_reason(session, project, before), os.environ, say)


def register(app) -> None:
    import typer

    @app.command("remember")
    def remember_cmd(
        text: list[str] = typer.Argument(..., metavar="TEXT", help="The note."),
        project: Optional[str] = typer.Option(None, "--project", help="Default: this folder's project (its git repository, else the folder)."),
        tag: Optional[list[str]] = typer.Option(None, "--tag", help="A label to find the note by, searchable as #tag; repeatable (e.g. --tag auth)."),
    ) -> None:
        """Append a durable note to your memory (notes.jsonl) and index it."""
        from deja.pipeline import api

        note = api.remember(text or [], project=project, tags=tag, reindex_now=False, notice=say)
        print(note["session"])
        err(f"noted for {note['project']} in {note['path']}")
        api.reindex("the note", notice=say)

    @app.command("promote")
    def promote_cmd(
        ident: str = typer.Argument(..., metavar="ID-PREFIX", help="The session's id, or the start of it."),
        state: str = typer.Option("accepted", "--state", help="What became of the session's conclusion: accepted, rejected, superseded or stale."),
        note: Optional[str] = typer.Option(None, "--note", help="Why: kept with the state and shown with every hit."),
        tag: Optional[list[str]] = typer.Option(None, "--tag", help="A label to find the note by; repeatable (e.g. --tag auth)."),
        to: Optional[Path] = typer.Option(None, "--to", help="Also append a Markdown block to this file."),
        harness: Optional[str] = typer.Option(None, "--harness", help=HELP_HARNESS),
    ) -> None:
        """Distil a session into a curated note with provenance and a lifecycle state."""
        from deja.pipeline import api

        done = api.promote(ident, state=state, note=note, tags=tag, to=to, harness=harness, reindex_now=False,
                           notice=say)
        print(f"{done['session']} marked {done['state']}" + (f": {done['note']}" if done["note"] else ""))
        api.reindex("the promoted note", notice=say)

    @app.command("forget")
    def forget_cmd(
        session: Optional[str] = typer.Option(None, "--session", help="A session id (prefix); harness:id works too."),
        project: Optional[str] = typer.Option(None, "--project", help="Every session of this project (its name, the end of its path, or a path)."),
        before: Optional[str] = typer.Option(None, "--before", help="Only sessions last active before this (30d, or a date)."),
        dry_run: bool = typer.Option(False, "--dry-run", help="List what would be forgotten; change nothing."),
        all_matches: bool = typer.Option(False, "--all-matches", help="An ambiguous --session prefix forgets every match."),
        list_: bool = typer.Option(False, "--list", help="Show the tombstones."),
        unforget: Optional[str] = typer.Option(None, "--unforget", metavar="HARNESS:ID", help="Lift one tombstone."),
    ) -> None:
        """Remove sessions from the index and write tombstones so re-indexing cannot bring them back."""
        from deja.pipeline import api

        if list_:
            rows = api.tombstones()
            for t in rows:
                print("  ".join(x for x in (t["session"], t["project"], t["created"], t["reason"]) if x))
            if not rows:
                err("no tombstones: nothing has been forgotten")
            return
        if unforget:
            key = api.unforget(unforget.strip().strip("'\"`"), reindex_now=False, notice=say)
            print(f"{key} unforgotten")
            err(f"re-reading the {key.split(':', 1)[0]} store to bring it back")
            api.reindex("the change", notice=say)
            return
        _forget(session, project, before, dry_run, all_matches)

    @app.command("stats")
    def stats_cmd(
        as_json: bool = typer.Option(False, "--json", help=HELP_JSON),
        harness: Optional[str] = typer.Option(None, "--harness", help=HELP_HARNESS),
        project: Optional[str] = typer.Option(None, "--project", help=HELP_PROJECT),
        since: Optional[str] = typer.Option(None, "--since", help=HELP_SINCE),
        card_file: Optional[Path] = typer.Argument(None, metavar="[FILE.svg]", help="With --card: write the card here as SVG."),
        card: bool = typer.Option(False, "--card", help="Draw a card in the terminal; `--card FILE.svg` writes it as SVG."),
        html_out: Optional[Path] = typer.Option(None, "--html", metavar="FILE", help="Write a browsable timeline (HTML)."),
        redaction: bool = typer.Option(False, "--redaction", help="How many secrets of each kind were redacted, per agent."),
    ) -> None:
        """What your memory holds: sessions, messages, activity, projects, recall."""
        from deja.pipeline import api, stats_view
        from deja.queries.stats import public_stats

        if redaction:
            red = api.redactions()
            if as_json:
                out_json(red)
            else:
                sys.stdout.write(stats_view.redaction_text(red))
            if not red["total"]:
                err("no secret was redacted in what the index holds")
            return

        api.check_harness(harness)
        if since:
            api.since_ms(since)
        if card_file is not None and not card:
            raise Fail(f"stats takes no argument {str(card_file)!r}; `--card FILE.svg` writes the card")
        st = api.stats(harness=harness, project=project, since=since, extras=True, timeline=bool(html_out),
                       notice=say)
        if html_out:
            page = stats_view.stats_html(st)
            html_out.parent.mkdir(parents=True, exist_ok=True)
            html_out.write_text(page, encoding="utf-8")
            err(f"timeline written to {html_out}")
        if card:
            if card_file is None:
                sys.stdout.write(stats_view.card_text(st))
            else:
                out = card_file
                if out.suffix.lower() != ".svg":
                    raise Fail("--card FILE writes SVG: give it a name ending in .svg")
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_text(stats_view.card_svg(st), encoding="utf-8")
                err(f"card written to {out}")
            if not as_json:
                return
        if as_json:
            out_json(public_stats(st))
        elif not html_out:
            sys.stdout.write(stats_view.stats_text(st, color=color_on()))
        if not st["total_sessions"]:
            filters = [f"{k} {v}" for k, v in (("--harness", harness), ("--project", project), ("--since", since)) if v]
            err("no session matches " + ", ".join(filters) if filters else "the index holds no sessions yet; run `deja index`")

    @app.command("view")
    def view_cmd(
        out: Optional[Path] = typer.Option(None, "--out", help="Where to write the HTML (default: beside the index)."),
        no_open: bool = typer.Option(False, "--no-open", help="Do not open it in a browser."),
    ) -> None:
        """The whole memory as one self-contained local HTML file."""
        from deja.pipeline import api, stats_view

        page = stats_view.view_html(api.view_sessions(notice=say))
        target = out or (config.index_dir() / "view.html")
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_text(page, encoding="utf-8")
        os.replace(tmp, target)
        print(str(target))
        if no_open or not (sys.stdout.isatty() and sys.stdin.isatty()):
            return
        import webbrowser

        try:
            if not webbrowser.open(target.resolve().as_uri()):
                err("no browser found; open the file yourself")
        except Exception:
            err("could not open a browser; open the file yourself")
