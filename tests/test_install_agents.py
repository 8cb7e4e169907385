"""Hooks for Gemini CLI, Qwen Code, Kimi Code, Cursor, opencode and Grok Build
(issue 15; hooks-contract §4.4): `deja install`/`deja uninstall` against a temp
HOME shaped like each agent's home, and the real `deja hook-*` fed each agent's
own payload answering in the shape that agent reads."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import tomllib

import pytest

from conftest import Home, deja_cmd
from test_hooks import CWD, FRAME_LEAD, POOL_Q, _populate

# each agent's home under HOME, and the file deja's entries go in
HOMES = {
    "gemini": (".gemini", ".gemini/extensions/deja/hooks/hooks.json"),
    "qwen": (".qwen", ".qwen/settings.json"),
    "kimi": (".kimi-code", ".kimi-code/config.toml"),
    "cursor": (".cursor", ".cursor/hooks.json"),
    "opencode": (".config/opencode", ".config/opencode/plugins/deja.js"),
    "grok": (".grok", ".grok/hooks/deja.json"),
}
# what people already have there: their own hooks, settings, comments
USER_FILES = {
    "gemini": {".gemini/settings.json": '{\n  "theme": "GitHub",\n  "hooks": {"BeforeTool": []}\n}\n',
               ".gemini/extensions/their-ext/gemini-extension.json": '{"name": "their-ext", "version": "0.1.0"}\n'},
    "qwen": {".qwen/settings.json": (
        '{\r\n  "model": {"name": "qwen3-coder-plus"},\r\n  "hooks": {\r\n'
        '    "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "~/bin/lint-prompt", "timeout": 5000}]}],\r\n'
        '    "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]\r\n  }\r\n}\r\n')},
    "kimi": {".kimi-code/config.toml": (
        '# Kimi Code settings — mine, keep the comments\ndefault_model = "kimi-for-coding"  # the fast one\n\n'
        '[[hooks]]\nevent = "Notification"\nmatcher = "task\\\\.completed"\n'
        'command = "terminal-notifier -message done"\n\n[loop_control]\nmax_steps_per_turn = 100\n')},
    "cursor": {".cursor/hooks.json": (
        '{\n  "version": 1,\n  "hooks": {\n    "beforeShellExecution": [{"command": "./hooks/guard.sh"}],\n'
        '    "sessionStart": [{"command": "node ~/.cursor/hooks/greet.js"}]\n  }\n}\n')},
    "opencode": {".config/opencode/plugins/theirs.js": "export const Theirs = async () => ({})\n",
                 ".config/opencode/opencode.json": '{"$schema": "https://opencode.ai/config.json"}\n'},
    "grok": {".grok/hooks/notify.json": '{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}}\n'},
}


def _home(tmp_path, *agents) -> Home:
    h = Home(tmp_path)
    (h.home / ".config").mkdir()  # XDG's, shared: the launcher lives under it, uninstall leaves it
    for a in agents:
        (h.home / HOMES[a][0]).mkdir(parents=True, exist_ok=True)
    return h


def _tree(root) -> dict:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for p in sorted(root.rglob("*"))}


def _deja_commands(agent: str, path) -> list[str]:
    """Every deja command the agent's config holds, in that agent's shape."""
    text = path.read_text()
    if agent == "kimi":
        return [h["command"] for h in tomllib.loads(text).get("hooks", []) if "deja" in h["command"]]
    if agent == "opencode":
        return ["plugin"] if "deja-hook" in text else []
    data = json.loads(text)
    out = []
    for entries in data["hooks"].values():
        for e in entries:
            for h in (e.get("hooks") or [e]):  # Claude's nesting, or Cursor's flat entries
                if "deja" in h.get("command", ""):
                    out.append(h["command"])
    return out


@pytest.mark.parametrize("agent", list(HOMES))
def test_install_wires_once_and_uninstall_leaves_nothing(tmp_path, agent):
    h = _home(tmp_path, agent)
    before = _tree(h.home)
    proc = h.run("install", agent)
    path = h.home / HOMES[agent][1]
    assert f"{agent}: wired" in proc.stdout
    cmds = _deja_commands(agent, path)
    assert cmds and len(cmds) == len(set(cmds))
    assert all(f"--harness {agent}" in c for c in cmds if c != "plugin")
    blob = path.read_bytes()
    again = h.run("install", "--auto")  # re-running, any way: nothing added, nothing rewritten
    assert path.read_bytes() == blob and "already up to date" in again.stdout
    h.run("uninstall", agent)
    assert _tree(h.home) == before


@pytest.mark.parametrize("agent", list(HOMES))
def test_uninstall_gives_back_the_users_files_byte_for_byte(tmp_path, agent):
    h = _home(tmp_path, agent)
    for rel, text in USER_FILES[agent].items():
        p = h.home / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(text.encode())
    before = _tree(h.home)
    h.run("install", agent)
    path = h.home / HOMES[agent][1]
    assert _deja_commands(agent, path)
    for rel, text in USER_FILES[agent].items():  # the user's own entries are all still there
        if (h.home / rel) == path:
            now = path.read_text()
            if agent == "kimi":
                assert now.startswith(text) and "terminal-notifier" in now
            else:
                data = json.loads(now)
                for event, entries in json.loads(text)["hooks"].items():
                    assert all(e in data["hooks"][event] for e in entries)
        else:
            assert (h.home / rel).read_bytes() == text.encode()  # files deja does not own: untouched
    h.run("uninstall", "--all")
    assert _tree(h.home) == before


def test_kimi_table_is_what_kimi_accepts(tmp_path):
    """Kimi rejects any [[hooks]] key it does not know: the mark is a comment."""
    h = _home(tmp_path, "kimi")
    h.run("install", "kimi")
    hooks = tomllib.loads((h.home / HOMES["kimi"][1]).read_text())["hooks"]
    assert hooks == [{"event": "UserPromptSubmit", "timeout": 30,
                      "command": f"{h.home}/.config/deja/bin/deja-hook hook-prompt --plain --harness kimi"}]


def test_gemini_extension_and_millisecond_timeouts(tmp_path):
    h = _home(tmp_path, "gemini")
    settings = h.home / ".gemini" / "settings.json"
    settings.write_text('{"hooksConfig": {"enabled": false}}\n')
    proc = h.run("install", "gemini")
    ext = h.home / ".gemini" / "extensions" / "deja"
    assert json.loads((ext / "gemini-extension.json").read_text())["name"] == "deja"
    data = json.loads((ext / "hooks" / "hooks.json").read_text())
    assert set(data["hooks"]) == {"SessionStart", "BeforeAgent"}
    assert all(hk["timeout"] == 10000 for es in data["hooks"].values() for e in es for hk in e["hooks"])
    # the switch is the user's (it covers every hook they have): said, not flipped
    assert settings.read_text() == '{"hooksConfig": {"enabled": false}}\n'
    assert "hooksConfig" in proc.stderr and "switched off" in proc.stderr


def test_qwen_timeout_in_milliseconds(tmp_path):
    h = _home(tmp_path, "qwen")
    h.run("install", "qwen")
    data = json.loads((h.home / ".qwen" / "settings.json").read_text())
    assert list(data["hooks"]) == ["UserPromptSubmit"]
    assert data["hooks"]["UserPromptSubmit"][0]["hooks"][0]["timeout"] == 60000


def test_a_hand_merged_second_copy_and_a_moved_launcher_leave_one_entry(tmp_path):
    h = _home(tmp_path, "cursor")
    path = h.home / ".cursor" / "hooks.json"
    old = "/opt/old/deja/bin/deja-hook hook-context --harness cursor"
    path.write_text(json.dumps({"version": 1, "hooks": {"sessionStart": [
        {"command": old}, {"command": "echo mine"}, {"command": old}]}}))
    h.run("install", "cursor")
    entries = json.loads(path.read_text())["hooks"]["sessionStart"]
    assert entries == [{"command": f"{h.home}/.config/deja/bin/deja-hook hook-context --harness cursor"},
                       {"command": "echo mine"}]


def test_malformed_config_is_left_untouched_with_one_line(tmp_path):
    h = _home(tmp_path, "qwen", "kimi", "cursor", "grok")
    (h.home / ".claude").mkdir()
    bad = {".qwen/settings.json": '{"model": "qwen3",,}\n', ".kimi-code/config.toml": 'default_model = "k2\n',
           ".cursor/hooks.json": "{ not json", ".claude/settings.json": '{"model": "opus"'}
    for rel, text in bad.items():
        (h.home / rel).write_text(text)
    for verb in ("install", "uninstall"):
        proc = h.run(verb, "--auto", check=False)
        assert proc.returncode == 1
        for rel, text in bad.items():
            assert (h.home / rel).read_text() == text
            assert not (h.home / (rel + ".deja-backup")).exists()
            lines = [ln for ln in proc.stderr.splitlines() if str(h.home / rel) in ln]
            assert len(lines) == 1 and lines[0].startswith("deja: ")
        # the others are done all the same
        assert f"grok: {'wired' if verb == 'install' else 'removed'}" in proc.stdout


def test_only_agents_set_up_here_are_wired(tmp_path):
    h = _home(tmp_path, "qwen")
    proc = h.run("install", "--auto")
    assert "qwen: wired" in proc.stdout
    for agent in ("gemini", "kimi", "cursor", "opencode", "grok"):
        assert not (h.home / HOMES[agent][0]).exists()
    proc = h.run("install", "gemini")
    assert "not found" in proc.stderr and not (h.home / ".gemini").exists()


def test_launcher_stays_while_any_agent_uses_it(tmp_path):
    h = _home(tmp_path, "kimi")
    (h.home / ".claude").mkdir()
    h.run("install", "--auto")
    launcher = h.home / ".config" / "deja" / "bin" / "deja-hook"
    h.run("uninstall", "claude")
    assert launcher.exists()  # Kimi's hook still runs it
    h.run("uninstall", "kimi")
    assert not launcher.exists()


# --------------------------------------------------------------------------- the hooks, per agent


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Home:
    h = Home(tmp_path_factory.mktemp("agents"))
    _populate(h)
    h.run("index")
    return h


@pytest.fixture(autouse=True)
def fresh_ledger(request):
    if "store" in request.fixturenames:
        h = request.getfixturevalue("store")
        for p in h.index.parent.glob(h.index.name + ".hook*"):
            p.unlink()
    yield


def hook(home: Home, name: str, payload, *args) -> str:
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    proc = subprocess.run(deja_cmd() + [name, *args], input=data, env=home.env, capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.decode()


def framed(ctx: str) -> str:
    assert ctx.startswith("<deja-recall>\n" + FRAME_LEAD + "\n") and ctx.rstrip("\n").endswith("</deja-recall>")
    return ctx


def answer(out: str, event: str) -> str:
    assert out.endswith("\n") and out.count("\n") == 1, out
    env = json.loads(out)
    assert set(env) <= {"systemMessage", "hookSpecificOutput"}
    assert env["hookSpecificOutput"]["hookEventName"] == event
    return framed(env["hookSpecificOutput"]["additionalContext"])


def test_gemini_session_start_and_before_agent(store):
    base = {"session_id": "gem-1", "transcript_path": "/home/dev/.gemini/tmp/shop/chats/session-1.json", "cwd": CWD,
            "timestamp": "2026-03-20T10:00:00.000Z"}
    answer(hook(store, "hook-context", dict(base, hook_event_name="SessionStart", source="startup"),
                "--harness", "gemini"), "SessionStart")
    ctx = answer(hook(store, "hook-prompt", dict(base, hook_event_name="BeforeAgent", prompt=POOL_Q),
                      "--harness", "gemini"), "BeforeAgent")
    assert "pool_size" in ctx
    # the same payload without --harness is known by its event name
    assert json.loads(hook(store, "hook-prompt", dict(base, session_id="gem-2", hook_event_name="BeforeAgent",
                                                      prompt=POOL_Q)))["hookSpecificOutput"]["hookEventName"] == "BeforeAgent"


def test_qwen_prompt_answer_names_its_event(store):
    payload = {"session_id": "qwen-1", "transcript_path": "/home/dev/.qwen/projects/x/chats/qwen-1.jsonl", "cwd": CWD,
               "hook_event_name": "UserPromptSubmit", "timestamp": "2026-03-20T10:00:00.000Z",
               "permission_mode": "default", "prompt": POOL_Q}
    assert "pool_size" in answer(hook(store, "hook-prompt", payload, "--harness", "qwen"), "UserPromptSubmit")


def test_kimi_gets_plain_text_from_content_parts(store):
    payload = {"hook_event_name": "UserPromptSubmit", "session_id": "session_kimi1", "session_title": "pool",
               "client_type": "kimi_code_cli", "cwd": CWD, "prompt": [{"type": "text", "text": POOL_Q}]}
    out = hook(store, "hook-prompt", payload, "--plain", "--harness", "kimi")
    assert "pool_size" in framed(out) and not out.lstrip().startswith("{")
    # --harness kimi alone is plain too: Kimi adds stdout to the context as it is
    assert framed(hook(store, "hook-prompt", dict(payload, session_id="session_kimi2"), "--harness", "kimi"))


def test_cursor_session_start_reads_workspace_roots_and_answers_additional_context(store):
    payload = {"session_id": "c0ffee-1", "conversation_id": "c0ffee-1", "generation_id": "g1",
               "hook_event_name": "sessionStart", "workspace_roots": [CWD], "is_background_agent": False,
               "composer_mode": "agent", "cursor_version": "1.7.52", "model": "claude-4.5-sonnet"}
    out = hook(store, "hook-context", payload, "--harness", "cursor")
    assert out.count("\n") == 1 and set(json.loads(out)) == {"additional_context"}
    framed(json.loads(out)["additional_context"])
    # beforeSubmitPrompt cannot carry context in Cursor: nothing is printed
    ask = {"conversation_id": "c0ffee-1", "generation_id": "g2", "hook_event_name": "beforeSubmitPrompt",
           "workspace_roots": [CWD], "prompt": POOL_Q, "attachments": []}
    assert hook(store, "hook-prompt", ask) == ""


def test_opencode_plugin_payload_gets_plain_text(store):
    payload = {"hook_event_name": "UserPromptSubmit", "session_id": "ses_3f2a", "cwd": CWD, "prompt": POOL_Q}
    assert "pool_size" in framed(hook(store, "hook-prompt", payload, "--plain", "--harness", "opencode"))
    start = {"hook_event_name": "SessionStart", "session_id": "ses_3f2a", "cwd": CWD, "source": "startup"}
    framed(hook(store, "hook-context", start, "--plain", "--harness", "opencode"))


def test_grok_is_answered_like_claude(store):
    payload = {"session_id": "grok-1", "transcript_path": None, "cwd": CWD, "hook_event_name": "SessionStart",
               "source": "startup"}
    answer(hook(store, "hook-context", payload, "--harness", "grok"), "SessionStart")


@pytest.mark.parametrize("agent", ["gemini", "qwen", "kimi", "cursor", "opencode", "grok"])
@pytest.mark.parametrize("garbage", [b"not json {", b"[1, 2]", b""])
def test_garbage_in_is_silence_out(store, agent, garbage):
    for name in ("hook-context", "hook-prompt"):
        assert hook(store, name, garbage, "--harness", agent) == ""


@pytest.mark.skipif(not shutil.which("node"), reason="needs node to load the plugin")
def test_opencode_plugin_folds_context_and_recall_in(store, tmp_path):
    """The generated plugin, loaded by node the way opencode loads it, running the real hooks."""
    (store.home / ".config" / "opencode").mkdir(parents=True, exist_ok=True)
    store.run("install", "opencode")
    plugin = tmp_path / "deja.mjs"  # ESM, whatever package.json is around
    plugin.write_bytes((store.home / HOMES["opencode"][1]).read_bytes())
    script = """
