"""`deja install` / `deja uninstall` undo each other exactly (issue 13): the real
`deja` runs as a subprocess against a temp HOME shaped like ~/.claude and ~/.codex."""

from __future__ import annotations

import hashlib
import json

from conftest import Home

# a user's settings as people write them: odd spacing, CRLF line ends, their own
# hooks in an event deja also wires, an event deja leaves alone
USER_SETTINGS = (
    '{\r\n    "model":   "opus",\r\n'
    '  "permissions" : {"allow": ["Bash(ls:*)"],   "deny": []},\r\n'
    '  "hooks": {\r\n'
    '      "Stop": [ {"hooks": [{"type": "command", "command": "notify-send done"}]} ],\r\n'
    '      "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "/opt/guard.sh"}]}]\r\n'
    '  },\r\n'
    '  "statusLine": {"type": "command", "command": "~/bin/status"}\r\n}\r\n'
).encode()
USER_CODEX_HOOKS = (
    '{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done", "timeout": 5}]}]}}'
).encode()


def _home(tmp_path) -> Home:
    h = Home(tmp_path)
    for d in (".claude", ".codex", ".config"):
        (h.home / d).mkdir()
    return h


def _tree(root) -> dict:
    """Every file (with its bytes' hash) and folder under ``root``."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for p in sorted(root.rglob("*"))}


def _commands(data: dict, event: str) -> list[str]:
    return [h["command"] for e in data["hooks"].get(event, []) for h in e["hooks"]]


def test_uninstall_restores_user_settings_byte_for_byte(tmp_path):
    h = _home(tmp_path)
    settings, codex = h.home / ".claude" / "settings.json", h.home / ".codex" / "hooks.json"
    settings.write_bytes(USER_SETTINGS)
    codex.write_bytes(USER_CODEX_HOOKS)
    h.run("install", "--all")
    assert settings.read_bytes() != USER_SETTINGS and codex.read_bytes() != USER_CODEX_HOOKS
    proc = h.run("uninstall", "--all")
    assert settings.read_bytes() == USER_SETTINGS
    assert codex.read_bytes() == USER_CODEX_HOOKS
    assert "restored byte for byte" in proc.stderr
    assert not (h.home / ".claude" / "settings.json.deja-backup").exists()
    assert not (h.home / ".codex" / "hooks.json.deja-backup").exists()


def test_uninstall_deletes_what_deja_created_and_its_skills(tmp_path):
    h = _home(tmp_path)
    before = _tree(h.home)
    h.run("install", "--all")
    assert (h.home / ".claude" / "settings.json").is_file() and (h.home / ".codex" / "hooks.json").is_file()
    skills = [h.home / root / "skills" / name / "SKILL.md" for root in (".claude", ".agents") for name in ("recover", "deja")]
    assert all(p.is_file() for p in skills)
    proc = h.run("uninstall", "--all")
    # the settings files deja created, the skills and their folders, the launcher: all gone
    assert _tree(h.home) == before
    assert "removed (deja created it)" in proc.stderr and "removed the /recover skill" in proc.stderr
    assert "removed the /deja skill" in proc.stderr


def test_the_usage_skill_is_guidance_written_once(tmp_path):
    h = _home(tmp_path)
    usage = [h.home / ".claude" / "skills" / "deja" / "SKILL.md", h.home / ".agents" / "skills" / "deja" / "SKILL.md"]
    h.run("install", "--all", "--no-guidance")
    assert not any(p.exists() for p in usage)  # --no-guidance: no usage block, no usage skill
    assert (h.home / ".claude" / "skills" / "recover" / "SKILL.md").is_file()  # (recovery is not guidance)
    proc = h.run("install", "--all")
    assert all(p.is_file() for p in usage) and "installed the /deja skill" in proc.stderr
    text = usage[0].read_text()
    assert text.startswith("---\nname: deja\ndescription: ") and "recall_context" in text and "deja ctx" in text
    stamp = [p.stat().st_mtime_ns for p in usage]
    proc = h.run("install", "--all")  # up to date: nothing rewritten, nothing said about it
    assert [p.stat().st_mtime_ns for p in usage] == stamp and "/deja skill" not in proc.stderr


def test_uninstall_gives_back_the_users_own_skill(tmp_path):
    h = _home(tmp_path)
    own = h.home / ".claude" / "skills" / "recover" / "SKILL.md"
    own.parent.mkdir(parents=True)
    own.write_text("---\nname: recover\ndescription: my own\n---\nmine\n")
    before = _tree(h.home)
    h.run("install", "claude")
    assert "my own" not in own.read_text()  # set aside as SKILL.md.bak while deja's copy is in place
    h.run("uninstall", "claude")
    assert _tree(h.home) == before


def test_uninstall_keeps_changes_made_after_install_and_says_so(tmp_path):
    h = _home(tmp_path)
    settings = h.home / ".claude" / "settings.json"
    settings.write_bytes(USER_SETTINGS)
    h.run("install", "claude")
    data = json.loads(settings.read_text())
    data["theme"] = "dark"
    data["hooks"]["SessionStart"].append({"hooks": [{"type": "command", "command": "echo hi"}]})
    settings.write_text(json.dumps(data, indent=2))
    proc = h.run("uninstall", "claude")
    after = json.loads(settings.read_text())
    want = json.loads(USER_SETTINGS)
    want["theme"] = "dark"
    want["hooks"]["SessionStart"] = [{"hooks": [{"type": "command", "command": "echo hi"}]}]
    assert after == want
    assert "changed since install" in proc.stderr and "kept your other changes" in proc.stderr
    # the same for a file deja created and the user then added to: it stays, with their part
    codex = h.home / ".codex" / "hooks.json"
    h.run("install", "codex")
    data = json.loads(codex.read_text())
    data["hooks"]["Stop"] = [{"hooks": [{"type": "command", "command": "say done"}]}]
    codex.write_text(json.dumps(data))
    proc = h.run("uninstall", "codex")
    assert json.loads(codex.read_text()) == {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}}
    assert "kept your other changes" in proc.stderr


def test_backup_is_written_at_install_before_the_first_change(tmp_path):
    h = _home(tmp_path)
    settings = h.home / ".claude" / "settings.json"
    backup = h.home / ".claude" / "settings.json.deja-backup"
    settings.write_bytes(USER_SETTINGS)
    h.run("install", "claude")
    assert backup.read_bytes() == USER_SETTINGS
    h.run("uninstall", "claude")
    # the user changes their settings between two installs: the second install keeps
    # the file as it is now, so uninstall gives back this state, not the first one
    edited = USER_SETTINGS.replace(b'"opus"', b'"sonnet"')
    settings.write_bytes(edited)
    h.run("install", "claude")
    assert backup.read_bytes() == edited
    h.run("install", "claude")  # a re-install changes nothing, the backup included
    assert backup.read_bytes() == edited
    h.run("uninstall", "claude")
    assert settings.read_bytes() == edited
    # a stale backup does not outlive a file that is gone: no file at install means
    # deja creates it, and uninstall deletes it
    backup.write_bytes(USER_SETTINGS)
    settings.unlink()
    h.run("install", "claude")
    assert not backup.exists()
    h.run("uninstall", "claude")
    assert not settings.exists()


def test_codex_gets_every_hook_event_it_supports(tmp_path):
    h = _home(tmp_path)
    proc = h.run("install", "codex")
    launcher = h.home / ".config" / "deja" / "bin" / "deja-hook"
    data = json.loads((h.home / ".codex" / "hooks.json").read_text())
    assert _commands(data, "SessionStart") == [f"{launcher} hook-context"]
    assert _commands(data, "UserPromptSubmit") == [f"{launcher} hook-prompt"]
    assert _commands(data, "PreToolUse") == [f"{launcher} hook-tool"]
    assert _commands(data, "PostToolUse") == [f"{launcher} hook-tool-after"]
    assert _commands(data, "PreCompact") == [f"{launcher} hook-precompact"]
    assert data["hooks"]["PostToolUse"][0]["matcher"] == "Bash"
    assert all(e["hooks"][0]["timeout"] == 10 for entries in data["hooks"].values() for e in entries)
    # the note says how to turn hooks on where a switch is needed, and the trust step
    assert "/hooks" in proc.stderr and "codex_hooks = true" in proc.stderr and "[features]" in proc.stderr


def test_codex_note_when_config_switches_hooks_off(tmp_path):
    h = _home(tmp_path)
    config = h.home / ".codex" / "config.toml"
    config.write_text('model = "gpt-5"\n\n[features]\nhooks = false\n')
    proc = h.run("install", "codex")
    assert f"hooks are switched off in {config}" in proc.stderr and "`hooks = false`" in proc.stderr
    # never forced (issue 16: the MCP server's marked block now follows the user's text)
    assert config.read_text().startswith('model = "gpt-5"\n\n[features]\nhooks = false\n')
    # switched on: only the trust step is left to say
    h.run("uninstall", "codex")
    config.write_text("[features]\ncodex_hooks = true\n")
    proc = h.run("install", "codex")
    assert "/hooks" in proc.stderr and "switched off" not in proc.stderr and "older release" not in proc.stderr
