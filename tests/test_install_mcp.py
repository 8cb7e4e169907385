"""`deja install` wires the `deja mcp` server into each agent's own MCP config and
writes the usage block each agent reads; `deja uninstall` takes both out (issue 16).
Temp HOMEs shaped like each agent's, the real `deja` as a subprocess."""

from __future__ import annotations

import hashlib
import json
import subprocess
import tomllib

import pytest

from conftest import Home
from test_hooks import _populate, envelope, hook, prompt, start

# agent → its home under HOME, the MCP config deja's entry goes in, and what people already have
AGENTS = {
    "claude": (".claude", ".claude.json", {
        ".claude.json": '{\n  "numStartups": 41,\n  "mcpServers": {\n    "github": {"type": "stdio", '
                        '"command": "gh-mcp", "args": []}\n  },\n  "projects": {"/home/dev/src/shop": {}}\n}\n',
        ".claude/CLAUDE.md": "# My rules\n\nAlways run the tests before you commit.\n"}),
    "codex": (".codex", ".codex/config.toml", {
        ".codex/config.toml": '# my codex settings — keep the comments\nmodel = "gpt-5"  # the big one\n\n'
                              '[mcp_servers.github]\ncommand = "gh-mcp"\nargs = []\n\n[features]\nhooks = true\n',
        ".codex/AGENTS.md": "Prefer small commits."}),  # no newline at the end: kept that way
    "grok": (".grok", ".grok/config.toml", {
        ".grok/config.toml": '[mcp_servers.linear]\nurl = "https://mcp.linear.app/mcp"\n'}),
    "qwen": (".qwen", ".qwen/settings.json", {
        ".qwen/settings.json": '{\r\n  "model": {"name": "qwen3-coder-plus"},\r\n  "mcpServers": {}\r\n}\r\n',
        ".qwen/QWEN.md": ""}),  # an empty file of the user's stays, empty
    "kimi": (".kimi-code", ".kimi-code/mcp.json", {}),
    "cursor": (".cursor", ".cursor/mcp.json", {
        ".cursor/mcp.json": '{\n  "mcpServers": {\n    "figma": {"url": "http://127.0.0.1:3845/mcp"}\n  }\n}\n'}),
    "copilot": (".copilot", ".copilot/mcp-config.json", {
        ".copilot/copilot-instructions.md": "Answer tersely.\n"}),
    "gemini": (".gemini", ".gemini/extensions/deja/gemini-extension.json", {
        ".gemini/settings.json": '{"mcpServers": {"theirs": {"command": "their-mcp"}}}\n',
        ".gemini/GEMINI.md": "# mine\n"}),
}
GUIDANCE = {"claude": ".claude/CLAUDE.md", "codex": ".codex/AGENTS.md", "qwen": ".qwen/QWEN.md",
            "copilot": ".copilot/copilot-instructions.md", "gemini": ".gemini/extensions/deja/GEMINI.md"}


def _home(tmp_path, *agents) -> Home:
    h = Home(tmp_path)
    (h.home / ".config").mkdir()
    for a in agents:
        (h.home / AGENTS[a][0]).mkdir(parents=True, exist_ok=True)
        for rel, text in AGENTS[a][2].items():
            (h.home / rel).parent.mkdir(parents=True, exist_ok=True)
            (h.home / rel).write_bytes(text.encode())
    return h


def _tree(root) -> dict:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for p in sorted(root.rglob("*"))}


def _servers(agent: str, path) -> dict:
    text = path.read_text()
    if agent in ("codex", "grok"):
        return tomllib.loads(text)["mcp_servers"]
    return json.loads(text)["mcpServers"]


