"""Curating memory: remember, promote, forget (+ tombstones, exclusions) and stats --json,
through the real `deja` command on a temp HOME."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import claude_assistant, claude_user, write_jsonl


def _claude(home, session: str, ask: str, answer: str, cwd: str = "/home/dev/src/shop", day: str = "2026-03-02"):
    write_jsonl(home.claude_file(session, cwd), [
        claude_user(session, ask, f"{day}T10:00:00Z", f"{session}-u1", cwd),
        claude_assistant(session, [{"type": "text", "text": answer}], f"{day}T10:01:00Z", f"{session}-a1",
                         msg_id=f"{session}-m1", cwd=cwd, parent=f"{session}-u1"),
    ])


def _keys(env: dict) -> list[str]:
    return [f"{h['session']['harness']}:{h['session']['id']}" for h in env["hits"]]


@pytest.fixture
def mem(home):
    home.env["XDG_CONFIG_HOME"] = str(home.root / "config")
    home.env["XDG_DATA_HOME"] = str(home.root / "data")
    _claude(home, "sess-shop-1", "why does checkout 500 on empty carts?", "The root cause was a null cart total.")
    _claude(home, "sess-api-1", "how do we rotate the webhook secret?", "We switched to a rotating keyring.",
            cwd="/home/dev/work/api", day="2026-02-10")
    home.run("index")
    return home


def notes_file(home) -> Path:
    return home.root / "data" / "deja" / "notes.jsonl"


def test_remember_indexes_a_note_as_harness_deja_and_it_survives_rebuild_and_forget(mem):
    proc = mem.run("remember", "pgbouncer pool size must be 40", "--project", "src/shop", "--tag", "#DB")
    assert proc.stdout.startswith("deja:note-src-shop-")
    line = json.loads(notes_file(mem).read_text().splitlines()[-1])
    assert line["project"] == "src/shop" and line["text"] == "pgbouncer pool size must be 40"
    assert line["tags"] == ["db"] and line["ts"].endswith("Z")
    hits = mem.search("pgbouncer")["hits"]
    assert [h["session"]["harness"] for h in hits] == ["deja"]
    assert hits[0]["session"]["id"].startswith("note-src-shop-")
    assert mem.search("#db")["hits"], "tags are searchable"
    mem.run("index", "--rebuild")
    assert _keys(mem.search("pgbouncer")) == _keys({"hits": hits})
    # a project-wide forget leaves notes: they are primary data
    mem.run("forget", "--project", "shop")
    assert _keys(mem.search("pgbouncer")) == _keys({"hits": hits})
    assert not mem.search("checkout", "empty", "carts")["hits"]
    assert notes_file(mem).read_text().count("\n") == 1


def test_remember_project_defaults_to_the_cwd_project(mem, tmp_path):
    import subprocess

    from conftest import deja_cmd

    cwd = tmp_path / "src" / "billing"
    cwd.mkdir(parents=True)
    subprocess.run(deja_cmd() + ["remember", "invoices are cut at midnight UTC"], cwd=cwd, env=mem.env, check=True,
                   capture_output=True, text=True)
    assert json.loads(notes_file(mem).read_text())["project"] == str(cwd.resolve())  # the project root
    hit = mem.search("invoices", "midnight")["hits"][0]["session"]
    assert hit["project"] == "src/billing" and hit["harness"] == "deja"


def test_a_note_or_a_promotion_keeps_no_secret_it_was_given(mem):
    """notes.jsonl is primary data that outlives the index: a secret pasted
    into `deja remember` or a promotion's --note is redacted before it is
    written, not only in the index (an agent notes what it saw)."""
    token, key = "ghp_N0teAb12Cd34Ef56Gh78Ij90Kl12Mn34Op56", "AKIAN0TE7RZ3TLXW5MVN"
    proc = mem.run("remember", f"deploy with token {token} and key {key}", "--project", "src/shop")
    assert "2 secrets redacted before saving" in proc.stderr
    mem.run("promote", "sess-shop-1", "--state", "accepted", "--note", "the CI password=Hunter2-Staging-9x")
    written = notes_file(mem).read_text()
    assert token not in written and key not in written and "Hunter2" not in written
    assert "[redacted:github-token]" in written and "[redacted:aws-access-key]" in written
    assert mem.search("deploy", "token")["hits"][0]["session"]["harness"] == "deja"


def test_promote_state_travels_with_later_hits_and_rejected_moves_down(mem):
    _claude(mem, "sess-shop-2", "checkout totals again", "checkout totals fixed by clamping the cart",
            day="2026-03-03")
    mem.run("index")
    before = _keys(mem.search("checkout"))
    assert before[0] == "claude:sess-shop-2" or "claude:sess-shop-1" in before
    mem.run("promote", "sess-shop-1", "--state", "rejected", "--note", "null totals were a symptom")
    line = json.loads(notes_file(mem).read_text().splitlines()[-1])
    assert line["kind"] == "promoted" and line["session"] == "claude:sess-shop-1"
    assert line["state"] == "rejected" and line["note"] == "null totals were a symptom"
    env = mem.search("checkout")
    by_key = {k: h["session"] for k, h in zip(_keys(env), env["hits"])}
    s = by_key["claude:sess-shop-1"]
    assert s["lifecycle"] == "rejected" and s["lifecycle_note"] == "null totals were a symptom"
    assert s["lifecycle_at"].endswith("Z")
    keys = _keys(env)
    # rejected sessions sit below every other hit
    rejected = [i for i, k in enumerate(keys) if by_key[k].get("lifecycle") == "rejected"]
    assert rejected and min(rejected) > max(i for i, k in enumerate(keys) if i not in rejected)
    # the curated note is its own session (harness deja) carrying the same state
    assert by_key["deja:deja-note-claude-sess-shop-1"]["lifecycle"] == "rejected"
    # a correction appends; the newest state wins, and it survives a rebuild
    mem.run("promote", "claude:sess-shop-1", "--state", "accepted", "--note", "it was the real fix after all")
    mem.run("index", "--rebuild")
    s = {k: h["session"] for k, h in zip(_keys(mem.search("checkout")), mem.search("checkout")["hits"])}
    assert s["claude:sess-shop-1"]["lifecycle"] == "accepted"
    assert s["claude:sess-shop-1"]["lifecycle_note"] == "it was the real fix after all"
    last = json.loads(mem.run("last", "--json").stdout)["sessions"]
    assert any(x.get("lifecycle") == "accepted" for x in last)
    assert len(notes_file(mem).read_text().splitlines()) == 2


def test_promote_rejects_unknown_state(mem):
    proc = mem.run("promote", "sess-shop-1", "--state", "maybe", check=False)
    assert proc.returncode == 1 and "--state" in proc.stderr


def test_forget_writes_tombstones_that_survive_rebuild_and_unforget_lifts_them(mem):
    dry = mem.run("forget", "--session", "sess-shop", "--dry-run")
    assert "claude:sess-shop-1" in dry.stdout and "dry run" in dry.stderr
    assert mem.search("checkout")["hits"]
    mem.run("forget", "--session", "sess-shop")
    tomb = mem.root / "config" / "deja" / "tombstones"
    assert tomb.read_text().split() == ["claude:sess-shop-1"]
    assert not mem.search("checkout")["hits"]
    assert "claude:sess-shop-1" in mem.run("forget", "--list").stdout
    # the catalog's tombstones table holds it too
    import duckdb

    con = duckdb.connect(str(mem.index / "catalog.duckdb"), read_only=True)
    try:
        assert con.execute("SELECT session_key FROM tombstones").fetchall() == [("claude:sess-shop-1",)]
    finally:
        con.close()
    mem.run("index", "--rebuild")
    assert not mem.search("checkout")["hits"]
    # even a lost catalog cannot bring it back: the primary file is enough
    import shutil

    shutil.rmtree(mem.index)
    mem.run("index")
    assert not mem.search("checkout")["hits"]
    assert mem.search("webhook")["hits"]
    # an append to the forgotten transcript stays out as well
    write_jsonl(mem.claude_file("sess-shop-1"), [claude_user("sess-shop-1", "checkout once more", "2026-03-02T11:00:00Z", "x9")],
                mode="a")
    mem.run("index")
    assert not mem.search("checkout")["hits"]
    mem.run("forget", "--unforget", "claude:sess-shop-1")
    assert tomb.read_text().split() == []
    assert _keys(mem.search("checkout")) == ["claude:sess-shop-1"]
    assert "no tombstones" in mem.run("forget", "--list").stderr


def test_forget_by_project_and_before(mem):
    out = mem.run("forget", "--project", "API", "--before", "2026-03-01", "--dry-run").stdout
    assert "claude:sess-api-1" in out and "sess-shop-1" not in out
    assert "no session matches" in mem.run("forget", "--project", "api", "--before", "2026-01-01").stderr
    mem.run("forget", "--project", "api", "--before", "2026-03-01")
    assert not mem.search("webhook")["hits"]
    assert mem.search("checkout")["hits"]
    assert mem.run("forget", check=False).returncode == 1


def test_exclusions_from_file_and_env_apply_at_index_time(mem):
    excl = mem.root / "config" / "deja" / "exclude"
    excl.parent.mkdir(parents=True, exist_ok=True)
    excl.write_text("# private work\nWORK/*\n")
    mem.run("index", "--rebuild")
    assert not mem.search("webhook")["hits"]
    assert mem.search("checkout")["hits"]
    excl.write_text("")
    mem.run("index", "--rebuild", extra_env={"DEJA_EXCLUDE_PROJECTS": "nothing,Shop"})
    assert mem.search("webhook")["hits"]
    assert not mem.search("checkout")["hits"]


def test_an_exclusion_or_tombstone_file_saved_in_latin1_still_applies(mem):
    """A Latin-1 é in either file stopped every index run with a
    UnicodeDecodeError naming no file (QA, session 26): it reads as the
    letter it was, and the exclusion beside it still holds."""
    excl = mem.root / "config" / "deja" / "exclude"
    excl.parent.mkdir(parents=True, exist_ok=True)
    excl.write_bytes("# caf\u00e9 projects\nWORK/*\n".encode("latin-1"))
    (excl.parent / "tombstones").write_bytes("# r\u00e9sum\u00e9\n".encode("latin-1"))
    mem.run("index", "--rebuild")
    assert not mem.search("webhook")["hits"]
    assert mem.search("checkout")["hits"]
    from deja.stages.policy import exclusion_patterns

    excl.write_bytes("caf\u00e9/*\n".encode("latin-1"))
    assert exclusion_patterns({"XDG_CONFIG_HOME": str(excl.parent.parent)}) == ["caf\u00e9/*"]


def test_a_session_filter_of_quotes_alone_is_an_error_not_every_session(mem):
    assert len(mem.search("checkout")["hits"]) >= 1
    for empty in ('""', "''", " "):
        proc = mem.run("search", "--json", "--session", empty, "checkout", check=False)
        assert proc.returncode == 1 and proc.stdout == ""
        assert proc.stderr.strip() == "deja: --session needs a session's id or its first characters"


def test_stats_json_fields(mem):
    mem.run("remember", "a note for stats", "--project", "src/shop")
    st = json.loads(mem.run("stats", "--json").stdout)
    assert st["schema_version"] == 2
    assert st["total_sessions"] == 3
    assert st["total_messages"] == 5
    assert st["harnesses"][0] == {"harness": "claude", "sessions": 2, "messages": 4}
    assert {"harness": "deja", "sessions": 1, "messages": 1} in st["harnesses"]
    assert st["top_projects"][0] == {"project": "src/shop", "sessions": 2}
    months = {m["month"]: m["messages"] for m in st["monthly"]}
    assert months["2026-02"] == 2 and months["2026-03"] == 2
    assert len(st["sparkline"]) == len(st["monthly"]) and set(st["sparkline"]) <= set("▁▂▃▄▅▆▇█")
    assert st["date_range"]["start"] == "2026-02-10"
    assert st["longest_session"]["messages"] == 2 and st["longest_session"]["harness"] == "claude"
    assert set(st["longest_session"]) == {"id", "harness", "project", "title", "messages"}
    assert st["busiest_day"]["messages"] == 2
    assert st["recall"]["recalls_served"] == 0 and st["recall"]["empty_result_rate"] == 0
    for k in ("injections", "recall_sessions", "injected_sessions", "bytes", "injected_bytes", "dejavu_moments"):
        assert st["recall"][k] == 0
    for k in ("week_recalls", "week_bytes", "week_injected", "handoffs_received", "agent_credits", "week_agent_credits"):
        assert st[k] == 0
    # optional fields are omitted when zero
    for k in ("spans", "span_files", "repeat_questions", "sidecar_size", "policy_withheld"):
        assert k not in st
    assert "raw_bytes" not in st["recall"] and "since" not in st["recall"]
    # filters
    only = json.loads(mem.run("stats", "--json", "--harness", "claude", "--project", "api").stdout)
    assert only["total_sessions"] == 1 and only["top_projects"] == [{"project": "work/api", "sessions": 1}]
    assert mem.run("stats", "--json", "--harness", "nope", check=False).returncode == 1


def test_stats_text_and_terminal_card(mem):
    out = mem.run("stats").stdout
    assert "2 sessions" in out and "activity, last 52 weeks" in out
    assert "longest" in out and "Mon" in out and "less · ░ ▒ ▓ █ more" in out
    heat = [ln for ln in out.splitlines() if ln.startswith(("Mon", "Wed", "Fri", "Sun"))]
    assert len(heat) == 4 and all(len(ln) == len(heat[0]) for ln in heat)
    card = mem.run("stats", "--card").stdout.splitlines()
    assert card[0].startswith("╭") and card[-1].startswith("╰")
    assert len({len(ln) for ln in card}) == 1
    assert mem.run("stats", "somefile.svg", check=False).returncode == 1


def test_a_store_whose_every_session_was_forgotten_answers_no_match(mem):
    mem.run("forget", "--session", "claude:sess-shop-1")
    mem.run("forget", "--session", "claude:sess-api-1")
    proc = mem.run("search", "checkout", check=False)
    assert proc.returncode == 0 and "no session matches" in proc.stderr, proc.stderr
    assert mem.search("webhook", "secret")["hits"] == []
