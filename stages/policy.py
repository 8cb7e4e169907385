"""What must stay out of the index: tombstones (`deja forget`) and project exclusions.

deja's primary files besides notes. The index run consults them for every
file it reads (pipeline/run.py), so a rebuild from scratch cannot bring a
forgotten or excluded session back; compaction capture and the session-start
digest cache consult them too, which is why this module imports only the
standard library.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping


def config_dir(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    home = env.get("HOME") or os.path.expanduser("~")
    return Path(env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")) / "deja"


def tombstones_path(env: Mapping[str, str] | None = None) -> Path:
    return config_dir(env) / "tombstones"


def exclude_path(env: Mapping[str, str] | None = None) -> Path:
    return config_dir(env) / "exclude"


def _text(path: Path) -> str:
    """A file a person may have saved in an older encoding: UTF-8 (a byte order
    mark skipped), else Latin-1, which reads every byte as the letter it most
    likely was (an exclusion that failed to read let the project in, and
    stopped every index run with an error that named no file)."""
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def file_tombstones(env: Mapping[str, str] | None = None) -> list[str]:
    try:
        text = _text(tombstones_path(env))
    except OSError:
        return []
    return [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]


def exclusion_patterns(env: Mapping[str, str] | None = None) -> list[str]:
    env = os.environ if env is None else env
    pats: list[str] = []
    try:
        for ln in _text(exclude_path(env)).splitlines():
            ln = ln.split("#", 1)[0].strip()
            if ln:
                pats.append(ln)
    except OSError:
        pass
    pats += [p.strip() for p in (env.get("DEJA_EXCLUDE_PROJECTS") or "").split(",") if p.strip()]
    return pats


def project_excluded(project: str, patterns: list[str]) -> bool:
    """harness-formats 1.7: the project contains the pattern (case-insensitive) or matches it as a /-glob."""
    if not project or not patterns:
        return False
    from fnmatch import fnmatchcase

    low = project.lower()
    for p in patterns:
        pl = p.lower()
        if pl in low or fnmatchcase(low, pl):
            return True
        if any(c in pl for c in "*?[") and fnmatchcase(low, "*/" + pl.lstrip("/")):
            return True
    return False


class DropFilter:
    """Sessions an index run must not write: tombstoned keys and excluded projects."""

    def __init__(self, keys: set[str], patterns: list[str]):
        self.keys = keys
        self.patterns = patterns

    def __bool__(self) -> bool:
        return bool(self.keys or self.patterns)

    def drops(self, key: str, project: str) -> bool:
        return key in self.keys or project_excluded(project, self.patterns)

    def apply(self, cols: dict, meta: dict) -> int:
        """Drop such sessions' rows from a read's columns and metadata; returns rows kept."""
        gone = {k for k, m in meta.items() if self.drops(k, m.get("project") or "")}
        keys, projects = cols["session_key"], cols["project"]
        keep = [i for i, (k, p) in enumerate(zip(keys, projects)) if k not in gone and not self.drops(k, p or "")]
        if len(keep) != len(keys):
            for name, values in cols.items():
                cols[name] = [values[i] for i in keep]
        for k in gone:
            meta.pop(k, None)
        return len(keep)


def drop_filter(env: Mapping[str, str], con=None) -> DropFilter:
    keys = set(file_tombstones(env))
    if con is not None:
        try:
            keys.update(r[0] for r in con.execute("SELECT session_key FROM tombstones").fetchall())
        except Exception:  # an older catalog without the table
            pass
    return DropFilter(keys, exclusion_patterns(env))
