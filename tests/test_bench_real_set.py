"""bench/quality/real_set.py lays published transcripts out as the agents write them, so
score.py can ask its questions of them; --check holds the questions to their promise: each
names a session deja has, and a paraphrase shares no content word with what was said."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import CORPUS, REPO

REAL_SET = REPO / "bench" / "quality" / "real_set.py"
SAMPLES = REPO / "data_samples"
NOTES = "e2a47f08-6b3d-4c91-b5f7-1d8e0c2a9b63"  # notes-sync: a three-way merge of offline edits
CSV = "019cbee1-22d4-7f6b-89d7-acc5e8b2d6fd"  # csvtidy: a borrow-checker error in --dedupe


def corpus(tmp_path: Path) -> Path:
    """A MANIFEST.tsv corpus as ../shared/corpus/real is: a Claude Code transcript published
    from a chezmoi repo (dot_claude), a Codex rollout, a Gemini file that is not read."""
    root = tmp_path / "real"
    rows = [
        ("claude", "a__dots__notes.jsonl", "a/dots", f"dot_claude/projects/-home-dev-src-notes-sync/{NOTES}.jsonl",
         SAMPLES / "claude" / "projects" / "-home-dev-src-notes-sync" / f"{NOTES}.jsonl"),
        ("codex", "b__w__rollout.jsonl", "b/w", f".codex/sessions/2026/03/05/rollout-2026-03-05T17-42-31-{CSV}.jsonl",
         SAMPLES / "codex" / "sessions" / "2026" / "03" / "05" / f"rollout-2026-03-05T17-42-31-{CSV}.jsonl"),
        ("gemini", "c__g__chat.json", "c/g", ".gemini/tmp/x/chats/session-1.json", None),
    ]
    lines = ["harness\tfile\tsource_repo\tsource_path\tcommit\tbytes"]
    for harness, name, repo, path, src in rows:
        (root / harness).mkdir(parents=True, exist_ok=True)
        (root / harness / name).write_bytes(src.read_bytes() if src else b"{}")
        lines.append(f"{harness}\t{name}\t{repo}\t{path}\t0\t0")
    (root / "MANIFEST.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def run(*args: str) -> subprocess.CompletedProcess:
    deja = Path(sys.executable).parent / "deja"
    return subprocess.run([sys.executable, str(REAL_SET), *args, "--deja", str(deja)], capture_output=True, text=True)


def questions(tmp_path: Path, rows: list[dict]) -> Path:
    path = tmp_path / "q.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_transcripts_are_laid_out_as_the_agents_write_them_and_the_questions_beside(tmp_path):
    q = questions(tmp_path, [{"id": "n1", "query": "three-way merge of offline edits", "kind": "natural",
                              "answer_sessions": [NOTES], "lang": "en"}])
    out = tmp_path / "out"
    p = run("--corpus", str(corpus(tmp_path)), "--out", str(out), "--questions", str(q))
    assert p.returncode == 0, p.stderr
    assert (out / "claude" / "projects" / "-home-dev-src-notes-sync" / f"{NOTES}.jsonl").is_symlink()
    assert (out / "codex" / "sessions" / "2026" / "03" / "05" / f"rollout-2026-03-05T17-42-31-{CSV}.jsonl").exists()
    assert not list(out.rglob("*.json"))  # (the Gemini file: score.py reads Claude Code and Codex)
    assert (out / "questions.jsonl").read_text(encoding="utf-8") == q.read_text(encoding="utf-8")


def test_check_finds_a_missing_session_and_a_paraphrase_that_shares_a_word(tmp_path):
    q = questions(tmp_path, [
        {"id": "ok", "query": "reconciling what a pair of gadgets altered while disconnected", "kind": "paraphrase",
         "answer_sessions": [NOTES], "lang": "en"},
        {"id": "leaks", "query": "ownership trouble with the borrow", "kind": "paraphrase",
         "answer_sessions": [CSV], "lang": "en"},
        {"id": "gone", "query": "anything", "kind": "natural", "answer_sessions": ["no-such-session"], "lang": "en"},
    ])
    p = run("--corpus", str(corpus(tmp_path)), "--out", str(tmp_path / "out"), "--questions", str(q), "--check")
    assert p.returncode == 1, p.stdout + p.stderr
    problems = [line for line in p.stdout.splitlines() if line.startswith(("ok:", "leaks:", "gone:"))]
    assert problems == [f"leaks: shares ['borrow'] with session {CSV}", "gone: no session no-such-session in the store"]


def test_a_corpus_without_a_manifest_or_with_another_one_and_a_bad_question_are_one_line(tmp_path):
    p = run("--corpus", str(tmp_path), "--out", str(tmp_path / "out"))
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "Traceback" not in p.stderr
    (tmp_path / "MANIFEST.tsv").write_text("name\tsize\nx\t1\n", encoding="utf-8")
    p = run("--corpus", str(tmp_path), "--out", str(tmp_path / "out"))
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "Traceback" not in p.stderr
    q = questions(tmp_path, [{"id": "x", "query": "no answer named"}])
    p = run("--corpus", str(corpus(tmp_path)), "--out", str(tmp_path / "o2"), "--questions", str(q))
    assert p.returncode == 2 and "answer_sessions" in p.stderr and "Traceback" not in p.stderr


def test_the_shipped_questions_hold_on_the_real_transcripts(tmp_path):
    """Every question of real_questions.jsonl names a session deja reads from
    ../shared/corpus/real, and every paraphrase shares no content word with it."""
    if not (CORPUS / "MANIFEST.tsv").is_file():
        pytest.skip("../shared/corpus/real is not here")
    p = run("--corpus", str(CORPUS), "--out", str(tmp_path / "out"), "--check")
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr
