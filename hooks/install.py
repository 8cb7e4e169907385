"""`deja install` / `deja uninstall`: wire the hooks into Claude Code and Codex
(the other agents: hooks/install_agents.py), and install deja's skills (``skills/recover``,
``skills/deja``: hooks/install_skills.py) where each agent reads them.

hooks-contract §4.2, §4.3; seed "Claude SessionStart hook". Every entry runs a
small launcher, ``~/.config/deja/bin/deja-hook``: a few lines of shell that find
the binary when the hook runs (DEJA_BIN, the path install ran from, PATH, the
usual install locations), so moving or upgrading deja rewrites no config. With
a C compiler at hand, install also builds the hook client beside it
(hooks/client_build.py), which the launcher runs first: it asks the warm
server, and becomes deja itself whenever it cannot be served.

Config files are edited, not rewritten: only the ``hooks.<Event>`` arrays deja
touches are replaced in the original text, so every other byte of the user's
file — other settings, other events, their formatting — stays as it was. A run
that changes nothing writes nothing; re-running never duplicates an entry.

Undo is exact. Before its first change to a file that holds no deja entry,
install copies the file's bytes to ``<file>.deja-backup`` (and, for a file that
does not exist yet, removes a stale backup, so "no backup" means "deja created
it"). Uninstall puts the backup back byte for byte when taking deja's entries
out leaves exactly what it holds, deletes a file deja created and nobody added
to, and otherwise removes deja's entries only, keeps the rest and says so. The
skills go the same way: a copy deja wrote is removed (a user's copy it
set aside comes back), with the folders deja made for it.

Claude Code deletes its transcripts after ``cleanupPeriodDays`` (30 by
default). deja keeps their sessions anyway; install only *offers* to raise the
setting (a line naming ``deja install --keep-history DAYS``) and changes it
only when that flag is given, splicing that one key like the hooks. Uninstall
leaves it raised: the person asked for it, it is not part of deja's wiring,
and putting it back would let Claude Code delete the history it kept.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from deja.hooks.install_skills import SKILL_NAME, SKILLS, install_skills, remove_skills
from deja.stages.recover.base import RecoverError
from deja.stages.sources import LONG_NAMES
from deja.stages.sources.retention import KEEP_HISTORY_DAYS, claude_cleanup_days

LAUNCHER_NAME = "deja-hook"
SUBCOMMANDS = ("hook-context", "hook-prompt", "hook-tool", "hook-tool-after", "hook-precompact")
TARGETS = ("claude", "codex")
_ALIASES = {"claude-auto": "claude", "codex-auto": "codex",
            **{long: t for long, t in LONG_NAMES.items() if t in TARGETS}}

# (event, matcher or None, subcommand, status message)
CLAUDE_HOOKS = (
    ("SessionStart", None, "hook-context", "Recalling past sessions…"),
    ("PreCompact", "manual|auto", "hook-precompact", "Saving this session to memory…"),
    ("UserPromptSubmit", None, "hook-prompt", "Searching past sessions…"),
    ("PreToolUse", "Bash|Edit|Write|MultiEdit|NotebookEdit", "hook-tool", "Checking what this touches…"),
    ("PostToolUse", "Bash", "hook-tool-after", "Checking this error against past sessions…"),
)
# Every event the current Codex runs (codex-rs/config hook_config.rs); a Codex that
# lacks one ignores its key, so older releases get what they support.
CODEX_HOOKS = (
    ("SessionStart", "startup|resume", "hook-context", "Recalling past sessions…"),
    ("UserPromptSubmit", None, "hook-prompt", "Searching past sessions…"),
    ("PreToolUse", "Bash|apply_patch", "hook-tool", "Checking what this touches…"),
    ("PostToolUse", "Bash", "hook-tool-after", "Checking this error against past sessions…"),
    ("PreCompact", "manual|auto", "hook-precompact", "Saving this session to memory…"),
)
CODEX_TRUST_NOTE = ("codex: hooks written to {path}; Codex runs a hook only after you review and trust it "
                    "(type /hooks in the Codex TUI once)")
CODEX_SWITCH_NOTE = ("codex: hooks are on by default in current Codex; an older release runs them only with "
                     "`codex_hooks = true` under `[features]` in {config}")
CODEX_OFF_NOTE = ("codex: hooks are switched off in {config} (`{key} = false` under `[features]`): "
                  "set it to true or Codex runs none of them")
BACKUP_SUFFIX = ".deja-backup"

class InstallError(Exception):
    pass


@dataclass
class Result:
    target: str
    path: Path
    changed: bool
    events: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    failed: str = ""  # why this agent's config was left untouched (the others still run)


# --------------------------------------------------------------------------- where


def claude_settings(home: Path, env: Mapping[str, str]) -> Path:
    base = Path(env["CLAUDE_CONFIG_DIR"]) if env.get("CLAUDE_CONFIG_DIR") else home / ".claude"
    return base / "settings.json"


def codex_hooks(home: Path, env: Mapping[str, str]) -> Path:
    base = Path(env["CODEX_HOME"]) if env.get("CODEX_HOME") else home / ".codex"
    return base / "hooks.json"


def codex_config(home: Path, env: Mapping[str, str]) -> Path:
    return codex_hooks(home, env).with_name("config.toml")


def backup_path(path: Path) -> Path:
    return path.with_name(path.name + BACKUP_SUFFIX)


def launcher_path(home: Path, env: Mapping[str, str]) -> Path:
    base = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config"
    return base / "deja" / "bin" / LAUNCHER_NAME


def current_binary() -> str:
    """The `deja` executable this install runs from."""
    arg0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if arg0 is not None and arg0.name == "deja-py":  # run by the compiled `deja` beside it (setup.py)
        arg0 = arg0.with_name("deja")
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
        "# deja hook launcher (deja install): finds deja when the hook runs; prints nothing if it is gone.\n"
        "# The hook client beside it (deja-client, when a C compiler built it) asks the warm server first.\n"
        f'for d in "$DEJA_BIN" {q}; do [ -n "$d" ] && [ -x "$d" ] && break; d=; done\n'
        '[ -n "$d" ] || for d in "$(command -v deja 2>/dev/null)" "$HOME/.local/bin/deja" /opt/homebrew/bin/deja '
        '/usr/local/bin/deja /usr/bin/deja; do [ -n "$d" ] && [ -x "$d" ] && break; d=; done\n'
        '[ -n "$d" ] || exit 0\n'
        'c="${0%/*}/deja-client"\n'
        '[ -x "$c" ] && DEJA_REAL="$d" && export DEJA_REAL && exec "$c" "$@"\n'
        'exec "$d" "$@"\n'
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


def _parse(raw: str, path: Path) -> dict:
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise InstallError(f"{path} is not valid JSON ({exc}); fix it or move it aside, then re-run")
    if not isinstance(data, dict):
        raise InstallError(f"{path} does not hold a JSON object; left alone")
    return data


def _load(path: Path) -> tuple[bytes | None, str | None, dict]:
    """The file's bytes, its text (line endings kept) and its object; Nones for no file."""
    if not path.exists():
        return None, None, {}
    blob = path.read_bytes()
    try:
        raw = blob.decode("utf-8")
    except UnicodeDecodeError:
        raise InstallError(f"{path} is not UTF-8 text; left alone")
    return blob, raw, _parse(raw, path)


