"""Where the Cline family (Cline, Roo Code, Kilo Code) keeps its task folders:
paths only, nothing parsed (the freshness check walks these without a reader).

The VS Code extensions keep one folder per task under their globalStorage,
``<root>/tasks/<taskId>/``, in every VS Code build a person may run them in
(harness-formats §11, §14 "Roo Code", §15 "Kilo Code"). The folder's
``api_conversation_history.json`` is the transcript; when a task folder lacks
it (a crash before the first reply, a half-copied backup), its
``ui_messages.json`` is read instead, so the task is still found.

Cline's newer CLI/SDK keeps ``<sessions>/<id>/<id>.messages.json`` beside a
manifest ``<id>.json``.

An absent store costs one stat per candidate root: the roots are a short fixed
list (five VS Code builds, the remote server, the CLIs' own folders).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping

from .locate import _home, _problem, _why, is_regular_file

# VS Code builds the extensions run in (their per-user folder names)
HOSTS = ("Code", "Code - Insiders", "VSCodium", "Cursor", "Windsurf")
VSCODE_HOSTS = HOSTS[:3]  # the builds whose own chat (Copilot Chat) keeps chatSessions
CLINE_EXT = "saoudrizwan.claude-dev"
ROO_EXT = "rooveterinaryinc.roo-cline"
KILO_EXT = "kilocode.kilo-code"
TRANSCRIPT = "api_conversation_history.json"
UI_MESSAGES = "ui_messages.json"


def _config_base(env: Mapping[str, str]) -> str:
    home = _home(env)
    if sys.platform == "darwin":
        return os.path.join(home, "Library", "Application Support")
    if sys.platform.startswith("win"):
        return env.get("APPDATA") or os.path.join(home, "AppData", "Roaming")
    return env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")


def user_dirs(env: Mapping[str, str], hosts: tuple[str, ...] = HOSTS) -> list[str]:
    """Every VS Code build's ``User`` folder, and the remote server's."""
    base = _config_base(env)
    out = [os.path.join(base, host, "User") for host in hosts]
    out.append(os.path.join(_home(env), ".vscode-server", "data", "User"))
    return out


def _path_list(value: str) -> list[str]:
    return [os.path.expanduser(p) for p in value.split(os.pathsep) if p.strip()]


def extension_roots(env: Mapping[str, str], ext: str) -> list[str]:
    return [os.path.join(u, "globalStorage", ext) for u in user_dirs(env)]


# ---- Cline ----------------------------------------------------------------------


def cline_data(env: Mapping[str, str]) -> str:
    """``~/.cline/data`` (CLINE_DATA_DIR, else CLINE_DIR's ``data``)."""
    if env.get("CLINE_DATA_DIR"):
        return env["CLINE_DATA_DIR"]
    return os.path.join(env.get("CLINE_DIR") or os.path.join(_home(env), ".cline"), "data")


def cline_sessions(env: Mapping[str, str]) -> str:
    """The newer CLI/SDK's sessions folder."""
    return env.get("DEJA_CLINE_ROOT") or env.get("CLINE_SESSION_DATA_DIR") or os.path.join(cline_data(env), "sessions")


def cline_task_roots(env: Mapping[str, str]) -> list[str]:
    """Folders holding ``tasks/`` and ``state/taskHistory.json``: each VS Code
    build's extension storage and the CLI's shared data folder."""
    if env.get("DEJA_CLINE_ROOTS"):
        return _path_list(env["DEJA_CLINE_ROOTS"])
    return extension_roots(env, CLINE_EXT) + [cline_data(env)]


def cline_files(env: Mapping[str, str], problems: list[str] | None = None) -> list[str]:
    return task_transcripts(cline_task_roots(env), problems) + session_transcripts(cline_sessions(env), problems)


# ---- Roo Code -------------------------------------------------------------------

_CUSTOM_STORAGE = re.compile(r'"roo-cline\.customStoragePath"\s*:\s*"((?:[^"\\]|\\.)*)"')


def roo_roots(env: Mapping[str, str]) -> list[str]:
    """Each build's extension storage, a ``roo-cline.customStoragePath`` set in
    its settings (JSONC: read by pattern, comments and trailing commas are no
    matter), and the Roo CLI's ``~/.vscode-mock/global-storage``."""
    if env.get("DEJA_ROO_ROOTS"):
        return _path_list(env["DEJA_ROO_ROOTS"])
    out = extension_roots(env, ROO_EXT)
    for user in user_dirs(env):
        settings = os.path.join(user, "settings.json")
        if not is_regular_file(settings):
            continue
        try:
            with open(settings, encoding="utf-8", errors="replace") as fh:
                m = _CUSTOM_STORAGE.search(fh.read(1 << 20))
        except OSError:
            continue
        if m and m.group(1).strip():
            out.append(os.path.expanduser(m.group(1).replace("\\\\", "\\")))
    out.append(env.get("DEJA_ROO_CLI_ROOT") or os.path.join(_home(env), ".vscode-mock", "global-storage"))
    return out


def roo_files(env: Mapping[str, str], problems: list[str] | None = None) -> list[str]:
    return task_transcripts(roo_roots(env), problems)


# ---- Kilo Code ------------------------------------------------------------------


def kilo_roots(env: Mapping[str, str]) -> list[str]:
    """Each build's extension storage and the 0.x CLI's ``~/.kilocode/cli/global``
    (the newer Kilo CLI keeps an opencode-shaped SQLite database instead)."""
    if env.get("DEJA_KILO_ROOTS"):
        return _path_list(env["DEJA_KILO_ROOTS"])
    return extension_roots(env, KILO_EXT) + [os.path.join(_home(env), ".kilocode", "cli", "global")]


def kilo_files(env: Mapping[str, str], problems: list[str] | None = None) -> list[str]:
    return task_transcripts(kilo_roots(env), problems)


# ---- the folders ----------------------------------------------------------------


def _subdirs(top: str, problems: list[str] | None) -> list[str]:
    if not os.path.isdir(top):
        if os.path.lexists(top) and not os.path.exists(top):
            _problem(problems, top, "dangling symlink: skipped")
        return []
    try:
        with os.scandir(top) as it:
            return sorted(e.path for e in it if e.is_dir())
    except OSError as exc:
        _problem(problems, top, _why(exc))
        return []


def task_transcripts(roots: list[str], problems: list[str] | None = None) -> list[str]:
    """One file per task folder under each root's ``tasks/``: the API
    conversation, else the UI messages; a folder with neither is skipped."""
    out: list[str] = []
    seen: set[str] = set()
    for root in roots:
        for folder in _subdirs(os.path.join(root, "tasks"), problems):
            for name in (TRANSCRIPT, UI_MESSAGES):
                p = os.path.join(folder, name)
                if is_regular_file(p):
                    if p not in seen:
                        seen.add(p)
                        out.append(p)
                    break
    return out


TASK_HARNESSES = frozenset({"cline", "roo", "kilo"})


def replaced_by(path: str, harness: str) -> str | None:
    """The transcript read instead of ``path`` once it is on disk: a task
    folder's UI messages give way to its API conversation (which the
    extension writes right after), and what was read of them goes (the same
    task, read twice, would hold every message twice). None for any other file."""
    if harness in TASK_HARNESSES and os.path.basename(path) == UI_MESSAGES:
        return os.path.join(os.path.dirname(path), TRANSCRIPT)
    return None


def session_transcripts(top: str, problems: list[str] | None = None) -> list[str]:
    """``<top>/<id>/<id>.messages.json`` of the newer Cline CLI."""
    out = []
    for folder in _subdirs(top, problems):
        p = os.path.join(folder, os.path.basename(folder) + ".messages.json")
        if is_regular_file(p):
            out.append(p)
    return out
