"""A session's project: its identity (a root path) and its short names.

One rule for every harness, applied once per session by normalize: the root of
the git work tree that holds the cwd (its symlinks resolved), when that work
tree still exists on this machine, else the recorded cwd itself, normalised (``~``, trailing slashes,
Windows separators; case folded where the file system ignores case). The
display name is a suffix of the root: its last two segments (harness-formats
1.7), grown until it is unique among the store's projects (``display_names``).

Its own module, importing only ``os`` and ``re``: the hooks name the project of
every payload's cwd and must not load a reader to do it.
"""

from __future__ import annotations

import os
import re
import sys
from functools import lru_cache

_WORKTREE = re.compile(r"[/\\]\.claude[/\\]worktrees[/\\][^/\\]+$")
_SEP = re.compile(r"[/\\]")
_DRIVE = re.compile(r"^[A-Za-z]:(?:[/\\]|$)")
# a store written on macOS keeps its case-insensitive paths when read elsewhere
_MAC = re.compile(r"^/(?:Users|Volumes|private|Applications)(?:/|$)")
_GITDIR_WORKTREE = re.compile(r"^gitdir:\s*(.+?)[/\\]\.git[/\\]worktrees[/\\][^/\\]+\s*$")


def project_from_cwd(cwd: str) -> str:
    """Last two segments of a cwd, ``/``-joined; a desktop worktree counts as its repo."""
    s = cwd.rstrip("/\\")
    m = _WORKTREE.search(s)
    if m:
        s = s[: m.start()]
    return short_name(s)


def short_name(path: str, n: int = 2) -> str:
    """The last ``n`` segments of a path, ``/``-joined."""
    parts = [p for p in _SEP.split(path) if p]
    return "/".join(parts[-n:])


def _windows(path: str) -> bool:
    return bool(_DRIVE.match(path)) or path.startswith("\\\\") or ("\\" in path and "/" not in path)


def folds_case(path: str) -> bool:
    """A path on a file system that ignores case: Windows, macOS (here or recorded there)."""
    return _windows(path) or bool(_MAC.match(path)) or (sys.platform == "darwin" and path.startswith("/"))


def spelled(cwd: str, home: str | None = None) -> str:
    """A cwd normalised but for case: ``~`` expanded, ``/`` separators, no
    trailing slash, no empty or ``.`` segments, ``..`` applied."""
    s = (cwd or "").strip()
    if not s:
        return ""
    if s == "~" or s.startswith(("~/", "~\\")):
        h = home if home is not None else (os.environ.get("HOME") or os.path.expanduser("~"))
        s = h.rstrip("/\\") + "/" + s[2:] if len(s) > 1 else h
    unc = s.startswith(("\\\\", "//"))
    if _windows(s):
        s = s.replace("\\", "/")
    drive = ""
    if _DRIVE.match(s):
        drive, s = s[0].upper() + ":", s[2:]
    out: list[str] = []
    for seg in s.split("/"):
        if seg in ("", "."):
            continue
        if seg == ".." and out:
            out.pop()
            continue
        out.append(seg)
    body = "/".join(out)
    if unc:
        return "//" + body
    if drive:
        return drive + "/" + body
    return "/" + body if s.startswith("/") else body


def normalize_cwd(cwd: str, home: str | None = None) -> str:
    """The comparable form of a cwd: ``spelled``, case folded where the file system ignores it."""
    s = spelled(cwd, home)
    return s.lower() if s and folds_case(s) else s


@lru_cache(maxsize=8192)
def _repo_root(directory: str) -> str:
    """The work tree holding ``directory`` (a ``.git`` folder or file above it), or "".

    A linked worktree (``.git`` a file naming ``<repo>/.git/worktrees/<name>``)
    counts as its main repository when that still exists. Cached per directory:
    one run asks for the same few folders thousands of times."""
    d = directory
    while True:
        git = os.path.join(d, ".git")
        if os.path.isdir(git):
            return d
        if os.path.isfile(git):
            try:
                with open(git, encoding="utf-8", errors="replace") as f:
                    m = _GITDIR_WORKTREE.match(f.read(4096).strip())
            except OSError:
                m = None
            if m:
                main = m.group(1)
                main = main if os.path.isabs(main) else os.path.normpath(os.path.join(d, main))
                if os.path.isdir(os.path.join(main, ".git")):
                    return main
            return d
        parent = os.path.dirname(d)
        if parent == d:
            return ""
        d = parent


@lru_cache(maxsize=8192)
def _real(directory: str) -> str:
    """The folder with its symlinks resolved: a repository reached through a
    link (``~/code -> /data/src``; macOS's ``/tmp``, ``/var`` under
    ``/private``) is the one project whichever spelling an agent recorded."""
    return os.path.realpath(directory)


def project_root(cwd: str, home: str | None = None) -> str:
    """A session's project identity from its recorded cwd (see the module's doc)."""
    s = spelled(cwd, home)
    if not s:
        return ""
    local = s if os.sep == "/" else s.replace("/", os.sep)
    if os.path.isabs(local) and os.path.isdir(local):
        real = _real(os.path.normpath(local))
        s = spelled(_repo_root(real) or real)
    else:
        m = _WORKTREE.search(s)
        if m:  # a desktop worktree that is gone: still its repository
            s = s[: m.start()]
    return s.lower() if folds_case(s) else s


@lru_cache(maxsize=8192)
def rerooted(root: str) -> str:
    """A root an earlier run stored, as ``project_root`` names it now (the
    rule has grown since: symlinks resolved), so a store indexed before is one
    project with what is indexed after, without a rebuild."""
    return project_root(root) if root else root


def clear_cache() -> None:
    """Forget the work trees seen (a new run may find a repository moved or gone)."""
    _repo_root.cache_clear()
    _real.cache_clear()
    rerooted.cache_clear()


def display_names(roots: dict[str, str]) -> dict[str, str]:
    """A unique short name for each root (``root → its spelling``): the last two
    segments where no other root shares them, else the shortest longer suffix
    that no other root shares (compared without case)."""
    segs = {r: [p for p in (spell or r).split("/") if p] for r, spell in roots.items()}
    take = {r: min(2, len(s)) for r, s in segs.items()}
    while True:
        named: dict[str, list[str]] = {}
        for r, s in segs.items():
            named.setdefault("/".join(s[-take[r]:]).lower() or r, []).append(r)
        grew = False
        for same in named.values():
            if len(same) > 1:
                for r in same:
                    if take[r] < len(segs[r]):
                        take[r] += 1
                        grew = True
        if not grew:
            break
    return {r: "/".join(s[-take[r]:]) or r for r, s in segs.items()}


def match_terms(project: str | None, home: str | None = None) -> tuple[str | None, str | None]:
    """``--project`` as (exact, suffix), lower case, for ``queries/project_match``:
    an absolute path names the project holding it (its root); anything else is
    a display name or a suffix of a root at a segment boundary."""
    p = (project or "").strip()
    if not p:
        return None, None
    if p.startswith(("/", "~")) or _DRIVE.match(p) or p.startswith("\\\\"):
        return project_root(p, home).lower(), None
    tail = p.replace("\\", "/").strip("/").lower()
    return tail, "/" + tail