def _write(path: Path, blob: bytes) -> None:
    """Replace ``path`` atomically, keeping its permissions."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".deja-tmp")
    tmp.write_bytes(blob)
    try:
        os.chmod(tmp, path.stat().st_mode & 0o777)
    except OSError:
        pass
    os.replace(tmp, path)


def _text(raw: str | None, data: dict, new_hooks: dict | None, splice=None) -> str:
    """The file's new text: ``raw`` with only its changed hook arrays replaced
    (or what ``splice(raw)`` changes, for entries other than hooks)."""
    if raw is not None and raw.strip():
        try:
            text = splice(raw) if splice else splice_hooks(raw, new_hooks, json.loads(raw).get("hooks"))
            if json.loads(text) == data:
                return text
        except (ValueError, AssertionError, IndexError):
            pass
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _deja_events(data: dict) -> list[str]:
    hooks = data.get("hooks") if isinstance(data, dict) else None
    if not isinstance(hooks, dict):
        return []
    return [ev for ev, entries in hooks.items() if isinstance(entries, list) and any(
        isinstance(e, dict) and isinstance(e.get("hooks"), list) and any(_any_deja(h) for h in e["hooks"])
        for e in entries)]


def _wire(path: Path, spec, launcher: Path, extra: dict) -> tuple[bool, list[str]]:
    blob, raw, data = _load(path)
    hooks = data.get("hooks") if isinstance(data.get("hooks"), dict) else {}
    new = dict(hooks)
    for event, matcher, sub, status in spec:
        new[event] = merge_event(hooks.get(event), matcher, f"{launcher} {sub}", sub,
                                 {**extra, **({"statusMessage": status} if status else {})})
    events = [e for e, *_ in spec]
    return save(path, blob, raw, data, dict(data, hooks=new), new, bool(_deja_events(data))), events


def save(path: Path, blob: bytes | None, raw: str | None, data: dict, want: dict, new_hooks: dict | None,
         had_deja: bool, splice=None) -> bool:
    """Write ``want`` over ``path`` (splicing only its hook arrays) unless nothing
    changed; before the first change (``had_deja`` false), keep what uninstall
    must put back."""
    if blob is not None and want == data:
        return False
    if not had_deja:
        # a newer state than an old backup's, or nothing when there is no file yet
        backup = backup_path(path)
        if blob is not None:
            _write(backup, blob)
            try:  # as private as the file it copies (~/.claude.json is the user's own)
                os.chmod(backup, path.stat().st_mode & 0o777)
            except OSError:
                pass
        elif backup.exists():
            backup.unlink()
    _write(path, _text(raw, want, new_hooks, splice).encode("utf-8"))
    return True


def _unwire(path: Path) -> tuple[bool, list[str], list[str]]:
    """Take deja's entries out of ``path``: (changed, events, notes)."""
    return unwire_hooks(path, _deja_events, strip_event)


