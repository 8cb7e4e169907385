"""Owner-only files: the store, the notes and the tombstones hold what people
said to their agents, so nobody else on the machine may read them.

deja's processes run under umask 077 (deja.pipeline.entry), so every file they
or DuckDB create is 0600 and every folder 0700 whatever the user's umask; the
folders deja creates are also set explicitly, for callers of the library that
keep their own umask. ``exposed`` is what `deja doctor` warns about.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

OWNER_ONLY = 0o077  # the umask: no bits for group and others


def private_dir(path: Path) -> Path:
    """``mkdir -p`` whose last folder, when this call makes it, is 0700: deja's
    own folder, not the ``~/.local/share`` a fresh account may lack too."""
    path = Path(path)
    made = not path.exists()
    path.mkdir(parents=True, exist_ok=True)
    if made:
        try:
            os.chmod(path, 0o700)
        except OSError:
            pass
    return path


def private_file(path: Path) -> None:
    """Make ``path`` (just created by the caller) readable by its owner only."""
    try:
        os.chmod(path, 0o600)
    except OSError:
        pass


def exposed(path: Path) -> str:
    """``"readable by others"`` (or group) when ``path`` exists with such bits, else ``""``."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return ""
    if mode & (stat.S_IROTH | stat.S_IWOTH | stat.S_IXOTH):
        return "readable by other users"
    if mode & (stat.S_IRGRP | stat.S_IWGRP | stat.S_IXGRP):
        return "readable by its group"
    return ""
