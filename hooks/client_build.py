"""The compiled hook client (hooks/client.c): built by `deja install` beside
the hook launcher, when the machine has a C compiler.

Every hook pays for its process start, on every prompt and every tool call.
Python's start alone costs more than a warm server's answer, so the launcher
runs this small program first: it hands the hook to `deja serve` over the
same protocol as pipeline/serve_client.py, and becomes `deja` itself whenever
it cannot be served. Without a compiler nothing changes: the launcher runs
`deja`, whose own client asks the server.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path

NAME = "deja-client"
COMPILERS = ("cc", "gcc", "clang")


def source() -> Path:
    return Path(__file__).with_name("client.c")


def client_path(launcher: Path) -> Path:
    return launcher.with_name(NAME)


def state(launcher: Path) -> str:
    """'built', 'outdated' (older than this deja's source: `deja install` rebuilds it) or 'absent'."""
    path = client_path(launcher)
    try:
        built = path.stat().st_mtime_ns
    except OSError:
        return "absent"
    try:
        return "outdated" if source().stat().st_mtime_ns > built else "built"
    except OSError:
        return "built"


def build(launcher: Path, env=os.environ) -> str | None:
    """Compile the client beside ``launcher`` when it is absent or older than
    its source; a note for the person when something happened, else None.
    ``DEJA_HOOK_CLIENT=off`` leaves it out (and removes one built before)."""
    path = client_path(launcher)
    if (env.get("DEJA_HOOK_CLIENT") or "").lower() in ("off", "0", "no", "false"):
        if path.exists():
            path.unlink()
            return f"hook client removed: {path} (DEJA_HOOK_CLIENT=off)"
        return None
    if state(launcher) == "built":
        return None
    failed = compile_client(path, env)
    if failed == "":
        return "no C compiler found: hooks start deja itself (install cc and run `deja install` again for faster hooks)"
    if failed:
        return f"the hook client did not compile ({failed}); hooks start deja itself"
    return f"hook client built: {path}"


def compile_client(out: Path, env=os.environ, main: bool = False) -> str | None:
    """Compile client.c to ``out`` (replaced whole) with the first compiler
    that can: ``$CC``, else cc, gcc or clang. ``main``: the `deja` executable
    (-DDEJA_MAIN, setup.py), else the hook client. None when built; else why
    not, "" when no compiler was found. Imports nothing of deja: the package
    build loads this file on its own."""
    compilers = [env["CC"]] if env.get("CC") else [c for c in COMPILERS if shutil.which(c, path=env.get("PATH"))]
    why = ""
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    for cc in compilers:
        cmd = [*shlex.split(cc), "-O2", *(["-DDEJA_MAIN"] if main else []), "-o", str(tmp), str(source())]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=dict(env))
            if proc.returncode == 0 and tmp.exists():
                os.chmod(tmp, 0o755)
                os.replace(tmp, out)
                return None
            why = f"{cc}: {(proc.stderr.strip().splitlines() or ['no output'])[-1]}"
        except (OSError, subprocess.SubprocessError) as exc:
            why = f"{type(exc).__name__}: {exc}"
        finally:
            tmp.unlink(missing_ok=True)
    return why


def remove(launcher: Path) -> None:
    client_path(launcher).unlink(missing_ok=True)