def unwire_hooks(path: Path, events_of, strip, bare_keys=frozenset()) -> tuple[bool, list[str], list[str]]:
    """Take deja's entries out of a JSON config's ``hooks`` object: (changed, events, notes).
    ``events_of``: the events holding deja's entries; ``strip``: an event's
    entries without deja's. With no backup (deja created the file), a file left
    holding only ``bare_keys`` (a version line deja wrote with its entries) goes."""
    blob, raw, data = _load(path)
    events = events_of(data)
    if not events:
        return False, [], []
    new = {}
    for event, entries in data["hooks"].items():
        kept = strip(entries) if isinstance(entries, list) else entries
        if kept or not isinstance(entries, list):
            new[event] = kept
    left = dict(data)
    if new:
        left["hooks"] = new
    else:
        left.pop("hooks")
    if bare_keys and not backup_path(path).exists() and set(left) <= bare_keys:
        left = {}
    return True, events, settle(path, raw, left, new or None)


def settle(path: Path, raw: str | None, left: dict, hooks_left: dict | None, splice=None) -> list[str]:
    """Leave ``path`` holding ``left`` (what is not deja's): the backup byte for
    byte when it holds exactly that, nothing when deja created the file, else
    ``left`` spliced into the text. Returns what was done."""
    backup = backup_path(path)
    if backup.exists():
        before = backup.read_bytes()
        try:
            same = _parse(before.decode("utf-8"), backup) == left
        except (InstallError, UnicodeDecodeError):
            same = False
        if same:
            _write(path, before)
            backup.unlink()
            return [f"{path} restored byte for byte as it was before install"]
        _write(path, _text(raw, left, hooks_left, splice).encode("utf-8"))
        return [f"{path} changed since install: removed deja's entries only and kept your other "
                f"changes (the file as it was before install: {backup})"]
    if not left:
        path.unlink()
        return [f"{path} removed (deja created it)"]
    _write(path, _text(raw, left, hooks_left, splice).encode("utf-8"))
    return [f"{path}: removed deja's entries only and kept your other changes"]


