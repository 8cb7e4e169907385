"""Issue 13, "history outlives the agent's own cleanup": a session whose
transcript the agent deleted (Claude Code's cleanupPeriodDays) stays in deja,
marked, until `deja index --prune-gone` or `deja forget`; doctor shows each
agent's cleanup and what deja kept; install offers, never forces, to raise it.
The real `deja` against a temp HOME."""

from __future__ import annotations

import json

from conftest import claude_assistant, claude_user, write_jsonl
from test_pipeline import S1, S2, catalog, first_session, ids

GONE_MARK = "(transcript deleted; kept by deja)"


def two_sessions_one_deleted(home):
    p = first_session(home)
    first_session(home, S2)
    home.run("index")
    p.unlink()
    return p


def test_a_deleted_transcripts_session_is_still_found_and_shown_as_gone_until_prune_gone(home):
    two_sessions_one_deleted(home)
    summary = json.loads(home.run("index", "--json").stdout)
    claude = next(h for h in summary["harnesses"] if h["harness"] == "claude")
    assert (claude["sessions"], claude["gone"]) == (2, 1)

    hits = home.search("connection", "pool")["hits"]
    assert sorted(h["session"]["id"] for h in hits) == sorted([S1, S2])
    gone = {h["session"]["id"]: h["session"].get("source_gone", False) for h in hits}
    assert gone == {S1: True, S2: False}
    assert next(h for h in hits if h["session"]["id"] == S1)["session"]["gone_at"].endswith("Z")

    heads = [line for line in home.run("search", "connection", "pool").stdout.splitlines() if line.startswith("claude  ")]
    assert len(heads) == 2 and sum(line.endswith(GONE_MARK) for line in heads) == 1  # the text output says so too
    shown = home.run("show", S1).stdout
    assert GONE_MARK in shown and "pool_size=5" in shown
    assert GONE_MARK not in home.run("show", S2).stdout
    last = home.run("last").stdout.splitlines()
    assert len(last) == 2 and sum(GONE_MARK in line for line in last) == 1
    last_json = json.loads(home.run("last", "--json").stdout)
    rows = last_json["sessions"] if isinstance(last_json, dict) else last_json
    assert {s["id"]: bool(s.get("source_gone")) for s in rows} == {S1: True, S2: False}

    # analysts: the sessions Parquet carries the mark; the manifest keeps the file's row, marked
    assert catalog(home, "SELECT count(*) FROM manifest WHERE gone_at IS NOT NULL")[0][0] == 1
    assert "up to date (2 sessions)" in home.run("index").stderr  # marked once, nothing to do after

    home.run("index", "--prune-gone")
    assert ids(home.search("connection", "pool")) == [S2]
    assert catalog(home, "SELECT count(*) FROM manifest")[0][0] == 1


def test_doctor_and_index_agree_on_the_sessions_kept_after_deletion(home):
    two_sessions_one_deleted(home)
    summary = json.loads(home.run("index", "--json").stdout)
    rep = json.loads(home.run("doctor", "--json").stdout)
    claude = next(s for s in rep["stores"] if s["name"] == "claude")
    assert claude["indexed_sessions"] == summary["sessions"] == 2
    assert claude["kept_gone_sessions"] == 1
    assert "claude" not in rep["index"]["stale_stores"]  # a deleted transcript is not a pending change
    text = home.run("doctor").stdout
    assert "cleanup: deletes transcripts after 30 days (cleanupPeriodDays, the default" in text
    assert "kept by deja, gone from claude: 1 session" in text
    assert "cleanup: keeps transcripts" in text  # codex


def test_a_deleted_transcript_leaves_no_pending_work_for_the_next_query(home):
    # Claude Code deletes old transcripts on its own: once the index has marked
    # them gone, a search must find the store fresh, not start a background run
    # that finds nothing to do, search after search.
    two_sessions_one_deleted(home)
    home.run("index")
    fresh = {"DEJA_NO_REFRESH": "0"}
    for _ in range(2):
        proc = home.run("search", "--json", "connection", "pool", extra_env=fresh)
        assert "refreshing" not in proc.stderr, proc.stderr
        assert len(json.loads(proc.stdout)["hits"]) == 2
    proc = home.run("hook-prompt", extra_env=fresh, check=False)
    assert proc.returncode == 0


def test_doctor_reads_claude_codes_cleanup_setting(home):
    first_session(home)
    (home.home / ".claude" / "settings.json").write_text('{"cleanupPeriodDays": 14}\n')
    home.run("index")
    text = home.run("doctor").stdout
    assert "cleanup: deletes transcripts after 14 days (cleanupPeriodDays," in text
    assert "kept by deja, gone from claude: 0 sessions" in text


