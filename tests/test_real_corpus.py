"""Every published transcript (Claude Code, Codex, Gemini CLI, Qwen Code) in ../shared/corpus/real,
laid out as its owner's store, indexes through the real `deja index` with no
failure, and the counts are plausible against the manifest's raw line counts."""

from __future__ import annotations

import csv
import json
import os

import pytest

from conftest import CORPUS

pytestmark = pytest.mark.skipif(not (CORPUS / "MANIFEST.tsv").exists(), reason="../shared/corpus/real is not here")

HARNESSES = ("claude", "codex", "cursor", "copilot", "gemini", "qwen")


def manifest_rows():
    with open(CORPUS / "MANIFEST.tsv", newline="") as fh:
        return [r for r in csv.DictReader(fh, delimiter="\t") if r["harness"] in HARNESSES]


def spawned(r) -> bool:
    """A subagent transcript by its path (Claude's 2.0.x ``agent-*.jsonl``, not Cursor's ``agent-transcripts``)."""
    src = r["source_path"]
    return "subagents" in src or (r["harness"] == "claude" and "/agent-" in src)


def lay_out(home_dir, rows):
    """Symlink each file to where it sat under its owner's home."""
    for r in rows:
        src = r["source_path"]
        if src.startswith("dot_"):  # a dotfile manager's name for ~/.claude
            src = "." + src[4:]
        for anchor in (".claude/", ".codex/", ".cursor/", ".copilot/", ".gemini/", ".qwen/"):
            i = src.find(anchor)
            if i >= 0:
                src = src[i:]
                break
        dest = home_dir / src
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(CORPUS / r["harness"] / r["file"], dest)


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    from conftest import Home

    home = Home(tmp_path_factory.mktemp("real"))
    rows = manifest_rows()
    lay_out(home.home, rows)
    summary = json.loads(home.run("index", "--json").stdout)
    return home, rows, summary


def test_every_file_indexes_without_failure(indexed):
    home, rows, summary = indexed
    assert summary["errors"] == []
    by = {h["harness"]: h for h in summary["harnesses"]}
    # subagent transcripts are skipped by default; everything else is read
    main_files = {h: sum(1 for r in rows if r["harness"] == h and not spawned(r)) for h in HARNESSES}
    for h in HARNESSES:
        assert by[h]["failed"] == 0
        assert by[h]["malformed"] == 0
        assert by[h]["read"] == main_files[h]


def test_session_and_message_counts_are_plausible(indexed):
    home, rows, summary = indexed
    by = {h["harness"]: h for h in summary["harnesses"]}
    for h in HARNESSES:
        files = [r for r in rows if r["harness"] == h and not spawned(r)
                 and not any(i in r["file"] for i in CODEX_SUBAGENTS)]
        with_speech = sum(1 for r in files if int(r["user_msgs"]) + int(r["assistant_msgs"]) > 0)
        raw = sum(int(r["user_msgs"]) + int(r["assistant_msgs"]) for r in files)
        # a session per file that has any speech, subagents left out (a few hold only titles or an api error)
        assert with_speech - 3 <= by[h]["sessions"] <= len(files), (h, by[h], with_speech)
        # speech is a fraction of raw user/assistant lines: tool results, thinking-only
        # and tool-call-only lines are not messages (measured: claude ~25%, codex ~40%)
        assert 0.1 * raw <= by[h]["messages"] <= raw, (h, by[h]["messages"], raw)


def test_the_real_corpus_is_searchable_and_doctor_agrees(indexed):
    home, rows, summary = indexed
    res = home.search("error", "--all")
    assert res["total"] >= 10
    for hit in res["hits"]:
        s = hit["session"]
        assert s["harness"] in HARNESSES and s["id"] and "started" in s
    rep = json.loads(home.run("doctor", "--json").stdout)
    for store in rep["stores"]:
        if store["name"] not in HARNESSES:
            continue  # deja's own notes store, and any harness the corpus has no files of
        assert store["state"] == "ok"
        assert store["indexed_sessions"] == next(h["sessions"] for h in summary["harnesses"] if h["harness"] == store["name"])
    assert rep["index"]["stale_stores"] == []


CODEX_SUBAGENTS = {  # rollouts of the real corpus whose session_meta says source.subagent
    "019b5669-8da8-7bc3-bed8-e1c1b805dad5",  # /review
    "019d924b-53f5-78f1-a0d4-69aa13191f54", "019d924b-6bc1-7fa2-aa36-5e5a0e068c59",
    "019d781a-be34-7041-abb1-577f9360b907",  # thread_spawn explorers
}


def _codex_ids(home) -> set[str]:
    import duckdb

    files = [str(p) for p in (home.index / "sessions").glob("*.parquet")]
    return {r[0] for r in duckdb.connect().execute(
        "SELECT session_id FROM read_parquet(?) WHERE harness='codex'", [files]).fetchall()}


def test_codex_subagent_rollouts_are_skipped_like_claude_subagents(indexed):
    home, rows, summary = indexed
    ids = _codex_ids(home)
    assert len(ids) >= 5 and not ids & CODEX_SUBAGENTS


