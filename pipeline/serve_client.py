"""The thin side of the warm server (``deja serve``, pipeline/serve.py),
imported by the executable before anything heavy.

A hook or a hot command (search, last, show, ctx, blame, how, fix) hands its
arguments, directory, environment and its own stdin, stdout and stderr (as
file descriptors, over the Unix socket) to the server, which runs the very
code the command would run here (``entry.main``), writing straight to this
process's terminal or pipe: the answer is the same bytes, colours and exit
status as in-process, for a fraction of the start-up.

Every millisecond here is paid by every hook, so this module imports nothing
but the interpreter's built-in C modules (``_socket``, ``_signal``): the
``socket``, ``signal``, ``json`` and ``hashlib`` modules cost more to import
than a served answer takes. The request is bytes (``encode_request``), the
replies are short lines.

Fail open: no server, a socket left by a crash, a server that does not
acknowledge within ``ACK_S`` (hung) or says something else (garbage, or a
server of other code) — the caller runs the command in-process, as if there
were no server, and a fresh server is started in the background for next
time. ``DEJA_SERVE=off`` turns all of it off.
"""

from __future__ import annotations

import os
import sys

ACK_S = 0.5  # a server that has not answered by then is hung: the caller answers itself
CONNECT_S = 0.2
PROTOCOL = b"DEJA2"
# The commands worth a round trip: what the hooks and people run most. The
# rest (index, install, mcp, …) are long or rare, and run in-process.
SERVED = frozenset({"search", "last", "show", "ctx", "blame", "how", "fix",
                    "hook-context", "hook-prompt", "hook-tool", "hook-tool-after", "hook-precompact"})


IN_SERVER = False  # set in the server's processes: they answer, never ask
# what a person sees when the process answering them was killed mid-answer (hooks/client.c says it too)
DIED = b"deja: the warm server's process ended before its answer was complete; run it again (DEJA_SERVE=off answers here)\n"


# Commands that may page their output on a terminal (`less` reads keys from the
# controlling terminal, which the server's process does not have).
PAGED = frozenset({"show"})
# the package's floors: installed, they sit side by side under deja/; in a
# checkout, the folders the package-dir maps
FLOORS = ("deja", "pipeline", "hooks", "queries", "stages", "deja_root")


def enabled(env=os.environ) -> bool:
    return not IN_SERVER and (env.get("DEJA_SERVE") or "on").lower() not in ("off", "0", "no", "false")


def _package_root() -> str:
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def code_key() -> str:
    """What the installed code is, cheaply (a stat per folder): an upgrade
    replaces files, which changes their folders. Sent with every request; the
    server, which has time between requests, also watches every file
    (``code_hash``) for an edit in place."""
    forced = os.environ.get("DEJA_SERVE_CODE")  # tests: a client of "other code"
    if forced:
        return forced
    root = _package_root()
    parts = []
    for floor in FLOORS:
        top = os.path.join(root, floor)
        try:
            st = os.stat(top)
        except OSError:
            continue
        parts.append(f"{floor}:{st.st_mtime_ns}")
        for sub in ("store", "sources", "recover", "packet", "sql"):  # the nested floors
            try:
                parts.append(f"{sub}:{os.stat(os.path.join(top, sub)).st_mtime_ns}")
            except OSError:
                pass
    return _fnv(";".join(parts).encode())


def code_hash() -> str:
    """Every module and SQL file of the package, by size and mtime (an edit in
    place changes it). The server's own check, off the clients' path."""
    forced = os.environ.get("DEJA_SERVE_CODE")
    if forced:
        return forced
    root = _package_root()
    lines = []
    if os.path.basename(root) == "deja":  # installed: the package root's own modules too
        for f in sorted(os.listdir(root)):
            if f.endswith(".py"):
                st = os.stat(os.path.join(root, f))
                lines.append(f"/{f}:{st.st_size}:{st.st_mtime_ns}")
    for floor in FLOORS:
        for folder, dirs, files in os.walk(os.path.join(root, floor)):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for f in sorted(files):
                if f.endswith((".py", ".sql")):
                    try:
                        st = os.stat(os.path.join(folder, f))
                    except OSError:
                        continue
                    lines.append(f"{folder[len(root):]}/{f}:{st.st_size}:{st.st_mtime_ns}")
    return _fnv("\n".join(lines).encode())


def _fnv(data: bytes) -> str:
    """FNV-1a, 64 bits: a stable short name for some bytes without hashlib's
    import (it loads OpenSSL)."""
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


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
    key = _fnv(f"{home}\0{env.get('DEJA_INDEX_DIR') or ''}".encode())[:12]
    path = os.path.join(run_dir(env), f"s-{key}.sock")
    if len(path.encode()) > 100:  # a deep HOME: the system's temp dir, in a folder of the user's own
        import tempfile

        path = os.path.join(tempfile.gettempdir(), f"deja-{os.getuid()}", f"s-{key}.sock")
    return path