def test_a_transcript_that_comes_back_is_read_again_and_unmarked(home):
    p = two_sessions_one_deleted(home)
    home.run("index")
    assert sorted(ids(home.search("exhausted"))) == sorted([S1, S2])
    # the same path again, rewritten: its new text replaces the kept one
    write_jsonl(p, [claude_user(S1, "kafka consumer lag after the rebalance", "2026-03-03T09:00:00Z", "k1")])
    home.run("index")
    assert ids(home.search("exhausted")) == [S2]
    hit = home.search("kafka")["hits"]
    assert [h["session"]["id"] for h in hit] == [S1] and "source_gone" not in hit[0]["session"]
    assert catalog(home, "SELECT count(*) FROM manifest WHERE gone_at IS NOT NULL")[0][0] == 0


def test_a_truncated_transcript_still_replaces_its_session(home):
    # unchanged behaviour, kept apart from deletion: a file that is there but shorter is a rewrite
    p = first_session(home)
    home.run("index")
    write_jsonl(p, [claude_user(S1, "grafana dashboard blank", "2026-03-02T11:00:00Z", "g1")])
    home.run("index")
    assert ids(home.search("exhausted")) == []
    assert ids(home.search("grafana")) == [S1]
    assert "source_gone" not in home.search("grafana")["hits"][0]["session"]


def test_a_rebuild_keeps_the_sessions_of_deleted_transcripts(home):
    two_sessions_one_deleted(home)
    home.run("index")
    home.run("index", "--rebuild")
    hits = home.search("connection", "pool")["hits"]
    assert {h["session"]["id"]: h["session"].get("source_gone", False) for h in hits} == {S1: True, S2: False}
    assert "pool_size=5" in home.run("show", S1).stdout
    # found gone during the rebuild itself: kept too
    s3 = "7f1c0000-0000-4000-8000-000000000003"
    first_session(home, s3)
    home.run("index")
    home.claude_file(S2).unlink()
    home.run("index", "--rebuild")
    hits = home.search("connection", "pool")["hits"]
    assert {h["session"]["id"]: h["session"].get("source_gone", False) for h in hits} == {
        S1: True, S2: True, s3: False}
    # a store this environment cannot see at all: a rebuild keeps its sessions, unmarked
    other = home.root / "elsewhere"
    other.mkdir()
    home.run("index", "--rebuild", extra_env={"HOME": str(other)})
    assert sorted(ids(home.search("connection", "pool"))) == sorted([S1, S2, s3])


def test_forget_drops_a_kept_session(home):
    two_sessions_one_deleted(home)
    home.run("index")
    home.run("forget", "--session", S1)
    assert ids(home.search("connection", "pool")) == [S2]


def test_install_offers_to_keep_history_and_never_changes_it_unasked(home):
    settings = home.home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    original = '{\n  "model": "opus",\n  "cleanupPeriodDays": 30\n}\n'
    settings.write_text(original)
    proc = home.run("install", "claude")  # not a terminal: prints the offer, changes nothing of it
    assert "`deja install --keep-history 365`" in proc.stderr
    assert json.loads(settings.read_text())["cleanupPeriodDays"] == 30
    home.run("uninstall", "claude")
    assert settings.read_text() == original  # byte for byte

    proc = home.run("install", "--keep-history", "365")
    assert "cleanupPeriodDays 30 → 365" in proc.stdout
    assert settings.read_text() == original.replace('"cleanupPeriodDays": 30', '"cleanupPeriodDays": 365')
    proc = home.run("install", "claude")
    assert "--keep-history" not in proc.stderr  # 365 days: no offer
    home.run("uninstall", "claude")  # uninstall leaves the raised setting (the person asked for it)
    assert settings.read_text() == original.replace('"cleanupPeriodDays": 30', '"cleanupPeriodDays": 365')
    assert home.run("install", "--keep-history", "0", check=False).returncode == 1


def test_keep_history_with_a_target_wires_and_raises_and_creates_no_backup_of_its_own(home):
    settings = home.home / ".claude" / "settings.json"
    proc = home.run("install", "claude", "--keep-history", "400")
    assert "--keep-history 365" not in proc.stderr
    data = json.loads(settings.read_text())
    assert data["cleanupPeriodDays"] == 400 and "SessionStart" in data["hooks"]
    home.run("uninstall", "claude")
    assert json.loads(settings.read_text()) == {"cleanupPeriodDays": 400}