def test_subagents_are_their_own_sessions_when_included(tmp_path):
    from conftest import Home

    home = Home(tmp_path)
    lay_out(home.home, manifest_rows())
    summary = json.loads(home.run("index", "--json", extra_env={"DEJA_INCLUDE_SUBAGENTS": "1"}).stdout)
    assert summary["errors"] == []
    import duckdb

    files = [str(p) for p in (home.index / "sessions").glob("*.parquet")]
    kinds = duckdb.connect().execute(
        "SELECT count(*) FILTER (WHERE parent <> ''), count(*) FROM read_parquet(?) WHERE harness='claude'", [files]
    ).fetchone()
    assert kinds[0] >= 10  # every subagent file became a child session with its parent named
    assert CODEX_SUBAGENTS <= _codex_ids(home)


def test_every_cursor_transcript_is_a_session_with_its_turns(indexed):
    """deja-vu found 1 Cursor session in the published set: it missed the .txt transcripts."""
    home, rows, summary = indexed
    by = {h["harness"]: h for h in summary["harnesses"]}
    assert by["cursor"]["read"] == 4 and by["cursor"]["sessions"] == 4
    # the user turns (95) and the assistant turns that said something (133 + 4 + 55 + 50; tool-call-only
    # turns are work records), less 6 that hold only harness plumbing (normalize.strip_plumbing)
    assert by["cursor"]["messages"] == 95 + 133 + 4 + 55 + 50 - 6


def test_copilot_every_store_generation_is_found(indexed):
    """deja-vu found 2 Copilot sessions in the published set: it reads only
    session-state/<id>/events.jsonl. The 2025 history-session-state documents
    hold three more (the fourth document is empty: only a model-change notice)."""
    home, rows, summary = indexed
    by = {h["harness"]: h for h in summary["harnesses"]}
    assert by["copilot"]["read"] == 6
    assert by["copilot"]["sessions"] == 5
    # speech only: the timelines' user and copilot turns (9 + 7, 15 + 15, 4 + 4)
    # and the events files' user and assistant messages (1 + 16, 2 + 0)
    assert by["copilot"]["messages"] == 73


# Every session of the published set, exactly (deja-vu found Gemini 9 and Qwen 7:
# it missed Qwen's older `.json` chats). Gemini: seven JSONL chats and the 2025
# checkpoint; the two Cloud Shell chats hold only Gemini's own preamble, which is
# stripped, so they make no session. Qwen: seven JSONL chats and three `.json`.
EXACT = {"gemini": (8, 326), "qwen": (10, 547)}


def test_gemini_and_qwen_sessions_are_all_found(indexed):
    home, rows, summary = indexed
    by = {h["harness"]: h for h in summary["harnesses"]}
    for h, (sessions, messages) in EXACT.items():
        assert (by[h]["sessions"], by[h]["messages"]) == (sessions, messages), (h, by[h])
    import duckdb

    files = [str(p) for p in (home.index / "sessions").glob("*.parquet")]
    got = dict(duckdb.connect().execute(
        "SELECT session_id, project FROM read_parquet(?) WHERE harness IN ('gemini', 'qwen')", [files]).fetchall())
    # the project where the store records it: Qwen's lines carry the cwd, Gemini's
    # checkpoint its preamble (whose hash is its folder's name); else Gemini's slug
    assert got["ea5ad032-eb84-44d1-a163-ed49582d2955"] == "Documents/CloudSchool"
    assert got["checkpoint-e3d0d1de76d3"] == "repos/ssh-portfolio"
    assert got["30ef86a0-e9f6-4723-8023-b21da9b34829"] == "tp-tutor"
    assert "dd649aa7-6de3-4945-b57b-71ca9cb0a8a5" in got  # an older Qwen `.json` chat


def test_the_real_corpus_travels_whole_through_deja_sync(indexed, tmp_path):
    """Export the real store, import it on a second machine: every session and
    record arrives, marked with where it came from, and nothing of it can be
    exported again from there."""
    from conftest import Home

    home, _, _ = indexed
    out = json.loads(home.run("sync", "export", str(tmp_path / "x"), "--json",
                              extra_env={"DEJA_MACHINE": "published"}).stdout)
    assert out["records"] > 1000
    (tmp_path / "b").mkdir()
    other = Home(tmp_path / "b")
    other.env["DEJA_MACHINE"] = "reader"
    got = json.loads(other.run("sync", "import", str(tmp_path / "x"), "--json").stdout)
    assert (got["records"], got["malformed"], got["duplicates"]) == (out["records"], 0, 0)
    assert got["sessions"] == out["sessions"]
    local = json.loads(home.run("last", "--json", "100000").stdout)["sessions"]
    there = json.loads(other.run("last", "--json", "100000").stdout)["sessions"]
    assert len(there) == out["sessions"] <= len(local)
    assert all(s["source"]["origin"] == "imported" and s["from"] == "published" for s in there)
    assert {s["orig_id"] for s in there} <= {s["id"] for s in local}
    assert json.loads(other.run("sync", "export", str(tmp_path / "y"), "--json").stdout)["path"] is None
