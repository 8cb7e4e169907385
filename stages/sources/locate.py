"""Where each harness keeps its transcripts: paths only, nothing parsed.

The freshness check in front of every query walks these folders, and must not
pay for importing the readers (their patterns, dataclasses and JSON parser)
to do it. Each reader's ``discover`` wraps its locator's paths.
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


def claude_files(env: Mapping[str, str]) -> list[str]:
    root = claude_root(env)
    if not os.path.isdir(root):
        return []
    include_sub = env.get("DEJA_INCLUDE_SUBAGENTS") == "1"
    out: list[str] = []
    try:
        projects = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        return []
    for proj in projects:
        try:
            if not proj.is_dir():
                continue
        except OSError:
            continue
        for dirpath, dirnames, filenames in os.walk(proj.path):
            dirnames[:] = [d for d in dirnames if d != "tool-results" and (include_sub or d != "subagents")]
            top = dirpath == proj.path
            for name in filenames:
                if not name.endswith(".jsonl"):
                    continue
                if top and name.startswith("agent-") and not include_sub:
                    continue  # 2.0.x subagent transcripts beside the sessions
                path = os.path.join(dirpath, name)
                if is_regular_file(path):
                    out.append(path)
    out.sort()
    return out


# ---- Codex CLI: <home>/sessions/YYYY/MM/DD/rollout-*.jsonl and history.jsonl -------


def codex_home(env: Mapping[str, str]) -> str:
    return env.get("DEJA_CODEX_ROOT") or env.get("CODEX_HOME") or os.path.join(_home(env), ".codex")


def codex_rollouts(home: str) -> list[str]:
    root = os.path.join(home, "sessions")
    out: list[str] = []
    if not os.path.isdir(root):
        return out
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in filenames:
            if "rollout-" in name and name.endswith(".jsonl"):
                out.append(os.path.join(dirpath, name))
    out.sort()
    return out


def codex_files(env: Mapping[str, str]) -> list[str]:
    home = codex_home(env)
    files = [p for p in codex_rollouts(home) if is_regular_file(p)]
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


def notes_files(env: Mapping[str, str]) -> list[str]:
    p = notes_file(env)
    return [p] if is_regular_file(p) else []


# harness id → its transcripts (the readers' registry uses the same ids)
LOCATORS = {"claude": claude_files, "codex": codex_files, "deja": notes_files}


def sources(env: Mapping[str, str]) -> list[tuple[str, str]]:
    """(path, harness) of every transcript the readers would read."""
    out: list[tuple[str, str]] = []
    for harness, files in LOCATORS.items():
        try:
            out.extend((p, harness) for p in files(env))
        except OSError:
            continue
    return out