def encode_request(argv: list[str], cwd: bytes, env: dict, code: str) -> bytes:
    """``DEJA2 <length>\\n`` and the fields NUL-separated: the code key, the
    directory, the number of arguments, the arguments, then ``NAME=value`` for
    each variable of the environment, all as the OS's own bytes (none of them
    can hold a NUL)."""
    fields = [code.encode(), cwd, str(len(argv)).encode(), *(os.fsencode(a) for a in argv),
              *(k + b"=" + v for k, v in env.items())]
    body = b"\0".join(fields)
    return PROTOCOL + b" " + str(len(body)).encode() + b"\n" + body


def decode_request(body: bytes) -> dict:
    """The server's reading of ``encode_request``'s body: code, cwd, argv, env (str)."""
    fields = body.split(b"\0")
    n = int(fields[2])
    if n < 0 or len(fields) < 3 + n:
        raise ValueError("short request")
    env = {}
    for item in fields[3 + n:]:
        k, eq, v = item.partition(b"=")
        if eq and k:
            env[os.fsdecode(k)] = os.fsdecode(v)
    return {"code": fields[0].decode("ascii", "replace"), "cwd": os.fsdecode(fields[1]),
            "argv": [os.fsdecode(a) for a in fields[3:3 + n]], "env": env}


def request(argv: list[str], hook: bool) -> int | None:
    """Run ``argv`` in the warm server; its exit status, or None when the
    caller must run it itself (nothing has been written to its output then)."""
    # the compiled client (hooks/client.c) reached the server, which did not
    # take the command: answer here at once rather than ask it again
    asked = os.environ.pop("DEJA_SERVE_ASKED", None)
    if not enabled():
        return None
    if asked is not None:
        if asked == "stale":
            start_server()  # one of this code, for next time
        return None
    if argv[0] in PAGED and os.isatty(1):
        return None  # a pager wants this process's terminal: the server has none of its own
    import _socket

    path = socket_path()
    try:
        s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
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
        try:
            msg = encode_request(argv, _cwd(), os.environb, code_key())
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
            s.settimeout(ACK_S)
            s.sendall(msg)
            # Our stdin, stdout and stderr go only to a server that answered:
            # descriptors sent to one that never reads them would hold our
            # stdout open (the agent waits for its end) as long as it lives.
            first = _line(s)
            if first == b"stale":
                start_server()
                return None
            if first != b"go":
                return None  # garbage, or silence: the server never ran anything
            fds = b"".join(fd.to_bytes(4, sys.byteorder) for fd in (0, 1, 2))
            s.sendmsg([b"F"], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
            first = _line(s)
        except (OSError, ValueError):
            return None
        if not first.startswith(b"ok "):
            return None
        # the command is running, writing to our stdout: from here on this
        # process only waits for its status, and passes on the signals meant
        # for it (Ctrl-C reaches this process's group, not the server's)
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
        if hook:
            return 0  # the command died unheard: a hook still never fails the agent
        # (not run again here: it may have written part of its answer already)
        os.write(2, DIED)
        return 1
    finally:
        s.close()


def status(env=os.environ) -> dict | None:
    """The server's own report (pid, version, uptime, memory, requests), or None."""
    import json
    import socket

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
    """Ctrl-C, a hangup or a TERM meant for the command go to the process
    running it: ``ok <pid>``, a copy forked for this command, or ``ok <pid>
    warm``, a process that serves request after request, which is only ever
    interrupted (SIGINT: the command stops as it does on Ctrl-C)."""
    words = ack.split()
    try:
        pid = int(words[1])
    except (IndexError, ValueError):
        return
    if pid <= 0:
        return
    import _signal

    warm = words[2:3] == [b"warm"]

    def forward(sig, _frame):
        try:
            os.kill(pid, _signal.SIGINT if warm else sig)
        except OSError:
            pass

    for sig in (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP):
        try:
            _signal.signal(sig, forward)
        except (OSError, ValueError):
            pass


def _line(s) -> bytes:
    """One reply line, read a byte at a time (as hooks/client.c does): a
    command quicker than this process's reading leaves its ``exit N`` right
    behind the ``ok`` line, and a larger read would swallow it with the ack
    (the client then reported exit 1 for a search that succeeded)."""
    buf = bytearray()
    while len(buf) <= 4096:
        got = s.recv(1)
        if not got:
            break
        if got == b"\n":
            return bytes(buf).strip()
        buf += got
    return bytes(buf).strip()


def _cwd() -> bytes:
    try:
        return os.getcwdb()
    except OSError:  # a deleted directory: the server runs the command in $HOME
        return os.environb.get(b"HOME") or b"/"
