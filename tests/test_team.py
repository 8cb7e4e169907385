"""deja team: two machines (temp HOMEs) sharing Iceberg tables whose catalog is
a real Postgres started by the test and whose data files sit in a shared
folder."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import deja_cmd
from test_sync import SA, SB, machine, session

pytest.importorskip("pyiceberg", reason="the team store needs pip install 'deja[team]'")


@pytest.fixture
def team(tmp_path, postgres):
    """Two machines with the team store initialised on both."""
    lake = tmp_path / "lake"
    a, b = machine(tmp_path / "a", "alpha"), machine(tmp_path / "b", "beta")
    for h, name in ((a, "alpha"), (b, "beta")):
        got = json.loads(h.run("team", "init", "--catalog", postgres, "--data", str(lake), "--machine", name,
                               "--json").stdout)
        assert got["machine"] == name and got["warehouse"] == "file://" + str(lake.resolve())
    return a, b, lake


def publish(h, *args) -> dict:
    return json.loads(h.run("team", "publish", "--json", *args).stdout)


def pull(h) -> dict:
    return json.loads(h.run("team", "pull", "--json").stdout)


def team_search(h, *words) -> list[dict]:
    return json.loads(h.run("search", "--team", "--json", *words, check=False).stdout)["hits"]


def test_two_machines_publish_at_once_and_each_pulls_the_others_sessions(team):
    a, b, lake = team
    session(a, SA, "the upload times out behind nginx", "raised client_max_body_size to 50m")
    session(b, SB, "redis evictions at noon", "maxmemory-policy was noeviction; set allkeys-lru")
    a.run("index")
    b.run("index")
    # both commit to the same tables at the same moment: one wins, the other commits again on top
    procs = [subprocess.Popen(deja_cmd() + ["team", "publish", "--json"], env=h.env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for h in (a, b)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1] for o in outs]
    assert [json.loads(o[0])["records"] for o in outs] == [2, 2]

    got = pull(a)
    assert (got["records"], got["machines"]) == (2, {"beta": 2})
    hit = a.search("allkeys-lru")["hits"][0]["session"]
    assert (hit["orig_id"], hit["from"], hit["source"]["origin"]) == (SB, "beta", "imported")
    assert pull(b)["machines"] == {"alpha": 2}
    assert b.search("client_max_body_size")["hits"][0]["session"]["from"] == "alpha"
    # the data files are partitioned by machine, harness and month, on the shared folder
    files = sorted(p.relative_to(lake).as_posix() for p in lake.rglob("*.parquet"))
    assert any("records/data/machine=alpha/harness=claude/month=2026-03/" in f for f in files)
    assert any("records/data/machine=beta/harness=claude/month=2026-03/" in f for f in files)


def test_search_team_finds_a_fact_only_the_other_machine_saw(team):
    a, b, _ = team
    session(b, SB, "the css build is slow", "switched the bundler to esbuild", cwd="/home/dev/src/web")
    b.run("index")
    publish(b)
    hits = team_search(a, "esbuild")
    assert len(hits) == 1
    s = hits[0]["session"]
    assert (s["id"], s["from"], s["source"], s["project"]) == (SB, "beta", {"origin": "team"}, "src/web")
    assert s["title"] == "the css build is slow" and "esbuild" in hits[0]["snippets"][0]
    assert team_search(a, "nothing-like-this-anywhere") == []
    ctx = a.run("ctx", "--team", "bundler").stdout
    assert "from beta (team store)" in ctx and "switched the bundler to esbuild" in ctx
    # a second publish in between is seen by the next search (the file list follows the catalog)
    session(b, SA, "flaky checkout test", "a shared temp dir between workers", day="2026-03-03")
    b.run("index")
    assert publish(b)["records"] == 2
    assert team_search(a, "shared", "temp")[0]["session"]["id"] == SA


def test_publishing_again_adds_nothing_and_only_new_turns_travel(team):
    a, b, _ = team
    session(a, SA, "why is the pool exhausted", "the pool size was 5; raised it to 20")
    a.run("index")
    assert publish(a)["records"] == 2
    again = publish(a)
    assert (again["records"], again["sessions"]) == (0, 0)
    assert pull(b)["records"] == 2
    assert pull(b)["records"] == 0  # no file it has not read
    assert team_search(b, "pool")[0]["count"] == 2
    # --full replaces this machine's share instead of adding to it
    assert publish(a, "--full")["records"] == 2
    assert team_search(b, "pool")[0]["count"] == 2


def test_forgetting_a_session_takes_it_out_of_the_team_store_and_off_the_machines_that_pulled_it(team):
    a, b, _ = team
    session(a, SA, "payroll export for march", "the sheet id is in the finance vault")
    session(a, SB, "lint errors", "ruff config fixed", cwd="/home/dev/src/web")
    a.run("index")
    publish(a)
    pull(b)
    assert b.search("payroll")["hits"]
    forgot = a.run("forget", "--session", SA[:8])
    assert "removed them from the team store too" in forgot.stderr
    assert team_search(b, "payroll") == []
    assert team_search(b, "ruff")  # the other session stays
    got = pull(b)
    assert got["forgotten"] == 1
    assert b.search("payroll", check=False)["hits"] == []
    assert b.search("ruff")["hits"]


def test_a_forget_while_the_catalog_is_down_waits_for_the_next_publish(team, tmp_path):
    a, b, _ = team
    session(a, SA, "payroll export for march", "the sheet id is in the finance vault")
    a.run("index")
    publish(a)
    cfg = a.home / ".config" / "deja" / "team.toml"
    good = cfg.read_text()
    cfg.write_text(good.replace("port=", "port=1", 1) if "port=" in good else good.replace("dbname=", "port=1 dbname=", 1))
    said = a.run("forget", "--session", SA[:8]).stderr
    assert "the team store keeps those sessions until it can be reached" in said
    assert len(said.strip().splitlines()) <= 4 and "Traceback" not in said
    cfg.write_text(good)
    assert json.loads(a.run("doctor", "--json").stdout)["team"]["pending_deletions"] == 1
    assert team_search(b, "payroll")  # still there
    assert publish(a)["retracted"] == 1
    doctor = json.loads(a.run("doctor", "--json").stdout)["team"]
    assert doctor["pending_deletions"] == 0 and doctor["last_publish"] and doctor["machine"] == "alpha"
    assert team_search(b, "payroll") == []


def test_the_tables_are_iceberg_that_another_reader_reads(team, postgres):
    a, _, lake = team
    session(a, SA, "the upload times out behind nginx", "raised client_max_body_size to 50m")
    a.run("index")
    publish(a)
    from pyiceberg.catalog.sql import SqlCatalog

    from deja.pipeline.team import Team

    t = Team(postgres, str(lake), "reader", {})
    cat = SqlCatalog("deja", uri=t.uri, warehouse=t.warehouse)
    rows = cat.load_table("deja.records").scan(selected_fields=("machine", "role", "text")).to_arrow().to_pylist()
    assert sorted(r["role"] for r in rows) == ["assistant", "user"] and {r["machine"] for r in rows} == {"alpha"}
    spec = cat.load_table("deja.records").spec()
    assert [f.name for f in spec.fields] == ["machine", "harness", "month"]


def test_a_catalog_dsn_with_its_own_connect_timeout_is_searched(tmp_path, postgres):
    """The search's catalog query added connect_timeout=10 beside the DSN's
    own: "got multiple values for keyword argument" (QA, session 26)."""
    h = machine(tmp_path / "m", "m")
    dsn = postgres + " connect_timeout=5" if "://" not in postgres else postgres + (
        "&" if "?" in postgres else "?") + "connect_timeout=5"
    h.run("team", "init", "--catalog", dsn, "--data", str(tmp_path / "lake"), "--machine", "m")
    h.run("index")
    h.run("team", "publish")
    p = h.run("search", "--team", "--json", "pool", check=False)
    assert p.returncode in (0, 1) and "multiple values" not in p.stderr, p.stderr
    assert "hits" in json.loads(p.stdout)


def test_bad_configuration_is_one_line(tmp_path, postgres):
    h = machine(tmp_path / "m", "m")
    for args, said in [
        (("team", "publish"), "no team store configured"),
        (("team", "init", "--catalog", "postgresql://u:secret@db/x", "--data", str(tmp_path / "l")), "keep the password out"),
        (("team", "init", "--catalog", postgres), "needs --catalog DSN and --data"),
        (("team", "init", "--catalog", "host=/nowhere port=1 dbname=x", "--data", str(tmp_path / "l")), "cannot"),
        (("team", "frob"), "unknown team action"),
        (("search", "--team", "--harness", "claude", "x"), "--team searches the team's tables by words alone"),
    ]:
        p = h.run(*args, check=False)
        assert p.returncode != 0 and said in p.stderr and "Traceback" not in p.stderr, (args, p.stderr)
        assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert not (h.home / ".config" / "deja" / "team.toml").exists()
    assert Path(tmp_path / "m").exists()


@pytest.fixture
def bucket():
    """An S3-compatible server on loopback (moto's), with an empty bucket; the AWS environment that reaches it."""
    moto_server = pytest.importorskip("moto.server", reason="the bucket test needs moto[s3] (deja[test])")
    import boto3

    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    env = {"AWS_ENDPOINT_URL": f"http://{host}:{port}", "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
           "AWS_REGION": "us-east-1"}
    boto3.client("s3", endpoint_url=env["AWS_ENDPOINT_URL"], region_name="us-east-1", aws_access_key_id="test",
                 aws_secret_access_key="test").create_bucket(Bucket="team-lake")
    try:
        yield env
    finally:
        server.stop()


def test_the_data_can_live_in_an_s3_compatible_bucket(tmp_path, postgres, bucket):
    a, b = machine(tmp_path / "a", "alpha"), machine(tmp_path / "b", "beta")
    for h, name in ((a, "alpha"), (b, "beta")):
        h.env.update(bucket)  # (the keys come from the environment; team.toml never holds them)
        h.run("team", "init", "--catalog", postgres, "--data", "s3://team-lake/deja", "--machine", name)
        assert "test" not in (h.home / ".config" / "deja" / "team.toml").read_text()
    session(a, SA, "the upload times out behind nginx", "raised client_max_body_size to 50m")
    a.run("index")
    assert publish(a)["records"] == 2
    hits = team_search(b, "client_max_body_size")
    assert [h["session"]["from"] for h in hits] == ["alpha"]
    assert team_search(b, "client_max_body_size") == hits  # (the second from the copies kept here)
    assert pull(b)["records"] == 2
    assert b.search("client_max_body_size")["hits"][0]["session"]["orig_id"] == SA


def test_a_commit_that_loses_the_race_is_made_again_on_top_of_the_winner(tmp_path, postgres):
    import pyarrow as pa

    from deja.pipeline.team import Team
    from deja.stages.store import lake

    t = Team(postgres, str(tmp_path / "lake"), "m", {})
    cat = t.catalog()
    lake.ensure_tables(cat)
    rival = lake.catalog(t.uri, t.warehouse)  # another machine's catalog client

    def row(machine: str):
        return pa.table({"machine": [machine], "harness": ["claude"], "session_id": [machine], "project": ["p"],
                         "title": ["t"], "started": [None], "updated": [None], "records": [1], "published_at": [None]},
                        schema=lake.arrow_schema(lake.SESSIONS))

    tries = []

    def work(tx):
        tries.append(1)
        if len(tries) == 1:  # while this transaction is open, the rival commits first
            lake.load(rival, lake.SESSIONS).append(row("rival"))
        tx.append(row("mine"))

    # (pyiceberg itself refreshes and applies the append again on top; lake.commit redoes the
    # whole work when those retries run out)
    assert lake.commit(cat, lake.SESSIONS, work) >= 1
    got = lake.load(cat, lake.SESSIONS).scan().to_arrow().column("machine").to_pylist()
    assert sorted(got) == ["mine", "rival"]  # both, once each


def test_records_published_are_never_sent_twice_when_their_sessions_rows_fail(team, monkeypatch):
    from deja.pipeline import team as team_store
    from deja.pipeline.errors import Fail
    from deja.stages.store import lake

    a, b, _ = team
    session(a, SA, "why is the pool exhausted", "the pool size was 5; raised it to 20")
    a.run("index")
    real = lake.commit

    def sessions_fail(cat, name, work):
        if name == lake.SESSIONS:
            raise lake.LakeError("the catalog went away")
        return real(cat, name, work)

    monkeypatch.setattr(lake, "commit", sessions_fail)
    with pytest.raises(Fail, match="the records are published, their sessions' rows not yet"):
        team_store.publish(env=a.env)
    monkeypatch.setattr(lake, "commit", real)
    hits = team_search(b, "pool")
    assert hits[0]["count"] == 2 and "title" not in hits[0]["session"]  # the records, no sessions row yet
    again = publish(a)
    assert (again["records"], again["sessions"]) == (0, 1)  # nothing sent twice; the row written now
    hits = team_search(b, "pool")
    assert hits[0]["count"] == 2 and hits[0]["session"]["title"] == "why is the pool exhausted"


def test_a_turn_stamped_before_the_last_publish_reaches_the_other_machine_once(team):
    from test_sync import _later_turns
    from conftest import write_jsonl

    a, b, _ = team
    session(a, SA, "why does checkout 500 on empty carts", "fixed by guarding empty carts")
    a.run("index")
    assert publish(a)["records"] == 2
    turns = [t for case in _later_turns().values() for t in case]  # earlier, unstamped, the same millisecond
    for i, t in enumerate(turns):
        t["uuid"] = f"u{i + 2}"
    write_jsonl(a.claude_file(SA), turns, mode="a")
    a.run("index")
    assert publish(a)["records"] == 3
    assert publish(a)["records"] == 0
    # read again under new ids: nothing the table holds is appended twice
    a.run("index", "--rebuild")
    assert publish(a)["records"] == 0
    assert pull(b)["records"] == 5
    for word in ("SKEWED", "UNSTAMPED", "SAMEMS"):
        assert b.search(word)["hits"], word
    assert len(team_search(b, "SKEWED")) == 1
