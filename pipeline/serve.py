"""``deja serve``: the warm process behind the hooks and the hot commands.

A fresh ``deja`` process spends most of a hook's or a search's time before it
reads anything: the interpreter, deja's modules, DuckDB's library and
instance, the catalog, the Parquet footers. The server pays that once.

The main process imports what the served commands import, opens no database,
and listens. It forks *warm processes* (``warm_main``): each keeps a DuckDB
connection and the live store open from one request to the next
(``read.keep_open``: sessions, docs and the commands in memory, footers
cached, reopened as soon as the catalog's files change). A request goes to an
idle warm process; when every one is busy (two agents, a slow search), to a
copy forked for it from the main process, which starts with everything
imported and nothing open. Either way the request runs the entry point the
client would have run (``entry.main``) on the client's own stdin, stdout and
stderr (sent over the socket as descriptors), in its directory and
environment. So:

* answers are the in-process answers, byte for byte, by construction;
* every request sees the store as it is now: a new index generation, a packet
  just captured, a half-written run (never read: the catalog says what is
  live), as a fresh process sees them, and a busy writer blocks no one;
* requests run side by side, and one slow or crashed request holds nothing else;
* memory stays flat: a warm process leaves after ``WARM_REQUESTS`` requests
  or past ``WARM_MB`` resident (or half again what it held after its first
  request, where a large history's tables take more), and the main process
  forks a fresh one.

The socket is in a private folder (0700, socket 0600), and only its own
user's connections are served (SO_PEERCRED). The server exits after
``DEJA_SERVE_IDLE`` seconds without a request (default 30 minutes), when its
socket is taken away, and when its code changes (a client of other code, or
any of its files edited: checked between requests): the next client starts
a server of the new code.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import signal
import socket
import struct
import sys
import time

from deja.pipeline import serve_client as client

IDLE_S = 30 * 60
WARM = 2  # warm processes at most (DEJA_SERVE_WARM): one, and another when a request finds it busy
WARM_REQUESTS = 5000  # a warm process leaves after this many requests …
WARM_MB = 200  # … or past this many MB resident (DEJA_SERVE_WARM_MB): memory stays flat,
WARM_GROWTH = 1.5  # … or past half again what it held after its first request, if that is more
CODE_CHECK_S = 1.0
MAX_REQUEST = 8 << 20  # longer requests are refused (the client then runs the command itself)


def serve(env=os.environ) -> int:
    """Run the server until idle; 0, or 1 when another server already serves this store."""
    path = client.socket_path(env)
    folder = os.path.dirname(path)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    st = os.lstat(folder)
    if not os.path.isdir(folder) or os.path.islink(folder) or st.st_uid != os.getuid():
        return 1  # a folder someone else made or points elsewhere: serve nothing from it
    os.chmod(folder, 0o700)
    lock = os.open(path + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    for attempt in range(40):  # a stale server told to leave lets go within moments
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except OSError:
            alive = client.status(env)
            if attempt == 39 or (alive and alive.get("code") == client.code_hash()):
                os.close(lock)
                return 1  # another server serves this store (a racing start)
            time.sleep(0.05)
    try:
        os.unlink(path)  # a socket a crashed server left: nobody listens on it (we hold the lock)
    except FileNotFoundError:
        pass
    _preload()
    os.chdir("/")  # not the first client's folder: a server must not hold a directory or a mount busy
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        listener.bind(path)
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    listener.listen(128)
    try:
        return Server(listener, path, env).loop()
    finally:
        listener.close()
        try:
            if os.stat(path).st_ino == Server.inode:
                os.unlink(path)
        except OSError:
            pass
        os.close(lock)


def _preload() -> None:
    """Import what the served commands import, and compile the redaction rules:
    what every fork then starts with."""
    import importlib

    from deja.stages.store import duck

    # DuckDB's first instance in a process pays its one-time start-up (about
    # four times a later one's): paid here, on an instance closed again, so
    # no DuckDB thread or lock is alive when the server forks
    con = duck.core.connect()
    try:
        con.execute("SELECT epoch_ms(now()::TIMESTAMPTZ), 'x' LIKE '%x%', regexp_matches('a', 'a')").fetchall()
    finally:
        con.close()
    for name in ("deja.pipeline.entry", "deja.pipeline.cli_search", "deja.pipeline.api", "deja.pipeline.cli_common",
                 "deja.hooks.dispatch", "deja.hooks.common", "deja.hooks.context", "deja.hooks.prompt",
                 "deja.hooks.tool", "deja.hooks.precompact", "deja.queries.search", "deja.queries.rank",
                 "deja.queries.snippets", "deja.queries.vocab", "deja.stages.redact", "deja.stages.shown",
                 "deja.stages.store.read", "deja.pipeline.fresh", "deja.pipeline.access", "rapidfuzz",
                 # a search that finds a turn appended since ingests it first (the index
                 # run's modules, the two common readers): ~40 ms of imports for the first
                 "deja.pipeline.run", "deja.pipeline.batch", "deja.pipeline.ingest", "deja.stages.sources.claude",
                 "deja.stages.sources.codex", "deja.stages.store.compact", "deja.stages.store.write",
                 # a warm process ranks with numpy (queries/score_arrays): imported once
                 # here, its pages are shared by every fork rather than copied into each
                 "deja.queries.score_arrays",
                 # semantic recall, for a store with vectors (cheap: its heavy imports are lazy)
                 "deja.queries.semantic"):
        try:
            importlib.import_module(name)
        except Exception:  # a module renamed or optional: its first request imports what it needs
            pass
    for name in ("deja.pipeline.cli_sessions", "deja.pipeline.cli_work"):  # last, show, ctx, blame, how, fix
        try:
            importlib.import_module(name)
        except Exception:
            pass
    _preload_model()


def _preload_model(which: str = "wordllama") -> None:
    """With vectors of this local model beside the store: the model loaded
    now, so no search pays its load (queries/semantic.py). The static model
    loads in the main process (its 16 MB matrix shared by every fork); e5's
    engine in each warm process as it starts, as its threads must start in
    the process that uses them."""
    from deja.stages import embedders
    from deja.stages.store import config, vectors

    try:
        meta = vectors.read_meta(config.index_dir())
        if meta and meta["model"] == embedders.LOCAL_MODELS[which][0] and not embedders.disabled():
            embedders.local(which).load(query=True)  # (a server asks questions)
    except Exception:  # (the first search loads it, or says why it cannot)
        pass


def _preload_vectors() -> None:
    """The store's vectors read as a warm process starts. Its memory limit is
    taken after its first request: vectors a later request read looked like
    growth, and a warm process whose first request was a hook (or a search
    with --no-embed) left after every search that used them, each next
    request answered cold (300-450 ms served, where 25 was the rule)."""
    from deja.stages.store import config, vectors

    try:
        if vectors.stamp(config.index_dir()) is not None:
            from deja.queries import semantic

            semantic.preload(config.index_dir())
    except Exception:  # (the first search reads them, or says why it cannot)
        pass


class Warm:
    """The main process's handle on one warm process: its end of their
    socket pair, and the client connection it is answering (None: idle)."""

    def __init__(self, pid: int, sock: socket.socket):
        self.pid, self.sock = pid, sock
        self.conn: socket.socket | None = None
        self.stopping = False  # its client left: the command was interrupted


class Server:
    inode = None

    def __init__(self, listener: socket.socket, path: str, env):
        self.listener, self.path = listener, path
        Server.inode = os.stat(path).st_ino
        self.idle = float(env.get("DEJA_SERVE_IDLE") or IDLE_S)
        self.max_warm = _int(env.get("DEJA_SERVE_WARM"), WARM)
        self.code = client.code_key()  # what clients send: equal, or they run other code
        self.full = client.code_hash()  # every file: an edit in place, seen between requests
        self.checked = time.monotonic()
        self.started = time.time()
        self.last = time.monotonic()
        self.requests = 0
        self.warm_requests = 0
        self.failed = 0
        self.stale = False
        self.running: dict[int, socket.socket] = {}  # forked copy → its client's connection
        self.stopping: set[int] = set()  # copies whose client left: told to stop
        self.warm: list[Warm] = []
        self.uid = os.getuid()

    # ------------------------------------------------------------------ the loop

    def loop(self) -> int:
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_w, False)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        self.wake = wake_r
        try:
            if self.max_warm:
                self.spawn_warm()
            while True:
                busy = bool(self.running) or any(w.conn for w in self.warm)
                left = self.idle - (time.monotonic() - self.last)
                if (left <= 0 or self.stale) and not busy:
                    return 0
                waiting = [c for pid, c in self.running.items() if pid not in self.stopping]
                waiting += [w.conn for w in self.warm if w.conn is not None and not w.stopping]
                socks = [w.sock for w in self.warm]
                ears = [wake_r, *socks, *waiting] + ([] if self.stale else [self.listener])
                try:
                    ready, _, _ = select.select(ears, [], [], max(0.05, min(left, 1.0)))
                except InterruptedError:
                    ready = []
                for w in list(self.warm):
                    if w.sock in ready:
                        self.warm_said(w)
                for conn in waiting:
                    if conn in ready:
                        self.client_left(conn)
                if wake_r in ready:
                    try:
                        os.read(wake_r, 512)
                    except BlockingIOError:
                        pass
                self.reap()
                if self.listener in ready and not self.stale:
                    self.accept()
                if not self.still_ours():
                    return 0
                self.check_code()
        finally:
            for w in self.warm:
                w.sock.close()  # a warm process whose main is gone leaves
            signal.set_wakeup_fd(-1)
            os.close(wake_r)
            os.close(wake_w)

    def still_ours(self) -> bool:
        """The socket file is still this server's (not removed, not replaced)."""
        try:
            return os.stat(self.path).st_ino == Server.inode
        except OSError:
            return False

    def check_code(self) -> None:
        """Once a second, between requests: has any file of deja changed (an
        edit in place, which a folder's time does not show)? Then this
        server's code is stale: it stops listening and leaves."""
        if time.monotonic() - self.checked < CODE_CHECK_S:
            return
        self.checked = time.monotonic()
        if client.code_hash() != self.full:
            self.go_stale()

    def go_stale(self) -> None:
        self.stale = True
        try:
            if self.still_ours():
                os.unlink(self.path)  # the next client finds no server and starts one of its code
        except OSError:
            pass

    # ------------------------------------------------------------------ the processes

    def spawn_warm(self) -> None:
        """Fork a warm process: it keeps DuckDB and the live store open from one
        request to the next (this process never opens a database: its forks
        must not copy one)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:
            try:
                ours.close()
                self.close_inherited()
                warm_main(theirs)
            finally:
                os._exit(0)
        theirs.close()
        self.warm.append(Warm(pid, ours))

    def close_inherited(self) -> None:
        """In a forked process: the listener, the other processes' sockets and
        every client connection are the main process's, not this one's."""
        self.listener.close()
        for w in self.warm:
            w.sock.close()
            if w.conn is not None:
                w.conn.close()
        for c in self.running.values():
            c.close()

    def warm_said(self, w: Warm) -> None:
        """A warm process finished a request (``exit N``), or died."""
        try:
            msg = w.sock.recv(64)
        except OSError:
            msg = b""
        if msg.startswith(b"exit "):
            last = msg.endswith(b" last")
            status = msg[:-len(b" last")] if last else msg
            if w.conn is not None:
                self.failed += status != b"exit 0"
                self.answer(w.conn, status.decode("ascii", "replace") + "\n")
                w.conn, w.stopping = None, False
            if last:
                self.retire(w)  # it leaves to give its memory back: nothing more for it
            return
        # gone: it crashed (or was killed); its client hears "died" and says
        # so in one line, exiting 1 (a hook's client still exits 0 in silence),
        # and the next request has a fresh one
        if w.conn is not None:
            self.failed += 1
            self.answer(w.conn, "died\n")
        self.retire(w)  # (answered first: a process forked now must not hold that connection)

    def retire(self, w: Warm) -> None:
        self.warm.remove(w)
        w.sock.close()
        if not self.stale and len(self.warm) < 1 and self.max_warm:
            self.spawn_warm()

    def answer(self, conn: socket.socket, line: str) -> None:
        try:
            conn.sendall(line.encode())
        except OSError:
            pass
        conn.close()

    def reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            conn = self.running.pop(pid, None)
            self.stopping.discard(pid)
            if conn is None:
                continue  # a warm process: its socket said so
            code = os.waitstatus_to_exitcode(status)
            self.failed += code != 0
            self.answer(conn, f"exit {code if code >= 0 else 128 - code}\n")

    def client_left(self, conn: socket.socket) -> None:
        """A client closed its connection before its command ended (killed,
        even by SIGKILL, which it cannot pass on): the command stops too."""
        try:
            if conn.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT):
                return  # (a client says nothing after its request: not expected, ignored)
        except BlockingIOError:
            return
        except OSError:
            pass
        for pid, c in self.running.items():
            if c is conn:
                self.stopping.add(pid)
                _kill(pid, signal.SIGTERM)
        for w in self.warm:
            if w.conn is conn:
                w.stopping = True
                _kill(w.pid, signal.SIGINT)  # the command stops; the process serves on

    # ------------------------------------------------------------------ a request

    def accept(self) -> None:
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return
        fds: list[int] = []
        more = False
        try:
            if not self.same_user(conn):
                conn.close()
                return
            conn.settimeout(1.0)
            head = _receive_line(conn)
            if head.startswith(b"{"):  # deja doctor, tests: the server's report
                req = json.loads(head)
                if req.get("status"):
                    conn.sendall(json.dumps(self.report()).encode() + b"\n")
                else:  # a client of older code, speaking JSON
                    conn.sendall(b"stale\n")
                conn.close()
                return
            proto, _, size = head.strip().partition(b" ")
            if proto != client.PROTOCOL or not size.isdigit() or int(size) > MAX_REQUEST:
                conn.sendall(b"stale\n")  # another protocol: another deja's client
                conn.close()
                return
            req = client.decode_request(_receive_exactly(conn, int(size)))
            # the compiled hook client (hooks/client.c) cannot know the
            # package's code key and sends none: the server looks at its own
            if req["code"] != self.code and (req["code"] or client.code_key() != self.code):
                # the client runs other code (deja was upgraded or edited): it
                # answers itself and starts a server of its own code
                conn.sendall(b"stale\n")
                conn.close()
                self.go_stale()
                return
            conn.sendall(b"go\n")
            _, fds, _, _ = socket.recv_fds(conn, 1, 3)
            if len(fds) != 3:
                conn.close()
                return
            self.last = time.monotonic()
            self.requests += 1
            idle = next((w for w in self.warm if w.conn is None), None)
            if idle is not None and self.warm_sends(idle, req, fds):
                conn.sendall(f"ok {idle.pid} warm\n".encode())
                idle.conn = conn
                self.warm_requests += 1
                return
            pid = os.fork()
            if pid == 0:
                self.child(conn, fds, req)  # never returns
            conn.sendall(f"ok {pid}\n".encode())
            self.running[pid] = conn
            # every warm process was busy: one more for next time
            more = idle is None and len(self.warm) < self.max_warm and not self.stale
        except (OSError, ValueError, TypeError, AttributeError, IndexError):
            conn.close()
        finally:
            for fd in fds:
                try:
                    os.close(fd)
                except OSError:
                    pass
        if more:
            # forked only now: a process forked while this one held the client's
            # descriptors kept its stdout open for as long as it lived, and the
            # caller (an agent reading a hook's output) waited for its end
            self.spawn_warm()

    def warm_sends(self, w: Warm, req: dict, fds: list[int]) -> bool:
        """Hand a request and the client's descriptors to a warm process."""
        try:
            socket.send_fds(w.sock, [json.dumps(req).encode()], fds)
            return True
        except OSError:  # too big for one message, or the process is gone: a fork answers
            return False

    def same_user(self, conn: socket.socket) -> bool:
        try:
            creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        except (OSError, AttributeError):
            return True  # no SO_PEERCRED here: the folder's and socket's modes keep others out
        _, uid, _ = struct.unpack("3i", creds)
        return uid == self.uid

    def child(self, conn: socket.socket, fds: list[int], req: dict) -> None:
        """The forked copy: become the client's process, run its command, exit with its status."""
        code = 1
        try:
            signal.set_wakeup_fd(-1)
            for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, signal.SIG_DFL if sig != signal.SIGINT else signal.default_int_handler)
            conn.close()
            self.close_inherited()
            code = run_command(req, fds, entry_point=True)
        finally:
            os._exit(code)

    def report(self) -> dict:
        from deja.pipeline.usage import version

        pids = [os.getpid(), *(w.pid for w in self.warm)]
        return {"pid": os.getpid(), "version": version(), "code": self.code,
                "uptime_s": round(time.time() - self.started, 1), "rss_mb": rss_mb(os.getpid()),
                "warm": [{"pid": w.pid, "rss_mb": rss_mb(w.pid), "busy": w.conn is not None} for w in self.warm],
                "pss_mb": round(sum(pss_mb(p) or 0 for p in pids), 1),
                "requests": self.requests, "warm_requests": self.warm_requests, "failed": self.failed,
                "running": len(self.running) + sum(w.conn is not None for w in self.warm),
                "idle_exit_s": self.idle, "socket": self.path}


