"""The Gemini CLI reader (stages/sources/gemini.py) against harness-formats §5
and "Seen in real published transcripts → Gemini CLI".

Fixtures are written here in the shapes real Gemini builds write (composed
content): JSONL chats with ids written twice and ``$set`` lines, the older
whole ``.json`` chats, checkpoints, projects.json and ``.project_root``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import duckdb

from conftest import Home
from deja.stages.sources import gemini
from deja.stages.sources.locate import gemini_files

SID = "c8b2cbd9-67d4-4f6f-9272-108ab4868b29"
CWD = "/home/dev/src/tide-tables"
HASH = hashlib.sha256(CWD.encode()).hexdigest()


def header(sid=SID, start="2026-04-24T23:16:28.708Z", **kw) -> dict:
    return {"sessionId": sid, "projectHash": HASH, "startTime": start, "lastUpdated": start, "kind": "main", **kw}


def user(mid: str, text: str, t: str) -> dict:
    return {"id": mid, "timestamp": t, "type": "user", "content": [{"text": text}]}


def model(mid: str, text: str, t: str, calls=None) -> dict:
    m = {"id": mid, "timestamp": t, "type": "gemini", "content": text, "model": "gemini-2.5-pro",
         "thoughts": [{"subject": "Planning", "description": "a thought that is not memory", "timestamp": t}]}
    if calls is not None:
        m["toolCalls"] = calls
    return m


def call(cid: str, name: str, args: dict, output=None, error=None, status="success") -> dict:
    resp = {"error": error} if error is not None else {"output": output}
    return {"id": cid, "name": name, "args": args, "status": status, "timestamp": "2026-04-24T23:17:00.000Z",
            "result": [{"functionResponse": {"id": cid, "name": name, "response": resp}}],
            "resultDisplay": "a display copy that is never indexed"}


def chat_file(home: Path, slug: str, name: str = f"session-2026-04-24T23-16-{SID[:8]}.jsonl") -> Path:
    p = home / ".gemini" / "tmp" / slug / "chats" / name
    p.parent.mkdir(parents=True, exist_ok=True)
    return p


def write(p: Path, rows) -> None:
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))


SHELL_OUT = "Command: npm test\nDirectory: (root)\nOutput: 1 failing: tide offset\nError: (none)\nExit Code: 1\nSignal: (none)\nProcess Group PGID: 8597"


def session_rows() -> list[dict]:
    """A JSONL chat as Gemini writes it: the gemini message first without its
    tool calls, then written again with them and their results."""
    t0 = "2026-04-24T23:16:30.000Z"
    calls = [
        call("run_shell_command_1", "run_shell_command", {"command": "npm test", "description": "run tests"},
             output=SHELL_OUT),
        call("read_file_2", "read_file", {"file_path": "src/tides.ts"}, output="export const offset = 3;"),
        call("replace_3", "replace", {"file_path": "src/tides.ts", "old_string": "offset = 3", "new_string": "offset = 4"},
             output="Successfully modified file"),
    ]
    return [
        header(),
        user("u1", "why does the tide offset test fail?", t0),
        {"$set": {"lastUpdated": t0}},
        model("g1", "", "2026-04-24T23:16:40.000Z"),
        model("g1", "The offset constant is off by one; fixed it.", "2026-04-24T23:16:40.000Z", calls),
        {"$set": {"lastUpdated": "2026-04-24T23:16:50.000Z"}},
        {"id": "i1", "timestamp": "2026-04-24T23:16:51.000Z", "type": "info", "content": "Request cancelled."},
        user("u2", "thanks, now the rain gauge", "2026-04-24T23:17:10.000Z"),
    ]


def test_a_jsonl_chat_gives_roles_in_order_with_their_times_and_work(tmp_path):
    p = chat_file(tmp_path, "tide-tables")
    write(p, session_rows())
    res = gemini.read(str(p))
    assert res.error == "" and res.malformed == 0 and res.safe_offset == 0  # read whole, always
    [s] = res.sessions
    assert s.session_id == SID and s.harness == "gemini"
    roles = [m.role for m in s.messages]
    # the message written twice is one message, at its first place, with its last content
    assert roles == ["user", "assistant", "command", "files", "edit", "tool-output", "tool-output", "tool-output",
                     "user"]
    assert s.messages[1].text == "The offset constant is off by one; fixed it."
    cmd = s.messages[2]
    assert cmd.text == "$ npm test  → exit 1" and cmd.exit_code == 1 and cmd.tool == "run_shell_command"
    assert s.messages[3].text == "src/tides.ts"  # no recorded cwd: the path as the agent gave it
    assert s.messages[4].text == "src/tides.ts\noffset = 3"
    out = s.messages[5]
    assert out.text == "1 failing: tide offset" and out.is_error is True
    assert not any("thought" in m.text or "display copy" in m.text for m in s.messages)
    assert s.messages[0].ts == 1777072590000 and s.messages[-1].ts == 1777072630000
    assert s.project == "tide-tables" and s.cwd == ""  # the slug, until the store records the folder


def test_the_project_is_the_folder_the_store_records(tmp_path):
    home = tmp_path
    # projects.json (newer builds) maps the root to its slug; paths become absolute
    p = chat_file(home, "tide-tables")
    write(p, session_rows())
    (home / ".gemini" / "projects.json").write_text(json.dumps({"projects": {CWD: "tide-tables"}}))
    [s] = gemini.read(str(p)).sessions
    assert s.cwd == CWD and s.project == ""
    files = next(m for m in s.messages if m.role == "files")
    assert files.text == CWD + "/src/tides.ts"
    # a .project_root file beside the chats says the same
    q = chat_file(home, "other-slug")
    write(q, session_rows())
    (q.parent.parent / ".project_root").write_text("/home/dev/src/rain-gauge\n")
    assert gemini.read(str(q)).sessions[0].cwd == "/home/dev/src/rain-gauge"
    # older builds: the folder is the hash of the root, and projects.json lists the root
    r = chat_file(home, HASH)
    write(r, session_rows())
    assert gemini.read(str(r)).sessions[0].cwd == CWD


def test_the_session_preamble_names_the_folder_when_nothing_else_does(tmp_path):
    p = chat_file(tmp_path, HASH)
    rows = session_rows()
    rows[1] = user("u1", "<session_context>\nThis is the Gemini CLI. We are setting up the context for our chat.\n"
                         f"- **Workspace Directories:**\n  - {CWD}\n</session_context>\nwhy does the tide test fail?",
                   "2026-04-24T23:16:30.000Z")
    write(p, rows)
    [s] = gemini.read(str(p)).sessions
    assert s.cwd == CWD


def test_rewind_drops_the_tail_and_a_rewritten_list_drops_nothing(tmp_path):
    p = chat_file(tmp_path, "tide-tables")
    write(p, [
        header(),
        user("u1", "first ask", "2026-04-24T23:16:30.000Z"),
        model("g1", "first answer", "2026-04-24T23:16:31.000Z"),
        user("u2", "a turn the person rewound", "2026-04-24T23:16:32.000Z"),
        model("g2", "an answer rewound with it", "2026-04-24T23:16:33.000Z"),
        {"$rewindTo": "u2"},
        user("u3", "the ask instead", "2026-04-24T23:16:40.000Z"),
        {"$set": {"lastUpdated": "2026-04-24T23:16:41.000Z", "summary": "Tide offset fix"}},
    ])
    [s] = gemini.read(str(p)).sessions
    assert [m.text for m in s.messages] == ["first ask", "first answer", "the ask instead"]
    assert s.title == "Tide offset fix" and s.title_rank == 1
    # Gemini rewrites its list without a turn that failed (a rollback): that ask was still made
    with p.open("a") as fh:
        fh.write(json.dumps({"$set": {"messages": [user("u1", "first ask", "2026-04-24T23:16:30.000Z"),
                                                   user("u9", "a later ask", "2026-04-24T23:17:00.000Z")]}}) + "\n")
    assert [m.text for m in gemini.read(str(p)).sessions[0].messages] == [
        "first ask", "first answer", "the ask instead", "a later ask"]


SNAPSHOT = "<state_snapshot>\n<overall_goal>fix the tide offset</overall_goal>\n</state_snapshot>"


def compressed_rows() -> list[dict]:
    """A chat Gemini compressed (chatCompressionService, then
    chatRecordingService.updateMessagesFromHistory): the list rewritten as the
    model's snapshot of the folded turns, a canned ack, and the turns kept."""
    rows = session_rows()
    return rows + [
        {"$set": {"messages": [
            {"id": "s1", "timestamp": "2026-04-24T23:18:00.000Z", "type": "user", "content": [{"text": SNAPSHOT}]},
            {"id": "s2", "timestamp": "2026-04-24T23:18:00.000Z", "type": "gemini",
             "content": [{"text": "Got it. Thanks for the additional context!"}]},
            rows[-1],  # u2, the turn kept
        ], "lastUpdated": "2026-04-24T23:18:00.000Z"}},
        model("g2", "The rain gauge reads in inches; converted.", "2026-04-24T23:18:30.000Z"),
    ]


