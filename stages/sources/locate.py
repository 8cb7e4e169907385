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
import time
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
# Codex compresses a rollout untouched for a week to ``rollout-*.jsonl.zst`` and
# removes the ``.jsonl`` (harness-formats section 4): read as the JSONL it holds
# (``jsonl.open_bytes``). Named here, where the plan, which every search imports,
# finds it without the readers' modules.
COMPRESSED = ".zst"


def _home(env: Mapping[str, str]) -> str:
    return env.get("HOME") or os.path.expanduser("~")


# ---- Claude Code: <config>/projects/<encoded-cwd>/<session>.jsonl ----------------


def claude_root(env: Mapping[str, str]) -> str:
    root = env.get("DEJA_CLAUDE_ROOT")
    if root:
        return root
    config = env.get("CLAUDE_CONFIG_DIR") or os.path.join(_home(env), ".claude")
    return os.path.join(config, "projects")


# A warm process (deja serve, deja mcp) checks every store before each answer:
# folder → (its identity and mtime, its entries, whether any is a symlink,
# and what walks made of them: walk's ``memo``) for listings it may reuse.
# None: not kept (a one-shot process lists each folder once anyway).
_LISTINGS: dict[str, tuple[tuple[int, int, int, int], list[tuple[str, str, int]], bool, dict]] | None = None
# A folder changed this recently may change again within its mtime's
# granularity (a second on some file systems) unseen: listed again until then.
_SETTLED_NS = 2_000_000_000
# an entry's kind (compared whole), and _LINK, a flag on it for a symlink's
_DIR, _FILE, _DANGLING, _OTHER, _LINK = 1, 2, 3, 4, 8


def keep_listings(on: bool = True) -> None:
    """Reuse a folder's listing while its mtime stands (a folder's entries
    change its mtime; a file appended to does not need it listed again)."""
    global _LISTINGS, _LAST_SOURCES
    _LISTINGS = {} if on else None
    _LAST_SOURCES = None
    _MADE.clear()
    _PAIRS.clear()