def warm_main(sock: socket.socket) -> None:
    """A warm process: request after request from the main process, each run
    as a forked copy would run it (``run_command``), on a DuckDB connection
    and a live store kept open between them (stages/store/read.py: reopened
    when the catalog changes). It leaves when its main process does, and
    after ``WARM_REQUESTS`` requests or past ``WARM_MB`` resident (or
    ``WARM_GROWTH`` times what it held after its first request, if more), to
    give its memory back: the main process starts another."""
    signal.set_wakeup_fd(-1)
    for sig in (signal.SIGCHLD, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # only a running command is interrupted
    from deja.pipeline import fresh

    fresh.keep_warm()
    _preload_model("e5")
    _preload_vectors()
    _BASE["env"] = dict(os.environ)
    limit_mb = _int(os.environ.get("DEJA_SERVE_WARM_MB"), WARM_MB)
    served = 0
    while True:
        try:
            msg, fds, _, _ = socket.recv_fds(sock, 1 << 18, 3)
        except OSError:
            return
        if not msg:
            return  # the main process is gone
        code = 1
        try:
            req = json.loads(msg)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            code = run_command(req, fds, entry_point=False)
        except BaseException:
            code = 1
        finally:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            _settle()
        served += 1
        rss = rss_mb(os.getpid()) or 0
        if served == 1 and "DEJA_SERVE_WARM_MB" not in _BASE["env"]:
            # what the store's kept tables take is not growth: a large history's
            # can pass WARM_MB alone, and its warm process would leave after
            # every request, each next one opening the store cold (a limit the
            # user sets is kept as set)
            limit_mb = max(limit_mb, rss * WARM_GROWTH)
        leaving = served >= WARM_REQUESTS or rss > limit_mb
        # leaving says so with its last status: between a bare status and its
        # end, the main process could hand it the next request, which nobody
        # would read (that client heard "died")
        try:
            sock.send(f"exit {code}{' last' if leaving else ''}".encode())
        except OSError:
            return
        if leaving:
            if os.environ.get("DEJA_FAULT_LINGER"):  # tests: a process slow to leave
                time.sleep(float(os.environ["DEJA_FAULT_LINGER"]))
            return


def run_command(req: dict, fds: list[int], entry_point: bool) -> int:
    """Become the client for one command: its descriptors as 0, 1 and 2, its
    environment, directory and arguments; run ``entry.main``; its exit status.
    ``entry_point``: a forked copy, which exits after this one command."""
    code = 1
    try:
        for i, fd in enumerate(fds):
            os.dup2(fd, i)
            os.close(fd)
        fds.clear()
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in (req.get("env") or {}).items()})
        try:
            os.chdir(req.get("cwd") or "/")
        except OSError:
            os.chdir(os.environ.get("HOME") or "/")
        _stdio()
        argv = [str(a) for a in req.get("argv") or []]
        sys.argv = ["deja", *argv]
        client.IN_SERVER = True  # this process answers; it never asks a server itself
        from deja.pipeline import entry

        entry._ENTRY = entry_point  # a forked copy may leave by os._exit; a warm process must not
        if os.environ.get("DEJA_FAULT_SLOW"):  # tests: a command still running when its client dies
            time.sleep(float(os.environ["DEJA_FAULT_SLOW"]))
        entry.main(argv)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except KeyboardInterrupt:
        code = 130
    except BaseException as exc:  # one line, as in process: never an exit 1 that says nothing
        code = 1
        try:
            from deja.pipeline.cli_common import error_line

            print(f"deja: {error_line(exc)}", file=sys.stderr)
        except BaseException:
            pass
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except Exception:
            pass
    return code


