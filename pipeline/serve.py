"""``deja serve``: the warm process behind the hooks and the hot commands.

A fresh ``deja`` process spends most of a hook's or a search's time before it
reads anything: the interpreter, deja's modules, DuckDB's library, the
redaction rules compiled. The server pays that once, then serves each request
(pipeline/serve_client.py) by forking: the copy starts with everything loaded,
takes the client's stdin, stdout and stderr, directory and environment, and
runs the same entry point the client would have run (``entry.main``). So:

* answers are the in-process answers, byte for byte, by construction;
* every request opens the store as it is now: a new index generation, a
  packet just captured, a half-written run (never read: the catalog says what
  is live) are seen exactly as a fresh process sees them, and a busy writer
  blocks no one;
* requests run side by side (two agents, the CLI), and one slow or crashed
  request holds nothing else;
* the server's own memory stays what it was after start-up, whatever the
  requests did (each copy exits).

The server keeps no DuckDB database open: a fork must not copy a database's
threads and locks (it opens and closes one at start-up, which pays DuckDB's
one-time start-up for every copy). It listens on a Unix socket in a private folder (0700,
socket 0600, and only its own user's connections are served: SO_PEERCRED),
exits after ``DEJA_SERVE_IDLE`` seconds without a request (default 30
minutes), when its socket is taken away, or when a client runs other code
(an upgrade: the client then starts a new one).
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
                 "deja.stages.store.read", "deja.pipeline.fresh", "deja.pipeline.access", "rapidfuzz"):
        try:
            importlib.import_module(name)
        except Exception:  # a module renamed or optional: its first request imports what it needs
            pass
    for name in ("deja.pipeline.cli_sessions", "deja.pipeline.cli_work"):  # last, show, ctx, blame, how, fix
        try:
            importlib.import_module(name)
        except Exception:
            pass


class Server:
    inode = None

    def __init__(self, listener: socket.socket, path: str, env):
        self.listener, self.path = listener, path
        Server.inode = os.stat(path).st_ino
        self.idle = float(env.get("DEJA_SERVE_IDLE") or IDLE_S)
        self.code = client.code_hash()
        self.started = time.time()
        self.last = time.monotonic()
        self.requests = 0
        self.failed = 0
        self.running: dict[int, socket.socket] = {}  # forked copy → its client's connection
        self.stopping: set[int] = set()  # copies whose client left: told to stop
        self.uid = os.getuid()

    def loop(self) -> int:
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_w, False)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        try:
            while True:
                left = self.idle - (time.monotonic() - self.last)
                if left <= 0 and not self.running:
                    return 0
                waiting = [c for pid, c in self.running.items() if pid not in self.stopping]
                try:
                    ready, _, _ = select.select([self.listener, wake_r, *waiting], [], [], max(0.05, min(left, 30.0)))
                except InterruptedError:
                    ready = []
                for conn in waiting:
                    if conn in ready:
                        self.client_left(conn)
                if wake_r in ready:
                    try:
                        os.read(wake_r, 512)
                    except BlockingIOError:
                        pass
                self.reap()
                if self.listener in ready:
                    self.accept()
                if not self.still_ours():
                    return 0
        finally:
            signal.set_wakeup_fd(-1)
            os.close(wake_r)
            os.close(wake_w)

    def still_ours(self) -> bool:
        """The socket file is still this server's (not removed, not replaced)."""
        try:
            return os.stat(self.path).st_ino == Server.inode
        except OSError:
            return False

    def reap(self) -> None:
        while self.running:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            conn = self.running.pop(pid, None)
            self.stopping.discard(pid)
            if conn is None:
                continue
            code = os.waitstatus_to_exitcode(status)
            self.failed += code != 0
            try:
                conn.sendall(f"exit {code if code >= 0 else 128 - code}\n".encode())
            except OSError:
                pass
            conn.close()

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
                try:
                    os.kill(pid, signal.SIGTERM)
                except OSError:
                    pass

    def accept(self) -> None:
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return
        fds: list[int] = []
        try:
            if not self.same_user(conn):
                conn.close()
                return
            conn.settimeout(1.0)
            req = json.loads(_receive_line(conn))
            if req.get("status"):
                conn.sendall(json.dumps(self.report()).encode() + b"\n")
                conn.close()
                return
            if req.get("code") != self.code:
                # the client runs other code (deja was upgraded or edited): it
                # answers itself and starts a server of its own code
                conn.sendall(b"stale\n")
                conn.close()
                self.idle = 0
                return
            conn.sendall(b"go\n")
            _, fds, _, _ = socket.recv_fds(conn, 1, 3)
            if len(fds) != 3:
                conn.close()
                return
            self.last = time.monotonic()
            self.requests += 1
            pid = os.fork()
            if pid == 0:
                self.child(conn, fds, req)  # never returns
            conn.sendall(f"ok {pid}\n".encode())
            self.running[pid] = conn
        except (OSError, ValueError, TypeError, AttributeError):
            conn.close()
        finally:
            for fd in fds:
                try:
                    os.close(fd)
                except OSError:
                    pass

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
            for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGPIPE, signal.SIGINT):
                signal.signal(sig, signal.SIG_DFL if sig != signal.SIGINT else signal.default_int_handler)
            signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # as Python's own start-up sets it
            self.listener.close()
            conn.close()
            for i, fd in enumerate(fds):
                os.dup2(fd, i)
                os.close(fd)
            os.environ.clear()
            os.environ.update({str(k): str(v) for k, v in (req.get("env") or {}).items()})
            try:
                os.chdir(req.get("cwd") or "/")
            except OSError:
                os.chdir(os.environ.get("HOME") or "/")
            sys.stdin = open(0, "r", encoding=sys.stdin.encoding or "utf-8", errors="surrogateescape", closefd=False)
            sys.stdout = open(1, "w", encoding=sys.stdout.encoding or "utf-8", errors="strict", closefd=False)
            sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
            argv = [str(a) for a in req.get("argv") or []]
            sys.argv = ["deja", *argv]
            client.IN_SERVER = True  # this copy answers; it never asks a server itself
            from deja.pipeline import entry

            entry._ENTRY = True  # a process's own entry point: it may leave by os._exit
            if os.environ.get("DEJA_FAULT_SLOW"):  # tests: a command still running when its client dies
                time.sleep(float(os.environ["DEJA_FAULT_SLOW"]))
            entry.main(argv)
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:
            code = 1
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            except Exception:
                pass
            os._exit(code)

    def report(self) -> dict:
        from deja.pipeline.usage import version

        return {"pid": os.getpid(), "version": version(), "code": self.code,
                "uptime_s": round(time.time() - self.started, 1), "rss_mb": rss_mb(os.getpid()),
                "requests": self.requests, "failed": self.failed, "running": len(self.running),
                "idle_exit_s": self.idle, "socket": self.path}


def _receive_line(conn: socket.socket) -> bytes:
    """One request line (JSON)."""
    buf = b""
    while not buf.endswith(b"\n"):
        data = conn.recv(1 << 16)
        if not data:
            break
        buf += data
        if len(buf) > 8 << 20:
            raise ValueError("request too long")
    return buf


def rss_mb(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


__all__ = ["serve", "rss_mb"]
