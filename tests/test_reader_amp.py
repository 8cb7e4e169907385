"""Amp: threads/<T-id>.json documents under the XDG data dir."""

from __future__ import annotations

import json
import shutil

from conftest import REPO

from deja.stages.sources import amp

SAMPLES = REPO / "data_samples" / "amp"
TID = "T-7d3e9b21-4c5a-4f08-9a1e-6b2c8d0f5a17"


def store(home, data=None):
    dest = (data or home.home / ".local" / "share") / "amp"
    shutil.copytree(SAMPLES, dest)
    return dest / "threads" / f"{TID}.json"


def test_roles_order_times_title_project_and_work_records(home):
    (s,) = amp.read(str(store(home))).sessions
    assert (s.session_id, s.title, s.cwd) == (TID, "Webhook retries hammer the partner API", "/home/dev/src/webhooks")
    assert [m.role for m in s.messages] == ["user", "assistant", "files", "tool-output", "assistant", "edit",
                                            "command", "files", "tool-output", "assistant"]
    assert s.messages[0].ts == 1772704800000 and s.messages[3].ts == 1772704812000
    assert s.messages[5].text == "/home/dev/src/webhooks/worker/deliver.go\ntime.Sleep(time.Second)"
    assert s.messages[6].text == "$ go test ./worker/..."
    assert s.messages[8].text.startswith("ok  \twebhooks/worker")  # info summaries are not memory
    assert all("backoff added" not in m.text for m in s.messages)


def test_xdg_data_home_relocates_the_store(home):
    data = home.root / "xdg"
    path = store(home, data)
    assert [f.path for f in amp.discover({"HOME": str(home.home), "XDG_DATA_HOME": str(data)})] == [str(path)]


def test_a_rewritten_thread_replaces_the_indexed_one(home):
    path = store(home)
    home.run("index")
    doc = json.loads(path.read_text())
    doc["messages"][0]["content"][0]["text"] = "Rotate the signing secret for outbound webhooks."
    path.write_text(json.dumps(doc))
    home.run("index")
    assert home.search("signing secret")["total"]
    # the old turn went with the old document (the thread's name stands)
    assert not home.search("--role", "user", "partner API rate-limits")["total"]


def test_a_thread_of_another_shape_is_counted_and_the_run_completes(home):
    path = store(home)
    odd = path.parent / "T-odd.json"
    odd.write_text(json.dumps([{"role": "user"}]))
    assert amp.read(str(odd)).malformed == 1
    summary = json.loads(home.run("index", "--json").stdout)
    assert {h["harness"]: h for h in summary["harnesses"]}["amp"]["sessions"] == 1


def test_a_thread_caught_mid_rewrite_keeps_what_the_index_held(home):
    """Amp rewrites a thread's file in place: a read that finds half a
    document is a failed read (said, retried), not a thread emptied."""
    path = store(home)
    home.run("index")
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) // 2])
    summary = json.loads(home.run("index", "--json").stdout)
    amp_row = {h["harness"]: h for h in summary["harnesses"]}["amp"]
    assert amp_row["sessions"] == 1 and amp_row["failed"] == 1
    assert any(TID in e and "kept what it held" in e for e in summary["errors"])
    assert home.search("partner API")["total"]
    path.write_bytes(whole)
    summary = json.loads(home.run("index", "--json").stdout)
    assert summary["errors"] == [] and home.search("partner API")["total"]


def test_a_value_of_the_wrong_type_costs_that_value_and_the_thread_is_still_indexed(home):
    path = store(home)
    doc = json.loads(path.read_text())
    doc["messages"][4]["content"][0]["run"]["status"] = {"state": "done"}
    path.write_text(json.dumps(doc))
    res = amp.read(str(path))
    assert res.error == "" and res.malformed == 1 and res.faults == [(4, "status a dict is not text")]
    (s,) = res.sessions
    assert len(s.messages) == 10
    assert s.messages[8].text.startswith("ok  \twebhooks/worker") and s.messages[8].is_error is None
    summary = json.loads(home.run("index", "--json").stdout)
    assert {h["harness"]: h for h in summary["harnesses"]}["amp"]["sessions"] == 1 and not summary["errors"]
    assert home.search("jitter", "backoff")["total"] == 1
