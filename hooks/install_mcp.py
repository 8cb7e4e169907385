"""`deja install` / `deja uninstall`: the `deja mcp` server entry in each agent's
own MCP configuration, and the marker the hooks read to point at its tools.

Every entry runs the hooks' launcher (``~/.config/deja/bin/deja-hook mcp``):
it finds deja when the agent starts the server, so moving or upgrading deja
rewrites no config, and the launcher's ``exec`` hands the agent's stdin and
stdout straight to ``deja mcp``.

Where each agent reads its user-level MCP servers (each checked in the agent's
own documentation or source):

* Claude Code: ``mcpServers`` in ``~/.claude.json`` (``$CLAUDE_CONFIG_DIR/.claude.json``
  when that is set), ``{"type": "stdio", "command", "args"}`` (hooks-contract §4.2).
* Codex: ``[mcp_servers.deja]`` in ``${CODEX_HOME:-~/.codex}/config.toml``.
* Grok Build: ``[mcp_servers.deja]`` in ``${GROK_HOME:-~/.grok}/config.toml``.
* Gemini CLI: ``mcpServers`` in deja's own extension manifest
  (``extensions/deja/gemini-extension.json``; hooks/install_agents.py writes it).
* Qwen Code: ``mcpServers`` in ``~/.qwen/settings.json`` (beside deja's hooks).
* Kimi Code: ``mcpServers`` in ``${KIMI_CODE_HOME:-~/.kimi-code}/mcp.json``.
* Cursor: ``mcpServers`` in ``${CURSOR_CONFIG_DIR:-~/.cursor}/mcp.json``.
* Copilot CLI: ``mcpServers`` in ``${COPILOT_HOME:-~/.copilot}/mcp-config.json``,
  ``{"type": "local", "command", "args", "tools": ["*"]}``.

Not wired: opencode (its config generations disagree on where a server goes,
``mcp.<name>`` or ``mcp.servers.<name>``, and a key it does not expect fails
the whole config) and Zed (its settings file is JSON with comments, which a
JSON splice cannot keep).

JSON files are spliced like the hooks' settings (hooks/install.py: only
``mcpServers.deja`` changes, a backup before the first change, uninstall
byte for byte where nothing else changed); TOML files get a marked block
(install_agents.wire_block). A server named ``deja`` the user wrote
themselves is left as it is.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Mapping

from deja.hooks import install as base
from deja.hooks import install_agents as agents
from deja.hooks.common import MCP_MARK

SERVER = "deja"
TOML_BEGIN = "# >>> deja mcp: written by `deja install`; `deja uninstall` removes this block"
TOML_END = "# <<< deja mcp"
_TOML_BLOCK = re.compile(r"^# >>> deja mcp:[^\n]*\n.*?^# <<< deja mcp[ \t]*(?:\n|\Z)", re.S | re.M)
TARGETS = ("claude", "codex", "gemini", "qwen", "kimi", "cursor", "grok", "copilot")
ONLY_MCP = ("copilot",)  # agents deja wires for MCP (and guidance) but has no hooks for
NAMES = {"copilot": "Copilot CLI"}
# agent → (top-level key, fields the entry carries besides command and args)
_JSON = {
    "claude": ("mcpServers", {"type": "stdio"}),
    "qwen": ("mcpServers", {}),
    "kimi": ("mcpServers", {}),
    "cursor": ("mcpServers", {}),
    "copilot": ("mcpServers", {"type": "local", "tools": ["*"]}),
}


# --------------------------------------------------------------------------- where


def copilot_home(home: Path, env: Mapping[str, str]) -> Path:
    return Path(env["COPILOT_HOME"]) if env.get("COPILOT_HOME") else home / ".copilot"


def config_path(target: str, home: Path, env: Mapping[str, str]) -> Path:
    """The file deja's server entry lives in."""
    if target == "claude":
        return Path(env["CLAUDE_CONFIG_DIR"]) / ".claude.json" if env.get("CLAUDE_CONFIG_DIR") else home / ".claude.json"
    if target == "codex":
        return base.codex_config(home, env)
    if target == "copilot":
        return copilot_home(home, env) / "mcp-config.json"
    if target == "gemini":
        return agents.config_path("gemini", home, env).parent.parent / "gemini-extension.json"
    root = agents.agent_home(target, home, env)
    return {"qwen": root / "settings.json", "kimi": root / "mcp.json", "cursor": root / "mcp.json",
            "grok": root / "config.toml"}[target]


