"""Reader processes for a big run: files fan out to a few worker processes
and their outputs come back in plan order.

The processes die with the run. A ProcessPoolExecutor's workers outlived a
killed run: each held the write end of its own job queue, so it
never saw the end of its input, and the forkserver and its resource tracker
stay up while any child holds their pipes. Here each worker has a pipe of its
own to the run, and a thread that blocks on a second pipe whose only writer is
the run: when the run ends for any reason (done, an exception, SIGTERM,
SIGKILL) the kernel closes it and the worker exits at once, even mid-file;
then the forkserver and the resource tracker see their pipes close and exit
too. (PR_SET_PDEATHSIG would not do: a worker's parent is the forkserver,
which lives as long as the workers do.) Pipes hold no named semaphores, so
a killed run leaves the resource tracker nothing to warn about.

forkserver: workers start from a small process that preloaded the readers,
not a copy of the run (which holds pyarrow, polars, DuckDB and their threads).
The forkserver's stderr is /dev/null (``_start_forkserver``): a run killed
while a worker was being started left that worker to print the forkserver's
"EOFError: Ran out of input" traceback on the person's terminal. A worker
says what went wrong through its pipe; the run says it in one line.
"""

from __future__ import annotations

import os
import threading
from typing import Iterator, Sequence


class ReaderDied(RuntimeError):
    """A reader process ended without answering (killed, out of memory)."""


CHUNK_BYTES, CHUNK_JOBS = 256 << 10, 64


def read_in_processes(jobs: Sequence[tuple], workers: int, window: int, preload: list[str],
                      weight=None) -> Iterator:
    """``ingest.process_file(*job, True)`` for each job, in order, in ``workers``
    processes; at most ``window`` chunks are read ahead of the one the caller
    takes, so memory stays per-file, not per-corpus.

    Consecutive small jobs (``weight``: the bytes a job reads; without it, each
    job goes alone) go to a worker together, up to ``CHUNK_BYTES``: a round trip per file (a pickle each way,
    two thread hand-offs) cost more than reading a transcript of a few lines,
    and 50,000 of them left both workers idle two thirds of the time."""
    import multiprocessing as mp
    from multiprocessing.connection import wait

    chunks = _chunks(jobs, weight) if weight else [[i] for i in range(len(jobs))]
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload([__name__, *preload])
    _start_forkserver()
    alive_r, alive_w = ctx.Pipe(duplex=False)
    procs, conns = [], []
    cond = threading.Condition()
    done: dict[int, tuple] = {}
    running: dict = {}  # conn → the job it reads
    idle: list = []
    st = {"next": 0, "taken": 0, "closing": False, "died": None}

    def dispatch(conn) -> None:  # (holding cond)
        j = st["next"]
        if j < len(chunks) and j < st["taken"] + window:
            try:
                conn.send([jobs[i] for i in chunks[j]])
            except OSError:  # (a BrokenPipeError must not pass for a closed stdout)
                died(conn)
                return
            running[conn] = j
            st["next"] = j + 1
        else:
            idle.append(conn)

    def died(conn, why: str = "") -> None:  # (holding cond)
        if not why:
            p = procs[conns.index(conn)]
            p.join(1)
            why = _ended(p.exitcode)
        st["died"] = st["died"] or why
        cond.notify_all()

    def collect() -> None:
        # outputs are read as they come, on a thread: a worker's send blocks
        # until the run takes it, and the run's main thread is busy flushing
        live = list(conns)
        while live:
            for conn in wait(live):
                why = ""
                try:
                    got = conn.recv()
                except (EOFError, OSError):
                    got = None
                except Exception as exc:  # (an output that does not unpickle: the run must not wait forever)
                    got, why = None, f"a reader's output could not be read: {type(exc).__name__}: {exc}"
                with cond:
                    if st["closing"]:
                        return
                    if got is None:
                        died(conn, why)
                        return
                    done[running.pop(conn)] = got
                    dispatch(conn)
                    if st["next"] >= len(chunks) and conn in idle and not running:
                        live = []
                    cond.notify_all()

    collector = threading.Thread(target=collect, name="deja-readers", daemon=True)
    try:
        for _ in range(workers):
            here, there = ctx.Pipe()
            p = ctx.Process(target=_serve, args=(there, alive_r), daemon=True, name="deja-reader")
            p.start()
            there.close()
            procs.append(p)
            conns.append(here)
        alive_r.close()  # the workers hold it now; the run keeps only the write end
        with cond:
            for conn in conns:
                dispatch(conn)
        collector.start()
        for j in range(len(chunks)):
            with cond:
                while j not in done and st["died"] is None:
                    cond.wait()
                if st["died"] is not None:
                    raise ReaderDied(st["died"])
                outs = done.pop(j)
                st["taken"] = j + 1
                for conn in idle[:]:
                    idle.remove(conn)
                    dispatch(conn)
            for ok, out in outs:
                if not ok:
                    raise out
                yield out
            del outs
    finally:
        with cond:
            st["closing"] = True
        alive_w.close()  # every worker exits now, even one mid-file
        for p in procs:
            p.join(5)
            if p.exitcode is None:
                p.kill()
                p.join()
        if collector.is_alive():  # (it sees the workers' pipes close)
            collector.join(5)
        for conn in conns:
            conn.close()


def _chunks(jobs: Sequence[tuple], weight) -> list[list[int]]:
    """Job numbers in order, grouped: a job of ``CHUNK_BYTES`` or more alone."""
    chunks: list[list[int]] = []
    size = CHUNK_BYTES
    for i, job in enumerate(jobs):
        w = max(weight(job), 0)
        if size + w > CHUNK_BYTES or len(chunks[-1]) >= CHUNK_JOBS:
            chunks.append([])
            size = 0
        chunks[-1].append(i)
        size += w
    return chunks


def _start_forkserver() -> None:
    """The forkserver (and its resource tracker) started with stderr, and so
    its workers', on /dev/null: they inherit the run's file descriptors as
    they are when they start. (Once a process: when it runs, this checks.)"""
    from multiprocessing import forkserver

    saved = os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        forkserver.ensure_running()
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


def _ended(code: int | None) -> str:
    import signal

    if code is not None and code < 0:
        try:
            return f"a reader process was killed ({signal.Signals(-code).name})"
        except ValueError:
            pass
    return f"a reader process ended (exit status {code})"


def _serve(conn, alive) -> None:
    """A worker: read the files the run sends until it closes the pipe."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the run's to handle; the worker ends with it
    threading.Thread(target=_exit_with_run, args=(alive,), daemon=True).start()
    from deja.pipeline.ingest import process_file
    from deja.stages.store.limits import trim_heap

    while True:
        try:
            chunk = conn.recv()
        except (EOFError, OSError):
            return
        got = []
        for job in chunk:
            try:
                got.append((True, process_file(*job, True)))
            except Exception as exc:  # the run raises it, as a pool's future would
                got.append((False, exc if _picklable(exc) else RuntimeError(f"{type(exc).__name__}: {exc}")))
                break
        try:
            conn.send(got)
        except (BrokenPipeError, OSError):
            return
        del got
        trim_heap()  # else a reader holds its largest file's heap for the rest of the run


def _exit_with_run(alive) -> None:
    """Nothing is ever written to ``alive``: its end is the run's end."""
    try:
        alive.recv()
    except (EOFError, OSError):
        pass
    os._exit(0)


def _picklable(exc: BaseException) -> bool:
    import pickle

    try:
        pickle.loads(pickle.dumps(exc))
        return True
    except Exception:
        return False