@pytest.mark.parametrize("agent", list(AGENTS))
def test_install_wires_the_mcp_server_once_and_uninstall_gives_back_every_byte(tmp_path, agent):
    h = _home(tmp_path, agent)
    before = _tree(h.home)
    h.run("install", agent)
    path = h.home / AGENTS[agent][1]
    servers = _servers(agent, path)
    launcher = str(h.home / ".config" / "deja" / "bin" / "deja-hook")
    want = {"command": launcher, "args": ["mcp"]}
    want.update({"claude": {"type": "stdio"}, "copilot": {"type": "local", "tools": ["*"]}}.get(agent, {}))
    assert servers["deja"] == want
    # the user's own servers stay
    theirs = {"claude": "github", "codex": "github", "grok": "linear", "cursor": "figma"}.get(agent)
    if theirs:
        assert theirs in servers
    if agent in GUIDANCE:
        text = (h.home / GUIDANCE[agent]).read_text()
        assert text.count("<!-- deja: ") == 1 and "recall_context" in text
        old = AGENTS[agent][2].get(GUIDANCE[agent])
        if old:
            assert text.startswith(old)
    if agent in ("codex", "grok"):  # the user's text and comments are never rewritten
        assert path.read_text().startswith(AGENTS[agent][2][AGENTS[agent][1]])
    # again: nothing changes, nothing doubles
    once = _tree(h.home)
    h.run("install", agent)
    assert _tree(h.home) == once
    assert "deja" in _servers(agent, path)
    doctor = h.run("doctor").stdout
    assert "mcp: deja server" in doctor
    rows = json.loads(h.run("doctor", "--json").stdout)["mcp"]
    assert {"name": agent, "state": "wired", "path": str(path)} in rows
    # uninstall: every file as it was, byte for byte; what deja made is gone
    h.run("uninstall", agent)
    after = _tree(h.home)
    after.pop(".config", None)
    assert after == {k: v for k, v in before.items() if k != ".config"}


def test_the_wired_entry_starts_a_server_that_answers(tmp_path):
    h = _home(tmp_path, "cursor")
    h.run("install", "cursor")
    entry = _servers("cursor", h.home / ".cursor" / "mcp.json")["deja"]
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2024-11-05", "capabilities": {},
                       "clientInfo": {"name": "test", "version": "0"}}}
    proc = subprocess.run([entry["command"], *entry["args"]], input=json.dumps(init) + "\n", text=True,
                          capture_output=True, env=dict(h.env, DEJA_NO_REFRESH="1"), timeout=60)
    reply = json.loads(proc.stdout.splitlines()[0])
    assert reply["id"] == 1 and reply["result"]["serverInfo"]["name"] == "deja"


def test_malformed_mcp_config_is_left_untouched_with_one_line(tmp_path):
    h = _home(tmp_path, "claude", "codex", "cursor", "kimi")
    bad = {".claude.json": '{"numStartups": 3,', ".codex/config.toml": 'model = "gpt-5\n',
           ".cursor/mcp.json": "{ not json"}
    for rel, text in bad.items():
        (h.home / rel).write_text(text)
    for verb in ("install", "uninstall"):
        proc = h.run(verb, "--auto", check=False)
        assert proc.returncode == 1
        for rel, text in bad.items():
            assert (h.home / rel).read_text() == text
            assert not (h.home / (rel + ".deja-backup")).exists()
            lines = [ln for ln in proc.stderr.splitlines() if str(h.home / rel) in ln and "not valid" in ln]
            assert len(lines) == 1 and lines[0].startswith("deja: "), proc.stderr
        # the others are done all the same
        kimi = h.home / ".kimi-code" / "mcp.json"
        assert ("deja" in _servers("kimi", kimi)) if verb == "install" else not kimi.exists()


def test_backup_of_a_private_config_stays_private(tmp_path):
    h = _home(tmp_path, "claude")
    (h.home / ".claude.json").chmod(0o600)
    h.run("install", "claude")
    assert (h.home / ".claude.json.deja-backup").stat().st_mode & 0o777 == 0o600
    assert (h.home / ".claude.json").stat().st_mode & 0o777 == 0o600


