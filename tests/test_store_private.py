"""Issue 14, a store only its owner can read: no message text in a Parquet
footer, whichever writer made the part (a big run's pyarrow, a small run's or a
compaction's DuckDB COPY, the merges cut into key ranges), and the store, the
notes and the tombstones owner-only whatever the shell's umask, with `doctor`
warning when they are not."""

from __future__ import annotations

import json
import os
import stat
import struct
import subprocess
import sys
from pathlib import Path

import duckdb

from conftest import Home, claude_assistant, claude_user, deja_cmd, write_jsonl

PHRASE = "quartermaster zebra lantern"  # in every message: any statistics of text would hold it
FREE_TEXT = ("text", "title", "last_prompt", "decision")


def sessions(home: Home, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        sid = f"5a5a0000-0000-4000-8000-{i:012d}"
        rows = [claude_user(sid, f"{PHRASE} ask {i}: why does the {PHRASE} drift?", "2026-03-02T10:00:00Z",
                            f"u{i}", cwd="/home/dev/src/shop"),
                claude_assistant(sid, [{"type": "text", "text": f"{PHRASE} answer {i}; decided: pin the {PHRASE}."}],
                                 "2026-03-02T10:01:00Z", f"a{i}", msg_id=f"m{i}", cwd="/home/dev/src/shop")]
        write_jsonl(home.claude_file(sid), rows)


def footer(path: Path) -> bytes:
    raw = path.read_bytes()
    n = struct.unpack("<I", raw[-8:-4])[0]
    return raw[-8 - n:-8]


def assert_no_text_statistics(index: Path) -> int:
    parts = sorted(index.rglob("*.parquet"))
    con = duckdb.connect()
    for p in parts:
        assert PHRASE.encode() not in footer(p), p
        rows = con.execute("SELECT path_in_schema, stats_min, stats_max FROM parquet_metadata(?)", [str(p)]).fetchall()
        for col, lo, hi in rows:
            if col in FREE_TEXT:
                assert lo is None and hi is None, (p, col, lo, hi)
    return len(parts)


def test_no_message_text_sits_in_any_parts_footer(tmp_path):
    home = Home(tmp_path)
    sessions(home, 40)
    # a big run (pyarrow parts), then small appended runs (DuckDB COPY), then a compaction
    home.run("index", extra_env={"DEJA_SMALL_RUN_BYTES": "1"})
    for k in range(3):
        sessions(home, 2, start=100 + 2 * k)
        home.run("index")
    assert home.search(*PHRASE.split())["total"] > 0  # the words are there, in the pages
    n = assert_no_text_statistics(home.index)
    assert n >= 6
    code = ("import os\nfrom deja.stages.store.catalog import Store\nfrom deja.stages.store.compact import compact\n"
            "store = Store(os.environ['DEJA_INDEX_DIR'])\nwith store.writer_lock(10):\n"
            "    print(compact(store, 999_999, force=True))\n")
    proc = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, **home.env), capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert_no_text_statistics(home.index)
    assert home.search(*PHRASE.split())["total"] > 0


def test_footer_surgery_keeps_every_row_and_the_other_statistics(tmp_path):
    from deja.stages.store import footer as ft

    part = tmp_path / "p.parquet"
    con = duckdb.connect()
    con.execute(f"COPY (SELECT i AS record_id, 'secret message ' || i AS text, [i, i + 1] AS l, {{'a': i}} AS s, "
                f"map(['k'], [i % 2 = 0]) AS m FROM range(20000) t(i)) TO '{part}' (FORMAT parquet, ROW_GROUP_SIZE 2048)")
    before = con.execute(f"SELECT * FROM '{part}' ORDER BY record_id").fetchall()
    assert ft.strip_statistics(part, ["text"]) is True
    assert con.execute(f"SELECT * FROM '{part}' ORDER BY record_id").fetchall() == before
    stats = con.execute(f"SELECT path_in_schema, count(stats_min) FROM parquet_metadata('{part}') GROUP BY ALL").fetchall()
    assert dict(stats)["text"] == 0 and dict(stats)["record_id"] == 10
    assert ft.strip_statistics(part, ["text"]) is False  # nothing left to take
    import pyarrow.parquet as pq

    assert pq.read_table(part).num_rows == 20000


def _umask_022():
    os.umask(0o022)


def run_loose(home: Home, *args: str) -> subprocess.CompletedProcess:
    """`deja` started from a shell whose umask lets everyone read new files."""
    proc = subprocess.run(deja_cmd() + list(args), env=home.env, capture_output=True, text=True, timeout=120,
                          preexec_fn=_umask_022)
    assert proc.returncode == 0, proc.stderr
    return proc


def mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


def test_store_notes_and_tombstones_are_owner_only_whatever_the_umask(tmp_path):
    home = Home(tmp_path)
    sessions(home, 3)
    run_loose(home, "index")
    run_loose(home, "remember", "the shop's pool size is 20")
    run_loose(home, "forget", "--session", "5a5a0000-0000-4000-8000-000000000001")
    run_loose(home, "index")
    assert mode(home.index) == 0o700
    for p in home.index.rglob("*"):
        assert mode(p) == (0o700 if p.is_dir() else 0o600), (p, oct(mode(p)))
    notes = home.home / ".local" / "share" / "deja" / "notes.jsonl"
    tombstones = home.home / ".config" / "deja" / "tombstones"
    assert mode(notes) == 0o600 and mode(notes.parent) == 0o700
    assert mode(tombstones) == 0o600 and mode(tombstones.parent) == 0o700
    out = home.run("doctor").stdout
    assert "warning" not in out


def test_doctor_warns_when_others_can_read_the_store_and_says_how_to_fix_it(tmp_path):
    home = Home(tmp_path)
    sessions(home, 2)
    home.run("index")
    home.run("remember", "the shop's pool size is 20")
    os.chmod(home.index, 0o755)
    notes = home.home / ".local" / "share" / "deja" / "notes.jsonl"
    os.chmod(notes, 0o644)
    out = home.run("doctor").stdout
    assert f"warning: the index {home.index} is readable by other users; fix: chmod -R go-rwx '{home.index}'" in out
    assert f"warning: the notes file {notes} is readable by other users; fix: chmod 600 '{notes}'" in out
    rep = json.loads(home.run("doctor", "--json").stdout)
    assert {e["what"] for e in rep["exposed"]} == {"the index", "the notes file"}
