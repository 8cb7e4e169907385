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
import sys
from collections.abc import Mapping


def is_regular_file(path: str) -> bool:
    """Only regular files: a FIFO matching a glob would block open() forever."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


# A store that is a database server, not a file: its pseudo-path starts so
# (pipeline/manifest.py and ingest.py do not stat it).
REMOTE_PREFIX = "postgres:"


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


# ---- Cursor: the IDE's state.vscdb stores and the CLI agent's transcripts ----------

CURSOR_CLI_SUFFIXES = (".jsonl", ".txt")


def cursor_user_dir(env: Mapping[str, str]) -> str:
    """The IDE's User folder (globalStorage/ and workspaceStorage/ below it)."""
    if env.get("DEJA_CURSOR_ROOT"):
        return os.path.expanduser(env["DEJA_CURSOR_ROOT"])
    home = _home(env)
    if sys.platform == "darwin":
        return os.path.join(home, "Library", "Application Support", "Cursor", "User")
    if sys.platform == "win32":
        return os.path.join(env.get("APPDATA") or os.path.join(home, "AppData", "Roaming"), "Cursor", "User")
    xdg = env.get("XDG_CONFIG_HOME")
    if xdg and os.path.isdir(os.path.join(xdg, "Cursor", "User")):
        return os.path.join(xdg, "Cursor", "User")
    return os.path.join(home, ".config", "Cursor", "User")


def cursor_cli_home(env: Mapping[str, str]) -> str:
    """The CLI agent's folder (projects/<enc>/agent-transcripts/ below it)."""
    root = env.get("DEJA_CURSOR_CLI_ROOT") or env.get("CURSOR_CONFIG_DIR")
    return os.path.expanduser(root) if root else os.path.join(_home(env), ".cursor")


def cursor_files(env: Mapping[str, str], problems: list[str] | None = None) -> list[str]:
    out: list[str] = []
    user = cursor_user_dir(env)
    if os.path.isdir(user):
        g = os.path.join(user, "globalStorage", "state.vscdb")
        if is_regular_file(g):
            out.append(g)
        ws = os.path.join(user, "workspaceStorage")
        if os.path.isdir(ws):
            try:
                with os.scandir(ws) as it:
                    hashes = sorted(e.path for e in it if e.is_dir())
            except OSError as exc:
                _problem(problems, ws, _why(exc))
                hashes = []
            out.extend(p for h in hashes if is_regular_file(p := os.path.join(h, "state.vscdb")))
    projects_dir = os.path.join(cursor_cli_home(env), "projects")
    if os.path.isdir(projects_dir):
        include_sub = include_subagents(env)
        skip = lambda d: not include_sub and d == "subagents"  # noqa: E731
        for folder, names in walk(projects_dir, problems, skip, lambda n: n.endswith(CURSOR_CLI_SUFFIXES)):
            if "agent-transcripts" not in folder.replace("\\", "/").split("/"):
                continue  # the CLI keeps other files per project (mcp state, terminals)
            out.extend(os.path.join(folder, n) for n in names)
    out.sort()
    return out


# ---- opencode: <data>/opencode/opencode.db ------------------------------------------


def opencode_db(env: Mapping[str, str]) -> str:
    if env.get("DEJA_OPENCODE_DB"):
        return os.path.expanduser(env["DEJA_OPENCODE_DB"])
    data = env.get("XDG_DATA_HOME") or os.path.join(_home(env), ".local", "share")
    return os.path.join(data, "opencode", "opencode.db")


def opencode_files(env: Mapping[str, str], problems: list[str] | None = None) -> list[str]:
    p = opencode_db(env)
    return [p] if is_regular_file(p) else []


# ---- Hermes: <home>/state.db and <home>/profiles/<profile>/state.db ---------------


def hermes_home(env: Mapping[str, str]) -> str:
    root = env.get("DEJA_HERMES_HOME") or env.get("HERMES_HOME")
    return os.path.expanduser(root) if root else os.path.join(_home(env), ".hermes")


