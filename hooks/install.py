"""`deja install` / `deja uninstall`: wire the hooks into Claude Code and Codex,
and install the /recover skill (``skills/recover/SKILL.md``) where each agent reads it.

hooks-contract §4.2, §4.3; seed "Claude SessionStart hook". Every entry runs a
small launcher, ``~/.config/deja/bin/deja-hook``: three lines of shell that find
the binary when the hook runs (DEJA_BIN, the path install ran from, PATH, the
usual install locations), so moving or upgrading deja rewrites no config.

Config files are edited, not rewritten: only the ``hooks.<Event>`` arrays deja
touches are replaced in the original text, so every other byte of the user's
file — other settings, other events, their formatting — stays as it was. A
backup is kept once (``<file>.deja-backup``); a run that changes nothing
writes nothing; re-running never duplicates an entry.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from deja.stages.recover.base import RecoverError

LAUNCHER_NAME = "deja-hook"
SUBCOMMANDS = ("hook-context", "hook-prompt", "hook-tool", "hook-tool-after", "hook-precompact")
TARGETS = ("claude", "codex")
_ALIASES = {"claude-auto": "claude", "claude-code": "claude", "codex-auto": "codex"}

# (event, matcher or None, subcommand, status message)
CLAUDE_HOOKS = (
    ("SessionStart", None, "hook-context", "Recalling past sessions…"),
    ("PreCompact", "manual|auto", "hook-precompact", "Saving this session to memory…"),
    ("UserPromptSubmit", None, "hook-prompt", "Searching past sessions…"),
    ("PreToolUse", "Bash|Edit|Write|MultiEdit|NotebookEdit", "hook-tool", "Checking what this touches…"),
    ("PostToolUse", "Bash", "hook-tool-after", "Checking this error against past sessions…"),
)
CODEX_HOOKS = (
    ("SessionStart", "startup|resume", "hook-context", "Recalling past sessions…"),
    ("PreToolUse", "Bash|apply_patch", "hook-tool", "Checking what this touches…"),
    ("PreCompact", "manual|auto", "hook-precompact", "Saving this session to memory…"),
)
CODEX_TRUST_NOTE = ("codex: hooks written to {path}; Codex runs a hook only after you review and trust it "
                    "(type /hooks in the Codex TUI once)")


class InstallError(Exception):
    pass


@dataclass
class Result:
    target: str
    path: Path
    changed: bool
    events: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- where


def claude_settings(home: Path, env: Mapping[str, str]) -> Path:
    base = Path(env["CLAUDE_CONFIG_DIR"]) if env.get("CLAUDE_CONFIG_DIR") else home / ".claude"
    return base / "settings.json"


def codex_hooks(home: Path, env: Mapping[str, str]) -> Path:
    base = Path(env["CODEX_HOME"]) if env.get("CODEX_HOME") else home / ".codex"
    return base / "hooks.json"


def launcher_path(home: Path, env: Mapping[str, str]) -> Path:
    base = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config"
    return base / "deja" / "bin" / LAUNCHER_NAME


def current_binary() -> str:
    """The `deja` executable this install runs from."""
    arg0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if arg0 is not None and arg0.name == "deja" and arg0.exists():
        return str(arg0.resolve() if not arg0.is_absolute() else arg0)
    beside = Path(sys.executable).parent / "deja"
    if beside.exists():
        return str(beside)
    import shutil

    return shutil.which("deja") or str(beside)


def launcher_text(binary: str) -> str:
    q = "'" + binary.replace("'", "'\\''") + "'"
    return (
        "#!/bin/sh\n"
        "# deja hook launcher (deja install): finds deja when the hook runs; prints nothing if it is gone\n"
        f'for d in "$DEJA_BIN" {q} "$(command -v deja 2>/dev/null)" "$HOME/.local/bin/deja" /opt/homebrew/bin/deja '
        '/usr/local/bin/deja /usr/bin/deja; do [ -n "$d" ] && [ -x "$d" ] && exec "$d" "$@"; done; exit 0\n'
    )


def write_launcher(home: Path, env: Mapping[str, str], binary: str | None = None) -> tuple[Path, bool]:
    path = launcher_path(home, env)
    want = launcher_text(binary or current_binary())
    if path.is_file() and path.read_text(encoding="utf-8", errors="replace") == want and os.access(path, os.X_OK):
        return path, False
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(want, encoding="utf-8")
    os.chmod(tmp, 0o755)
    os.replace(tmp, path)
    return path, True


# --------------------------------------------------------------------------- entries


def _ours(hook: dict, sub: str, command: str) -> bool:
    cmd = hook.get("command") if isinstance(hook, dict) else None
    if not isinstance(cmd, str):
        return False
    cmd = cmd.strip()
    return cmd == command or ("deja" in cmd and (cmd.endswith(" " + sub) or f" {sub} " in cmd + " "))


def _any_deja(hook: dict) -> bool:
    cmd = hook.get("command") if isinstance(hook, dict) else None
    return isinstance(cmd, str) and "deja" in cmd and any(cmd.strip().endswith(" " + s) or f" {s} " in cmd
                                                          for s in SUBCOMMANDS)


def merge_event(entries, matcher, command: str, sub: str, extra: dict) -> list:
    """The event's entry list with exactly one deja hook for ``sub``."""
    entries = list(entries) if isinstance(entries, list) else []
    hook = {"type": "command", "command": command, **extra}
    out, placed = [], False
    for e in entries:
        if not isinstance(e, dict):
            out.append(e)
            continue
        hooks = e.get("hooks")
        if not isinstance(hooks, list) or not hooks:
            continue  # Claude rejects the whole file over an entry with no hooks
        kept = []
        for h in hooks:
            if _ours(h, sub, command):
                if not placed and e.get("matcher") == matcher:
                    kept.append(hook if h != hook else h)
                    placed = True
                continue  # a second copy, or one under another matcher: dropped
            kept.append(h)
        if kept:
            out.append(dict(e, hooks=kept) if kept != hooks else e)
    if not placed:
        entry = {"matcher": matcher, "hooks": [hook]} if matcher else {"hooks": [hook]}
        out.append(entry)
    return out


