"""opencode's SQLite store: roles, order, times, title, project, work records, parent edges."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

from test_sqlite_store import add_session, opencode_store

from deja.pipeline.demo import build_sqlite_samples
from deja.stages.sources import kilo, opencode


def test_roles_order_times_title_project_and_work_records(home):
    db = opencode_store(home)
    (s,) = opencode.read(str(db)).sessions
    assert (s.session_id, s.title, s.cwd) == ("ses_01JQ8ZK4", "Token bucket refill drifts", "/home/dev/src/rate-limiter")
    assert [m.role for m in s.messages] == ["user", "edit", "command", "tool-output", "assistant", "files", "user"]
    assert s.messages[0].ts == 1772442000000
    cmd = s.messages[2]
    assert cmd.text == "$ go test ./... -run TestRefill -count=20  → exit 1" and cmd.exit_code == 1
    assert s.messages[3].is_error is True
    assert s.messages[1].text.startswith("/home/dev/src/rate-limiter/bucket.go\nelapsed := now.Sub")
    assert s.messages[5].text == "/home/dev/src/rate-limiter/bucket.go"


def test_a_subagent_session_names_its_parent_and_is_kept_only_when_asked(home):
    db = opencode_store(home)
    con = sqlite3.connect(db)
    add_session(con, "ses_child", "subagent explored the retry path")
    con.execute("UPDATE session SET parent_id = 'ses_01JQ8ZK4' WHERE id = 'ses_child'")
    con.commit()
    con.close()
    child = next(s for s in opencode.read(str(db)).sessions if s.session_id == "ses_child")
    assert (child.kind, child.parent, child.spawned) == ("subagent", "ses_01JQ8ZK4", True)
    summary = json.loads(home.run("index", "--json").stdout)
    assert {h["harness"]: h for h in summary["harnesses"]}["opencode"]["sessions"] == 1
    summary = json.loads(home.run("index", "--json", "--rebuild",
                                  extra_env={"DEJA_INCLUDE_SUBAGENTS": "1"}).stdout)
    assert {h["harness"]: h for h in summary["harnesses"]}["opencode"]["sessions"] == 2


def test_a_store_of_another_schema_is_reported_as_schema_changed(home):
    db = opencode_store(home)
    con = sqlite3.connect(db)
    con.execute("ALTER TABLE part RENAME TO parts_v2")
    con.commit()
    con.close()
    res = opencode.read(str(db))
    assert res.error.startswith("schema changed") and res.sessions == []


def test_a_bad_json_row_costs_that_row(home):
    db = opencode_store(home)
    con = sqlite3.connect(db)
    con.execute("UPDATE part SET data = '{not json' WHERE id = 'prt_06'")
    con.commit()
    con.close()
    res = opencode.read(str(db))
    assert res.malformed == 1 and res.error == ""
    assert [m.role for m in res.sessions[0].messages][-1] == "files"


def test_the_store_path_follows_xdg_data_home_and_deja_opencode_db(home, tmp_path):
    from deja.stages.sources.locate import opencode_db

    assert opencode_db({"HOME": "/h"}) == "/h/.local/share/opencode/opencode.db"
    assert opencode_db({"HOME": "/h", "XDG_DATA_HOME": "/x"}) == "/x/opencode/opencode.db"
    assert opencode_db({"HOME": "/h", "DEJA_OPENCODE_DB": "/y/o.db"}) == "/y/o.db"


def test_a_channel_database_and_the_one_opencode_db_names_are_read(home, tmp_path):
    from deja.stages.sources.locate import opencode_files

    data = opencode_store(home).parent
    # a source or nightly build keeps its own opencode-<channel>.db beside opencode.db (storage/db.ts path())
    (data / "opencode.db").rename(data / "opencode-local.db")
    assert harnesses(home)["opencode"]["sessions"] == 1
    assert home.search("refill", "drifts")["total"] == 1
    # OPENCODE_DB: absolute, or relative to the data dir; the others are still read
    elsewhere = tmp_path / "elsewhere.db"
    shutil.copy(data / "opencode-local.db", elsewhere)
    shutil.copy(data / "opencode-local.db", data / "mine.db")
    env = {"HOME": str(home.home)}
    assert opencode_files(env) == [str(data / "opencode-local.db")]
    assert opencode_files({**env, "OPENCODE_DB": str(elsewhere)}) == [str(elsewhere), str(data / "opencode-local.db")]
    assert opencode_files({**env, "OPENCODE_DB": "mine.db"}) == [str(data / "mine.db"), str(data / "opencode-local.db")]
    assert opencode_files({**env, "OPENCODE_DB": ":memory:"}) == [str(data / "opencode-local.db")]
    # its write-ahead log is not a database
    (data / "opencode-local.db-wal").write_bytes(b"")
    assert opencode_files(env) == [str(data / "opencode-local.db")]


# ---- the JSON store before the database, and Kilo's CLI on the same parse ------------

SAMPLES = Path(__file__).resolve().parents[1] / "data_samples"
JSON_SID = "ses_7a1f0c3e2ffeQk9d2Lm4Xb8TzR"
JSON_PROJ = "4b0ea68d7af9a6031a7ffda7ad66e0cb83315750"


def json_store(home, app: str = "opencode") -> Path:
    """The sample JSON store at ``~/.local/share/<app>/storage``."""
    st = home.home / ".local" / "share" / app / "storage"
    shutil.copytree(SAMPLES / "opencode" / "storage", st)
    return st


def harnesses(home, **env) -> dict:
    out = json.loads(home.run("index", "--json", extra_env=env).stdout)
    return {h["harness"]: h for h in out["harnesses"]}


def test_the_json_store_reads_into_the_shape_of_the_database(home):
    st = json_store(home)
    (s,) = opencode.read(str(st / "session" / JSON_PROJ / f"{JSON_SID}.json")).sessions
    assert (s.harness, s.session_id, s.cwd, s.title) == (
        "opencode", JSON_SID, "/home/dev/src/feed-reader", "Feed poller retries without backoff")
    assert [m.role for m in s.messages] == ["user", "edit", "command", "tool-output", "assistant", "files"]
    assert s.messages[0].ts == 1759300000000 and s.messages[4].ts == 1759300040000
    assert s.messages[2].text == "$ pytest tests/test_retry.py -q"
    # the same records as a database row for row: one parse for both generations
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE m (sid, mid, created, mdata, pdata)")
    for mid in ("msg_a1", "msg_a2"):
        info = json.loads((st / "message" / JSON_SID / f"{mid}.json").read_text())
        for p in sorted((st / "part" / mid).iterdir()):
            con.execute("INSERT INTO m VALUES (?, ?, ?, ?, ?)",
                        (JSON_SID, mid, info["time"]["created"], json.dumps(info), p.read_text()))
    rows = con.execute("SELECT * FROM m ORDER BY sid, created, mid").fetchall()
    (db,) = opencode.build([(JSON_SID, "/home/dev/src/feed-reader", "Feed poller retries without backoff", None)],
                           rows, "opencode").sessions
    assert [(m.role, m.text, m.ts) for m in db.messages] == [(m.role, m.text, m.ts) for m in s.messages]


def test_the_json_store_is_read_only_where_no_database_is_beside_it(home):
    json_store(home)
    assert harnesses(home)["opencode"]["sessions"] == 1
    assert home.search("jitter", "backoff")["total"] == 1
    opencode_store(home)  # opencode copied the JSON store into its new database: read that alone
    out = json.loads(home.run("index", "--json", "--prune-gone").stdout)
    assert {h["harness"]: h for h in out["harnesses"]}["opencode"]["sessions"] == 1
    assert home.search("jitter", "backoff")["total"] == 0  # the JSON copy is no longer a source
    from deja.stages.sources.locate import opencode_files

    env = {"HOME": str(home.home)}
    assert [p.endswith("opencode.db") for p in opencode_files(env)] == [True]
    named = opencode_files(dict(env, DEJA_OPENCODE_STORAGE=str(home.home / ".local/share/opencode/storage")))
    assert len(named) == 2


def test_a_json_session_rewritten_with_a_new_message_replaces_its_session(home):
    st = json_store(home)
    harnesses(home)
    msg = st / "message" / JSON_SID / "msg_a3.json"
    msg.write_text(json.dumps({"id": "msg_a3", "sessionID": JSON_SID, "role": "user", "time": {"created": 1759300100000}}))
    (st / "part" / "msg_a3").mkdir()
    (st / "part" / "msg_a3" / "prt_a301.json").write_text(json.dumps(
        {"id": "prt_a301", "messageID": "msg_a3", "type": "text", "text": "now cap the retries for the gecko feed"}))
    sess = st / "session" / JSON_PROJ / f"{JSON_SID}.json"
    doc = json.loads(sess.read_text())
    doc["time"]["updated"] = 1759300100000  # opencode touches the session as it goes on
    sess.write_text(json.dumps(doc, indent=2))
    assert harnesses(home)["opencode"]["sessions"] == 1
    assert home.search("gecko")["total"] == 1
    (s,) = opencode.read(str(sess)).sessions
    assert [m.role for m in s.messages].count("user") == 2 and [m.role for m in s.messages].count("command") == 1


def test_a_bad_message_or_part_file_costs_that_file(home):
    st = json_store(home)
    (st / "part" / "msg_a2" / "prt_a203.json").write_text("{half")
    (st / "message" / JSON_SID / "msg_zz.json").write_text("[1, 2]")
    res = opencode.read(str(st / "session" / JSON_PROJ / f"{JSON_SID}.json"))
    assert res.malformed == 2 and res.error == ""
    assert [m.role for m in res.sessions[0].messages] == ["user", "edit", "assistant", "files"]
    (st / "session" / JSON_PROJ / "ses_odd.json").write_text('["not", "a", "session"]')
    summary = harnesses(home)
    assert summary["opencode"]["sessions"] == 1 and summary["opencode"]["malformed"] == 3


def kilo_db(home, name: str = "kilo.db") -> Path:
    d = home.home / ".local" / "share" / "kilo"
    d.mkdir(parents=True, exist_ok=True)
    shutil.copy(SAMPLES / "kilo" / "kilo.db.json", d / f"{name}.json")
    build_sqlite_samples(d)
    return d / name


def test_the_kilo_cli_database_is_read_as_kilo_with_opencode_parse(home):
    db = kilo_db(home)
    (s,) = kilo.read(str(db)).sessions
    assert (s.harness, s.session_id, s.cwd) == ("kilo", "ses_4e2b9d1a7ffeH3kPq8Wc2Zr5Vn", "/home/dev/src/geo-tiles")
    assert [m.role for m in s.messages] == ["user", "command", "tool-output", "assistant", "files"]
    per = harnesses(home)
    assert per["kilo"]["sessions"] == 1
    assert home.search("hottest", "tiles")["total"] == 1


def test_the_kilo_database_path_follows_kilo_db_and_the_overrides(home):
    from deja.stages.sources.locate import kilo_db as where, kilo_files

    assert where({"HOME": "/h"}) == "/h/.local/share/kilo/kilo.db"
    assert where({"HOME": "/h", "XDG_DATA_HOME": "/x"}) == "/x/kilo/kilo.db"
    assert where({"HOME": "/h", "KILO_DB": "kilo-beta.db"}) == "/h/.local/share/kilo/kilo-beta.db"
    assert where({"HOME": "/h", "KILO_DB": "/k/k.db"}) == "/k/k.db"
    assert where({"HOME": "/h", "KILO_DB": "/k/k.db", "DEJA_KILO_DB": "/d/k.db"}) == "/d/k.db"
    json_store(home, "kilo")  # the CLI before its database: the JSON store, read as kilo's
    files = kilo_files({"HOME": str(home.home)})
    assert [os.path.basename(p) for p in files] == [f"{JSON_SID}.json"]
    (s,) = kilo.read(files[0]).sessions
    assert s.harness == "kilo"