def test_a_compressed_gemini_chat_keeps_what_was_said_before_the_summary(tmp_path):
    p = chat_file(tmp_path, "tide-tables")
    write(p, compressed_rows())
    [s] = gemini.read(str(p)).sessions
    said = [(m.role, m.text) for m in s.messages if m.role in ("user", "assistant", "summary")]
    assert said == [
        ("user", "why does the tide offset test fail?"),
        ("assistant", "The offset constant is off by one; fixed it."),
        ("user", "thanks, now the rain gauge"),
        ("summary", SNAPSHOT),  # Gemini's summary, not the person's words; its canned ack is not the model's
        ("assistant", "The rain gauge reads in inches; converted."),
    ]
    assert [m.text for m in s.messages if m.role == "tool-output"][0] == "1 failing: tide offset"
    # the session starts where it started, and its title is the person's first ask, not the snapshot
    (tmp_path / "idx").mkdir()
    home = Home(tmp_path / "idx")
    write(chat_file(home.home, "tide-tables"), compressed_rows())
    home.run("index")
    sessions = [str(x) for x in (home.index / "sessions").glob("*.parquet")]
    [(title, started)] = duckdb.connect().execute(
        "SELECT title, epoch_ms(started) FROM read_parquet(?) WHERE harness = 'gemini'", [sessions]).fetchall()
    assert title.startswith("why does the tide offset test fail") and started == 1777072590000