def wired(path: Path) -> list[str]:
    """Events of a hook config that run a deja hook."""
    try:
        return _deja_events(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return []


def codex_notes(hooks_path: Path, config_path: Path, changed: bool) -> list[str]:
    """What the user must do before Codex runs the hooks: the feature switch in
    config.toml where it is off (or may be, on an older Codex) and the trust step."""
    features = {}
    try:
        import tomllib

        features = tomllib.loads(config_path.read_text(encoding="utf-8")).get("features") or {}
    except (OSError, ValueError, UnicodeDecodeError):
        pass
    if not isinstance(features, dict):
        features = {}
    # `hooks` is the key today; `codex_hooks` the older one (now an alias)
    off = next((k for k in ("hooks", "codex_hooks") if features.get(k) is False), None)
    if off:
        return [CODEX_OFF_NOTE.format(config=config_path, key=off)] + (
            [CODEX_TRUST_NOTE.format(path=hooks_path)] if changed else [])
    if not changed:
        return []
    notes = [CODEX_TRUST_NOTE.format(path=hooks_path)]
    if not any(features.get(k) is True for k in ("hooks", "codex_hooks")):
        notes.append(CODEX_SWITCH_NOTE.format(config=config_path))
    return notes


# --------------------------------------------------------------------------- commands


def resolve_targets(target: str | None, auto: bool, all_: bool, home: Path, env: Mapping[str, str]) -> list[str]:
    """``--all``: Claude Code, Codex and every other agent set up here; ``--auto``:
    the agents set up here (Claude Code when none is)."""
    from deja.hooks import install_agents as agents
    from deja.hooks import install_mcp as mcp

    known = TARGETS + agents.TARGETS + mcp.ONLY_MCP
    if sum(bool(x) for x in (target, auto, all_)) != 1:
        raise InstallError(f"give one of --auto, --all or a target ({', '.join(known)})")
    others = agents.found(home, env) + mcp.found_only_mcp(home, env)
    if all_:
        return list(TARGETS) + others
    if auto:
        found = [t for t in TARGETS if (claude_settings(home, env) if t == "claude" else codex_hooks(home, env)).parent.is_dir()]
        return (found + others) or ["claude"]
    name = _ALIASES.get(target) or agents.ALIASES.get(target) or target
    if name not in known:
        raise InstallError(f"unknown target {target!r} (known: {', '.join(known)})")
    return [name]


def _config(target: str, home: Path, env: Mapping[str, str]) -> Path:
    return claude_settings(home, env) if target == "claude" else codex_hooks(home, env)


def history_offer(env: Mapping[str, str]) -> str | None:
    """The one-line offer to raise Claude Code's cleanupPeriodDays, when it is below KEEP_HISTORY_DAYS."""
    days, explicit = claude_cleanup_days(env)
    if days >= KEEP_HISTORY_DAYS:
        return None
    return (f"claude: Claude Code deletes transcripts after {days} days (cleanupPeriodDays"
            f"{'' if explicit else ', the default'}); deja keeps their sessions, and "
            f"`deja install --keep-history {KEEP_HISTORY_DAYS}` keeps the transcripts too (nothing is changed without it)")


def keep_history(days: int, home: Path, env: Mapping[str, str]) -> Result:
    """Raise Claude Code's cleanupPeriodDays to ``days`` (never lower it), editing only that key."""
    if days < 1:  # 0 would stop Claude Code keeping transcripts at all
        raise InstallError("--keep-history takes a number of days, 1 or more")
    path = claude_settings(home, env)
    blob, raw, data = _load(path)
    now = data.get("cleanupPeriodDays")
    if isinstance(now, (int, float)) and not isinstance(now, bool) and now >= days:
        return Result("claude", path, False, [], [f"claude: cleanupPeriodDays is already {now} in {path}; left as it is"])
    want = dict(data, cleanupPeriodDays=days)
    text = None
    if raw is not None and raw.strip():
        try:
            text = _set_member(raw, _ws(raw, 0), "cleanupPeriodDays", days)
            text = text if json.loads(text) == want else None
        except (ValueError, AssertionError, IndexError):
            text = None
    _write(path, (text or json.dumps(want, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
    was = f"{now}" if now is not None else "unset (30 days)"
    return Result("claude", path, True, [], [f"claude: cleanupPeriodDays {was} → {days} in {path} "
                                             "(`deja uninstall` leaves it; edit the file to change it back)"])


def _install_one(t: str, path: Path, home: Path, env: Mapping[str, str], launcher: Path, offer: bool) -> Result:
    if t == "claude":
        changed, events = _wire(path, CLAUDE_HOOKS, launcher, {})
        res = Result(t, path, changed, events)
        line = history_offer(env) if offer else None
        if line:
            res.notes.append(line)
    else:
        changed, events = _wire(path, CODEX_HOOKS, launcher, {"timeout": 10})
        res = Result(t, path, changed, events)
        res.notes.extend(codex_notes(path, codex_config(home, env), changed))
    return res


def install(targets: list[str], home: Path, env: Mapping[str, str], binary: str | None = None,
            offer: bool = True, guidance: bool = True) -> list[Result]:
    """``offer``: add history_offer's line to Claude's notes (not when --keep-history answered it);
    ``guidance``: write each agent's usage block (hooks/install_guidance.py)."""
    from deja.hooks import install_agents as agents
    from deja.hooks import install_guidance as guide
    from deja.hooks import install_mcp as mcp

    launcher, lchanged = write_launcher(home, env, binary)
    from deja.hooks import client_build

    built = client_build.build(launcher, env)
    results = []
    for t in targets:
        if t in mcp.ONLY_MCP:
            home_dir = mcp.copilot_home(home, env)
            if not home_dir.is_dir():
                results.append(Result(t, mcp.config_path(t, home, env), False, [], [
                    f"{t}: {home_dir} not found ({mcp.NAMES[t]} is not set up here); nothing wired"]))
                continue
        elif t in agents.TARGETS:
            results.append(agents.install(t, home, env, launcher))
            if not agents.agent_home(t, home, env).is_dir():
                continue
        else:
            path = _config(t, home, env)
            try:
                res = _install_one(t, path, home, env, launcher, offer)
            except InstallError as exc:
                res = Result(t, path, False, failed=str(exc))
            results.append(res)
        # hooks first: an MCP entry in the same file (Qwen) must not be in the hooks' backup;
        # a file the hooks found broken is said once
        broken = results[-1].path if results and results[-1].target == t and results[-1].failed else None
        extra = [mcp.install(t, home, env, launcher)
                 if t in mcp.TARGETS and mcp.config_path(t, home, env) != broken else None]
        extra += [guide.install(t, home, env)] if guidance else []
        results.extend(r for r in extra if r is not None)
    mcp.write_marker(home, env)
    try:
        skills = SKILLS if guidance else (SKILL_NAME,)  # the deja skill is usage guidance
        for p in install_skills(home, targets=[t for t in targets if t in TARGETS], env=env, skills=skills):
            results[0].notes.append(f"installed the /{p.parent.name} skill at {p}")
    except RecoverError as exc:
        results[0].notes.append(str(exc))
    if lchanged and results:
        results[0].notes.insert(0, f"launcher written: {launcher}")
    if built and results:
        results[0].notes.insert(1 if lchanged else 0, built)
    return results


def uninstall(targets: list[str], home: Path, env: Mapping[str, str]) -> list[Result]:
    from deja.hooks import install_agents as agents
    from deja.hooks import install_guidance as guide
    from deja.hooks import install_mcp as mcp

    results = []
    for t in targets:
        # before the hooks: their uninstall settles a file both share, and prunes
        # the Gemini extension folder the guidance file sits in
        extra = [guide.uninstall(t, home, env), mcp.uninstall(t, home, env)]
        results.extend(r for r in extra if r is not None and (r.changed or r.failed))
        if extra[1] is not None and extra[1].failed and extra[1].path == (
                agents.config_path(t, home, env) if t in agents.TARGETS else None):
            continue  # the file the hooks share is broken: said once
        if t in mcp.ONLY_MCP:
            if not any(r.target == t for r in results):
                results.append(Result(t, mcp.config_path(t, home, env), False))
            continue
        if t in agents.TARGETS:
            results.append(agents.uninstall(t, home, env))
            continue
        path = _config(t, home, env)
        try:
            changed, events, notes = _unwire(path)
        except InstallError as exc:
            results.append(Result(t, path, False, failed=str(exc)))
            continue
        res = Result(t, path, changed, events, notes)
        res.notes.extend(remove_skills(home, [t], env))
        results.append(res)
    mcp.write_marker(home, env)
    remaining = [p for p in (claude_settings(home, env), codex_hooks(home, env)) if wired(p)] + [
        t for t in agents.TARGETS if agents.wired(t, home, env)] + [
        t for t in mcp.TARGETS if mcp.wired(t, home, env)]
    launcher = launcher_path(home, env)
    if not remaining and launcher.exists():
        from deja.hooks import client_build

        launcher.unlink()
        client_build.remove(launcher)
        for d in (launcher.parent, launcher.parent.parent):  # bin/, then deja/ when nothing else is there
            try:
                d.rmdir()
            except OSError:
                break
        results[0].notes.append(f"launcher removed: {launcher}")
    return results


def wiring(home: Path, env: Mapping[str, str]) -> dict:
    """What `deja doctor` shows: which hook configs run deja, which MCP configs
    start its server, which usage blocks are written, and where the launcher points."""
    from deja.hooks import install_agents as agents
    from deja.hooks import install_guidance as guide
    from deja.hooks import install_mcp as mcp

    launcher = launcher_path(home, env)
    out = {"launcher": str(launcher) if launcher.exists() else None}
    for name, path in (("claude", claude_settings(home, env)), ("codex", codex_hooks(home, env))):
        out[name] = {"path": str(path), "events": wired(path)}
    for name in agents.TARGETS:  # the others where they are set up or wired
        events = agents.wired(name, home, env)
        if events or agents.agent_home(name, home, env).is_dir():
            out[name] = {"path": str(agents.config_path(name, home, env)), "events": events}
    for name in mcp.ONLY_MCP:
        if mcp.wired(name, home, env) or mcp.copilot_home(home, env).is_dir():
            out[name] = {"path": str(mcp.config_path(name, home, env)), "events": []}
    for name, row in out.items():
        if name == "launcher":
            continue
        if name in mcp.TARGETS:
            row["mcp"] = {"path": str(mcp.config_path(name, home, env)), "wired": mcp.wired(name, home, env)}
        if name in guide.TARGETS:
            row["guidance"] = guide.written(name, home, env)
    return out
