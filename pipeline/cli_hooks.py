"""Agent hooks and their wiring: `deja hook-*` (hidden) and `deja install/uninstall`.

The hooks normally run through the fast path in deja.pipeline.entry (no typer import);
these typer commands exist so `python -m deja hook-…` and the command list
stay whole. Both call deja.hooks.dispatch.run_hook.
"""

from __future__ import annotations

# typer reads the commands' annotations from this module's names
from typing import Optional  # noqa: F401
import os
import sys

from deja.pipeline.cli_common import HELP_JSON, Fail, out_json
from deja.stages.store import config


def _hook(name: str, plain: bool = False, once: bool = False, harness: str | None = None) -> None:
    import typer

    from deja.hooks.dispatch import run_hook

    args = (["--plain"] if plain else []) + (["--once"] if once else []) + (["--harness", harness] if harness else [])
    raise typer.Exit(run_hook(name, args))


def _targets(target, auto, all_):
    from deja.hooks import install as ins

    env = os.environ
    try:
        return ins, env, config.home(env), ins.resolve_targets(target, auto, all_, config.home(env), env)
    except ins.InstallError as exc:
        raise Fail(str(exc))


def _kept_json(r) -> dict:
    return {"path": str(r.path), "changed": r.changed, "notes": r.notes}


def _report(results, verb: str, as_json: bool, extra: dict | None = None) -> None:
    failed = [r for r in results if r.failed]
    if as_json:
        out_json({"schema_version": 2, **(extra or {}), "targets": [
            {"target": r.target, "path": str(r.path), "changed": r.changed, "events": r.events, "notes": r.notes,
             **({"error": r.failed} if r.failed else {})}
            for r in results]})
        if failed:
            raise SystemExit(1)  # each failure is already its one line
        return
    for r in results:
        if r.failed:  # left untouched; the other agents were still done
            print(f"deja: {r.target}: {r.failed}", file=sys.stderr)
        elif r.changed:
            print(f"{r.target}: {verb} {', '.join(r.events) or 'nothing'} in {r.path}")
        elif verb != "wired":
            print(f"{r.target}: no deja hooks in {r.path}")
        elif r.events:  # none: the notes say why nothing was wired
            print(f"{r.target}: {r.path} already up to date")
        for n in r.notes:
            print(n, file=sys.stderr)
    if failed:
        raise SystemExit(1)  # each failure is already its one line


def register(app) -> None:
    import typer

    @app.command("hook-context", hidden=True)
    def hook_context(plain: bool = typer.Option(False, "--plain"), once: bool = typer.Option(False, "--once"),
                     harness: Optional[str] = typer.Option(None, "--harness")) -> None:
        """SessionStart: the project's digest."""
        _hook("hook-context", plain, once, harness)


    @app.command("hook-prompt", hidden=True)
    def hook_prompt(plain: bool = typer.Option(False, "--plain"), harness: Optional[str] = typer.Option(None, "--harness")) -> None:
        """UserPromptSubmit: recall for the prompt's ask."""
        _hook("hook-prompt", plain, harness=harness)


    @app.command("hook-tool", hidden=True)
    def hook_tool(plain: bool = typer.Option(False, "--plain"), harness: Optional[str] = typer.Option(None, "--harness")) -> None:
        """PreToolUse: one line about the file's or command's history."""
        _hook("hook-tool", plain, harness=harness)


    @app.command("hook-tool-after", hidden=True)
    def hook_tool_after(plain: bool = typer.Option(False, "--plain"), harness: Optional[str] = typer.Option(None, "--harness")) -> None:
        """PostToolUse: the error→fix pair on file for a failed command."""
        _hook("hook-tool-after", plain, harness=harness)


    @app.command("hook-precompact", hidden=True)
    def hook_precompact(harness: Optional[str] = typer.Option(None, "--harness")) -> None:
        """PreCompact: forget what this session was shown."""
        _hook("hook-precompact", harness=harness)

    @app.command("install")
    def install_cmd(
        target: Optional[str] = typer.Argument(None, help="claude, codex, gemini, qwen, kimi, cursor, opencode, grok or copilot (or use --auto / --all)."),
        auto: bool = typer.Option(False, "--auto", help="Every agent found on this machine."),
        all_: bool = typer.Option(False, "--all", help="Claude Code, Codex and every other agent set up here."),
        no_guidance: bool = typer.Option(False, "--no-guidance", help="Write no usage block into the agents' instruction files and no deja usage skill."),
        keep_history: Optional[int] = typer.Option(
            None, "--keep-history", metavar="DAYS",
            help="Raise Claude Code's cleanupPeriodDays to DAYS so it deletes transcripts later "
                 "(e.g. --keep-history 365); alone, it wires nothing."),
        as_json: bool = typer.Option(False, "--json", help=HELP_JSON),
    ) -> None:
        """Wire deja's hooks, its MCP server, a usage block and skill, and the /recover skill into your agents.

        Example: deja install --auto --keep-history 365
        """
        kept = None
        if keep_history is not None:  # first: a backup install takes then holds the raised setting
            from deja.hooks import install as ins

            try:
                kept = ins.keep_history(keep_history, config.home(os.environ), os.environ)
            except ins.InstallError as exc:
                raise Fail(str(exc))
            if not (target or auto or all_):
                if as_json:
                    out_json({"schema_version": 2, "keep_history": _kept_json(kept), "targets": []})
                else:
                    print(*kept.notes, file=sys.stdout if kept.changed else sys.stderr)
                return
        ins, env, home, targets = _targets(target, auto, all_)
        try:
            results = ins.install(targets, home, env, offer=kept is None, guidance=not no_guidance)
        except ins.InstallError as exc:
            raise Fail(str(exc))
        if kept is not None and not as_json:
            print(*kept.notes, file=sys.stdout if kept.changed else sys.stderr)
        _report(results, "wired", as_json, {"keep_history": _kept_json(kept)} if kept else None)


    @app.command("uninstall")
    def uninstall_cmd(
        target: Optional[str] = typer.Argument(None, help="claude, codex, gemini, qwen, kimi, cursor, opencode, grok or copilot (or use --auto / --all)."),
        auto: bool = typer.Option(False, "--auto", help="Every agent found on this machine."),
        all_: bool = typer.Option(False, "--all", help="Claude Code, Codex and every other agent set up here."),
        as_json: bool = typer.Option(False, "--json", help=HELP_JSON),
    ) -> None:
        """Remove deja's hooks, MCP entries, usage blocks and skills from your agents.

        A settings file is put back byte for byte when deja's entries were its only
        change, and deleted when deja created it; otherwise only deja's entries go.
        Example: deja uninstall --all
        """
        ins, env, home, targets = _targets(target, auto, all_)
        try:
            results = ins.uninstall(targets, home, env)
        except ins.InstallError as exc:
            raise Fail(str(exc))
        _report(results, "removed", as_json)
