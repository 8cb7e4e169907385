"""Antigravity and Grok Build: JSONL transcripts read to harness-formats §14
(roles, order, times, project, work records, titles, parent edges, bad input)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from deja.stages.sources import antigravity, grok

SAMPLES = Path(__file__).resolve().parent.parent / "data_samples"


def _at_home(home, name: str, dest: str) -> Path:
    d = home.home / dest
    shutil.copytree(SAMPLES / name, d)
    return d


def test_antigravity_roles_work_records_and_the_ides_workspace(home):
    d = _at_home(home, "antigravity", ".gemini/antigravity")
    (path,) = antigravity.antigravity_files(home.env)
    (s,) = antigravity.read(path).sessions
    assert s.cwd == "/home/dev/src/geo-tiles" and s.session_id == "7d1c2b3a-0000-4000-8000-00000000a001"
    assert [m.role for m in s.messages] == ["user", "files", "tool-output", "command", "tool-output", "assistant"]
    assert s.messages[0].text == "the tile cache serves stale tiles after a zoom change"  # wrappers gone
    assert s.messages[1].text == "/home/dev/src/geo-tiles/src/cache.ts"
    assert s.messages[3].text == "$ npm test -- cache" and s.messages[0].ts == 1772805600000
    (d / "cache" / "conversation_metadata.json").unlink()  # no metadata: the folder the files share
    assert antigravity.read(path).sessions[0].cwd == "/home/dev/src/geo-tiles/src"


def test_antigravity_a_torn_or_bad_line_is_counted(home):
    _at_home(home, "antigravity", ".gemini/antigravity")
    (path,) = antigravity.antigravity_files(home.env)
    with open(path, "a") as fh:
        fh.write("{not json\n[1, 2]\n{\"source\": \"MODEL\", \"type\": \"PLANNER_RESP")
    res = antigravity.read(path)
    assert res.malformed == 1 and res.error == "" and len(res.sessions[0].messages) == 6


def test_grok_chunks_joined_title_cwd_and_append(home):
    _at_home(home, "grok", ".grok")
    (path,) = grok.grok_files(home.env)
    res = grok.read(path)
    (s,) = res.sessions
    assert (s.cwd, s.title) == ("/home/dev/src/ledger", "Rounding drift in monthly totals")
    assert [(m.role, m.text) for m in s.messages] == [
        ("user", "monthly totals drift by a cent when summing float amounts"),
        ("tool-output", "sum.py:12 total += float(row.amount)"),
        ("assistant", "Summing floats accumulates rounding error; use Decimal and quantize once at the end."),
    ]
    with open(path, "a") as fh:
        fh.write(json.dumps({"timestamp": "2026-03-07T10:05:00Z", "params": {"update": {
            "sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "and the yearly ones?"},
            "_meta": {"promptIndex": 1}}}}) + "\n")
    more = grok.read(path, res.safe_offset)
    assert [m.text for m in more.sessions[0].messages] == ["and the yearly ones?"]


def test_grok_a_subagent_names_its_parent_and_is_kept_only_when_asked(home):
    d = _at_home(home, "grok", ".grok")
    (summary,) = d.glob("sessions/*/*/summary.json")
    doc = json.loads(summary.read_text())
    doc.update(session_kind="subagent", parent_session_id="0197-parent", agent_name="explorer")
    summary.write_text(json.dumps(doc))
    (s,) = grok.read(grok.grok_files(home.env)[0]).sessions
    assert (s.kind, s.parent, s.agent, s.spawned) == ("subagent", "0197-parent", "explorer", True)
    rows = {h["harness"]: h for h in json.loads(home.run("index", "--json").stdout)["harnesses"]}
    assert rows["grok"]["sessions"] == 0


def _rewrite(path, n: int, change) -> None:
    rows = [json.loads(x) for x in Path(path).read_text().splitlines()]
    change(rows[n])
    Path(path).write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_antigravity_a_type_of_the_wrong_type_costs_that_value_not_the_file(home):
    _at_home(home, "antigravity", ".gemini/antigravity")
    (path,) = antigravity.antigravity_files(home.env)
    _rewrite(path, 2, lambda r: r.update(type=["RUN_COMMAND"]))
    res = antigravity.read(path)
    assert res.error == "" and res.malformed == 1 and res.faults[0][1] == "type a list is not text"
    (s,) = res.sessions
    # a step of no known kind: its words kept, as the agent's (a row without a type)
    assert [m.role for m in s.messages] == ["user", "files", "tool-output", "assistant", "assistant"]
    assert "expected zoom in cache key" in s.messages[3].text
    assert s.cwd == "/home/dev/src/geo-tiles"
    rows = {h["harness"]: h for h in json.loads(home.run("index", "--json").stdout)["harnesses"]}
    assert rows["antigravity"]["sessions"] == 1 and rows["antigravity"]["failed"] == 0
    assert home.search("zoom", "cache", "key")["total"] == 1


def test_grok_an_update_kind_of_the_wrong_type_costs_that_update_only(home):
    _at_home(home, "grok", ".grok")
    (path,) = grok.grok_files(home.env)
    _rewrite(path, 2, lambda r: r["params"]["update"].update(sessionUpdate={"kind": "tool_call"}))
    res = grok.read(path)
    assert res.error == "" and res.malformed == 1 and res.faults[0][1] == "sessionUpdate a dict is not text"
    assert [(m.role, m.text) for m in res.sessions[0].messages] == [
        ("user", "monthly totals drift by a cent when summing float amounts"),
        ("assistant", "Summing floats accumulates rounding error; use Decimal and quantize once at the end."),
    ]
    rows = {h["harness"]: h for h in json.loads(home.run("index", "--json").stdout)["harnesses"]}
    assert rows["grok"]["sessions"] == 1 and rows["grok"]["failed"] == 0
    assert home.search("Decimal", "quantize")["total"] == 1
