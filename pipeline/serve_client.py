"""The thin side of the warm server (``deja serve``, pipeline/serve.py):
stdlib only, imported by the executable before anything heavy.

A hook or a hot command (search, last, show, ctx, blame, how, fix) hands its
arguments, directory, environment and its own stdin, stdout and stderr (as
file descriptors, over the Unix socket) to the server. The server forks a
copy of itself, whose imports, compiled redaction rules and DuckDB library
are already loaded, and that copy runs the very code the command would run
here, writing straight to this process's terminal or pipe: the answer is the
same bytes, colours and exit status as in-process, for a fraction of the
start-up.

Fail open: no server, a socket left by a crash, a server that does not
acknowledge within ``ACK_S`` (hung) or says something else (garbage, or a
server of other code) — the caller runs the command in-process, as if there
were no server, and a fresh server is started in the background for next
time. ``DEJA_SERVE=off`` turns all of it off.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import sys

ACK_S = 0.5  # a server that has not forked by then is hung: the caller answers itself
CONNECT_S = 0.2
# The commands worth a round trip: what the hooks and people run most. The
# rest (index, install, mcp, …) are long or rare, and run in-process.
SERVED = frozenset({"search", "last", "show", "ctx", "blame", "how", "fix",
                    "hook-context", "hook-prompt", "hook-tool", "hook-tool-after", "hook-precompact"})


IN_SERVER = False  # set in the server's forked copies: they answer, never ask


# Commands that may page their output on a terminal (`less` reads keys from the
# controlling terminal, which a copy forked by the server does not have).
PAGED = frozenset({"show"})


def enabled(env=os.environ) -> bool:
    return not IN_SERVER and (env.get("DEJA_SERVE") or "on").lower() not in ("off", "0", "no", "false")


def code_hash() -> str:
    """What the running code is: the package's files by size and mtime (an
    upgrade or an edit changes it). A server of other code is stale."""
    forced = os.environ.get("DEJA_SERVE_CODE")  # tests: a server of "other code"
    if forced:
        return forced
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    h = hashlib.sha1()
    if os.path.basename(root) == "deja":  # installed: the package root's own modules too
        for f in sorted(os.listdir(root)):
            if f.endswith(".py"):
                st = os.stat(os.path.join(root, f))
                h.update(f"/{f}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    # the package's floors: installed, they sit side by side under deja/;
    # in a checkout, the folders the package-dir maps
    for floor in ("deja", "pipeline", "hooks", "queries", "stages", "deja_root"):
        top = os.path.join(root, floor)
        for folder, dirs, files in os.walk(top):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for f in sorted(files):
                if f.endswith((".py", ".sql")):
                    try:
                        st = os.stat(os.path.join(folder, f))
                    except OSError:
                        continue
                    h.update(f"{folder[len(root):]}/{f}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def run_dir(env=os.environ) -> str:
    """Where the socket lives: the user's runtime dir (tmpfs, private, cleared
    at logout), else deja's cache dir."""
    xdg = env.get("XDG_RUNTIME_DIR")
    if xdg and os.path.isdir(xdg) and os.access(xdg, os.W_OK):
        return os.path.join(xdg, "deja")
    home = env.get("HOME") or os.path.expanduser("~")
    cache = env.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")
    return os.path.join(cache, "deja", "run")


def socket_path(env=os.environ) -> str:
    """One server per user and store: a store elsewhere (DEJA_INDEX_DIR, another
    HOME) has a server of its own. Short: a socket path is at most 107 bytes."""
    home = env.get("HOME") or ""
    key = hashlib.sha1(f"{home}\0{env.get('DEJA_INDEX_DIR') or ''}".encode()).hexdigest()[:12]
    path = os.path.join(run_dir(env), f"s-{key}.sock")
    if len(path.encode()) > 100:  # a deep HOME: the system's temp dir, in a folder of the user's own
        import tempfile

        path = os.path.join(tempfile.gettempdir(), f"deja-{os.getuid()}", f"s-{key}.sock")
    return path


def request(argv: list[str], hook: bool) -> int | None:
    """Run ``argv`` in the warm server; its exit status, or None when the
    caller must run it itself (nothing has been written to its output then)."""
    if not enabled():
        return None
    if argv[0] in PAGED and os.isatty(1):
        return None  # a pager wants this process's terminal: the server's copy has none of its own
    path = socket_path()
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    except OSError:
        return None
    try:
        s.settimeout(CONNECT_S)
        try:
            s.connect(path)
        except (FileNotFoundError, ConnectionRefusedError):
            start_server()  # none, or a socket a crash left: next time
            return None
        except OSError:
            return None
        msg = json.dumps({"argv": argv, "cwd": _cwd(), "env": dict(os.environ), "code": code_hash()}).encode()
        try:
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
            s.settimeout(ACK_S)
            s.sendall(msg + b"\n")
            # Our stdin, stdout and stderr go only to a server that answered:
            # descriptors sent to one that never reads them would hold our
            # stdout open (the agent waits for its end) as long as it lives.
            first = _line(s)
            if first == b"stale":
                start_server()
                return None
            if first != b"go":
                return None  # garbage, or silence: the server never ran anything
            socket.send_fds(s, [b"F"], [0, 1, 2])
            first = _line(s)
        except OSError:
            return None
        if not first.startswith(b"ok "):
            return None
        # the server's copy is running, writing to our stdout: from here on
        # this process only waits for its status, and passes on the signals
        # meant for the command (Ctrl-C reaches this process's group, not the copy)
        _forward_signals(first)
        s.settimeout(None)
        try:
            last = _line(s)
        except OSError:
            last = b""
        if last.startswith(b"exit "):
            try:
                return int(last[5:])
            except ValueError:
                pass
        return 0 if hook else 1  # the copy died unheard: a hook still never fails the agent
    finally:
        s.close()


def status(env=os.environ) -> dict | None:
    """The server's own report (pid, version, uptime, memory, requests), or None."""
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(1.0)
        s.connect(socket_path(env))
        s.sendall(json.dumps({"status": True}).encode() + b"\n")
        got = json.loads(_line(s) or b"null")
        s.close()
        return got if isinstance(got, dict) else None
    except (OSError, ValueError):
        return None


def start_server() -> None:
    """Start ``deja serve`` detached (its own session, no terminal); a second
    one started by a racing client sees the first and leaves."""
    if os.environ.get("DEJA_SERVE_START") == "0":  # tests that start their own
        return
    import subprocess

    try:
        subprocess.Popen([sys.executable, "-m", "deja", "serve"], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                         close_fds=True)
    except OSError:
        pass


def _forward_signals(ack: bytes) -> None:
    import signal

    try:
        pid = int(ack.split()[1])
    except (IndexError, ValueError):
        return

    def forward(sig, _frame):
        try:
            os.kill(pid, sig)
        except OSError:
            pass

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        try:
            signal.signal(sig, forward)
        except (OSError, ValueError):
            pass


def _line(s: socket.socket) -> bytes:
    buf = b""
    while not buf.endswith(b"\n"):
        got = s.recv(4096)
        if not got:
            break
        buf += got
        if len(buf) > 1 << 20:
            break
    return buf.strip()


def _cwd() -> str:
    try:
        return os.getcwd()
    except OSError:  # a deleted directory: the server's copy starts in $HOME
        return os.environ.get("HOME") or "/"
