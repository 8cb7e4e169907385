"""Where each harness keeps its transcripts: paths only, nothing parsed.

The freshness check in front of every query walks these folders, and must not
pay for importing the readers (their patterns, dataclasses and JSON parser)
to do it. Each reader's ``discover`` wraps its locator's paths.

Symlinks inside a store are followed, files and folders alike: a user who
moved ~/.claude/projects or one project to another disk expects it indexed.
What cannot be followed (a dangling link, a loop) or read (a folder without
permission) is skipped and said in ``problems`` (``path: why``), which
`deja index` and `deja doctor` report: a store that is partly unreadable is
never silently smaller.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping


def is_regular_file(path: str) -> bool:
    """Only regular files: a FIFO matching a glob would block open() forever."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def _home(env: Mapping[str, str]) -> str:
    return env.get("HOME") or os.path.expanduser("~")


# ---- Claude Code: <config>/projects/<encoded-cwd>/<session>.jsonl ----------------


def claude_root(env: Mapping[str, str]) -> str:
    root = env.get("DEJA_CLAUDE_ROOT")
    if root:
        return root
    config = env.get("CLAUDE_CONFIG_DIR") or os.path.join(_home(env), ".claude")
    return os.path.join(config, "projects")


def walk(top: str, problems: list[str] | None, skip_dir=None, want=None):
    """(folder, [file names]) of every folder under ``top``, symlinks followed.

    ``want(name)``: the file names worth a stat (the rest are never stat'ed);
    ``skip_dir(name)``: sub-folders not entered. A folder reached twice (a
    symlink loop, two links to one folder) is walked once; anything that
    cannot be read is said in ``problems``.
    """
    seen: set[tuple[int, int]] = set()
    stack = [top]
    while stack:
        folder = stack.pop()
        try:
            st = os.stat(folder)
            key = (st.st_dev, st.st_ino)
            if key in seen:
                _problem(problems, folder, "symlink loop or second link to a folder already read: skipped")
                continue
            seen.add(key)
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            _problem(problems, folder, _why(exc))
            continue
        files, subdirs = [], []
        for e in entries:
            try:
                if e.is_dir():
                    if not (skip_dir and skip_dir(e.name)):
                        subdirs.append(e.path)
                elif e.is_symlink() and not os.path.exists(e.path):
                    _problem(problems, e.path, "dangling or looping symlink: skipped")
                elif (want is None or want(e.name)) and e.is_file():  # never a FIFO: open() would block
                    files.append(e.name)
            except OSError as exc:
                _problem(problems, e.path, _why(exc))
        yield folder, files
        stack.extend(reversed(subdirs))


def _problem(problems: list[str] | None, path: str, why: str) -> None:
    if problems is not None:
        problems.append(f"{path}: {why}")


def _why(exc: OSError) -> str:
    if isinstance(exc, PermissionError):
        return "permission denied: skipped"
    return f"cannot be read ({exc.strerror or type(exc).__name__}): skipped"


def include_subagents(env: Mapping[str, str]) -> bool:
    """Subagent transcripts are left out unless DEJA_INCLUDE_SUBAGENTS=1: they
    repeat their parent's task in smaller steps and would crowd search."""
    return env.get("DEJA_INCLUDE_SUBAGENTS") == "1"


def claude_files(env: Mapping[str, str], problems: list[str] | None = None) -> list[str]:
    root = claude_root(env)
    if not os.path.isdir(root):
        if os.path.lexists(root) and not os.path.exists(root):
            _problem(problems, root, "dangling symlink: skipped")
        return []
    include_sub = include_subagents(env)
    out: list[str] = []
    skip = lambda d: d == "tool-results" or (not include_sub and d == "subagents")  # noqa: E731
    for folder, names in walk(root, problems, skip, lambda n: n.endswith(".jsonl")):
        if folder == root:
            continue  # transcripts live in project folders, not beside them
        top = os.path.dirname(folder) == root
        for name in names:
            if top and name.startswith("agent-") and not include_sub:
                continue  # 2.0.x subagent transcripts beside the sessions
            out.append(os.path.join(folder, name))
    out.sort()
    return out


# ---- Codex CLI: <home>/sessions/YYYY/MM/DD/rollout-*.jsonl and history.jsonl -------


def codex_home(env: Mapping[str, str]) -> str:
    return env.get("DEJA_CODEX_ROOT") or env.get("CODEX_HOME") or os.path.join(_home(env), ".codex")


def codex_rollouts(home: str, problems: list[str] | None = None) -> list[str]:
    root = os.path.join(home, "sessions")
    out: list[str] = []
    if not os.path.isdir(root):
        return out
    want = lambda n: "rollout-" in n and n.endswith(".jsonl")  # noqa: E731
    for folder, names in walk(root, problems, want=want):
        out.extend(os.path.join(folder, n) for n in names)
    out.sort()
    return out


def codex_files(env: Mapping[str, str], problems: list[str] | None = None) -> list[str]:
    home = codex_home(env)
    files = codex_rollouts(home, problems)
    history = os.path.join(home, "history.jsonl")
    if is_regular_file(history):
        files.append(history)
    return files


# ---- deja's own notes (`deja remember`) ------------------------------------------


def notes_file(env: Mapping[str, str]) -> str:
    if env.get("DEJA_NOTES_FILE"):
        return os.path.expanduser(env["DEJA_NOTES_FILE"])
    data = env.get("XDG_DATA_HOME") or os.path.join(_home(env), ".local", "share")
    return os.path.join(data, "deja", "notes.jsonl")


def notes_files(env: Mapping[str, str], problems: list[str] | None = None) -> list[str]:
    p = notes_file(env)
    return [p] if is_regular_file(p) else []


# ---- Cline, Roo Code, Kilo Code: task folders (stages/sources/task_folders.py) -----


def cline_files(env: Mapping[str, str], problems: list[str] | None = None) -> list[str]:
    from .task_folders import cline_files as files

    return files(env, problems)


def roo_files(env: Mapping[str, str], problems: list[str] | None = None) -> list[str]:
    from .task_folders import roo_files as files

    return files(env, problems)


def kilo_files(env: Mapping[str, str], problems: list[str] | None = None) -> list[str]:
    from .task_folders import kilo_files as files

    return files(env, problems)


# harness id → its transcripts (the readers' registry uses the same ids)
LOCATORS = {"claude": claude_files, "codex": codex_files, "deja": notes_files,
            "cline": cline_files, "roo": roo_files, "kilo": kilo_files}


def sources(env: Mapping[str, str], problems: list[str] | None = None) -> list[tuple[str, str]]:
    """(path, harness) of every transcript the readers would read; what could
    not be read goes to ``problems`` as ``harness: path: why``."""
    out: list[tuple[str, str]] = []
    for harness, files in LOCATORS.items():
        mine: list[str] = []
        try:
            out.extend((p, harness) for p in files(env, mine))
        except OSError as exc:
            mine.append(f"{harness} store: {_why(exc)}")
        if problems is not None:
            problems.extend(f"{harness}: {p}" for p in mine)
    return out
