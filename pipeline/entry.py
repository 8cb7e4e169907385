"""The `deja` executable: a fast path for search, the typer app for the rest.

Search is what people and agents run most, and its budget is the whole
process (design.md §5). Importing typer costs more than the query itself, so
`deja search …` and bare words are parsed here with argparse; every other
command, and any --help, goes to the typer app in deja.pipeline.cli.
"""

from __future__ import annotations

import os
import sys

# Every typer command name; tests/test_cli.py keeps this in step with deja.pipeline.cli.
COMMANDS = frozenset({"index", "embed", "doctor", "search", "demo", "recover", "last", "show", "ctx",
                      "hook-context", "hook-prompt", "hook-tool", "hook-tool-after", "hook-precompact",
                      "install", "uninstall", "blame", "files", "how", "fix", "friction",
                      "remember", "promote", "forget", "stats", "view", "completion", "version",
                      "sources", "mcp", "serve", "resume", "handoff", "restore", "share", "sync", "team"})
# Agent hooks run on every session start, prompt and tool call (design.md §5: median
# ≤150 ms whole process): they bypass typer too and import only what they read.
HOOKS = frozenset({"hook-context", "hook-prompt", "hook-tool", "hook-tool-after", "hook-precompact"})
# Hooks that nearly always query the store: DuckDB warms up on a thread while
# they import (stages/store/duck.py). hook-context answers from its digest cache.
WARM_HOOKS = frozenset({"hook-prompt", "hook-tool"})


def _parser(prog: str):
    """argparse, imported here: the hooks' path never parses options with it."""
    import argparse

    class _Parser(argparse.ArgumentParser):
        def error(self, message):  # one line, exit 1, like every other deja error
            from deja.pipeline.errors import Fail

            raise Fail(message)

        def _get_formatter(self):
            # add_argument makes a formatter per option to check it, and one
            # left to find its width imports shutil and asks the terminal: this
            # parser prints no help (--help goes to the typer app)
            return self.formatter_class(prog=self.prog, width=80)

    return _Parser(prog=prog, add_help=False)


def _search_parser():
    p = _parser("deja search")
    p.add_argument("query", nargs="*")
    p.add_argument("--json", dest="as_json", action="store_true")
    p.add_argument("--harness")
    p.add_argument("--project")
    p.add_argument("--since")
    p.add_argument("--role")
    p.add_argument("--limit", type=int, default=15)
    p.add_argument("--all", dest="show_all", action="store_true")
    p.add_argument("--session")
    p.add_argument("--re", dest="regex", action="store_true")
    p.add_argument("--rebuild", action="store_true")
    p.add_argument("--no-embed", dest="no_embed", action="store_true")
    p.add_argument("--team", action="store_true")
    return p


def _fast_search(argv: list[str]) -> None:
    from deja.pipeline.cli_search import search_command

    ns, extra = _search_parser().parse_known_args(argv)
    unknown = [a for a in extra if a.startswith("-")]
    if unknown:
        from deja.pipeline.errors import Fail

        raise Fail(f"no such option: {unknown[0]}")
    search_command(ns.query + extra, ns.as_json, ns.harness, ns.project, ns.since, ns.role, ns.limit,
                ns.show_all, ns.session, ns.regex, ns.rebuild, no_embed=ns.no_embed, team=ns.team)


def _fast_index(argv: list[str]) -> None:
    """`deja index [--rebuild] [--json] [--prune-gone] [--embed]`: run often (shell profiles, after every
    turn), so it skips typer like search does."""
    from deja.stages.store.limits import one_arena

    one_arena()  # (before DuckDB, polars and pyarrow start their threads)
    from deja.pipeline.cli_index import index_command

    p = _parser("deja index")
    p.add_argument("--rebuild", action="store_true")
    p.add_argument("--json", dest="as_json", action="store_true")
    p.add_argument("--prune-gone", dest="prune_gone", action="store_true")
    p.add_argument("--embed", action="store_true")
    ns = p.parse_args(argv)
    index_command(ns.rebuild, ns.as_json, ns.prune_gone, ns.embed)


def _quick_exit() -> None:
    """A search or hook has said everything: leave without tearing the
    interpreter and DuckDB down (time their budgets need; a warm-up thread
    still inside DuckDB is simply stopped). Only the process's own entry point
    does this; a caller of main() in-process gets a normal return."""
    if not _ENTRY:
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:  # the reader closed the pipe (`| head`): it has what it wanted
        pass
    except Exception:
        return
    os._exit(0)


_ENTRY = False  # set by run(), the console script: main() called in-process returns


def run() -> None:
    global _ENTRY
    _ENTRY = True
    try:
        main()
    except SystemExit as exc:
        _flushed(exc.code if isinstance(exc.code, int) else 1)
        raise
    except BrokenPipeError:
        os._exit(0)
    _flushed(0)