def strip_event(entries) -> list:
    entries = list(entries) if isinstance(entries, list) else []
    out = []
    for e in entries:
        if not isinstance(e, dict):
            out.append(e)
            continue
        hooks = e.get("hooks")
        if not isinstance(hooks, list):
            out.append(e)
            continue
        kept = [h for h in hooks if not _any_deja(h)]
        if kept == hooks:
            out.append(e)
        elif kept:
            out.append(dict(e, hooks=kept))
    return out


# --------------------------------------------------------------------------- text splicing


def _ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


def _members(text: str, start: int) -> tuple[list[tuple[str, int, int, int]], int]:
    """Members of the JSON object opening at ``start``: (key, key start, value start,
    value end), and the index of its closing brace."""
    dec = json.JSONDecoder()
    assert text[start] == "{"
    i = _ws(text, start + 1)
    out = []
    if text[i] == "}":
        return out, i
    while True:
        key, after = dec.raw_decode(text, i)
        j = _ws(text, after)
        if text[j] != ":":
            raise ValueError("malformed object")
        vs = _ws(text, j + 1)
        _, ve = dec.raw_decode(text, vs)
        out.append((key, i, vs, ve))
        k = _ws(text, ve)
        if text[k] == ",":
            i = _ws(text, k + 1)
            continue
        if text[k] == "}":
            return out, k
        raise ValueError("malformed object")


def _indent_of(text: str, pos: int) -> str:
    line_start = text.rfind("\n", 0, pos) + 1
    s = text[line_start:pos]
    return s if not s.strip() else ""


def _dump(value, indent: str) -> str:
    s = json.dumps(value, indent=2, ensure_ascii=False)
    return s.replace("\n", "\n" + indent)


def _set_member(text: str, obj_start: int, key: str, value) -> str:
    """``text`` with member ``key`` of the object at ``obj_start`` set to ``value``
    (None removes it); every other byte unchanged."""
    members, close = _members(text, obj_start)
    for idx, (k, ks, vs, ve) in enumerate(members):
        if k != key:
            continue
        if value is not None:
            return text[:vs] + _dump(value, _indent_of(text, ks)) + text[ve:]
        if len(members) == 1:
            return text[: obj_start + 1] + text[close:]
        if idx + 1 < len(members):
            return text[:ks] + text[members[idx + 1][1]:]
        prev_end = members[idx - 1][3]
        return text[:prev_end] + text[ve:]
    if value is None:
        return text
    if members:
        last_ks, last_end = members[-1][1], members[-1][3]
        indent = _indent_of(text, last_ks)
        sep = ",\n" + indent if indent else ", "
        return text[:last_end] + sep + json.dumps(key) + ": " + _dump(value, indent) + text[last_end:]
    outer = _indent_of(text, obj_start)
    indent = outer + "  "
    return (text[: obj_start + 1] + "\n" + indent + json.dumps(key) + ": " + _dump(value, indent) + "\n" + outer
            + text[close:])


