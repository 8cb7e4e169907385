"""What the stores do under the reader: files that vanish or are replaced while
a run reads them, folders it may not read, symlinks, and rewrites a stat
cannot see. Each is counted or reported, and the run completes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import Home, claude_user, deja_cmd, write_jsonl
from deja.pipeline import ingest
from deja.pipeline.run import run_index

S = "7f1c0000-0000-4000-8000-0000000000{:02d}"


def session(home, n: int, words: str, cwd: str = "/home/dev/src/shop"):
    p = home.claude_file(S.format(n), cwd)
    write_jsonl(p, [claude_user(S.format(n), f"{words} question {n}", "2026-03-02T10:00:00Z", f"u{n}", cwd)])
    return p


def test_a_transcript_that_vanishes_mid_run_is_counted_and_the_run_completes(home):
    files = [session(home, n, f"vanishword{n}") for n in range(3)]

    def progress(done, total, path):
        if done == 1:  # after the first file is read, before the others are
            files[1].unlink()

    summary = run_index(dict(home.env), progress=progress)
    claude = summary.harnesses["claude"]
    assert claude.changed_while_read == 1 and claude.failed == 0
    assert any(str(files[1]) in e and "vanished" in e for e in summary.errors)
    assert home.search("vanishword2")["total"] == 1
    # the next run forgets the file, and says nothing more about it
    again = json.loads(home.run("index", "--json").stdout)
    assert not again["errors"]
    assert "vanished" not in home.run("doctor").stdout


def test_a_transcript_replaced_under_the_reader_is_not_kept(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_text('{"a": 1}\n' * 10)
    before = os.stat(p)
    q = tmp_path / "new.jsonl"
    q.write_text('{"b": 2}\n' * 10)
    os.replace(q, p)  # what an editor's or a sync tool's save does
    assert ingest._changed_since(str(p), before) == "replaced while it was read"
    before = os.stat(p)
    with open(p, "r+") as fh:  # rewritten in place, shorter
        fh.truncate(5)
    assert ingest._changed_since(str(p), before) == "replaced while it was read"
    before = os.stat(p)
    with open(p, "a") as fh:  # a live append is what transcripts do
        fh.write("more\n")
    assert ingest._changed_since(str(p), before) == ""


def test_a_same_size_same_mtime_rewrite_is_read_again(home):
    p = session(home, 1, "originalword")
    home.run("index")
    st = os.stat(p)
    text = p.read_text()
    p.write_text(text.replace("originalword", "rewrittenwrd"))  # same length
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))  # as cp -p / touch -r leave it
    assert (os.stat(p).st_size, os.stat(p).st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    out = json.loads(home.run("index", "--json").stdout)
    assert not out["up_to_date"]
    assert home.search("rewrittenwrd")["total"] == 1
    assert home.search("originalword")["total"] == 0
    assert json.loads(home.run("index", "--json").stdout)["up_to_date"]


def test_symlinks_in_a_store_are_followed_and_what_cannot_be_followed_is_reported(home, tmp_path):
    session(home, 1, "plainword")
    projects = home.home / ".claude" / "projects"
    # a project moved to another disk, linked back
    moved = tmp_path / "other-disk" / "-home-dev-src-moved"
    moved.mkdir(parents=True)
    write_jsonl(moved / f"{S.format(2)}.jsonl",
                [claude_user(S.format(2), "movedword question", "2026-03-02T10:00:00Z", "u2", "/home/dev/src/moved")])
    os.symlink(moved, projects / "-home-dev-src-moved")
    # a loop back to the project, and a transcript link to nowhere
    proj = projects / "-home-dev-src-shop"
    os.symlink(proj, proj / "loop")
    os.symlink(tmp_path / "nowhere.jsonl", proj / f"{S.format(3)}.jsonl")
    proc = home.run("index", timeout=60)
    assert "loop" in proc.stderr and "symlink" in proc.stderr
    assert f"{S.format(3)}.jsonl: dangling" in proc.stderr
    assert home.search("movedword")["total"] == 1 and home.search("plainword")["total"] == 1
    # the same on an up-to-date run, and in doctor
    again = home.run("index", "--json")
    assert any("dangling" in e for e in json.loads(again.stdout)["errors"])
    rep = json.loads(home.run("doctor", "--json").stdout)
    claude = next(s for s in rep["stores"] if s["name"] == "claude")
    assert claude["state"] == "partial" and claude["files"] == 2
    assert any(str(proj / "loop") in s for s in rep["skipped"])
    assert f"partly unreadable, skipped: claude: {proj / 'loop'}" in home.run("doctor").stdout


def _as_unprivileged() -> list[str] | None:
    """A prefix that runs a command as a user without root's override of file
    permissions, or None when this machine cannot (root, and the interpreter is
    out of the other user's reach)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if not setpriv:
        return None
    prefix = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
    probe = subprocess.run(prefix + deja_cmd() + ["--help"], capture_output=True, timeout=60)
    return prefix if probe.returncode == 0 else None


def test_a_project_folder_the_user_cannot_read_is_reported(tmp_path):
    prefix = _as_unprivileged()
    if prefix is None:
        pytest.skip("running as root and user nobody cannot run this interpreter: no real permission denial")
    # as root, the other user needs a tree it can reach (pytest's tmp_path is root-only)
    base = Path(tempfile.mkdtemp(prefix="deja-perm-")) if prefix else tmp_path
    home = Home(base)
    try:
        session(home, 1, "readableword")
        locked = session(home, 2, "lockedword", cwd="/home/dev/src/secret").parent
        if prefix:
            subprocess.run(["chown", "-R", "65534:65534", str(base)], check=True)
        os.chmod(locked, 0)
        env = dict(home.env)
        run = lambda *a: subprocess.run(prefix + deja_cmd() + list(a), env=env, capture_output=True,  # noqa: E731
                                        text=True, timeout=120)
        proc = run("index", "--json")
        assert proc.returncode == 0, proc.stderr
        errors = json.loads(proc.stdout)["errors"]
        assert any(str(locked) in e and "permission denied" in e for e in errors), errors
        doctor = run("doctor").stdout
        assert f"partly unreadable, skipped: claude: {locked}: permission denied" in doctor
        found = json.loads(run("search", "--json", "readableword").stdout)
        assert found["total"] == 1
    finally:
        os.chmod(locked, 0o755)
        if prefix:
            shutil.rmtree(base, ignore_errors=True)


def test_a_store_whose_every_folder_is_closed_to_the_user_is_denied_not_missing(tmp_path):
    """doctor called such a store "missing" and asked for `deja index`, which
    cannot help (cli-contract §3.7: state ``denied`` with the denied path; QA,
    session 26)."""
    prefix = _as_unprivileged()
    if prefix is None:
        pytest.skip("running as root and user nobody cannot run this interpreter: no real permission denial")
    base = Path(tempfile.mkdtemp(prefix="deja-perm-"))
    home = Home(base)
    try:
        locked = session(home, 1, "lockedword", cwd="/home/dev/src/secret").parent
        subprocess.run(["chown", "-R", "65534:65534", str(base)], check=True)
        env = dict(home.env)
        run = lambda *a: subprocess.run(prefix + deja_cmd() + list(a), env=env, capture_output=True,  # noqa: E731
                                        text=True, timeout=120)
        assert run("index").returncode == 0
        os.chmod(locked, 0)
        rep = json.loads(run("doctor", "--json").stdout)
        (claude,) = [s for s in rep["stores"] if s["name"] == "claude"]
        assert claude["state"] == "denied" and claude["denied"] == str(locked)
        assert "claude" not in rep["index"].get("stale_stores", [])
        assert f"denied: {locked}" in run("doctor").stdout
    finally:
        os.chmod(locked, 0o755)
        shutil.rmtree(base, ignore_errors=True)


def test_doctor_names_a_store_closed_to_the_user_denied(monkeypatch):
    """The same, where no user can be denied (root, no other user able to run
    this interpreter): the walk's problems as the locator says them."""
    from deja.pipeline import doctor
    from deja.stages.sources import locate

    def sources(env, problems=None):
        problems.append("gemini: /h/.gemini/tmp/p/chats: permission denied: skipped")
        problems.append("claude: /h/.claude/projects/x: permission denied: skipped")
        return []

    monkeypatch.setattr(locate, "sources", sources)
    rep = {"stores": [{"name": "gemini", "state": "missing"}, {"name": "claude", "state": "ok"},
                      {"name": "codex", "state": "missing"}],
           "index": {"state": "ok", "stale_stores": ["gemini"]}}
    doctor.add_skipped(rep, {})
    assert rep["stores"] == [{"name": "gemini", "state": "denied", "denied": "/h/.gemini/tmp/p/chats"},
                             {"name": "claude", "state": "partial"}, {"name": "codex", "state": "missing"}]
    assert rep["index"]["stale_stores"] == []


def _wait_for_background(home, timeout: float = 60.0) -> str:
    """The background run's output, once it has finished writing it."""
    import time

    log = home.index.with_name(home.index.name + ".refresh")
    from deja.stages.store.catalog import Store

    store = Store(home.index)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(0.2)
        if log.exists() and log.stat().st_size and not store.writer_running():
            return log.read_text()
    raise AssertionError("the background index never finished")


def test_a_failing_background_refresh_is_said_by_the_next_search_and_doctor(home):
    session(home, 1, "firstword")
    home.run("index")
    # a new session of a month the store has no folder for, where a file blocks the folder
    p = home.claude_file(S.format(2))
    write_jsonl(p, [claude_user(S.format(2), "laterword question", "2025-01-05T10:00:00Z", "u2")])
    blocker = home.index / "records" / "harness=claude" / "month=2025-01"
    blocker.write_text("not a folder")
    env = {"DEJA_NO_REFRESH": "0"}
    first = home.run("search", "--json", "firstword", extra_env=env)
    assert "refreshing the index in the background" in first.stderr
    assert "background index failed" not in first.stderr
    _wait_for_background(home)
    second = home.run("search", "--json", "firstword", extra_env=env)
    assert json.loads(second.stdout)["total"] == 1  # the store as it is still answers
    assert "deja: the last background index failed:" in second.stderr
    _wait_for_background(home)
    assert "last background index failed:" in home.run("doctor").stdout
    # once the cause is gone, the next background run succeeds and nothing more is said
    blocker.unlink()
    home.run("search", "--json", "firstword", extra_env=env)  # says the old failure once more, retries
    _wait_for_background(home)
    third = home.run("search", "--json", "laterword", extra_env=env)
    assert "failed" not in third.stderr and json.loads(third.stdout)["total"] == 1
    assert "background index failed" not in home.run("doctor").stdout