def test_a_masked_tool_output_keeps_the_output_read_before_the_mask(tmp_path):
    p = chat_file(tmp_path, "tide-tables")
    stub = ("<tool_output_masked>\nOutput: 1 failing\n\nOutput too large. Full output available at: "
            "/home/dev/.gemini/tmp/tide-tables/tool-outputs/run_shell_command_x.txt\n</tool_output_masked>")
    masked = call("run_shell_command_1", "run_shell_command", {"command": "npm test"}, output=stub)
    rows = [header(), user("u1", "run the tests", "2026-04-24T23:16:30.000Z"),
            model("g1", "", "2026-04-24T23:16:40.000Z", [call("run_shell_command_1", "run_shell_command",
                                                             {"command": "npm test"}, output=SHELL_OUT)])]
    # toolOutputMaskingService, then the list rewritten with the masked result in the same call
    write(p, rows + [{"$set": {"messages": [rows[1], model("g1", "", "2026-04-24T23:16:40.000Z", [masked])]}}])
    [s] = gemini.read(str(p)).sessions
    assert [m.text for m in s.messages if m.role == "tool-output"] == ["1 failing: tide offset"]
    assert [m.text for m in s.messages if m.role == "command"] == ["$ npm test  → exit 1"]
    # where only the stub was ever written, the stub is what there is
    write(p, rows[:2] + [model("g1", "", "2026-04-24T23:16:40.000Z", [masked])])
    [s] = gemini.read(str(p)).sessions
    assert [m.text for m in s.messages if m.role == "tool-output"] == [stub]


def test_an_older_json_chat_and_its_resumed_jsonl_are_one_session(tmp_path):
    env = {"HOME": str(tmp_path)}
    old = chat_file(tmp_path, "tide-tables", "session-2026-04-24T23-16-c8b2cbd9.json")
    old.write_text(json.dumps({**header(), "messages": [user("u1", "an ask in the old form", "2026-04-24T23:16:30Z"),
                                                        model("g1", "an answer", "2026-04-24T23:16:31Z")]}, indent=2))
    [s] = gemini.read(str(old)).sessions
    assert [m.role for m in s.messages] == ["user", "assistant"] and s.session_id == SID
    assert gemini_files(env) == [str(old)]
    write(old.with_suffix(".jsonl"), session_rows())  # Gemini resumed it: the same session rewritten as JSONL
    assert gemini_files(env) == [str(old.with_suffix(".jsonl"))]


