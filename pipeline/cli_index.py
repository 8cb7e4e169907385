"""`deja index` without typer: it runs often (shell profiles, after every turn),
and an up-to-date store should answer before the pipeline is even loaded."""

from __future__ import annotations

import os
import sys

from deja.stages.store import config
from deja.pipeline.console import Fail, _err, _out_json


# The exit status of a run whose commit landed but whose cleanup or compaction
# failed (a full disk): the index is updated and readable; 1 means nothing was.
COMMITTED_BUT_UNFINISHED = 3


def index_command(rebuild: bool, as_json: bool) -> None:
    from deja.stages.store import duck

    con = duck.connect()  # one DuckDB instance for the check and the run (~20 ms each)
    if not rebuild:
        # nothing to do is the common case: answer it without loading the pipeline
        from deja.pipeline.fresh import pending
        from deja.stages.store.catalog import Store

        skipped: list[str] = []  # unreadable folders, dangling links: said on every run, not only busy ones
        try:
            state = pending(os.environ, con, problems=skipped)
        except OSError:  # an index path that is a file, a folder we may not read: the run says which
            state = None
        if state is not None and not state[0] and state[2] and not Store(config.index_dir()).writer_running():
            if as_json:
                _out_json({"up_to_date": True, "sessions": state[1], "seconds": 0.0, "harnesses": [], "errors": skipped})
            else:
                for e in skipped[:10]:
                    _err(e)
                print(f"up to date ({state[1]} sessions)", file=sys.stderr)
            return
    summary = _run_index(rebuild=rebuild, show_progress=not as_json, con=con)
    if as_json:
        _out_json(summary.as_json())
        return
    _print_summary(summary)


def _run_index(rebuild: bool = False, env=None, show_progress: bool = True, con=None):
    from deja.pipeline.run import run_index
    from deja.stages.store.catalog import Busy

    env = os.environ if env is None else env
    progress = None
    bar = None
    if show_progress and sys.stderr.isatty():
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        bar = Progress(
            TextColumn("indexing"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
            transient=True, console=_stderr_console(),
        )
        task = None

        def progress(done, total, path):
            nonlocal task
            if task is None:
                bar.start()
                task = bar.add_task("index", total=total)
            bar.update(task, completed=done)

    from deja.pipeline.run import DiskFull
    from deja.stages.store.catalog import StoreError

    try:
        return run_index(env, rebuild=rebuild, progress=progress, notice=_err, con=con)
    except Busy as exc:
        raise Fail(f"{exc}; try again when it finishes")
    except StoreError as exc:
        raise Fail(str(exc))
    except DiskFull as exc:
        fail = Fail(str(exc))
        fail.status = COMMITTED_BUT_UNFINISHED if exc.committed else 1
        raise fail
    finally:
        if bar is not None:
            bar.stop()


def _stderr_console():
    from rich.console import Console

    return Console(stderr=True)


def _print_summary(summary) -> None:
    if summary.up_to_date:
        print(f"up to date ({summary.sessions} sessions)", file=sys.stderr)
        return
    for hs in summary.harnesses.values():
        if not hs.files and not hs.sessions:
            continue
        line = (
            f"{hs.harness}: {hs.sessions} sessions, {hs.messages} messages, "
            f"{hs.redactions} redactions ({hs.read} of {hs.files} files read"
        )
        line += f", {hs.malformed} malformed lines or values" if hs.malformed else ""
        line += f", {hs.failed} unreadable" if hs.failed else ""
        line += f", {hs.changed_while_read} changed while read" if hs.changed_while_read else ""
        print(line + ")")
    if not summary.harnesses or not any(h.files for h in summary.harnesses.values()):
        print("no agent stores found (looked for Claude Code and Codex)", file=sys.stderr)
    for e in summary.errors[:10]:
        _err(e)
    for r in summary.repaired[:10]:
        _err(r)
    print(f"indexed in {summary.seconds:.1f}s", file=sys.stderr)


