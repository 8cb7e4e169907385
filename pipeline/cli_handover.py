"""Handing a session on: `deja resume`, `deja handoff`, `deja restore`, `deja share`
(logic behind deja.pipeline.api: deja.pipeline.handover, deja.queries.restore,
deja.queries.session_brief)."""

from __future__ import annotations

# typer reads the commands' annotations from this module's names
from typing import Optional  # noqa: F401
import os
import sys

from deja.pipeline.cli_common import HELP_HARNESS, HELP_JSON, Fail, out_json, say


def register(app) -> None:
    import typer

    @app.command("resume")
    def resume_cmd(
        ident: str = typer.Argument(..., metavar="ID-PREFIX", help="The session's id, the start of it, or harness:id."),
        harness: Optional[str] = typer.Option(None, "--harness", help=HELP_HARNESS),
        print_only: bool = typer.Option(False, "--print", help="Only print the command (cd into its folder, then the agent's resume)."),
        run: bool = typer.Option(False, "--exec", help="Run it even when not on a terminal."),
        as_json: bool = typer.Option(False, "--json", help=HELP_JSON),
    ) -> None:
        """Reopen a session in its own agent and folder with the agent's resume command (e.g. `claude --resume <id>`)."""
        from deja.pipeline import api

        plan = api.resume(ident, harness=harness, notice=say)
        if as_json:
            out_json({"schema_version": 2, **plan})
            return
        if print_only or not (run or (sys.stdin.isatty() and sys.stdout.isatty())):
            print(plan["shell"])
            return
        import shutil

        if not shutil.which(plan["argv"][0]):
            raise Fail(f"{plan['argv'][0]} is not on PATH here; run it where it is installed: {plan['shell']}")
        print(plan["shell"], file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
        if plan["cwd"]:
            os.chdir(plan["cwd"])
        try:
            os.execvp(plan["argv"][0], plan["argv"])
        except OSError as exc:
            raise Fail(f"cannot start {plan['argv'][0]}: {exc.strerror}")

    @app.command("handoff")
    def handoff_cmd(
        ident: Optional[str] = typer.Argument(None, metavar="[ID-PREFIX]", help="The session to hand on (default: the one last active in this folder)."),
        to: str = typer.Option(..., "--to", metavar="AGENT", help="The agent to continue in: claude, codex, gemini, qwen or cursor."),
        harness: Optional[str] = typer.Option(None, "--harness", help=HELP_HARNESS),
        cwd: Optional[str] = typer.Option(None, "--cwd", help="The folder the session ran in (default: here)."),
        budget: Optional[int] = typer.Option(None, "--budget", help="Size of the working state in characters (default 8000)."),
        print_only: bool = typer.Option(False, "--print", help="Print the prompt on stdout instead of writing a file."),
        as_json: bool = typer.Option(False, "--json", help=HELP_JSON),
    ) -> None:
        """Pack a session's working state as the first prompt of another agent, and print the command that starts it."""
        from deja.pipeline import api

        res = api.handoff(to, ident, harness=harness, cwd=cwd, budget=budget, write=not print_only, notice=say)
        if as_json:
            out_json({"schema_version": 2, **res})
        elif print_only:
            sys.stdout.write(res["prompt"] if res["prompt"].endswith("\n") else res["prompt"] + "\n")
        else:
            src = res["from"]
            print(f"handoff of {src['harness']} {src['id']} written to {res['file']}; start {res['to']} with:",
                  file=sys.stderr)
            print(res["command"])

    @app.command("restore")
    def restore_cmd(
        path: str = typer.Argument(..., metavar="PATH", help="The file whose replaced text you want back."),
        edit: Optional[int] = typer.Option(None, "--edit", "--span", metavar="N", help="Print the text edit N replaced (1 = newest; the list numbers them)."),
        out: Optional[str] = typer.Option(None, "-o", "--out", metavar="FILE", help="Write it to FILE, a new file (never over an existing one)."),
        as_json: bool = typer.Option(False, "--json", help=HELP_JSON),
    ) -> None:
        """List the edits agents made to a file, newest first, and hand back the text one replaced."""
        from deja.pipeline import api
        from deja.stages.display import one_line

        res = api.restore(path, edit=edit, out=out, notice=say)
        edits = res["edits"]
        if as_json:
            out_json({"schema_version": 2, **res})
        elif out is not None:
            e = edits[0]
            print(f"wrote the {e['lines']} line(s) edit {edit} replaced to {res['written']}", file=sys.stderr)
        elif edit is not None:
            text = edits[0]["text"]
            sys.stdout.write(text if text.endswith("\n") else text + "\n")
        elif edits:
            for e in edits:
                s = e["session"] or {}
                where = f"{s.get('harness', '?')} {s.get('id', '?')}"
                flag = "  (holds redacted values)" if e["redacted"] else ""
                first = one_line(e["text"], 60)
                print(f"{e['n']:>3}  {e['time'][:16].replace('T', ' ')}  {where}  "
                      f"{e['lines']} line(s): {first}{flag}")
            print(f"`deja restore {path} --edit N` prints one; -o FILE writes it to a new file", file=sys.stderr)
        else:
            print(f"deja: no recorded edit replaced text in {res['file']}", file=sys.stderr)

    @app.command("share")
    def share_cmd(
        ident: str = typer.Argument(..., metavar="ID-PREFIX", help="The session's id, the start of it, or harness:id."),
        harness: Optional[str] = typer.Option(None, "--harness", help=HELP_HARNESS),
        out: Optional[str] = typer.Option(None, "-o", "--out", metavar="FILE", help="Write the markdown to FILE instead of stdout."),
    ) -> None:
        """A session as sanitised markdown for a colleague: conversation, decisions, files, commands; secrets redacted."""
        from deja.pipeline import api

        md = api.share(ident, harness=harness, notice=say)
        if out is None:
            sys.stdout.write(md)
            return
        try:
            with open(os.path.expanduser(out), "w", encoding="utf-8") as fh:
                fh.write(md)
        except OSError as exc:
            raise Fail(f"cannot write {out}: {exc.strerror}")
        print(f"wrote {out}", file=sys.stderr)