def test_a_checkpoint_is_a_session_keyed_by_its_folder(tmp_path):
    d = tmp_path / ".gemini" / "tmp" / HASH
    d.mkdir(parents=True)
    p = d / "checkpoint-rain.json"
    p.write_text(json.dumps({"history": [
        {"role": "user", "parts": [{"text": "This is the Gemini CLI. We are setting up the context for our chat.\n"
                                            f"I'm currently working in the directory: {CWD}\n"}]},
        {"role": "model", "parts": [{"text": "Got it. Thanks for the context!"}]},
        {"role": "user", "parts": [{"text": "where do the gauges get read?"}]},
        {"role": "model", "parts": [{"text": "Let me look."},
                                    {"functionCall": {"name": "read_file", "args": {"file_path": f"{CWD}/gauge.go"}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "read_file", "response": {"output": "package gauge"}}}]},
        {"role": "model", "parts": [{"text": "In gauge.go."}]},
    ]}))
    os.utime(p, (1777072590, 1777072590))
    assert gemini_files({"HOME": str(tmp_path)}) == [str(p)]
    [s] = gemini.read(str(p)).sessions
    assert s.session_id == f"checkpoint-rain-{HASH[:12]}" and s.cwd == CWD
    assert [m.role for m in s.messages] == ["user", "assistant", "files", "tool-output", "assistant"]
    assert all(m.ts == 1777072590000 for m in s.messages)  # no times of its own: the file's


def test_subagent_chats_are_children_of_their_parent_and_skipped_by_default(tmp_path):
    parent = chat_file(tmp_path, "tide-tables")
    write(parent, session_rows())
    child = parent.parent / SID / "e1f0c2aa.jsonl"
    child.parent.mkdir()
    write(child, [header("e1f0c2aa", kind="subagent"), user("s1", "inspect the gauges", "2026-04-24T23:17:00Z")])
    assert gemini_files({"HOME": str(tmp_path)}) == [str(parent)]
    assert gemini_files({"HOME": str(tmp_path), "DEJA_INCLUDE_SUBAGENTS": "1"}) == sorted([str(parent), str(child)])
    [s] = gemini.read(str(child)).sessions
    assert (s.kind, s.parent, s.spawned) == ("subagent", SID, True)


def test_bad_input_is_counted_and_the_file_still_reads(tmp_path):
    p = chat_file(tmp_path, "tide-tables")
    rows = session_rows()
    text = "".join(json.dumps(r) + "\n" for r in rows[:3]) + "{not json\n" + json.dumps(rows[3])[:25]  # torn tail
    p.write_text(text)
    res = gemini.read(str(p))
    assert res.malformed == 1 and [m.role for m in res.sessions[0].messages] == ["user"]
    odd = chat_file(tmp_path, "tide-tables", "session-odd.json")
    odd.write_text(json.dumps({"sessionId": 5, "messages": "not a list"}))
    res = gemini.read(str(odd))
    assert res.sessions == [] and res.malformed == 1 and res.error == ""
    gone = gemini.read(str(tmp_path / "vanished.jsonl"))
    assert gone.error and gone.sessions == []


def test_relocation_variables_and_an_absent_store(tmp_path):
    assert gemini.roots({"HOME": "/h"}) == ["/h/.gemini"]
    assert gemini.roots({"HOME": "/h", "GEMINI_CLI_HOME": "/x"}) == ["/x/.gemini"]
    assert gemini.roots({"HOME": "/h", "GEMINI_CLI_HOME": "/x", "DEJA_GEMINI_ROOT": "/r"}) == ["/r"]
    assert gemini_files({"HOME": str(tmp_path)}) == []