def splice_hooks(text: str, new_hooks: dict | None, old_hooks) -> str:
    """Replace only the changed ``hooks.<Event>`` arrays of a settings file's text."""
    start = _ws(text, 0)
    members, _ = _members(text, start)
    if new_hooks is None:
        return _set_member(text, start, "hooks", None)
    hooks_m = next((m for m in members if m[0] == "hooks"), None)
    if hooks_m is None or not isinstance(old_hooks, dict):
        return _set_member(text, start, "hooks", new_hooks)
    hstart = hooks_m[2]
    for event in list(old_hooks) + [e for e in new_hooks if e not in old_hooks]:
        if new_hooks.get(event) != old_hooks.get(event) or (event in old_hooks) != (event in new_hooks):
            text = _set_member(text, hstart, event, new_hooks.get(event))
    return text


# --------------------------------------------------------------------------- files


def _load(path: Path) -> tuple[str | None, dict]:
    if not path.exists():
        return None, {}
    raw = path.read_text(encoding="utf-8")
    if not raw.strip():
        return raw, {}
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise InstallError(f"{path} is not valid JSON ({exc}); fix it or move it aside, then re-run")
    if not isinstance(data, dict):
        raise InstallError(f"{path} does not hold a JSON object; left alone")
    return raw, data


def _save(path: Path, raw: str | None, data: dict, new_hooks: dict | None) -> bool:
    """Write ``data`` (whose only change is its ``hooks``); False if nothing changed."""
    if raw is not None and raw.strip():
        old = json.loads(raw)
        if old == data:
            return False
        try:
            text = splice_hooks(raw, new_hooks, old.get("hooks"))
            if json.loads(text) != data:
                raise ValueError("splice mismatch")
        except (ValueError, AssertionError, IndexError):
            text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
        backup = path.with_name(path.name + ".deja-backup")
        if not backup.exists():
            backup.write_text(raw, encoding="utf-8")
    else:
        if not data:
            return False
        text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".deja-tmp")
    tmp.write_text(text, encoding="utf-8")
    try:
        os.chmod(tmp, path.stat().st_mode & 0o777)
    except OSError:
        pass
    os.replace(tmp, path)
    return True


def _wire(path: Path, spec, launcher: Path, extra: dict) -> tuple[bool, list[str]]:
    raw, data = _load(path)
    hooks = data.get("hooks") if isinstance(data.get("hooks"), dict) else {}
    new = dict(hooks)
    for event, matcher, sub, status in spec:
        new[event] = merge_event(hooks.get(event), matcher, f"{launcher} {sub}", sub,
                                 {**extra, "statusMessage": status})
    data = dict(data, hooks=new)
    return _save(path, raw, data, new), [e for e, *_ in spec]


def _unwire(path: Path) -> tuple[bool, list[str]]:
    raw, data = _load(path)
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return False, []
    new, removed = {}, []
    for event, entries in hooks.items():
        if not isinstance(entries, list):
            new[event] = entries
            continue
        kept = strip_event(entries)
        if kept == entries:
            new[event] = entries
            continue
        removed.append(event)
        if kept:
            new[event] = kept
    if not removed:
        return False, []
    data = dict(data)
    if new:
        data["hooks"] = new
    else:
        data.pop("hooks")
    return _save(path, raw, data, new or None), removed