const { DejaPlugin } = await import(process.argv[1]);
const p = await DejaPlugin({ directory: %s });
const out = { system: ["You are opencode."] };
await p["experimental.chat.system.transform"]({ sessionID: "ses_1" }, out);
await p["experimental.chat.system.transform"]({ sessionID: "ses_1" }, out);
const msgs = { messages: [{ info: { id: "msg_1", sessionID: "ses_1", role: "user" },
                            parts: [{ type: "text", text: %s }] }] };
await p["experimental.chat.messages.transform"]({}, msgs);
await p["experimental.chat.messages.transform"]({}, msgs);
await p["experimental.session.compacting"]({ sessionID: "ses_1" }, { context: [] });
console.log(JSON.stringify({ system: out.system, text: msgs.messages[0].parts[0].text }));
""" % (json.dumps(CWD), json.dumps(POOL_Q))
    proc = subprocess.run(["node", "--input-type=module", "-e", script, str(plugin)], env=store.env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert len(got["system"]) == 1 and got["system"][0].startswith("You are opencode.\n\n<deja-recall>\n")
    assert got["system"][0].count("<deja-recall>") == 1  # folded in once, not once per call
    assert got["text"].startswith(POOL_Q + "\n\n<deja-recall>\n") and got["text"].count("<deja-recall>") == 1
    assert "pool_size" in got["text"]