def hermes_profiles_root(env: Mapping[str, str]) -> str:
    root = env.get("DEJA_HERMES_PROFILES_ROOT")
    return os.path.expanduser(root) if root else os.path.join(hermes_home(env), "profiles")


def hermes_files(env: Mapping[str, str], problems: list[str] | None = None) -> list[str]:
    """Every Hermes SQLite store (DEJA_HERMES_DB names the one to read instead),
    and the Postgres store when DEJA_HERMES_PG_DSN is set."""
    out: list[str] = []
    if env.get("DEJA_HERMES_DB"):
        p = os.path.expanduser(env["DEJA_HERMES_DB"])
        out = [p] if is_regular_file(p) else []
        return out + _hermes_pg(env)
    root = os.path.join(hermes_home(env), "state.db")
    if is_regular_file(root):
        out.append(root)
    profiles = hermes_profiles_root(env)
    if os.path.isdir(profiles):
        try:
            with os.scandir(profiles) as it:
                names = sorted(e.path for e in it if e.is_dir())
        except OSError as exc:
            _problem(problems, profiles, _why(exc))
            names = []
        out.extend(p for d in names if is_regular_file(p := os.path.join(d, "state.db")))
    return out + _hermes_pg(env)


def _hermes_pg(env: Mapping[str, str]) -> list[str]:
    """The Postgres store as a pseudo-path naming the DSN only by its hash (stages/sources/hermes_pg.py)."""
    dsn = env.get("DEJA_HERMES_PG_DSN")
    if not dsn:
        return []
    import hashlib

    return [REMOTE_PREFIX + "hermes:" + hashlib.sha256(dsn.encode()).hexdigest()[:16]]


# ---- Antigravity: ~/.gemini/antigravity*/brain/<id>/.system_generated/logs/transcript.jsonl


def antigravity_roots(env: Mapping[str, str]) -> list[str]:
    """The versioned Antigravity folders (``antigravity``, ``antigravity-…``), or the override."""
    if env.get("DEJA_ANTIGRAVITY_ROOT"):
        return [os.path.expanduser(env["DEJA_ANTIGRAVITY_ROOT"])]
    gemini = os.path.join(_home(env), ".gemini")
    try:
        with os.scandir(gemini) as it:
            return sorted(e.path for e in it if e.name.startswith("antigravity") and e.is_dir())
    except OSError:
        return []


def antigravity_files(env: Mapping[str, str], problems: list[str] | None = None) -> list[str]:
    out: list[str] = []
    for root in antigravity_roots(env):
        brain = os.path.join(root, "brain")
        if not os.path.isdir(brain):
            continue
        try:
            with os.scandir(brain) as it:
                convs = sorted(e.path for e in it if e.is_dir())
        except OSError as exc:
            _problem(problems, brain, _why(exc))
            continue
        for conv in convs:
            p = os.path.join(conv, ".system_generated", "logs", "transcript.jsonl")
            if is_regular_file(p):
                out.append(p)
    return out


# ---- Grok Build: <GROK_HOME>/sessions/<url-encoded cwd>/<id>/updates.jsonl ----------


def grok_home(env: Mapping[str, str]) -> str:
    root = env.get("DEJA_GROK_ROOT") or env.get("GROK_HOME")
    return os.path.expanduser(root) if root else os.path.join(_home(env), ".grok")


def grok_files(env: Mapping[str, str], problems: list[str] | None = None) -> list[str]:
    sessions = os.path.join(grok_home(env), "sessions")
    out: list[str] = []
    if not os.path.isdir(sessions):
        return out
    for folder, names in walk(sessions, problems, want=lambda n: n == "updates.jsonl"):
        out.extend(os.path.join(folder, n) for n in names)
    out.sort()
    return out


# harness id → its transcripts (the readers' registry uses the same ids)
LOCATORS = {"claude": claude_files, "codex": codex_files, "deja": notes_files, "cursor": cursor_files,
            "opencode": opencode_files,
            "hermes": hermes_files,
            "antigravity": antigravity_files,
            "grok": grok_files}


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
