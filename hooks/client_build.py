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
    cc = env.get("CC") or next((c for c in COMPILERS if shutil.which(c, path=env.get("PATH"))), None)
    if not cc:
        return "no C compiler found: hooks start deja itself (install cc and run `deja install` again for faster hooks)"
    tmp = path.with_name(f".{NAME}.{os.getpid()}.tmp")
    try:
        proc = subprocess.run([cc, "-O2", "-o", str(tmp), str(source())], capture_output=True, text=True,
                              timeout=120, env=dict(env))
        if proc.returncode != 0 or not tmp.exists():
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            return f"the hook client did not compile ({cc}: {last}); hooks start deja itself"
        os.chmod(tmp, 0o755)
        os.replace(tmp, path)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"the hook client did not compile ({type(exc).__name__}: {exc}); hooks start deja itself"
    finally:
        tmp.unlink(missing_ok=True)
    return f"hook client built: {path}"


def remove(launcher: Path) -> None:
    client_path(launcher).unlink(missing_ok=True)