def found_only_mcp(home: Path, env: Mapping[str, str]) -> list[str]:
    return [t for t in ONLY_MCP if copilot_home(home, env).is_dir()]


def marker_path(home: Path, env: Mapping[str, str]) -> Path:
    """Beside the launcher's bin/: the agents whose MCP config starts deja, one a line."""
    return base.launcher_path(home, env).parent.parent / MCP_MARK


def entry(target: str, launcher: Path) -> dict:
    extra = _JSON.get(target, ("", {}))[1]
    return {**({"type": extra["type"]} if "type" in extra else {}), "command": str(launcher), "args": ["mcp"],
            **{k: v for k, v in extra.items() if k != "type"}}


def toml_block(launcher: Path) -> str:
    command = json.dumps(str(launcher))  # a JSON string is a TOML basic string
    return f'{TOML_BEGIN}\n[mcp_servers.{SERVER}]\ncommand = {command}\nargs = ["mcp"]\n{TOML_END}\n'


# --------------------------------------------------------------------------- install


def install(target: str, home: Path, env: Mapping[str, str], launcher: Path) -> base.Result | None:
    """Wire the server into ``target``'s MCP config; None where deja has no
    MCP entry of its own to write (Gemini's rides in its extension)."""
    if target not in TARGETS or target == "gemini":
        return None
    path = config_path(target, home, env)
    try:
        if target in ("codex", "grok"):
            changed, notes = _wire_toml(path, launcher)
        else:
            changed, notes = _wire_json(target, path, launcher)
    except base.InstallError as exc:
        return base.Result(target, path, False, ["mcp"], failed=str(exc))
    if changed:
        notes.append(f"{target}: restart it to load the deja MCP server (tools recall, recall_context, blame, fix, "
                     "how, remember)")
    return base.Result(target, path, changed, ["mcp"], notes)


def uninstall(target: str, home: Path, env: Mapping[str, str]) -> base.Result | None:
    if target not in TARGETS or target == "gemini":
        return None
    path = config_path(target, home, env)
    try:
        if target in ("codex", "grok"):
            changed, notes = agents.unwire_block(path, _TOML_BLOCK, "[mcp_servers.deja] table")
        else:
            changed, notes = _unwire_json(target, path)
    except base.InstallError as exc:
        return base.Result(target, path, False, ["mcp"], failed=str(exc))
    return base.Result(target, path, changed, ["mcp"] if changed else [], notes)


def wired(target: str, home: Path, env: Mapping[str, str]) -> bool:
    """Whether ``target``'s MCP config starts deja's server (deja's entry or one the user wrote)."""
    path = config_path(target, home, env)
    try:
        text = path.read_text(encoding="utf-8")
        if target in ("codex", "grok"):
            import tomllib

            servers = tomllib.loads(text).get("mcp_servers")
        else:
            servers = json.loads(text).get("mcpServers")
    except (OSError, ValueError, AttributeError, UnicodeDecodeError):
        return False
    return isinstance(servers, dict) and isinstance(servers.get(SERVER), dict)


def write_marker(home: Path, env: Mapping[str, str]) -> None:
    """Record which agents start deja's server, for the hooks' pointers
    (hooks/common.more); no agent, no file."""
    from deja.hooks import harness

    names = [t for t in TARGETS if t in harness.HARNESSES and wired(t, home, env)]
    path = marker_path(home, env)
    want = "".join(n + "\n" for n in names)
    try:
        if not names:
            path.unlink(missing_ok=True)
        elif not path.is_file() or path.read_text(encoding="utf-8") != want:
            base._write(path, want.encode("utf-8"))
    except OSError:
        pass