def _stdio() -> None:
    sys.stdin = open(0, "r", encoding="utf-8", errors="surrogateescape", closefd=False)
    sys.stdout = open(1, "w", encoding="utf-8", errors="strict", closefd=False)
    sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)


_BASE: dict = {}


def _settle() -> None:
    """After a warm request: the client's descriptors let go (its stdout must
    reach its end now: the agent reads until then), and the process as it was
    before the request: its environment, directory, colours."""
    if not _BASE:
        return
    null = os.open(os.devnull, os.O_RDWR)
    for i in range(3):
        os.dup2(null, i)
    os.close(null)
    _stdio()
    os.environ.clear()
    os.environ.update(_BASE["env"])
    os.chdir("/")
    cli_common = sys.modules.get("deja.pipeline.cli_common")
    if cli_common is not None:
        cli_common.set_color("auto")


def _kill(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except OSError:
        pass


def _int(value, default: int) -> int:
    try:
        return int(value) if value not in (None, "") else default
    except ValueError:
        return default


def _receive_exactly(conn: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        data = conn.recv(min(1 << 20, n - len(buf)))
        if not data:
            raise ValueError("short request")
        buf += data
    return bytes(buf)


def _receive_line(conn: socket.socket) -> bytes:
    """The request's first line: a JSON status request, or the protocol's head."""
    buf = b""
    while not buf.endswith(b"\n"):
        data = conn.recv(1)
        if not data:
            break
        buf += data
        if len(buf) > 4096:
            raise ValueError("request too long")
    return buf


def rss_mb(pid: int) -> float | None:
    return _proc_mb(f"/proc/{pid}/status", "VmRSS:")


def pss_mb(pid: int) -> float | None:
    """Proportional set size: a page shared by the main and the warm
    processes (forked, so most are) counted once over all of them."""
    return _proc_mb(f"/proc/{pid}/smaps_rollup", "Pss:")


def _proc_mb(path: str, key: str) -> float | None:
    """A ``key: N kB`` line of a /proc file, in MB (None when the process is gone)."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(key):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


__all__ = ["serve", "rss_mb", "pss_mb"]
