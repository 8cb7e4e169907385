"""`deja sources` (cli-contract §2, issue 15): every harness deja reads, found
or not, with its path and what the index holds of it, from a temp HOME with a
Claude Code store and no Codex one."""

from __future__ import annotations

from conftest import Home, claude_user, write_jsonl

SID = "50c0e5a1-0000-4000-8000-000000000001"


def test_sources_lists_every_harness_found_or_not(tmp_path):
    from deja.stages.sources import harnesses

    home = Home(tmp_path)
    write_jsonl(home.claude_file(SID), [
        claude_user(SID, "rotate the key ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8 please", "2026-03-02T10:00:00Z", "u1"),
        claude_user(SID, "and the staging one too", "2026-03-02T10:01:00Z", "u2")])
    home.run("index")
    lines = home.run("sources").stdout.splitlines()
    assert lines[0].split() == ["harness", "state", "files", "sessions", "messages", "unreadable", "redacted", "path"]
    rows = {ln.split()[0]: ln.split() for ln in lines[1:]}
    assert set(rows) == set(harnesses())
    assert rows["claude"][1:7] == ["found", "1", "1", "2", "0", "1"]
    assert rows["claude"][7] == str(home.home / ".claude" / "projects")
    assert rows["codex"][1:3] == ["missing", "0"]
    proc = home.run("sources", "--json", check=False)  # the contract: no flags
    assert proc.returncode != 0 and "Traceback" not in proc.stderr and proc.stderr.startswith("deja: ")


def test_every_reader_has_a_locator_and_every_locator_a_reader():
    from deja.stages.sources import READERS, harnesses, reader
    from deja.stages.sources.locate import LOCATORS

    assert set(LOCATORS) == set(READERS)
    for h in harnesses():  # the one signature
        mod = reader(h)
        assert callable(mod.read) and callable(mod.discover) and mod.HARNESS == h, h


def test_a_warm_process_answers_the_same_sources_until_a_folder_changes(tmp_path, monkeypatch):
    """A warm process keeps what it made of kept listings (the paths of a
    12,000-transcript store are not rebuilt before every answer): while nothing
    changed the same list comes back, and a transcript or project folder added
    or removed, in Claude Code's store or Codex's, is in the very next answer."""
    import os
    import shutil
    import time

    from deja.stages.sources import locate

    home = Home(tmp_path)
    env = dict(home.env)
    for n in range(3):
        home.claude_file(f"{SID[:-1]}{n}", cwd=f"/home/dev/src/p{n}").write_text("{}\n")
    home.codex_file(SID).write_text("{}\n")
    old = time.time() - 3600
    for folder, dirs, _ in os.walk(home.home):
        os.utime(folder, (old, old))
    locate.keep_listings()
    monkeypatch.setattr(locate, "_SETTLED_NS", -(1 << 62))

    def names():
        got = locate.sources(env)
        return got, sorted(p.rsplit("/", 1)[1] for p, h in got if h in ("claude", "codex"))

    try:
        first, listed = names()
        assert len(listed) == 4
        again, _ = names()
        assert again is first  # nothing changed: the same answer, not rebuilt
        new = home.claude_file("new-session", cwd="/home/dev/src/p1")
        new.write_text("{}\n")
        got, listed = names()
        assert got is not first and "new-session.jsonl" in listed and len(listed) == 5
        project = home.claude_file("other", cwd="/home/dev/src/fresh-project")  # a new project folder
        project.write_text("{}\n")
        assert "other.jsonl" in names()[1]
        shutil.rmtree(new.parent)  # a project folder gone, with its transcripts
        assert "new-session.jsonl" not in names()[1]
        rollout = home.codex_file("second", day="2026/03/03", stamp="2026-03-03T09-00-00")
        rollout.write_text("{}\n")
        assert rollout.name in names()[1]
        rollout.unlink()
        _, listed = names()
        assert rollout.name not in listed and "other.jsonl" in listed
    finally:
        locate.keep_listings(False)


def _claude(env: dict) -> list[str]:
    from deja.stages.sources import locate

    return [p.rsplit("/", 1)[1] for p in locate.claude_files(env)]


def test_a_warm_process_lists_a_store_folder_again_whenever_it_changed(tmp_path, monkeypatch):
    """deja serve and deja mcp check the stores before every answer and reuse
    a folder's listing while its mtime stands: a transcript added, removed or
    renamed there is still seen by the next check, and so is one added within
    the mtime's granularity (a folder changed in the last seconds is listed anew)."""
    import os
    import time

    from deja.stages.sources import locate

    home = Home(tmp_path)
    env = dict(home.env)
    folder = home.claude_file(SID).parent
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "a.jsonl").write_text("{}\n")
    old = time.time() - 3600
    os.utime(folder, (old, old))
    locate.keep_listings()
    # every listing kept at once (not only a folder's that has not changed for seconds)
    monkeypatch.setattr(locate, "_SETTLED_NS", -(1 << 62))
    listed = []
    scandir = os.scandir
    monkeypatch.setattr(locate.os, "scandir", lambda path: listed.append(path) or scandir(path))
    try:
        assert _claude(env) == ["a.jsonl"]
        before = len(listed)
        assert _claude(env) == ["a.jsonl"] and len(listed) == before  # kept: nothing changed
        (folder / "b.jsonl").write_text("{}\n")
        assert _claude(env) == ["a.jsonl", "b.jsonl"]
        (folder / "a.jsonl").rename(folder / "c.jsonl")
        assert _claude(env) == ["b.jsonl", "c.jsonl"]
        # a file system whose mtimes are coarse: a change in the same tick keeps the mtime
        stamp = folder.stat().st_mtime_ns
        (folder / "d.jsonl").write_text("{}\n")
        os.utime(folder, ns=(stamp, stamp))
        assert _claude(env) == ["b.jsonl", "c.jsonl", "d.jsonl"]
        # a folder that became a symlink's target elsewhere, or a linked transcript gone
        (folder / "e.jsonl").symlink_to(tmp_path / "nowhere.jsonl")
        os.utime(folder, (old, old))
        problems: list[str] = []
        assert [p.rsplit("/", 1)[1] for p in locate.claude_files(env, problems)] == ["b.jsonl", "c.jsonl", "d.jsonl"]
        assert any("dangling" in p for p in problems)
        (tmp_path / "nowhere.jsonl").write_text("{}\n")  # its target appears: the folder's mtime does not move
        assert _claude(env) == ["b.jsonl", "c.jsonl", "d.jsonl", "e.jsonl"]
    finally:
        locate.keep_listings(False)
