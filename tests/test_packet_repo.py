"""Repository fingerprints and the recovery verdict, against real git repos."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from deja.hooks.packet import repo

GIT_ENV = {
    "GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "T", "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
}


def git(cwd, *args) -> str:
    env = dict(os.environ, **GIT_ENV)
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True,
                          capture_output=True, text=True).stdout.strip()


@pytest.fixture
def r(tmp_path):
    d = tmp_path / "repo"
    d.mkdir()
    git(d, "init", "-q", "-b", "main")
    (d / "a.txt").write_text("one\n")
    git(d, "add", "a.txt")
    git(d, "commit", "-q", "-m", "first")
    return d


def test_unchanged(r):
    then = repo.fingerprint(str(r))
    assert then["available"] and not then["partial"], then
    assert then["branch"] == "main" and then["head"] == git(r, "rev-parse", "HEAD")
    v = repo.verdict(then, repo.fingerprint(str(r / ".")))
    assert v["state"] == "unchanged"
    assert then["tree"] not in v["line"] and then["head"] not in v["line"]


def test_subdirectory_sees_the_same_repo(r):
    (r / "sub").mkdir()
    (r / "sub" / "x.txt").write_text("x")
    assert repo.fingerprint(str(r / "sub"))["tree"] == repo.fingerprint(str(r))["tree"]


def test_new_commit_names_the_capture_commit(r):
    then = repo.fingerprint(str(r))
    old = git(r, "rev-parse", "--short=7", "HEAD")
    (r / "a.txt").write_text("two\n")
    git(r, "commit", "-qam", "second")
    new = git(r, "rev-parse", "--short=7", "HEAD")
    v = repo.verdict(then, repo.fingerprint(str(r)))
    assert v["state"] == "changed"
    assert f"captured at {old} on main" in v["line"] and new in v["line"]
    assert "re-validate" in v["line"]


def test_tracked_edit_without_commit(r):
    then = repo.fingerprint(str(r))
    (r / "a.txt").write_text("edited\n")
    mid = repo.fingerprint(str(r))
    assert repo.verdict(then, mid)["state"] == "changed"
    assert "uncommitted" in repo.verdict(then, mid)["line"]
    # a second edit of an already-modified file changes the fingerprint again
    (r / "a.txt").write_text("edited again\n")
    assert repo.verdict(mid, repo.fingerprint(str(r)))["state"] == "changed"
    # staging alone is a change too (the index differs)
    git(r, "add", "a.txt")
    staged = repo.fingerprint(str(r))
    (r / "a.txt").write_text("edited\n")
    assert repo.verdict(staged, repo.fingerprint(str(r)))["state"] == "changed"


def test_untracked_file_added_and_edited(r):
    then = repo.fingerprint(str(r))
    (r / "new.txt").write_text("hello")
    mid = repo.fingerprint(str(r))
    assert repo.verdict(then, mid)["state"] == "changed"
    (r / "new.txt").write_text("hellp")  # same size, different content
    assert repo.verdict(mid, repo.fingerprint(str(r)))["state"] == "changed"


def test_not_a_repo(tmp_path):
    d = tmp_path / "plain"
    d.mkdir()
    now = repo.fingerprint(str(d))
    assert now["available"] is False
    v = repo.verdict(now, now)
    assert v["state"] == "unavailable" and "validate" in v["line"]
    assert repo.verdict(None, now)["state"] == "unavailable"
    assert repo.fingerprint(str(tmp_path / "missing"))["available"] is False


def test_git_missing(r, monkeypatch):
    monkeypatch.setenv("PATH", str(r))  # no git on PATH
    fp = repo.fingerprint(str(r))
    assert fp["available"] is False


def test_untracked_file_count_bound(r, monkeypatch):
    monkeypatch.setattr(repo, "MAX_UNTRACKED_FILES", 3)
    for i in range(5):
        (r / f"u{i}.txt").write_text(str(i))
    fp = repo.fingerprint(str(r))
    assert fp["partial"] and "files" in fp["reason"]
    v = repo.verdict(fp, repo.fingerprint(str(r)))
    assert v["state"] == "partial" and "too many untracked files" in v["line"]


def test_untracked_size_bounds(r, monkeypatch):
    monkeypatch.setattr(repo, "MAX_FILE_BYTES", 10)
    (r / "big.bin").write_bytes(b"x" * 50)
    fp = repo.fingerprint(str(r))
    assert fp["partial"] and "file-size" in fp["reason"]
    monkeypatch.setattr(repo, "MAX_FILE_BYTES", 1 << 20)
    monkeypatch.setattr(repo, "MAX_TOTAL_BYTES", 60)
    (r / "big2.bin").write_bytes(b"y" * 50)
    fp = repo.fingerprint(str(r))
    assert fp["partial"] and "total" in fp["reason"]


def test_fifo_is_not_opened(r):
    os.mkfifo(r / "pipe")
    fp = repo.fingerprint(str(r))
    assert fp["available"] and not fp["partial"], fp


def test_branch_switch(r):
    then = repo.fingerprint(str(r))
    git(r, "checkout", "-q", "-b", "feature")
    v = repo.verdict(then, repo.fingerprint(str(r)))
    assert v["state"] == "changed" and "feature" in v["line"] and "on main" in v["line"]


def test_detached_and_unborn(tmp_path, r):
    git(r, "checkout", "-q", "--detach")
    fp = repo.fingerprint(str(r))
    assert fp["branch"] == "" and not fp["partial"]
    d = tmp_path / "empty"
    d.mkdir()
    git(d, "init", "-q", "-b", "main")
    (d / "f").write_text("f")
    then = repo.fingerprint(str(d))
    assert then["available"] and then["head"] == "" and then["branch"] == "main" and not then["partial"]
    git(d, "add", "f")
    git(d, "commit", "-q", "-m", "c")
    v = repo.verdict(then, repo.fingerprint(str(d)))
    assert v["state"] == "changed" and "no commit yet" in v["line"]


def test_deadline_exhaustion_is_partial(r):
    fp = repo.fingerprint(str(r), deadline=0.0)
    assert fp["available"] and fp["partial"] and fp["reason"] == "deadline"
    v = repo.verdict(repo.fingerprint(str(r)), fp)
    assert v["state"] == "partial" and "time limit" in v["line"]


def test_deadline_hit_mid_way_kills_git(r, monkeypatch):
    # `git status` replaced by a process that never answers: the fingerprint comes
    # back on time, partial, with HEAD unknown rather than guessed.
    real = subprocess.Popen
    started = []

    def popen(argv, **kw):
        started.append(argv[1])
        return real(["sleep", "5"], **kw) if argv[1] == "status" else real(argv, **kw)

    monkeypatch.setattr(repo.subprocess, "Popen", popen)
    t = time.monotonic()
    fp = repo.fingerprint(str(r), deadline=0.3)
    assert time.monotonic() - t < 1.0
    assert started == ["rev-parse", "status"]
    assert fp["available"] and fp["partial"] and fp["reason"] == "deadline" and fp["head"] is None
    assert repo.verdict(fp, fp)["state"] == "partial"


def test_changed_head_wins_over_partial(r, monkeypatch):
    then = repo.fingerprint(str(r))
    (r / "a.txt").write_text("two\n")
    git(r, "commit", "-qam", "second")
    monkeypatch.setattr(repo, "MAX_UNTRACKED_FILES", 0)
    (r / "u.txt").write_text("u")
    now = repo.fingerprint(str(r))
    assert now["partial"]
    assert repo.verdict(then, now)["state"] == "changed"