# --------------------------------------------------------------------------- JSON files


def _splicer(key: str, value: dict | None, drop_empty: bool):
    """``raw`` with only ``key.deja`` set to ``value`` (None removes it; an
    object left empty goes too when ``drop_empty``)."""

    def splice(raw: str) -> str:
        start = base._ws(raw, 0)
        members, _ = base._members(raw, start)
        m = next((m for m in members if m[0] == key), None)
        if m is None or raw[m[2]] != "{":
            return base._set_member(raw, start, key, {SERVER: value} if value is not None else None)
        inner, _ = base._members(raw, m[2])
        if value is None and drop_empty and [k for k, *_ in inner] == [SERVER]:
            return base._set_member(raw, start, key, None)
        return base._set_member(raw, m[2], SERVER, value)

    return splice


def _wire_json(target: str, path: Path, launcher: Path) -> tuple[bool, list[str]]:
    key = _JSON[target][0]
    blob, raw, data = base._load(path)
    servers = data.get(key)
    if servers is not None and not isinstance(servers, dict):
        raise base.InstallError(f"{path} holds `{key}` that is not an object; left untouched")
    want_entry = entry(target, launcher)
    have = (servers or {}).get(SERVER)
    if isinstance(have, dict) and have != want_entry and not _ours(have):
        return False, [f"{target}: {path} already has an MCP server named deja of your own; left as it is"]
    want = dict(data, **{key: dict(servers or {}, **{SERVER: want_entry})})
    had_deja = isinstance(have, dict) or bool(base._deja_events(data))
    return base.save(path, blob, raw, data, want, None, had_deja, _splicer(key, want_entry, False)), []


def _unwire_json(target: str, path: Path) -> tuple[bool, list[str]]:
    key = _JSON[target][0]
    blob, raw, data = base._load(path)
    servers = data.get(key)
    if not isinstance(servers, dict) or not _ours(servers.get(SERVER)):
        return False, []
    rest = {k: v for k, v in servers.items() if k != SERVER}
    before = _backup_data(path)
    drop = not rest and not (isinstance(before, dict) and key in before)  # never leave an empty block deja made
    left = dict(data)
    if drop:
        left.pop(key)
    else:
        left[key] = rest
    splice = _splicer(key, None, drop)
    if base._deja_events(left):  # deja's hooks share the file; their uninstall settles it
        base._write(path, base._text(raw, left, None, splice).encode("utf-8"))
        return True, []
    return True, base.settle(path, raw, left, None, splice)


def _ours(server) -> bool:
    """An entry deja wrote: it runs ``… mcp`` through deja or its launcher."""
    if not isinstance(server, dict):
        return False
    cmd, args = server.get("command"), server.get("args")
    return (isinstance(cmd, str) and (cmd.endswith(base.LAUNCHER_NAME) or Path(cmd).name == "deja")
            and args == ["mcp"])


def _backup_data(path: Path):
    try:
        return json.loads(base.backup_path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None


# --------------------------------------------------------------------------- TOML files


def _wire_toml(path: Path, launcher: Path) -> tuple[bool, list[str]]:
    raw = agents._read_text(path) or ""
    m = _TOML_BLOCK.search(raw)
    rest = raw[:m.start()] + raw[m.end():] if m else raw
    servers = agents._toml_ok(rest, path).get("mcp_servers")
    if isinstance(servers, dict) and SERVER in servers:
        return False, [f"{path.parent.name.lstrip('.')}: {path} already has [mcp_servers.deja] of your own; "
                       "left as it is"]

    def check(parsed: dict) -> None:
        got = (parsed.get("mcp_servers") or {}).get(SERVER) if isinstance(parsed.get("mcp_servers"), dict) else None
        if got != {"command": str(launcher), "args": ["mcp"]}:
            raise base.InstallError(f"{path} holds `mcp_servers` in a form a [mcp_servers.deja] table cannot "
                                    "join; left untouched")

    return agents.wire_block(path, _TOML_BLOCK, toml_block(launcher), check), []
