"""aider's appended Markdown history: sessions at the headers, roles, the
session time, the project folder, work records from aider's own output lines,
the offset path on append, and bad input counted."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from deja.stages.sources import aider

SAMPLE = Path(__file__).resolve().parents[1] / "data_samples" / "aider" / "src" / "payments-cli" / ".aider.chat.history.md"


def history(home, project: str = "src/payments-cli") -> Path:
    d = home.home / project
    d.mkdir(parents=True, exist_ok=True)
    shutil.copy(SAMPLE, d / ".aider.chat.history.md")
    return d / ".aider.chat.history.md"


def test_sessions_split_at_headers_with_roles_order_time_and_project(home):
    p = history(home)
    res = aider.read(str(p))
    assert res.error == "" and res.malformed == 0 and res.safe_offset == p.stat().st_size
    first, second = res.sessions
    assert first.session_id.startswith("aider-") and first.session_id.endswith("-1")
    assert second.session_id.endswith("-2") and first.cwd == second.cwd == str(p.parent)
    roles = ["files", "user", "assistant", "files", "command", "user", "assistant", "files"]
    assert [m.role for m in first.messages] == roles  # files added before the first prompt come first
    assert first.messages[0].text == str(p.parent / "payments" / "retry.py")
    first.messages.pop(0)
    assert first.messages[0].text == ("the webhook retries hammer the provider; make the backoff exponential\n"
                                      "and cap it at 30 seconds")
    assert "<<<<<<< SEARCH" in first.messages[1].text  # a fenced edit block stays in the reply
    assert first.messages[2].text == str(p.parent / "payments" / "retry.py")
    assert first.messages[3].text == "$ pytest -q tests/test_retry.py"
    assert first.messages[6].text == str(p.parent / "tests" / "test_retry.py")
    from datetime import datetime

    start = int(datetime(2026, 3, 2, 11, 0, 0).timestamp() * 1000)  # local wall-clock time
    assert {m.ts for m in first.messages} == {start}
    assert [m.role for m in second.messages] == ["user", "assistant"]


def test_an_append_is_read_from_the_offset_into_the_same_session(home):
    p = history(home)
    first = aider.read(str(p))
    with open(p, "a") as fh:
        fh.write("\n#### and log each retry  \n\nAdded a log line in `retry()`.\n\n> Applied edit to payments/retry.py  \n")
    more = aider.read(str(p), first.safe_offset)
    (s,) = more.sessions
    assert s.session_id == first.sessions[1].session_id  # the appended turn continues the last session
    assert [m.role for m in s.messages] == ["user", "assistant", "files"]
    assert more.safe_offset == p.stat().st_size


def test_a_byte_order_mark_first_changes_no_session_or_id(home):
    """A history an editor saved with a UTF-8 BOM reads as the same sessions
    with the same ids, and so does an append after it (the first session's
    header still counts when the offset path finds where it starts)."""
    p = history(home)
    plain = aider.read(str(p))
    p.write_bytes(b"\xef\xbb\xbf" + p.read_bytes())
    marked = aider.read(str(p))
    assert marked.malformed == 0
    assert [(s.session_id, [(m.role, m.text) for m in s.messages]) for s in marked.sessions] == \
        [(s.session_id, [(m.role, m.text) for m in s.messages]) for s in plain.sessions]
    with open(p, "a") as fh:
        fh.write("\n#### and log each retry  \n\nAdded a log line.\n")
    (s,) = aider.read(str(p), marked.safe_offset).sessions
    assert s.session_id == plain.sessions[-1].session_id


def test_a_half_written_last_line_is_left_for_the_next_run(home):
    p = history(home)
    size = p.stat().st_size
    with open(p, "a") as fh:
        fh.write("\n#### half writ")
    res = aider.read(str(p))
    assert res.safe_offset == size + 1  # up to the blank line, not the torn prompt
    assert all("half writ" not in m.text for s in res.sessions for m in s.messages)


def test_undecodable_bytes_are_counted_and_the_file_still_read(home):
    p = history(home)
    with open(p, "ab") as fh:
        fh.write(b"\n#### caf\xe9 bytes  \n")
    res = aider.read(str(p))
    assert res.malformed == 1 and res.error == ""
    assert res.sessions[-1].messages[-1].text == "caf\ufffd bytes"


def test_histories_are_found_under_deja_aider_roots_two_levels_down(home, tmp_path):
    p = history(home)
    deep = home.home / "a" / "b" / "c" / "d"  # three levels below the root: too deep
    deep.mkdir(parents=True)
    (deep / ".aider.chat.history.md").write_text("# aider chat started at 2026-03-02 11:00:00\n\n#### hi\n")
    env = {"HOME": str(home.home), "DEJA_AIDER_ROOTS": str(home.home / "src") + os.pathsep + str(home.home / "a")}
    assert aider.discover(env) and [f.path for f in aider.discover(env)] == [str(p)]


def test_a_vanished_file_is_an_error_not_a_crash(tmp_path):
    res = aider.read(str(tmp_path / "gone.md"))
    assert res.error and res.sessions == []


def test_deja_index_reads_aider_histories(home):
    history(home)
    summary = json.loads(home.run("index", "--json", extra_env={"DEJA_AIDER_ROOTS": str(home.home / "src")}).stdout)
    row = {h["harness"]: h for h in summary["harnesses"]}["aider"]
    assert row["sessions"] == 2