def wired(path: Path) -> list[str]:
    """Events of a hook config that run a deja hook."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    hooks = data.get("hooks") if isinstance(data, dict) else None
    if not isinstance(hooks, dict):
        return []
    return [ev for ev, entries in hooks.items() if isinstance(entries, list) and any(
        isinstance(e, dict) and isinstance(e.get("hooks"), list) and any(_any_deja(h) for h in e["hooks"])
        for e in entries)]


# --------------------------------------------------------------------------- commands


def resolve_targets(target: str | None, auto: bool, all_: bool, home: Path, env: Mapping[str, str]) -> list[str]:
    if sum(bool(x) for x in (target, auto, all_)) != 1:
        raise InstallError("give one of --auto, --all or a target (claude, codex)")
    if all_:
        return list(TARGETS)
    if auto:
        found = [t for t in TARGETS if (claude_settings(home, env) if t == "claude" else codex_hooks(home, env)).parent.is_dir()]
        return found or ["claude"]
    name = _ALIASES.get(target, target)
    if name not in TARGETS:
        raise InstallError(f"unknown target {target!r} (known: {', '.join(TARGETS)})")
    return [name]


def install(targets: list[str], home: Path, env: Mapping[str, str], binary: str | None = None) -> list[Result]:
    launcher, lchanged = write_launcher(home, env, binary)
    results = []
    for t in targets:
        if t == "claude":
            path = claude_settings(home, env)
            changed, events = _wire(path, CLAUDE_HOOKS, launcher, {})
            res = Result(t, path, changed, events)
        else:
            path = codex_hooks(home, env)
            changed, events = _wire(path, CODEX_HOOKS, launcher, {"timeout": 10})
            res = Result(t, path, changed, events)
            if changed:
                res.notes.append(CODEX_TRUST_NOTE.format(path=path))
        results.append(res)
    try:
        for p in install_skills(home, targets=list(targets), env=env):
            results[0].notes.append(f"installed the /recover skill at {p}")
    except RecoverError as exc:
        results[0].notes.append(str(exc))
    if lchanged and results:
        results[0].notes.insert(0, f"launcher written: {launcher}")
    return results


def uninstall(targets: list[str], home: Path, env: Mapping[str, str]) -> list[Result]:
    results = []
    for t in targets:
        path = claude_settings(home, env) if t == "claude" else codex_hooks(home, env)
        changed, events = _unwire(path)
        results.append(Result(t, path, changed, events))
    remaining = [p for p in (claude_settings(home, env), codex_hooks(home, env)) if wired(p)]
    launcher = launcher_path(home, env)
    if not remaining and launcher.exists():
        launcher.unlink()
        results[0].notes.append(f"launcher removed: {launcher}")
    return results


def wiring(home: Path, env: Mapping[str, str]) -> dict:
    """What `deja doctor` shows: which hook configs run deja, and where the launcher points."""
    launcher = launcher_path(home, env)
    out = {"launcher": str(launcher) if launcher.exists() else None}
    for name, path in (("claude", claude_settings(home, env)), ("codex", codex_hooks(home, env))):
        out[name] = {"path": str(path), "events": wired(path)}
    return out


# --------------------------------------------------------- the /recover skill

SKILL_NAME = "recover"


def skill_source() -> Path:
    return Path(__file__).resolve().parent / "skills" / SKILL_NAME / "SKILL.md"


def skill_targets(home: Path, env: Mapping[str, str] | None = None) -> dict[str, Path]:
    """Where each agent that has skills reads a user-level ``recover`` skill."""
    env = os.environ if env is None else env
    claude = Path(env["CLAUDE_CONFIG_DIR"]) if env.get("CLAUDE_CONFIG_DIR") else home / ".claude"
    return {
        "claude": claude / "skills" / SKILL_NAME / "SKILL.md",
        # Codex's user-level skills (its custom prompts, ~/.codex/prompts, are deprecated)
        "codex": home / ".agents" / "skills" / SKILL_NAME / "SKILL.md",
    }


def install_skills(home: Path, targets=None, env: Mapping[str, str] | None = None) -> list[Path]:
    """Install the /recover skill for ``targets`` (default: every agent in
    ``skill_targets``); return the files written. Idempotent: an up-to-date copy
    is left alone, and a copy the user changed is kept as ``SKILL.md.bak`` (or
    ``.bak.N``) before it is replaced."""
    import hashlib

    want = skill_source().read_bytes()
    all_targets = skill_targets(Path(home), env)
    names = list(all_targets) if targets is None else list(targets)
    written: list[Path] = []
    for name in names:
        if name not in all_targets:
            raise RecoverError(f"no skill location known for {name!r} (known: {', '.join(all_targets)})")
        dest = all_targets[name]
        stamp = dest.with_name(".deja-installed")  # hash of the copy deja last wrote here
        have = dest.read_bytes() if dest.is_file() else None
        if have == want:
            continue
        if have is not None:
            ours = stamp.is_file() and stamp.read_text().strip() == hashlib.sha256(have).hexdigest()
            if not ours:  # the user edited it (or wrote their own): keep their copy
                _keep_user_copy(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(dest.name + ".tmp")
        tmp.write_bytes(want)
        os.replace(tmp, dest)
        stamp.write_text(hashlib.sha256(want).hexdigest() + "\n")
        written.append(dest)
    return written


def _keep_user_copy(path: Path) -> Path:
    n = 0
    while True:
        bak = path.with_name(path.name + (".bak" if n == 0 else f".bak.{n}"))
        if not bak.exists():
            os.replace(path, bak)
            return bak
        n += 1
