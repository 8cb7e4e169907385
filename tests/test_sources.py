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
