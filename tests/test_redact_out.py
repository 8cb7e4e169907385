"""Every way out is redacted (issue 14): a store built under older rules (here,
with redaction off) still holds secrets; everything deja prints or writes from
it passes today's rules again (deja.stages.shown), while the words around the
secrets still show."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import Home, claude_assistant, claude_user, deja_cmd, write_jsonl

SID = "5ec2e7a1-0000-4000-8000-00000000c1a0"
CODEX_SID = "0199b0c1-2d3e-7f40-8a5b-6c7d8e9f0a1b"
GITHUB = "ghp_" + "Zq7Xw2Lk9Pm4Rt6Yv8Bn3Cd5Fg1Hj0KsAe2W"
AWS = "AKIA" + "QX7ZK2LM9PN4RT6Y"
PASSWORD = "Summer2024xyzQ7wLongValue"
URL_PW = "Sup3rS3cretPw"
KEY_BODY = "MIIEowIBAAKCAQEAxq7ZK2LM9PN4RT6YvmQ8bn3Cd5Fg1Hj0KsAe2WZq7Xw2Lk9P"
PRIVATE_KEY = ("-----BEGIN RSA PRIVATE KEY-----\n" + KEY_BODY + "\n"
               "m4Rt6Yv8Bn3Cd5Fg1Hj0KsAe2WZq7Xw2Lk9Pm4Rt6Yv8Bn3Cd5Fg1Hj0KsAe2WZq7X\n"
               "-----END RSA PRIVATE KEY-----")
LATER_SID = "0199b0c1-2d3e-7f40-8a5b-6c7d8e9f0a2c"
SECRETS = [GITHUB, GITHUB[4:], AWS, PASSWORD, URL_PW, KEY_BODY]
DB_URL = f"postgres://admin:{URL_PW}@db.internal:5432/shop"
FAILURE = f"ConnectionError: pelican refused {DB_URL}"
PSQL = f"psql {DB_URL} -c 'select pelican'"
MIGRATE = f"alembic upgrade head --url {DB_URL}"
TITLE = f"deploy the zebrafinch service, the token is {GITHUB} for now"


def leaks(text: str) -> list[str]:
    return [s for s in SECRETS if s in text]


def _git(repo: Path, *args: str) -> None:
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")
    subprocess.run(["git", "-C", str(repo), *args], env=env, check=True, capture_output=True)


def _tool(cwd, n, name, inp, ts):
    return claude_assistant(SID, [{"type": "tool_use", "id": f"tu{n}", "name": name, "input": inp}], ts, f"a{n}",
                            msg_id=f"m{n}", cwd=cwd)


def _result(cwd, n, content, ts, is_error=False):
    row = claude_user(SID, "", ts, f"r{n}", cwd=cwd)
    row["message"]["content"] = [{"type": "tool_result", "tool_use_id": f"tu{n}", "content": content,
                                  "is_error": is_error}]
    return row


def _claude(home: Home, cwd: str) -> Path:
    ts = "2026-11-20T10:%02d:00Z"
    rows = [
        claude_user(SID, TITLE, ts % 0, "u0", cwd=cwd),
        claude_assistant(SID, [{"type": "text", "text": f"Found the marmoset setting: password={PASSWORD} in "
                                "settings.py, and AWS_ACCESS_KEY_ID=" + AWS + " beside the walrus bucket."}],
                         ts % 1, "a1", msg_id="m1", cwd=cwd),
        _tool(cwd, 2, "Bash", {"command": f"psql {DB_URL} -c 'select pelican'"}, ts % 2),
        _result(cwd, 2, f"Exit code 2\n{FAILURE}", ts % 2, is_error=True),
        _tool(cwd, 3, "Edit", {"file_path": f"{cwd}/settings.py", "old_string": "DEBUG = True",
                               "new_string": f"DB_PASSWORD = 'x'  # password={PASSWORD} ocelot"}, ts % 3),
        _result(cwd, 3, f"The file {cwd}/settings.py has been updated successfully.", ts % 3),
        claude_user(SID, f"the ocelot deploy key is\n{PRIVATE_KEY}\nuse it for the heron host", ts % 4, "u4",
                    cwd=cwd),
        _tool(cwd, 5, "Bash", {"command": "pg_ctl restart -D /var/lib/pelican"}, ts % 5),
        _result(cwd, 5, "server restarted", ts % 5),
        _tool(cwd, 6, "Bash", {"command": f"psql {DB_URL} -c 'select pelican'"}, ts % 6),
        _result(cwd, 6, "pelican\n-------\n 1", ts % 6),
        claude_assistant(SID, [{"type": "text", "text": "The root cause was the pelican lock; we switched the "
                                f"walrus job to {DB_URL} and {GITHUB} stays in the vault."}],
                         ts % 7, "a7", msg_id="m7", cwd=cwd),
    ]
    path = home.claude_file(SID, cwd)
    write_jsonl(path, rows)
    return path


def _codex(home: Home, cwd: str, sid: str = CODEX_SID, day: int = 19, cmd: str = PSQL) -> None:
    def line(sec, typ, payload):
        return {"timestamp": f"2026-11-{day}T09:00:{sec:02d}.000Z", "type": typ, "payload": payload}

    def msg(role, text):
        return {"type": "message", "role": role,
                "content": [{"type": "input_text" if role == "user" else "output_text", "text": text}]}

    rows = [
        line(0, "session_meta", {"id": sid, "timestamp": f"2026-11-{day}T09:00:00.000Z", "cwd": cwd,
                                 "originator": "codex_cli_rs", "cli_version": "0.63.0", "instructions": None}),
        line(1, "response_item", msg("user", f"check the zebrafinch keys {AWS} and {GITHUB} before the deploy")),
        line(2, "response_item", {"type": "function_call", "name": "exec_command", "call_id": "c1",
                                  "arguments": json.dumps({"cmd": cmd})}),
        line(3, "response_item", {"type": "function_call_output", "call_id": "c1",
                                  "output": f"Process exited with code 2\nOutput:\n{FAILURE}\n"}),
        line(4, "response_item", msg("assistant", f"The marmoset password={PASSWORD} is stale; rotate it.")),
    ]
    path = home.codex_file(sid, day=f"2026/11/{day}", stamp=f"2026-11-{day}T09-00-00")
    write_jsonl(path, rows)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    home = Home(tmp_path_factory.mktemp("out"))
    repo = home.root / "work" / "shop"
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    (repo / "settings.py").write_text("DEBUG = True\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "init")
    path = _claude(home, str(repo))
    _codex(home, str(repo))
    _codex(home, str(repo), LATER_SID, 21, MIGRATE)  # the same failure a third time, its command's last run
    home.run("index", extra_env={"DEJA_NO_REDACT": "1"})  # a store from before today's rules
    return home, repo, path


def run(home: Home, *args: str, cwd=None, env: dict | None = None) -> str:
    proc = subprocess.run(deja_cmd() + list(args), env=dict(home.env, **(env or {})), capture_output=True,
                          text=True, timeout=120, cwd=cwd)
    return proc.stdout + proc.stderr


def hook(home: Home, name: str, payload: dict, env: dict | None = None) -> str:
    proc = subprocess.run(deja_cmd() + [name], input=json.dumps(payload), text=True,
                          env=dict(home.env, **(env or {})), capture_output=True, timeout=60)
    assert proc.returncode == 0
    return proc.stdout


def test_the_store_under_test_holds_the_secrets(store):
    home, _, _ = store
    shown = run(home, "show", SID[:8], env={"DEJA_NO_REDACT": "1"})
    assert GITHUB in shown and URL_PW in shown and KEY_BODY in shown


@pytest.mark.parametrize("args, words", [
    (["search", "zebrafinch"], ["deploy the zebrafinch service, the token is", "check the zebrafinch keys"]),
    (["search", "--json", "marmoset", "walrus"], ["Found the marmoset setting: password=", "beside the walrus bucket"]),
    (["show", SID[:8]], ["the ocelot deploy key is", "use it for the heron host", "AWS_ACCESS_KEY_ID=",
                         "postgres://admin:"]),
    (["show", "--json", "--harness", "claude", SID], ["the ocelot deploy key is", "postgres://admin:"]),
    (["ctx", SID[:8]], ["deploy the zebrafinch service", "the ocelot deploy key is", "stays in the vault"]),
    (["last"], ["deploy the zebrafinch service, the token is"]),
    (["last", "--json"], ["deploy the zebrafinch service, the token is"]),
    (["how", "psql"], ["@db.internal:5432/shop -c 'select"]),
    (["fix", FAILURE], ["ConnectionError: pelican refused", "ran next: psql"]),
    (["friction"], ["ConnectionError: pelican refused"]),
    (["stats"], ["psql postgres://admin:"]),
])
def test_every_answer_is_redacted_under_todays_rules(store, args, words):
    home, repo, _ = store
    out = run(home, *args, cwd=repo)
    for w in words:
        assert w in out, (w, out)
    assert leaks(out.replace(FAILURE, "")) == []  # (fix echoes nothing but what it was given)


def test_blame_is_redacted(store):
    home, repo, _ = store
    out = run(home, "blame", "settings.py", cwd=repo) + run(home, "blame", "--json", "settings.py", cwd=repo)
    assert "deploy the zebrafinch service" in out and "stays in the vault" in out
    assert leaks(out) == []


def test_files_deja_writes_are_redacted(store, tmp_path):
    home, repo, _ = store
    view, page, card = tmp_path / "view.html", tmp_path / "stats.html", tmp_path / "card.svg"
    run(home, "view", "--out", str(view), "--no-open")
    run(home, "stats", "--html", str(page))
    run(home, "stats", "--card", str(card))
    for f, word in ((view, "the ocelot deploy key is"), (page, "deploy the zebrafinch service"), (card, "</svg>")):
        text = f.read_text()
        assert word in text, f
        assert leaks(text) == [], f
    copy = tmp_path / "copy.jsonl"
    run(home, "recover", "--session", SID, "--repair", "--out", str(copy), "--cwd", str(repo))
    text = copy.read_text()
    assert "the ocelot deploy key is" in text and leaks(text) == []
    for line in text.splitlines():
        json.loads(line)
    digest = run(home, "recover", "--session", SID, "--digest", "--cwd", str(repo))
    assert "zebrafinch" in digest and leaks(digest) == []


def _payload(repo, event, **kw):
    return {"session_id": "fresh-1", "transcript_path": None, "cwd": str(repo), "hook_event_name": event, **kw}


def test_the_hooks_text_is_redacted(store):
    home, repo, _ = store
    outs = {
        "context": hook(home, "hook-context", _payload(repo, "SessionStart", source="startup")),
        "prompt": hook(home, "hook-prompt", _payload(
            repo, "UserPromptSubmit", prompt="why is the pelican database locked for the walrus job?")),
        "tool-after": hook(home, "hook-tool-after", _payload(
            repo, "PostToolUse", tool_name="Bash", tool_input={"command": "psql -c 'select 1'"},
            tool_response={"stdout": "", "stderr": FAILURE, "exit_code": 2}, tool_use_id="t2")),
    }
    for name, out in outs.items():
        assert "pelican" in out or "zebrafinch" in out, (name, out)
        assert leaks(out) == [], name


def test_a_compaction_packet_captured_under_older_rules_is_redacted_when_delivered(store):
    home, repo, path = store
    sid = SID
    out = hook(home, "hook-precompact", {"session_id": sid, "transcript_path": str(path), "cwd": str(repo),
                                         "hook_event_name": "PreCompact", "trigger": "auto"},
               env={"DEJA_NO_REDACT": "1"})
    assert out == ""
    delivered = hook(home, "hook-context", {"session_id": sid, "cwd": str(repo), "hook_event_name": "SessionStart",
                                            "source": "compact"})
    assert "zebrafinch" in delivered
    assert leaks(delivered) == []


def test_stats_redaction_counts_each_kind_per_agent(tmp_path):
    from deja.stages.redact import redact

    home = Home(tmp_path)
    claude_text = f"deploy with {GITHUB} and the key {AWS} please"
    codex_text = f"connect with {DB_URL} now"
    write_jsonl(home.claude_file(SID, cwd="/home/dev/src/shop"), [
        claude_user(SID, claude_text, "2026-11-20T10:00:00Z", "u1", cwd="/home/dev/src/shop")])
    codex = home.codex_file(CODEX_SID, day="2026/11/20", stamp="2026-11-20T10-00-00")
    write_jsonl(codex, [
        {"timestamp": "2026-11-20T10:00:00.000Z", "type": "session_meta",
         "payload": {"id": CODEX_SID, "cwd": "/home/dev/src/api", "cli_version": "0.118.0"}},
        {"timestamp": "2026-11-20T10:00:01.000Z", "type": "response_item", "payload": {
            "type": "message", "role": "user", "content": [{"type": "input_text", "text": codex_text}]}}])
    proc = home.run("stats", "--redaction", check=False)
    assert proc.returncode == 1 and proc.stderr == "deja: no index yet; run `deja index`\n"
    home.run("index")
    got = json.loads(home.run("stats", "--redaction", "--json").stdout)
    want_claude, want_codex = redact(claude_text)[1], redact(codex_text)[1]
    assert got["by_harness"] == {"claude": want_claude, "codex": want_codex}
    assert got["total"] == sum(want_claude.values()) + sum(want_codex.values()) >= 3
    text = home.run("stats", "--redaction").stdout
    for kind in {**want_claude, **want_codex}:
        assert kind in text
    assert text.rstrip().endswith(f"{got['total']} secrets redacted before they were written")