def test_a_deja_server_of_the_users_own_is_left_as_it_is(tmp_path):
    h = _home(tmp_path, "cursor", "codex")
    mine = '{"mcpServers": {"deja": {"command": "npx", "args": ["-y", "deja-mcp"]}}}\n'
    (h.home / ".cursor" / "mcp.json").write_text(mine)
    toml = '[mcp_servers.deja]\ncommand = "/opt/deja/bin/deja-server"\n'
    (h.home / ".codex" / "config.toml").write_text(toml)
    proc = h.run("install", "--auto")
    assert (h.home / ".cursor" / "mcp.json").read_text() == mine
    assert (h.home / ".codex" / "config.toml").read_text() == toml
    assert proc.stderr.count("of your own; left as it is") == 2
    h.run("uninstall", "--auto")
    assert (h.home / ".cursor" / "mcp.json").read_text() == mine
    assert (h.home / ".codex" / "config.toml").read_text() == toml


def test_guidance_block_is_rewritten_in_place_and_the_users_text_around_it_kept(tmp_path):
    h = _home(tmp_path, "claude")
    path = h.home / ".claude" / "CLAUDE.md"
    stale = ("# Mine above\n\n<!-- deja: written by an older deja -->\nold advice\n<!-- /deja -->\n"
             "\n## Mine below\nkeep me\n")
    path.write_text(stale)
    h.run("install", "claude")
    text = path.read_text()
    assert text.startswith("# Mine above\n\n<!-- deja: written by `deja install`")
    assert text.endswith("<!-- /deja -->\n\n## Mine below\nkeep me\n")
    assert "old advice" not in text and text.count("<!-- /deja -->") == 1
    assert "`recall`" in text  # the MCP server is wired for Claude Code: the block names its tools
    h.run("install", "claude")
    assert path.read_text() == text
    h.run("uninstall", "claude")
    assert path.read_text() == "# Mine above\n\n## Mine below\nkeep me\n"


def test_no_guidance_writes_no_usage_block(tmp_path):
    h = _home(tmp_path, "claude", "codex", "copilot")
    before = {rel: (h.home / rel).read_bytes() for a in ("claude", "codex", "copilot")
              for rel in AGENTS[a][2] if rel in GUIDANCE.values()}
    h.run("install", "--auto", "--no-guidance")
    for rel, blob in before.items():
        assert (h.home / rel).read_bytes() == blob
    assert "deja" in _servers("copilot", h.home / ".copilot" / "mcp-config.json")


# --------------------------------------------------------------------------- the hooks' pointer


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Home:
    h = Home(tmp_path_factory.mktemp("pointer"))
    _populate(h)
    h.run("index")
    (h.home / ".kimi-code").mkdir()
    return h


def test_hook_pointer_names_the_tool_once_wired_and_deja_ctx_where_not(store):
    def pointers():
        ctx = envelope(hook(store, "hook-context", start(sid="p-claude")), "SessionStart")
        weak = envelope(hook(store, "hook-prompt", prompt("why is pool_size wrong on the zebra?", sid="p-w")),
                        "UserPromptSubmit")
        kimi = hook(store, "hook-prompt", prompt("why is pool_size wrong on the zebra?", sid="p-kimi"),
                    "--plain", "--harness", "kimi")
        return ctx["hookSpecificOutput"]["additionalContext"], weak["hookSpecificOutput"]["additionalContext"], kimi

    def clear():
        for p in store.index.parent.glob(store.index.name + ".hook*"):
            p.unlink()

    ctx, weak, kimi = pointers()
    assert 'run deja ctx "<query>"' in ctx and "recall_context" not in ctx
    store.run("install", "claude")
    clear()
    ctx, weak, kimi = pointers()
    assert "call deja's recall_context tool" in ctx and "deja ctx" not in ctx
    assert "for more, call deja's recall_context tool" in weak
    assert 'run deja ctx "<query>"' in kimi and "recall_context" not in kimi  # Kimi's MCP is not wired
    store.run("uninstall", "claude")
    clear()
    ctx, _, _ = pointers()
    assert 'run deja ctx "<query>"' in ctx and "recall_context" not in ctx
