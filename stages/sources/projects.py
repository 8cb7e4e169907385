"""A session's project name from its working directory (harness-formats 1.7).

Its own module, importing only ``re``: the hooks name the project of every
payload's cwd and must not load a whole reader to do it.
"""

from __future__ import annotations

import re

_WORKTREE = re.compile(r"[/\\]\.claude[/\\]worktrees[/\\][^/\\]+$")
_SEP = re.compile(r"[/\\]")


def project_from_cwd(cwd: str) -> str:
    """Last two segments of a cwd, ``/``-joined; a desktop worktree counts as its repo."""
    s = cwd.rstrip("/\\")
    m = _WORKTREE.search(s)
    if m:
        s = s[: m.start()]
    parts = [p for p in _SEP.split(s) if p]
    return "/".join(parts[-2:])