def _entries(folder: str, st: os.stat_result, problems: list[str] | None) -> tuple[list[tuple[str, str, int]], dict | None]:
    """(name, path, kind) of a folder's entries, by name; a kept listing while
    the folder's mtime stands (a symlink's kind is looked at again: its target
    may change without the folder's mtime). With a kept listing of no symlink,
    the dict where walks keep what they made of it (else None)."""
    # (ctime too: a tool that sets a folder's mtime back, as rsync and tar do, moves its ctime)
    key = (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
    kept = _LISTINGS.get(folder) if _LISTINGS is not None else None
    if kept is not None and kept[0] == key:
        if not kept[2]:
            return kept[1], kept[3]
        return [(n, p, k if not k & _LINK else _kind_of_link(p)) for n, p, k in kept[1]], None
    listed_at = time.time_ns()
    out, whole, links = [], True, False
    with os.scandir(folder) as it:
        for e in sorted(it, key=lambda e: e.name):
            try:
                if e.is_symlink():
                    out.append((e.name, e.path, _LINK | _kind_of_link(e.path)))
                    links = True
                else:
                    out.append((e.name, e.path, _DIR if e.is_dir() else _FILE if e.is_file() else _OTHER))
            except OSError as exc:
                _problem(problems, e.path, _why(exc))
                whole = False  # (said on every walk, not kept)
    if _LISTINGS is not None and whole and listed_at - max(st.st_mtime_ns, st.st_ctime_ns) > _SETTLED_NS:
        _LISTINGS[folder] = (key, out, links, {})
    return out, None


def _kind_of_link(path: str) -> int:
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return _LINK | _DANGLING
    return _LINK | (_DIR if stat.S_ISDIR(mode) else _FILE if stat.S_ISREG(mode) else _OTHER)


def walk(top: str, problems: list[str] | None, skip_dir=None, want=None, memo: str | None = None):
    """(folder, [file names]) of every folder under ``top``, symlinks followed.

    ``want(name)``: the file names worth a stat (the rest are never stat'ed);
    ``skip_dir(name)``: sub-folders not entered. A folder reached twice (a
    symlink loop, two links to one folder) is walked once; anything that
    cannot be read is said in ``problems``. ``memo``: a name for what
    ``want`` and ``skip_dir`` choose, under which a warm process keeps the
    choice with a folder's kept listing (a store of 12,000 transcripts is
    walked before every answer). The names yielded are not to be changed.
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
            entries, made = _entries(folder, st, problems)
        except OSError as exc:
            _problem(problems, folder, _why(exc))
            continue
        chosen = made.get(memo) if made is not None and memo is not None else None
        if chosen is None:
            files, subdirs = [], []
            for name, path, kind in entries:
                kind &= ~_LINK
                if kind == _DIR:
                    if not (skip_dir and skip_dir(name)):
                        subdirs.append(path)
                elif kind == _DANGLING:
                    _problem(problems, path, "dangling or looping symlink: skipped")
                elif kind == _FILE and (want is None or want(name)):  # never a FIFO: open() would block
                    files.append(name)
            subdirs.reverse()
            chosen = (files, subdirs)
            if made is not None and memo is not None:  # (no symlink among them: nothing said above)
                made[memo] = chosen
        yield folder, chosen[0]
        stack.extend(chosen[1])


# A warm process's walks and the paths made of them, by locator and root.
_MADE: dict[str, tuple[list, list[str]]] = {}


def _made_of(name: str, walked: list[tuple[str, list[str]]], make) -> list[str]:
    """``make(walked)``, or in a warm process the list it made last time when
    every folder walked is the same with the same kept choice of names (walk's
    ``memo``): the paths of 12,000 transcripts are not rebuilt before every
    answer. The list returned is not to be changed."""
    if _LISTINGS is None:
        return make(walked)
    last = _MADE.get(name)
    if last is not None and len(last[0]) == len(walked) and all(
            a[0] == b[0] and a[1] is b[1] for a, b in zip(last[0], walked)):
        return last[1]
    out = make(walked)
    _MADE[name] = (walked, out)
    return out


def _folders(folder: str, problems: list[str] | None = None, want=None) -> list[str]:
    """The subfolders of ``folder`` (whose names ``want`` accepts), sorted; one that
    cannot be listed is a problem named in ``problems`` and has none."""
    try:
        with os.scandir(folder) as it:
            return sorted(e.path for e in it if (want is None or want(e.name)) and e.is_dir())
    except OSError as exc:
        _problem(problems, folder, _why(exc))
        return []


def _problem(problems: list[str] | None, path: str, why: str) -> None:
    if problems is not None:
        problems.append(f"{path}: {why}")


DENIED = "permission denied"  # how a problem says it (doctor reads it back: a store closed to the user)


def _why(exc: OSError) -> str:
    if isinstance(exc, PermissionError):
        return f"{DENIED}: skipped"
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
    skip = lambda d: d == "tool-results" or (not include_sub and d == "subagents")  # noqa: E731
    memo = f"claude:{include_sub}"
    walked = list(walk(root, problems, skip, lambda n: n.endswith(".jsonl"), memo))

    def paths(walked):
        out: list[str] = []
        for folder, names in walked:
            if folder == root:
                continue  # transcripts live in project folders, not beside them
            top = os.path.dirname(folder) == root
            at = os.path.join(folder, "")
            for name in names:
                if top and name.startswith("agent-") and not include_sub:
                    continue  # 2.0.x subagent transcripts beside the sessions
                out.append(at + name)
        out.sort()
        return out

    return _made_of(f"{memo}:{root}", walked, paths)


# ---- Codex CLI: <home>/sessions/YYYY/MM/DD/rollout-*.jsonl[.zst] and history.jsonl -


def codex_home(env: Mapping[str, str]) -> str:
    return env.get("DEJA_CODEX_ROOT") or env.get("CODEX_HOME") or os.path.join(_home(env), ".codex")


def codex_rollouts(home: str, problems: list[str] | None = None, folder: str = "sessions") -> list[str]:
    """The rollouts under ``home``'s ``folder``: ``sessions`` (by day), or
    ``archived_sessions`` (flat), where Codex's app and IDE extension move
    a thread archived, and out of which one unarchived moves back.

    A rollout untouched for a week may be compressed to ``rollout-*.jsonl.zst``
    (Codex then removes the ``.jsonl``); while both lie there, the plain one is
    the thread's file, so a thread is one file, read once."""
    root = os.path.join(home, folder)
    if not os.path.isdir(root):
        return []
    want = lambda n: "rollout-" in n and n.endswith((".jsonl", ".jsonl.zst"))  # noqa: E731

    def paths(walked):
        out: list[str] = []
        for at, names in walked:
            at = os.path.join(at, "")
            plain = {n for n in names if n.endswith(".jsonl")}
            out.extend(at + n for n in names if not (n.endswith(".zst") and n[:-4] in plain))
        out.sort()
        return out

    return _made_of(f"codex:{root}", list(walk(root, problems, want=want, memo="codex")), paths)


CODEX_ARCHIVED = "archived_sessions"


def codex_files(env: Mapping[str, str], problems: list[str] | None = None) -> list[str]:
    # an archived thread is history still (hidden from Codex's list, not
    # deleted): read where it is, and a move there is a move (pipeline/manifest.py)
    home = codex_home(env)
    files = codex_rollouts(home, problems) + codex_rollouts(home, problems, CODEX_ARCHIVED)
    history = os.path.join(home, "history.jsonl")
    if is_regular_file(history):
        files.append(history)
    return files


# ---- GitHub Copilot CLI: <home>/session-state/<id>/events.jsonl (and the flat
# <id>.jsonl before it), history-session-state/*.json, command-history-state.json


def copilot_home(env: Mapping[str, str]) -> str:
    """DEJA_COPILOT_ROOT names the copilot home, or its ``session-state`` folder
    (the reference's form: the home is then its parent); else COPILOT_HOME."""
    root = env.get("DEJA_COPILOT_ROOT")
    if root:
        root = root.rstrip("/\\") or root
        return os.path.dirname(root) if os.path.basename(root) == "session-state" else root
    return env.get("COPILOT_HOME") or os.path.join(_home(env), ".copilot")


def copilot_files(env: Mapping[str, str], problems: list[str] | None = None) -> list[str]:
    home = copilot_home(env)
    out: list[str] = []
    if not os.path.isdir(home):
        return out
    state = os.path.join(home, "session-state")
    if os.path.isdir(state):
        for folder, names in walk(state, problems, want=lambda n: n.endswith(".jsonl")):
            if folder == state:
                out.extend(os.path.join(folder, n) for n in names)  # the flat <id>.jsonl layout
            elif os.path.dirname(folder) == state and "events.jsonl" in names:
                out.append(os.path.join(folder, "events.jsonl"))
    legacy = os.path.join(home, "history-session-state")
    if os.path.isdir(legacy):
        want = lambda n: n.startswith("session_") and n.endswith(".json")  # noqa: E731
        for folder, names in walk(legacy, problems, want=want):
            if folder == legacy:
                out.extend(os.path.join(folder, n) for n in names)
    history = os.path.join(home, "command-history-state.json")
    if is_regular_file(history):
        out.append(history)
    out.sort()
    return out


# ---- Gemini CLI and Qwen Code: <home>/tmp/<project>/chats/, Qwen's projects/<enc>/chats/ ----


def gemini_home(env: Mapping[str, str]) -> str:
    """The ``.gemini`` folder: DEJA_GEMINI_ROOT, else GEMINI_CLI_HOME's, else ~/.gemini."""
    if env.get("DEJA_GEMINI_ROOT"):
        return env["DEJA_GEMINI_ROOT"]
    base = env.get("GEMINI_CLI_HOME") or _home(env)
    return os.path.join(base, ".gemini")


def _is_chat(name: str) -> bool:
    return name.endswith((".jsonl", ".json"))


def _is_checkpoint(name: str) -> bool:
    return name.startswith("checkpoint") and name.endswith(".json")


def project_chats(top: str, problems: list[str] | None, subagents: bool, checkpoints: bool = True) -> list[str]:
    """Chats under ``top/<project>/chats/`` (subagents' one folder deeper, only when
    ``subagents``) and saved checkpoints ``top/<project>/checkpoint*.json``. A
    ``.json`` chat whose ``.jsonl`` is beside it is the same session, rewritten
    in the newer form when it was resumed: only the ``.jsonl`` is read."""
    out: list[str] = []
    if not os.path.isdir(top):
        if os.path.lexists(top) and not os.path.exists(top):
            _problem(problems, top, "dangling symlink: skipped")
        return out
    for project in _folders(top, problems):
        if checkpoints:
            try:
                with os.scandir(project) as it:
                    out.extend(e.path for e in it if _is_checkpoint(e.name) and e.is_file())
            except OSError as exc:
                _problem(problems, project, _why(exc))
                continue
        chats = os.path.join(project, "chats")
        if not os.path.isdir(chats):
            continue
        for folder, names in walk(chats, problems, skip_dir=lambda d: not subagents, want=_is_chat):
            have = set(names)
            out.extend(os.path.join(folder, n) for n in names
                       if not (n.endswith(".json") and n + "l" in have))
    out.sort()
    return out


def gemini_files(env: Mapping[str, str], problems: list[str] | None = None) -> list[str]:
    return project_chats(os.path.join(gemini_home(env), "tmp"), problems, include_subagents(env))


def qwen_home(env: Mapping[str, str]) -> str:
    """Qwen Code's runtime folder: DEJA_QWEN_ROOT, else QWEN_RUNTIME_DIR, else ~/.qwen."""
    return env.get("DEJA_QWEN_ROOT") or env.get("QWEN_RUNTIME_DIR") or os.path.join(_home(env), ".qwen")


def qwen_files(env: Mapping[str, str], problems: list[str] | None = None) -> list[str]:
    """``projects/<enc cwd>/chats/*.jsonl`` (only files directly in ``chats``) and
    the older ``tmp/<hash>/chats/*.json`` and checkpoints."""
    home = qwen_home(env)
    if not os.path.isdir(home):
        return []
    files = [p for p in project_chats(os.path.join(home, "projects"), problems, False, checkpoints=False)
             if p.endswith(".jsonl")]
    files += project_chats(os.path.join(home, "tmp"), problems, False)
    files.sort()
    return files


# ---- deja's own notes (`deja remember`) ------------------------------------------


def deja_data(env: Mapping[str, str]) -> str:
    """deja's primary data outside the cache (notes, imports): the index is rebuilt from it."""
    return os.path.join(env.get("XDG_DATA_HOME") or os.path.join(_home(env), ".local", "share"), "deja")


def notes_file(env: Mapping[str, str]) -> str:
    if env.get("DEJA_NOTES_FILE"):
        return os.path.expanduser(env["DEJA_NOTES_FILE"])
    return os.path.join(deja_data(env), "notes.jsonl")


def notes_files(env: Mapping[str, str], problems: list[str] | None = None) -> list[str]:
    p = notes_file(env)
    return [p] if is_regular_file(p) else []


# ---- sessions synced in from other machines (`deja sync import`) -------------------


def imports_dir(env: Mapping[str, str]) -> str:
    """Where imported records live: primary data beside the notes, outside the
    cache, so a rebuild reads them again like any agent's store."""
    if env.get("DEJA_IMPORTS_DIR"):
        return os.path.expanduser(env["DEJA_IMPORTS_DIR"])
    return os.path.join(deja_data(env), "imports")


def imports_files(env: Mapping[str, str], problems: list[str] | None = None) -> list[str]:
    """``<imports>/<machine>/<month>.jsonl`` (and any ``*.jsonl`` directly inside)."""
    folder = imports_dir(env)
    out = []
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return []
    for e in entries:
        if e.name.endswith(".jsonl") and is_regular_file(e.path):
            out.append(e.path)
        elif e.is_dir(follow_symlinks=False):
            try:
                out += [p for n in sorted(os.listdir(e.path))
                        if n.endswith(".jsonl") and is_regular_file(p := os.path.join(e.path, n))]
            except OSError as exc:
                if problems is not None:
                    problems.append(f"imported: {e.path}: {exc.strerror}")
    return out


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
            out.extend(p for h in _folders(ws, problems) if is_regular_file(p := os.path.join(h, "state.vscdb")))
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


# ---- opencode: <data>/opencode/opencode.db, opencode-<channel>.db ---------------------


def opencode_db(env: Mapping[str, str]) -> str:
    if env.get("DEJA_OPENCODE_DB"):
        return os.path.expanduser(env["DEJA_OPENCODE_DB"])
    data = env.get("XDG_DATA_HOME") or os.path.join(_home(env), ".local", "share")
    return os.path.join(data, "opencode", "opencode.db")


def opencode_dbs(env: Mapping[str, str]) -> list[str]:
    """Every opencode database: ``opencode.db`` (the latest/beta/prod builds'),
    each other channel's ``opencode-<channel>.db`` beside it (source, dev and
    nightly builds keep their own: upstream's ``storage/db.ts`` ``path()``), and
    the file ``OPENCODE_DB`` names (absolute, or relative to the data dir). All
    of them, not only the one opencode would open now: a person who switched
    builds or unset the variable still said what is in the others.
    DEJA_OPENCODE_DB names the one file instead."""
    main = opencode_db(env)
    if env.get("DEJA_OPENCODE_DB"):
        return [main] if is_regular_file(main) else []
    data = os.path.dirname(main)
    found = {main}
    try:
        found.update(os.path.join(data, n) for n in os.listdir(data) if n.startswith("opencode-") and n.endswith(".db"))
    except OSError:
        pass
    named = env.get("OPENCODE_DB", "")
    if named and named != ":memory:":
        found.add(os.path.join(data, named))  # join keeps an absolute path as it is
    return sorted({os.path.normpath(p) for p in found if is_regular_file(p)})


def opencode_storage(env: Mapping[str, str]) -> str:
    """opencode's JSON store before its database: DEJA_OPENCODE_STORAGE, else
    ``storage`` beside the database."""
    if env.get("DEJA_OPENCODE_STORAGE"):
        return os.path.expanduser(env["DEJA_OPENCODE_STORAGE"])
    return os.path.join(os.path.dirname(opencode_db(env)), "storage")


def storage_sessions(storage: str, problems: list[str] | None) -> list[str]:
    """The session files of an opencode-shaped JSON store: ``session/<project>/<id>.json``."""
    return _session_dirs(os.path.join(storage, "session"), problems, want=lambda n: n.endswith(".json"))


def opencode_files(env: Mapping[str, str], problems: list[str] | None = None) -> list[str]:
    """The databases; the JSON store only where no database is (opencode copies
    that store into a new database and leaves the files: read both and every
    session would be there twice), or where DEJA_OPENCODE_STORAGE names it."""
    out = opencode_dbs(env)
    if env.get("DEJA_OPENCODE_STORAGE") or not out:
        out.extend(storage_sessions(opencode_storage(env), problems))
    return out


# ---- VS Code Copilot Chat: <User>/workspaceStorage/<id>/chatSessions/<session>.json[l] ----


def vscode_user_dirs(env: Mapping[str, str]) -> list[str]:
    """The ``User`` folders of VS Code, Insiders and VSCodium (and the remote
    server's); a portable install's (``VSCODE_PORTABLE``); or DEJA_VSCODE_ROOT
    (a path list of User folders) alone."""
    if env.get("DEJA_VSCODE_ROOT"):
        return [os.path.expanduser(p) for p in env["DEJA_VSCODE_ROOT"].split(os.pathsep) if p.strip()]
    from .task_folders import VSCODE_HOSTS, user_dirs

    out = user_dirs(env, VSCODE_HOSTS)
    if env.get("VSCODE_PORTABLE"):
        out.insert(0, os.path.join(os.path.expanduser(env["VSCODE_PORTABLE"]), "user-data", "User"))
    return out


def _chat_folder(folder: str, problems: list[str] | None) -> list[str]:
    """One chatSessions folder's sessions: ``<id>.jsonl``, else ``<id>.json``
    (VS Code reads the log first; the flat file may outlive the move)."""
    try:
        with os.scandir(folder) as it:
            names = {e.name for e in it if e.name.endswith((".json", ".jsonl")) and e.is_file()}
    except FileNotFoundError:
        return []
    except OSError as exc:
        _problem(problems, folder, _why(exc))
        return []
    return [os.path.join(folder, n) for n in sorted(names) if not (n.endswith(".json") and n + "l" in names)]


def vscode_chat_files(env: Mapping[str, str], problems: list[str] | None = None) -> list[str]:
    out: list[str] = []
    for user in vscode_user_dirs(env):
        ws = os.path.join(user, "workspaceStorage")
        if os.path.isdir(ws):
            for d in _folders(ws, problems):
                out.extend(_chat_folder(os.path.join(d, "chatSessions"), problems))
        out.extend(_chat_folder(os.path.join(user, "globalStorage", "emptyWindowChatSessions"), problems))
    return out


# ---- the pi-format family (pi, omp, OpenClaw) -------------------------------------


def _session_dirs(root: str, problems: list[str] | None, want=None) -> list[str]:
    """``<root>/<folder>/<file>.jsonl``: files one folder deep, nothing deeper."""
    out: list[str] = []
    if not os.path.isdir(root):
        return out
    want = want or (lambda n: n.endswith(".jsonl"))
    for folder, names in walk(root, problems, want=want):
        if os.path.dirname(folder) == root:
            out.extend(os.path.join(folder, n) for n in names)
    return out


def pi_root(env: Mapping[str, str]) -> str:
    """pi: ``${PI_CODING_AGENT_DIR:-~/.pi/agent}/sessions/--<enc-cwd>--/``."""
    if env.get("DEJA_PI_ROOT"):
        return env["DEJA_PI_ROOT"]
    agent = env.get("PI_CODING_AGENT_DIR") or os.path.join(_home(env), ".pi", "agent")
    return os.path.join(os.path.expanduser(agent), "sessions")


def pi_files(env: Mapping[str, str], problems: list[str] | None = None) -> list[str]:
    return sorted(_session_dirs(pi_root(env), problems))


def omp_roots(env: Mapping[str, str]) -> list[str]:
    """omp keeps a sessions folder per profile, under ``~/.omp`` and (when
    ``$XDG_DATA_HOME/omp`` exists) under XDG; ``DEJA_OMP_ROOT`` is then the only root."""
    if env.get("DEJA_OMP_ROOT"):
        return [env["DEJA_OMP_ROOT"]]
    out: list[str] = []
    home = os.path.join(_home(env), ".omp")
    if os.path.isdir(home):
        out.append(os.path.join(home, "agent", "sessions"))
        out.extend(os.path.join(p, "agent", "sessions") for p in _folders(os.path.join(home, "profiles")))
    xdg = env.get("XDG_DATA_HOME")
    if xdg and os.path.isdir(os.path.join(xdg, "omp")):
        base = os.path.join(xdg, "omp")
        out.append(os.path.join(base, "sessions"))
        out.extend(os.path.join(p, "sessions") for p in _folders(os.path.join(base, "profiles")))
    return out


def omp_files(env: Mapping[str, str], problems: list[str] | None = None) -> list[str]:
    return sorted(p for root in omp_roots(env) for p in _session_dirs(root, problems))


def openclaw_root(env: Mapping[str, str]) -> str:
    """OpenClaw: ``${OPENCLAW_STATE_DIR:-~/.openclaw}/agents/<agentId>/sessions/<id>.jsonl``."""
    if env.get("DEJA_OPENCLAW_ROOT"):
        return env["DEJA_OPENCLAW_ROOT"]
    return os.path.join(env.get("OPENCLAW_STATE_DIR") or os.path.join(_home(env), ".openclaw"), "agents")


def _openclaw_session(name: str) -> bool:
    """A live transcript: not the key index, a checkpoint, or a deleted/reset/backup archive."""
    if not name.endswith(".jsonl") or ".checkpoint." in name:
        return False
    return not any(mark in name for mark in (".deleted", ".reset", ".bak"))


def openclaw_files(env: Mapping[str, str], problems: list[str] | None = None) -> list[str]:
    root = openclaw_root(env)
    out: list[str] = []
    for agent in _folders(root) if os.path.isdir(root) else []:
        folder = os.path.join(agent, "sessions")
        if not os.path.isdir(folder):
            continue
        for f, names in walk(folder, problems, want=_openclaw_session):
            if f == folder:  # only files exactly at agents/<id>/sessions/<file>.jsonl
                out.extend(os.path.join(f, n) for n in names)
    return sorted(out)


# ---- Kimi Code: <home>/sessions/<workDirKey>/<id>/agents/main/wire.jsonl ------------


def kimi_home(env: Mapping[str, str]) -> str:
    return env.get("DEJA_KIMI_ROOT") or env.get("KIMI_CODE_HOME") or os.path.join(_home(env), ".kimi-code")


def kimi_files(env: Mapping[str, str], problems: list[str] | None = None) -> list[str]:
    root = os.path.join(kimi_home(env), "sessions")
    if not os.path.isdir(root):
        return []
    out = []
    for folder, names in walk(root, problems, want=lambda n: n == "wire.jsonl"):
        # only the main agent's wire: subagents' repeat its task in smaller steps
        if names and folder.endswith(os.path.join("agents", "main")):
            out.append(os.path.join(folder, "wire.jsonl"))
    return sorted(out)


# ---- DeepSeek Harness: <home>/sessions/<slug>/session-<uuid>/session.jsonl[.zstd] ---


def deepseek_home(env: Mapping[str, str]) -> str:
    return env.get("DEJA_DEEPSEEK_ROOT") or env.get("DSH_HOME") or os.path.join(_home(env), ".dsh")


def deepseek_files(env: Mapping[str, str], problems: list[str] | None = None) -> list[str]:
    root = os.path.join(deepseek_home(env), "sessions")
    if not os.path.isdir(root):
        return []
    out = []
    want = lambda n: n in ("session.jsonl", "session.jsonl.zstd")  # noqa: E731
    for folder, names in walk(root, problems, want=want):
        if names and os.path.basename(folder).startswith("session-"):
            # one session, one file: the compressed form when both lie there
            out.append(os.path.join(folder, "session.jsonl.zstd" if "session.jsonl.zstd" in names else names[0]))
    return sorted(out)




# ---- Continue: <global dir>/sessions/<id>.json (+ sessions.json, the index) ----------


def continue_home(env: Mapping[str, str]) -> str:
    root = env.get("DEJA_CONTINUE_ROOT") or env.get("CONTINUE_GLOBAL_DIR")
    return os.path.expanduser(root) if root else os.path.join(_home(env), ".continue")


def continue_files(env: Mapping[str, str], problems: list[str] | None = None) -> list[str]:
    folder = os.path.join(continue_home(env), "sessions")
    return _flat(folder, problems, lambda n: n.endswith(".json") and n != "sessions.json")


def _flat(folder: str, problems: list[str] | None, want) -> list[str]:
    """Regular files of one folder whose names ``want`` accepts; an absent folder costs one stat."""
    if not os.path.isdir(folder):
        return []
    try:
        with os.scandir(folder) as it:
            return sorted(e.path for e in it if want(e.name) and e.is_file())
    except OSError as exc:
        _problem(problems, folder, _why(exc))
        return []


# ---- pi descendants: Senpi, gajae-code, Kimchi Coding, prime-agent ---------------
# Each keeps pi's session files under its own agent dir (checked in each one's source:
# code-yeongyu/senpi config.ts + brand.ts, gajae-code packages/utils/src/dirs.ts,
# castai/kimchi-dev src/entry.ts, PrimeIntellect-ai/prime-agent config.ts).


def _pi_sessions(root: str, problems: list[str] | None) -> list[str]:
    """``<root>/<file>.jsonl`` and ``<root>/<folder>/<file>.jsonl``: a session-dir
    override (or prime-agent's flat root) puts files at the root, the default
    layout one encoded-cwd folder down; deeper files are sub-agent passes."""
    out: list[str] = []
    if not os.path.isdir(root):
        return out
    for folder, names in walk(root, problems, want=lambda n: n.endswith(".jsonl")):
        if folder == root or os.path.dirname(folder) == root:
            out.extend(os.path.join(folder, n) for n in names)
    return sorted(out)


def senpi_root(env: Mapping[str, str]) -> str:
    """Senpi: ``${SENPI_CODING_AGENT_DIR:-~/.senpi/agent}/sessions``, or
    ``SENPI_CODING_AGENT_SESSION_DIR`` when set (pi's own ``PI_*`` fallbacks
    are left to pi, so one variable never makes two harnesses of one store)."""
    if env.get("DEJA_SENPI_ROOT"):
        return env["DEJA_SENPI_ROOT"]
    if env.get("SENPI_CODING_AGENT_SESSION_DIR"):
        return os.path.expanduser(env["SENPI_CODING_AGENT_SESSION_DIR"])
    agent = env.get("SENPI_CODING_AGENT_DIR") or os.path.join(_home(env), ".senpi", "agent")
    return os.path.join(os.path.expanduser(agent), "sessions")


def senpi_files(env: Mapping[str, str], problems: list[str] | None = None) -> list[str]:
    return _pi_sessions(senpi_root(env), problems)


def kimchi_root(env: Mapping[str, str]) -> str:
    """Kimchi Coding: ``~/.config/kimchi/harness/sessions`` (its entry point sets
    ``KIMCHI_CODING_AGENT_DIR`` to that folder under the home, not under XDG)."""
    if env.get("DEJA_KIMCHI_ROOT"):
        return env["DEJA_KIMCHI_ROOT"]
    agent = env.get("KIMCHI_CODING_AGENT_DIR") or os.path.join(_home(env), ".config", "kimchi", "harness")
    return os.path.join(os.path.expanduser(agent), "sessions")


def kimchi_files(env: Mapping[str, str], problems: list[str] | None = None) -> list[str]:
    return _pi_sessions(kimchi_root(env), problems)


def gjc_roots(env: Mapping[str, str]) -> list[str]:
    """gajae-code (an omp descendant): ``~/${GJC_CONFIG_DIR:-.gjc}/agent/sessions``
    or ``$GJC_CODING_AGENT_DIR/sessions``; with the default agent dir and an
    existing ``$XDG_DATA_HOME/gjc`` the sessions move to ``$XDG_DATA_HOME/gjc/sessions``
    (both are read: a store from before ``gjc config migrate`` stays where it was)."""
    if env.get("DEJA_GJC_ROOT"):
        return [env["DEJA_GJC_ROOT"]]
    if env.get("GJC_CODING_AGENT_DIR"):
        return [os.path.join(os.path.expanduser(env["GJC_CODING_AGENT_DIR"]), "sessions")]
    name = env.get("GJC_CONFIG_DIR") or ".gjc"
    out = [os.path.join(_home(env), name, "agent", "sessions")]
    xdg = env.get("XDG_DATA_HOME")
    if xdg and os.path.isdir(os.path.join(xdg, "gjc")):
        out.append(os.path.join(xdg, "gjc", "sessions"))
    return out


def gjc_files(env: Mapping[str, str], problems: list[str] | None = None) -> list[str]:
    return sorted(p for root in gjc_roots(env) for p in _pi_sessions(root, problems))


def prime_root(env: Mapping[str, str]) -> str:
    """prime-agent: one ``<uuid7>.jsonl`` per session directly under
    ``~/.prime/agent/sessions`` (older installs: ``--<cwd>--/`` folders below it)."""
    for var in ("DEJA_PRIME_ROOT", "PRIME_AGENT_SESSION_DIR", "PRIME_AGENT_CODING_AGENT_SESSION_DIR"):
        if env.get(var):
            return os.path.expanduser(env[var])
    agent = env.get("PRIME_AGENT_CODING_AGENT_DIR") or os.path.join(_home(env), ".prime", "agent")
    return os.path.join(os.path.expanduser(agent), "sessions")


def prime_files(env: Mapping[str, str], problems: list[str] | None = None) -> list[str]:
    return _pi_sessions(prime_root(env), problems)


# ---- Cherry Studio: Claude Code transcripts under the app's own profile -------------


def cherrystudio_roots(env: Mapping[str, str]) -> list[str]:
    """The ``projects`` folders of the Claude config dir Cherry Studio hands its
    agent (``CLAUDE_CONFIG_DIR``): ``<userData>/Data/Agents/.claude`` in 2.x,
    ``<userData>/.claude`` before; userData is ``$XDG_CONFIG_HOME/CherryStudio``,
    macOS ``~/Library/Application Support/CherryStudio``, Windows ``%APPDATA%``."""
    if env.get("DEJA_CHERRYSTUDIO_ROOTS"):
        return [p for p in env["DEJA_CHERRYSTUDIO_ROOTS"].split(os.pathsep) if p]
    home = _home(env)
    bases = [os.path.join(env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config"), "CherryStudio"),
             os.path.join(home, "Library", "Application Support", "CherryStudio")]
    if env.get("APPDATA"):
        bases.append(os.path.join(env["APPDATA"], "CherryStudio"))
    out: list[str] = []
    for base in bases:
        if os.path.isdir(base):  # one stat when the app is absent
            out.append(os.path.join(base, "Data", "Agents", ".claude", "projects"))
            out.append(os.path.join(base, ".claude", "projects"))
    return out


def cherrystudio_files(env: Mapping[str, str], problems: list[str] | None = None) -> list[str]:
    """Laid out as Claude Code's own store, so Claude's locator walks each root."""
    out: list[str] = []
    for root in cherrystudio_roots(env):
        out.extend(claude_files({**env, "DEJA_CLAUDE_ROOT": root}, problems))
    return sorted(out)


# ---- Amp: ${XDG_DATA_HOME:-~/.local/share}/amp/threads/<T-id>.json ---------------------


def amp_home(env: Mapping[str, str]) -> str:
    if env.get("DEJA_AMP_ROOT"):
        return os.path.expanduser(env["DEJA_AMP_ROOT"])
    data = env.get("XDG_DATA_HOME") or os.path.join(_home(env), ".local", "share")
    return os.path.join(data, "amp")


def amp_files(env: Mapping[str, str], problems: list[str] | None = None) -> list[str]:
    return _flat(os.path.join(amp_home(env), "threads"), problems, lambda n: n.endswith(".json"))


# ---- Kiro: the IDE's workspace-sessions and the CLI's sessions/cli -------------------


def kiro_user_dir(env: Mapping[str, str]) -> str:
    """The IDE's User folder (globalStorage/kiro.kiroagent below it)."""
    if env.get("DEJA_KIRO_ROOT"):
        return os.path.expanduser(env["DEJA_KIRO_ROOT"])
    home = _home(env)
    if sys.platform == "darwin":
        return os.path.join(home, "Library", "Application Support", "Kiro", "User")
    if sys.platform == "win32":
        return os.path.join(env.get("APPDATA") or os.path.join(home, "AppData", "Roaming"), "Kiro", "User")
    return os.path.join(env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config"), "Kiro", "User")


def kiro_cli_home(env: Mapping[str, str]) -> str:
    root = env.get("DEJA_KIRO_CLI_ROOT") or env.get("KIRO_HOME")
    return os.path.expanduser(root) if root else os.path.join(_home(env), ".kiro")


def kiro_cli_dbs(env: Mapping[str, str]) -> list[str]:
    """The Kiro CLI's ``data.sqlite3`` in the local data folder (Rust's
    ``dirs::data_local_dir``), and Amazon Q Developer CLI's before the rename;
    DEJA_KIRO_CLI_DB names the one file."""
    if env.get("DEJA_KIRO_CLI_DB"):
        return [os.path.expanduser(env["DEJA_KIRO_CLI_DB"])]
    home = _home(env)
    if sys.platform == "darwin":
        data = os.path.join(home, "Library", "Application Support")
    elif sys.platform == "win32":
        data = env.get("LOCALAPPDATA") or os.path.join(home, "AppData", "Local")
    else:
        data = env.get("XDG_DATA_HOME") or os.path.join(home, ".local", "share")
    return [os.path.join(data, name, "data.sqlite3") for name in ("kiro-cli", "amazon-q")]


def kiro_files(env: Mapping[str, str], problems: list[str] | None = None) -> list[str]:
    out: list[str] = [p for p in kiro_cli_dbs(env) if is_regular_file(p)]
    ws = os.path.join(kiro_user_dir(env), "globalStorage", "kiro.kiroagent", "workspace-sessions")
    if os.path.isdir(ws):
        want = lambda n: n.endswith(".json") and n != "sessions.json"  # noqa: E731
        for folder, names in walk(ws, problems, want=want):
            if os.path.dirname(folder) == ws:  # workspace-sessions/<base64url(workspace)>/<id>.json
                out.extend(os.path.join(folder, n) for n in names)
    out.extend(_flat(os.path.join(kiro_cli_home(env), "sessions", "cli"), problems,
                     lambda n: n.endswith(".jsonl")))
    out.sort()
    return out


# ---- Command Code: ${COMMAND_CODE_HOME:-~/.commandcode}/projects/<slug>/<id>.jsonl ------


def commandcode_home(env: Mapping[str, str]) -> str:
    root = env.get("DEJA_COMMANDCODE_ROOT") or env.get("COMMAND_CODE_HOME")
    return os.path.expanduser(root) if root else os.path.join(_home(env), ".commandcode")


def commandcode_files(env: Mapping[str, str], problems: list[str] | None = None) -> list[str]:
    root = os.path.join(commandcode_home(env), "projects")
    if not os.path.isdir(root):
        return []
    # <id>.jsonl only: the sidecars (.checkpoints.jsonl, .prompts.jsonl, .meta.json) have a second dot
    want = lambda n: n.endswith(".jsonl") and n.count(".") == 1  # noqa: E731
    out: list[str] = []
    for folder, names in walk(root, problems, want=want):
        if os.path.dirname(folder) == root:
            out.extend(os.path.join(folder, n) for n in names)
    out.sort()
    return out




# ---- ZCode: ~/.zcode/projects/<enc>/<id>.jsonl, cli/db/db.sqlite, v2/sessions/<hash>/<task>.json ----
# Known from the user's registry note and third-party readers (ZCode is closed source);
# ZCode has no relocation variable that is known.


def zcode_home(env: Mapping[str, str]) -> str:
    return os.path.join(_home(env), ".zcode")


def zcode_root(env: Mapping[str, str]) -> str:
    """The transcripts' ``projects`` folder: DEJA_ZCODE_ROOT, else ~/.zcode/projects."""
    root = env.get("DEJA_ZCODE_ROOT")
    return os.path.expanduser(root) if root else os.path.join(zcode_home(env), "projects")


def zcode_db(env: Mapping[str, str]) -> str:
    """The CLI's opencode-shaped database: DEJA_ZCODE_DB, else ~/.zcode/cli/db/db.sqlite."""
    db = env.get("DEJA_ZCODE_DB")
    return os.path.expanduser(db) if db else os.path.join(zcode_home(env), "cli", "db", "db.sqlite")


def zcode_legacy_root(env: Mapping[str, str]) -> str:
    """The older app's snapshots: DEJA_ZCODE_LEGACY_ROOT, else ~/.zcode/v2/sessions."""
    root = env.get("DEJA_ZCODE_LEGACY_ROOT")
    return os.path.expanduser(root) if root else os.path.join(zcode_home(env), "v2", "sessions")


def zcode_files(env: Mapping[str, str], problems: list[str] | None = None) -> list[str]:
    """``projects/<enc>/<id>.jsonl``, the database, and ``<hash>/<task>.json``
    snapshots (``*.deleted.json`` are ones ZCode deleted)."""
    out: list[str] = []
    root = zcode_root(env)
    if os.path.isdir(root):
        for folder, names in walk(root, problems, want=lambda n: n.endswith(".jsonl")):
            if os.path.dirname(folder) == root:
                out.extend(os.path.join(folder, n) for n in names)
    db = zcode_db(env)
    if is_regular_file(db):
        out.append(db)
    legacy = zcode_legacy_root(env)
    if os.path.isdir(legacy):
        want = lambda n: n.endswith(".json") and not n.endswith(".deleted.json")  # noqa: E731
        for folder, names in walk(legacy, problems, want=want):
            if os.path.dirname(folder) == legacy:
                out.extend(os.path.join(folder, n) for n in names)
    out.sort()
    return out


# ---- aider: .aider.chat.history.md in each launch folder ---------------------------

AIDER_HISTORY = ".aider.chat.history.md"


def aider_roots(env: Mapping[str, str]) -> list[str]:
    """The folders searched (each with two levels below): ``DEJA_AIDER_ROOTS``, a
    path list, since aider writes its history into whichever folder it ran in."""
    raw = env.get("DEJA_AIDER_ROOTS") or ""
    return [os.path.expanduser(r) for r in raw.split(os.pathsep) if r.strip()]


def aider_files(env: Mapping[str, str], problems: list[str] | None = None) -> list[str]:
    found: set[str] = set()
    for p in (os.path.join(_home(env), AIDER_HISTORY), env.get("AIDER_CHAT_HISTORY_FILE") or ""):
        if p and is_regular_file(os.path.expanduser(p)):
            found.add(os.path.expanduser(p))
    for root in aider_roots(env):
        if is_regular_file(root):
            found.add(root)
            continue
        level = [root]
        for depth in range(3):  # the root and two levels below it
            below = []
            for folder in level:
                try:
                    with os.scandir(folder) as it:
                        entries = list(it)
                except OSError as exc:
                    if depth == 0 or not isinstance(exc, FileNotFoundError):
                        _problem(problems, folder, _why(exc))
                    continue
                for e in entries:
                    try:
                        if e.name == AIDER_HISTORY and e.is_file():
                            found.add(e.path)
                        elif depth < 2 and e.is_dir() and not e.name.startswith(".") and e.name != "node_modules":
                            below.append(e.path)
                    except OSError as exc:
                        _problem(problems, e.path, _why(exc))
            level = below
    return sorted(found)


# ---- Goose: <data>/sessions/*.jsonl (before 1.10) and sessions/sessions.db ----------


def goose_data_dir(env: Mapping[str, str]) -> str:
    if env.get("DEJA_GOOSE_ROOT"):
        return os.path.expanduser(env["DEJA_GOOSE_ROOT"])
    if env.get("GOOSE_PATH_ROOT"):
        return os.path.join(os.path.expanduser(env["GOOSE_PATH_ROOT"]), "data")
    home = _home(env)
    if sys.platform == "win32":
        return os.path.join(env.get("APPDATA") or os.path.join(home, "AppData", "Roaming"), "Block", "goose", "data")
    return os.path.join(env.get("XDG_DATA_HOME") or os.path.join(home, ".local", "share"), "goose")


def goose_db(env: Mapping[str, str]) -> str:
    if env.get("DEJA_GOOSE_DB"):
        return os.path.expanduser(env["DEJA_GOOSE_DB"])
    return os.path.join(goose_data_dir(env), "sessions", "sessions.db")


def goose_files(env: Mapping[str, str], problems: list[str] | None = None) -> list[str]:
    out: list[str] = []
    out.extend(_flat(os.path.join(goose_data_dir(env), "sessions"), problems, lambda n: n.endswith(".jsonl")))
    db = goose_db(env)
    if is_regular_file(db):
        out.append(db)
    return sorted(out)


# ---- Zed: <data>/threads/threads.db ----------------------------------------------------


def zed_db(env: Mapping[str, str]) -> str:
    if env.get("DEJA_ZED_DB"):
        return os.path.expanduser(env["DEJA_ZED_DB"])
    if env.get("DEJA_ZED_ROOT"):
        return os.path.join(os.path.expanduser(env["DEJA_ZED_ROOT"]), "threads", "threads.db")
    home = _home(env)
    if sys.platform == "darwin":
        data = os.path.join(home, "Library", "Application Support", "Zed")
    elif sys.platform == "win32":
        data = os.path.join(env.get("LOCALAPPDATA") or os.path.join(home, "AppData", "Local"), "Zed")
    else:
        base = env.get("FLATPAK_XDG_DATA_HOME") or env.get("XDG_DATA_HOME") or os.path.join(home, ".local", "share")
        data = os.path.join(base, "zed")
    return os.path.join(data, "threads", "threads.db")


def zed_files(env: Mapping[str, str], problems: list[str] | None = None) -> list[str]:
    p = zed_db(env)
    return [p] if is_regular_file(p) else []


# ---- Crush: <project>/.crush/crush.db, listed in <global data>/projects.json ----------


def crush_data_dir(env: Mapping[str, str]) -> str:
    """Crush's global data folder (charmbracelet/crush config.GlobalConfigData)."""
    for key in ("DEJA_CRUSH_ROOT", "CRUSH_GLOBAL_DATA"):
        if env.get(key):
            return os.path.expanduser(env[key])
    home = _home(env)
    if env.get("XDG_DATA_HOME"):
        return os.path.join(env["XDG_DATA_HOME"], "crush")
    if sys.platform == "win32":
        return os.path.join(env.get("LOCALAPPDATA") or os.path.join(home, "AppData", "Local"), "crush")
    return os.path.join(home, ".local", "share", "crush")


def crush_projects(env: Mapping[str, str], problems: list[str] | None = None) -> list[tuple[str, str]]:
    """(project folder, data folder) of every project Crush registered: the
    per-project databases are found only through this list."""
    index = os.path.join(crush_data_dir(env), "projects.json")
    if not is_regular_file(index):
        return []
    import json

    try:
        with open(index, "rb") as fh:
            doc = json.loads(fh.read())
    except (OSError, ValueError) as exc:
        _problem(problems, index, f"not a readable project list ({type(exc).__name__}): skipped")
        return []
    rows = doc.get("projects") if isinstance(doc, dict) else None
    out = []
    here = os.path.dirname(index)  # Crush writes absolute paths; a relative one is read from here
    for row in rows if isinstance(rows, list) else []:
        if isinstance(row, dict) and isinstance(row.get("data_dir"), str) and row["data_dir"]:
            path = row.get("path") if isinstance(row.get("path"), str) and row["path"] else ""
            out.append((os.path.normpath(os.path.join(here, path)) if path else "",
                        os.path.normpath(os.path.join(here, row["data_dir"]))))
    return out


def crush_files(env: Mapping[str, str], problems: list[str] | None = None) -> list[str]:
    out = {p for _, d in crush_projects(env, problems) if is_regular_file(p := os.path.join(d, "crush.db"))}
    return sorted(out)


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
        out.extend(p for d in _folders(profiles, problems) if is_regular_file(p := os.path.join(d, "state.db")))
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
    return _folders(os.path.join(_home(env), ".gemini"), want=lambda n: n.startswith("antigravity"))


def antigravity_files(env: Mapping[str, str], problems: list[str] | None = None) -> list[str]:
    out: list[str] = []
    for root in antigravity_roots(env):
        brain = os.path.join(root, "brain")
        if not os.path.isdir(brain):
            continue
        for conv in _folders(brain, problems):
            p = os.path.join(conv, ".system_generated", "logs", "transcript.jsonl")
            if is_regular_file(p):
                out.append(p)
    return out


# ---- Grok Build: <GROK_HOME>/sessions/<url-encoded cwd>/<id>/updates.jsonl ----------


def grok_home(env: Mapping[str, str]) -> str:
    root = env.get("DEJA_GROK_ROOT") or env.get("GROK_HOME")
    return os.path.expanduser(root) if root else os.path.join(_home(env), ".grok")


def grok_db(env: Mapping[str, str]) -> str:
    """The grok CLI's ``grok.db``: always under the home's ``.grok`` (it reads no
    GROK_HOME, which is Grok Build's); DEJA_GROK_DB, else beside DEJA_GROK_ROOT."""
    if env.get("DEJA_GROK_DB"):
        return os.path.expanduser(env["DEJA_GROK_DB"])
    root = env.get("DEJA_GROK_ROOT")
    return os.path.join(os.path.expanduser(root) if root else os.path.join(_home(env), ".grok"), "grok.db")


def grok_files(env: Mapping[str, str], problems: list[str] | None = None) -> list[str]:
    sessions = os.path.join(grok_home(env), "sessions")
    db = grok_db(env)
    out: list[str] = [db] if is_regular_file(db) else []
    if not os.path.isdir(sessions):
        return out
    for folder, names in walk(sessions, problems, want=lambda n: n == "updates.jsonl"):
        out.extend(os.path.join(folder, n) for n in names)
    out.sort()
    return out


# ---- Cline, Roo Code, Kilo Code: task folders (stages/sources/task_folders.py) -----


def cline_files(env: Mapping[str, str], problems: list[str] | None = None) -> list[str]:
    from .task_folders import cline_files as files

    return files(env, problems)


def roo_files(env: Mapping[str, str], problems: list[str] | None = None) -> list[str]:
    from .task_folders import roo_files as files

    return files(env, problems)


def kilo_db(env: Mapping[str, str]) -> str:
    """The newer Kilo CLI's opencode-shaped database: DEJA_KILO_DB, else
    ``KILO_DB`` (absolute, or a name in the data folder), else
    ``${XDG_DATA_HOME:-~/.local/share}/kilo/kilo.db`` (Kilo-Org/kilocode
    ``storage/db.ts``; on every platform, as xdg-basedir resolves it)."""
    if env.get("DEJA_KILO_DB"):
        return os.path.expanduser(env["DEJA_KILO_DB"])
    data = os.path.join(env.get("XDG_DATA_HOME") or os.path.join(_home(env), ".local", "share"), "kilo")
    named = env.get("KILO_DB")
    if named:
        return named if os.path.isabs(named) else os.path.join(data, named)
    return os.path.join(data, "kilo.db")


def kilo_files(env: Mapping[str, str], problems: list[str] | None = None) -> list[str]:
    """The extension's and 0.x CLI's task folders, the newer CLI's database, and
    its JSON store where no database is beside it (as opencode's)."""
    from .task_folders import kilo_files as files

    out = files(env, problems)
    db = kilo_db(env)
    if is_regular_file(db):
        out.append(db)
    else:
        out.extend(storage_sessions(os.path.join(os.path.dirname(db), "storage"), problems))
    return out


# harness id → its transcripts (the readers' registry uses the same ids)
LOCATORS = {
    "claude": claude_files,
    "codex": codex_files,
    "deja": notes_files,
    "imported": imports_files,
    "cursor": cursor_files,
    "opencode": opencode_files,
    "copilot": copilot_files,
    "copilot-vscode": vscode_chat_files,
    "gemini": gemini_files,
    "qwen": qwen_files,
    "pi": pi_files,
    "omp": omp_files,
    "openclaw": openclaw_files,
    "kimi": kimi_files,
    "deepseek": deepseek_files,
    "continue": continue_files,
    "amp": amp_files,
    "kiro": kiro_files,
    "commandcode": commandcode_files,
    "aider": aider_files,
    "goose": goose_files,
    "zed": zed_files,
    "crush": crush_files,
    "hermes": hermes_files,
    "antigravity": antigravity_files,
    "grok": grok_files,
    "cline": cline_files,
    "roo": roo_files,
    "kilo": kilo_files,
    "senpi": senpi_files,
    "gjc": gjc_files,
    "kimchi": kimchi_files,
    "prime": prime_files,
    "cherrystudio": cherrystudio_files,
    "zcode": zcode_files,
}


# A warm process's last answer of ``sources``: the same list is handed out
# again while nothing in it changed, so what a caller derives from it (the
# freshness check's folders) is worked out once per change, not per answer.
_LAST_SOURCES: list[tuple[str, str]] | None = None
_PAIRS: dict[str, tuple[list[str], list[tuple[str, str]]]] = {}  # harness → its last paths, as pairs


def sources(env: Mapping[str, str], problems: list[str] | None = None) -> list[tuple[str, str]]:
    """(path, harness) of every transcript the readers would read; what could
    not be read goes to ``problems`` as ``harness: path: why``. In a warm
    process the list returned is not to be changed (it may be returned again)."""
    global _LAST_SOURCES
    out: list[tuple[str, str]] = []
    for harness, files in LOCATORS.items():
        mine: list[str] = []
        try:
            got = files(env, mine)
            if _LISTINGS is None:
                out.extend((p, harness) for p in got)
            else:  # (the same paths: the same pairs, so the comparison below is by identity)
                kept = _PAIRS.get(harness)
                if kept is None or kept[0] != got:
                    kept = _PAIRS[harness] = (got, [(p, harness) for p in got])
                out.extend(kept[1])
        except OSError as exc:
            mine.append(f"{harness} store: {_why(exc)}")
        if problems is not None:
            problems.extend(f"{harness}: {p}" for p in mine)
    if _LISTINGS is not None:
        if out == _LAST_SOURCES:
            return _LAST_SOURCES
        _LAST_SOURCES = out
    return out