def _flushed(code: int) -> None:
    """stdout flushed before the interpreter's own exit, which would print
    "Exception ignored … BrokenPipeError" and exit 120 when the reader closed
    the pipe (`deja last --json | head`): it has what it wanted."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        os._exit(code)
    except (OSError, ValueError):
        pass


# The variable the shell's completion script sets when it asks `deja` for completions.
COMPLETE_VAR = "_DEJA_COMPLETE"


def _manners(argv: list[str]) -> list[str]:
    """What every command shares before it runs: `--color` (any position,
    before a `--`), `--version`, the usage bare `deja` prints, and "did you
    mean" for a mistyped command. Returns the arguments left to dispatch."""
    from deja.pipeline import usage

    end = argv.index("--") if "--" in argv else len(argv)
    rest, i, mode = [], 0, None
    while i < len(argv):
        a = argv[i]
        if i < end and (a == "--color" or a.startswith("--color=")):
            mode = a.partition("=")[2] if "=" in a else (argv[i + 1] if i + 1 < end else "")
            i += 1 if "=" in a else 2
            continue
        rest.append(a)
        i += 1
    if mode is not None:
        from deja.pipeline.cli_common import COLOR_MODES, set_color

        if mode not in COLOR_MODES:
            _usage_error(f"--color takes auto, always or never (got {mode!r})")
        set_color(mode)
    if rest[:1] in (["--version"], ["-V"], ["version"]) and not any(a in ("-h", "--help") for a in rest):
        print(f"deja {usage.version()}")
        sys.exit(0)
    if not rest:
        sys.stdout.write(usage.USAGE)
        sys.exit(0)
    if rest[0] not in COMMANDS:
        meant = usage.did_you_mean(rest, COMMANDS - HOOKS)
        if meant:
            _usage_error(f"no command {rest[0]!r}; did you mean `{meant}`? (to search for the word: "
                         f"deja search {rest[0]})")
    return rest


def _served(argv: list[str]) -> bool:
    """A hook or hot command the warm server (deja serve) can answer: bare words are a search."""
    from deja.pipeline.serve_client import SERVED

    return argv[0] in SERVED or (argv[0] not in COMMANDS and not argv[0].startswith("-"))


def _usage_error(message: str) -> None:
    """A command line deja cannot take as meant: one line, exit 2 (the usual
    status for a usage mistake), nothing run."""
    print(f"deja: {message}", file=sys.stderr)
    sys.exit(2)


def main(argv: list[str] | None = None) -> None:
    # Allocators that give memory back, set before pyarrow/polars load: an index
    # run frees a flush's worth at a time and should not keep the high-water mark.
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    os.environ.setdefault("_RJEM_MALLOC_CONF", "dirty_decay_ms:0,muzzy_decay_ms:0")
    # numpy (under pyarrow, and a warm server's ranking) starts a BLAS thread
    # per core at import; deja multiplies no matrices, and a server must fork
    # with no thread alive
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    # What deja writes (the store, DuckDB's own files, notes, packets) is the
    # owner's alone, whatever the shell's umask (stages/store/private.py).
    os.umask(0o077)
    argv = list(sys.argv[1:] if argv is None else argv)
    if COMPLETE_VAR in os.environ:  # the shell asking for completions (deja completion): typer answers
        from deja.pipeline.cli import main as full

        full(argv)
        return
    if argv and argv[0].startswith("hook-") and argv[0] not in COMMANDS:
        # a hook this deja does not have (wired by another version or tool): an
        # agent runs it on every turn, and a hook never fails it nor talks
        # unasked; read as bare words it printed a search into the agent's context
        sys.exit(0)
    wants_help = any(a in ("-h", "--help") for a in argv)
    if _ENTRY and argv and not wants_help and _served(argv):
        from deja.pipeline import serve_client

        code = serve_client.request(argv, hook=argv[0] in HOOKS)
        if code is not None:  # the warm server ran it, writing to our stdout and stderr
            os._exit(0 if argv[0] in HOOKS else code)
    if argv and argv[0] in HOOKS and not wants_help:
        if argv[0] in WARM_HOOKS:
            from deja.stages.store import duck

            duck.warm_up()
        from deja.hooks.dispatch import run_hook

        code = run_hook(argv[0], argv[1:])  # always 0: a hook never blocks the agent
        _quick_exit()
        sys.exit(code)
    argv = _manners(argv)
    if argv and not wants_help and (argv[0] in ("search", "index") or argv[0] not in COMMANDS and not argv[0].startswith("-")):
        if argv[0] != "index":
            from deja.stages.store import duck

            duck.warm_up()  # DuckDB starts on a thread while the search imports the rest
        from deja.pipeline.errors import Fail

        try:
            if argv[0] == "index":
                _fast_index(argv[1:])
            else:
                _fast_search(argv[1:] if argv[0] == "search" else argv)
                _quick_exit()
        except Fail as exc:
            print(f"deja: {exc}", file=sys.stderr)
            sys.exit(exc.status)
        except KeyboardInterrupt:
            sys.exit(130)
        except BrokenPipeError:  # the reader closed the pipe (`| head`): it has what it wanted
            os._exit(0)
        except Exception as exc:  # never a traceback
            from deja.pipeline.cli_common import error_line

            print(f"deja: {error_line(exc)}", file=sys.stderr)
            if os.environ.get("DEJA_DEBUG"):
                raise
            sys.exit(1)
        return
    from deja.pipeline.cli import main as full

    full(argv)