def test_a_chat_that_grows_replaces_its_session_through_deja_index(tmp_path):
    home = Home(tmp_path)
    p = chat_file(home.home, "tide-tables")
    rows = session_rows()
    write(p, rows[:4])  # the gemini message's first copy: no text, no tool calls yet
    home.run("index")
    write(p, rows)  # Gemini rewrote it with its calls and results, and the session went on
    home.run("index")
    sessions = [str(x) for x in (home.index / "sessions").glob("*.parquet")]
    n = duckdb.connect().execute("SELECT messages, n_command FROM read_parquet(?) WHERE harness = 'gemini'",
                                 [sessions]).fetchall()
    assert n == [(3, 1)]  # two asks, one answer: nothing twice
    res = home.search("tide", "offset", "--all")
    assert {h["session"]["harness"] for h in res["hits"]} == {"gemini"}
    records = [str(x) for x in (home.index / "records").glob("*/*/*.parquet")]
    live = duckdb.connect().execute(
        "SELECT count(*) FROM read_parquet(?, hive_partitioning = true) WHERE harness = 'gemini' AND role = 'user'"
        " AND record_id NOT IN (SELECT unnest(?))", [records, _deleted(home)]).fetchone()[0]
    assert live == 2


def _deleted(home) -> list:
    parts = [str(x) for x in (home.index / "deletes").glob("*.parquet")]
    if not parts:
        return []
    return [r[0] for r in duckdb.connect().execute("SELECT record_id FROM read_parquet(?)", [parts]).fetchall()]


SAMPLE = Path(__file__).resolve().parents[1] / "data_samples" / "gemini"


def test_a_value_of_the_wrong_type_costs_that_value_and_the_chat_is_still_indexed(tmp_path):
    home = Home(tmp_path)
    shutil.copytree(SAMPLE, home.home / ".gemini")
    (p,) = (home.home / ".gemini").rglob("session-*.jsonl")
    rows = [json.loads(x) for x in p.read_text().splitlines()]
    rows[6]["type"] = {"future": "kind"}  # a message of a type this build does not know
    rows[4]["toolCalls"][1]["result"][0]["functionResponse"]["name"] = ["read_file"]
    write(p, rows)
    res = gemini.read(str(p))
    assert res.error == "" and res.malformed == 2
    assert {what for _, what in res.faults} == {"type a dict is not text", "tool name a list is not text"}
    [s] = res.sessions
    assert [m.role for m in s.messages] == ["user", "assistant", "command", "files", "edit", "tool-output",
                                            "tool-output", "tool-output", "assistant", "command", "tool-output"]
    out = s.messages[6]  # the read's output, without the name its response lost
    assert out.text == "const magnusB = 243.12\nconst magnusA = 17.26" and out.tool is None
    assert s.messages[2].exit_code == 1 and s.title == "Fix the dew point Magnus coefficient"
    summary = json.loads(home.run("index", "--json").stdout)
    assert {h["harness"]: h for h in summary["harnesses"]}["gemini"]["sessions"] == 1 and not summary["errors"]
    assert {h["session"]["harness"] for h in home.search("transposed", "Magnus")["hits"]} == {"gemini"}
    assert "type a dict is not text" in home.run("doctor").stdout


def test_a_stray_turn_in_a_checkpoint_costs_that_turn_only(tmp_path):
    d = tmp_path / ".gemini" / "tmp" / HASH
    d.mkdir(parents=True)
    p = d / "checkpoint-rain.json"
    p.write_text(json.dumps([
        {"role": "user", "parts": [{"text": "where do the gauges get read?"}]},
        "a turn that is not an object",
        {"role": {"name": "model"}, "parts": [{"text": "a turn whose role is an object"}]},
        {"role": "model", "parts": [{"text": "In gauge.go."},
                                    {"functionCall": {"name": "read_file", "args": {"file_path": f"{CWD}/gauge.go"}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": {"tool": "read_file"},
                                                         "response": {"output": "package gauge"}}}]},
    ]))
    res = gemini.read(str(p))
    assert res.error == "" and res.malformed == 3
    [s] = res.sessions
    assert [(m.role, m.text, m.tool) for m in s.messages] == [
        ("user", "where do the gauges get read?", None), ("assistant", "In gauge.go.", None),
        ("files", f"{CWD}/gauge.go", "read_file"), ("tool-output", "package gauge", None)]
