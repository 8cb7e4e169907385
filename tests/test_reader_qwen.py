"""The Qwen Code reader (stages/sources/qwen.py) against harness-formats §9 and
"Seen in real published transcripts → Qwen Code": JSONL chats under
``projects/<enc cwd>/chats`` and the older ``tmp/<hash>/chats/*.json``
(composed content in the real shapes)."""

from __future__ import annotations

import json
from pathlib import Path

from deja.stages.sources import qwen
from deja.stages.sources.locate import qwen_files

SID = "7e4a45d5-d379-4300-8528-fe2bb00564df"
CWD = "C:\\Users\\ann\\Documents\\ledger"


def line(n: int, typ: str, message=None, t: str = "", **kw) -> dict:
    o = {"uuid": f"u{n}", "parentUuid": f"u{n - 1}" if n else None, "sessionId": SID,
         "timestamp": t or f"2026-02-03T10:00:{n:02d}.000Z", "type": typ, "cwd": CWD, "version": "0.14.0",
         "gitBranch": "main"}
    if message is not None:
        o["message"] = message
    o.update(kw)
    return o


def chat(home: Path, name: str = f"{SID}.jsonl") -> Path:
    p = home / ".qwen" / "projects" / "c--users-ann-documents-ledger" / "chats" / name
    p.parent.mkdir(parents=True, exist_ok=True)
    return p


def rows() -> list[dict]:
    shell = ("Command: npm test\nDirectory: (root)\nOutput: 2 failing: ledger balance\nError: (none)\n"
             "Exit Code: 1\nSignal: (none)\nProcess Group PGID: 31337")
    return [
        line(0, "system", subtype="ui_telemetry", systemPayload={"uiEvent": {"event.name": "qwen-code.api_response"}}),
        line(1, "user", {"role": "user", "parts": [
            {"text": "why is the balance off? @src/ledger.ts\n--- Content from referenced files ---\nexport const x = 1;"}]}),
        line(2, "assistant", {"role": "model", "parts": [{"text": "Checking the ledger math first.", "thought": True},
                                                         {"text": "Let me run the tests."}]}),
        line(3, "assistant", {"role": "model", "parts": [
            {"functionCall": {"id": "call_1", "name": "run_shell_command", "args": {"command": "npm test"}}}]}),
        line(4, "tool_result", {"role": "user", "parts": [
            {"functionResponse": {"id": "call_1", "name": "run_shell_command", "response": {"output": shell}}}]},
             toolCallResult={"callId": "call_1", "status": "success", "resultDisplay": ""}),
        line(5, "assistant", {"role": "model", "parts": [
            {"functionCall": {"id": "call_2", "name": "edit",
                              "args": {"file_path": "C:\\Users\\ann\\Documents\\ledger\\src\\ledger.ts",
                                       "old_string": "balance - fee", "new_string": "balance + fee"}}}]}),
        line(6, "tool_result", {"role": "user", "parts": [
            {"functionResponse": {"id": "call_2", "name": "edit",
                                  "response": {"error": "Edit error: Failed to edit, could not find the string to replace."}}}]},
             toolCallResult={"callId": "call_2", "status": "error", "resultDisplay": "Edit error"}),
        line(7, "system", subtype="slash_command", systemPayload={"phase": "invocation", "rawCommand": "/stats model"}),
        line(8, "assistant", {"role": "model", "parts": [{"text": "The fee sign was wrong."}]}),
    ]


def write(p: Path, rs, mode="w") -> None:
    with p.open(mode) as fh:
        fh.write("".join(json.dumps(r) + "\n" for r in rs))


def test_a_jsonl_chat_gives_roles_in_order_work_and_tool_output(tmp_path):
    p = chat(tmp_path)
    write(p, rows())
    res = qwen.read(str(p))
    assert res.error == "" and res.malformed == 0 and res.safe_offset == p.stat().st_size
    [s] = res.sessions
    assert (s.session_id, s.cwd, s.branch, s.harness) == (SID, CWD, "main", "qwen")
    assert [m.role for m in s.messages] == ["user", "assistant", "command", "tool-output", "files", "edit",
                                            "tool-output", "assistant"]
    ask = s.messages[0]
    assert ask.text == "why is the balance off? @src/ledger.ts"  # the appended file contents are not the ask
    assert s.messages[1].text == "Let me run the tests."  # the thought part is not memory
    cmd, out = s.messages[2], s.messages[3]
    assert cmd.text == "$ npm test  → exit 1" and cmd.exit_code == 1
    assert out.text == "2 failing: ledger balance" and out.is_error is True and out.tool == "run_shell_command"
    assert s.messages[5].text == "C:\\Users\\ann\\Documents\\ledger\\src\\ledger.ts\nbalance - fee"
    assert s.messages[6].is_error is True and "could not find the string" in s.messages[6].text
    assert s.messages[0].ts == 1770112801000 and s.messages[-1].ts == 1770112808000


def test_an_appended_turn_is_read_from_the_last_offset(tmp_path):
    p = chat(tmp_path)
    write(p, rows())
    first = qwen.read(str(p))
    write(p, [line(9, "user", {"role": "user", "parts": [{"text": "and the rounding?"}]})], "a")
    more = qwen.read(str(p), first.safe_offset)
    [s] = more.sessions
    assert [m.text for m in s.messages] == ["and the rounding?"] and s.cwd == CWD and s.session_id == SID


def titled(n: int, title: str, source: str) -> dict:
    """The line /rename (manual) or Qwen's own titling (auto) writes, again as the file grows and at exit."""
    return line(n, "system", subtype="custom_title", systemPayload={"customTitle": title, "titleSource": source})


def test_the_last_title_a_person_gave_names_the_chat_over_any_auto_title(tmp_path):
    p = chat(tmp_path)
    write(p, rows() + [titled(9, "Ledger fee sign", "auto"), titled(10, "Ledger fee", "auto")])
    [s] = qwen.read(str(p)).sessions
    assert (s.title, s.title_rank) == ("Ledger fee", 1)  # no person's title: the last auto one
    write(p, rows() + [titled(9, "Fee sign flip", "manual"), titled(10, "Okapi fee rewrite", "manual"),
                       titled(11, "Ledger fee", "auto")])
    [s] = qwen.read(str(p)).sessions
    assert (s.title, s.title_rank) == ("Okapi fee rewrite", 2)
    assert [m.role for m in s.messages].count("user") == 1  # the title lines are not turns


def test_a_title_appended_later_renames_the_indexed_chat_on_the_same_terms(tmp_path):
    from conftest import Home

    home = Home(tmp_path)
    p = chat(home.home)
    write(p, rows() + [titled(9, "Okapi fee rewrite", "manual")])
    home.run("index")
    write(p, [titled(10, "Ledger fee", "auto")], "a")  # re-anchored at exit: an auto title does not undo a rename
    home.run("index")
    [s] = json.loads(home.run("last", "--json").stdout)["sessions"]
    assert s["title"] == "Okapi fee rewrite"
    write(p, [titled(11, "Okapi ledger", "manual")], "a")
    home.run("index")
    assert json.loads(home.run("last", "--json").stdout)["sessions"][0]["title"] == "Okapi ledger"


def test_a_torn_last_line_waits_for_the_next_run(tmp_path):
    p = chat(tmp_path)
    write(p, rows()[:3])
    whole = p.stat().st_size
    with p.open("a") as fh:
        fh.write(json.dumps(rows()[3])[:40])
    res = qwen.read(str(p))
    assert res.safe_offset == whole and res.malformed == 0
    assert [m.role for m in res.sessions[0].messages] == ["user", "assistant"]


def older_chat(tmp_path, *messages: dict):
    """An older Qwen chat: one JSON document of the session and its messages."""
    d = tmp_path / ".qwen" / "tmp" / ("ab" * 32) / "chats"
    d.mkdir(parents=True)
    p = d / "session-2025-11-08T21-51-dd649aa7.json"
    p.write_text(json.dumps({
        "sessionId": "dd649aa7-6de3-4945-b57b-71ca9cb0a8a5", "projectHash": "ab" * 32,
        "startTime": "2025-11-08T21:52:00.742Z", "lastUpdated": "2025-11-08T22:31:33.719Z",
        "messages": list(messages)}, indent=2))
    return p


ANSWER = {"id": "m3", "timestamp": "2025-11-08T21:52:19.453Z", "type": "qwen",
          "content": "The cart reads the wrong store key.", "thoughts": [], "tokens": {"input": 10}}


def test_the_older_json_chat_maps_qwen_turns_to_the_assistant(tmp_path):
    p = older_chat(tmp_path,
                   {"id": "m1", "timestamp": "2025-11-08T21:52:00.742Z", "type": "user",
                    "content": "<system-reminder>You have powerful specialized agents at your disposal.</system-reminder>"
                               "the cart shows no products"},
                   ANSWER)
    env = {"HOME": str(tmp_path)}
    assert qwen_files(env) == [str(p)]
    res = qwen.read(str(p))
    [s] = res.sessions
    assert s.harness == "qwen" and s.session_id == "dd649aa7-6de3-4945-b57b-71ca9cb0a8a5"
    assert [m.role for m in s.messages] == ["user", "assistant"] and res.safe_offset == 0
    assert s.project == "ab" * 32  # nothing in the store names the folder: the hash stands


def test_only_chats_directly_in_chats_and_the_relocation_variables(tmp_path):
    p = chat(tmp_path)
    write(p, rows())
    nested = p.parent / "sub" / "x.jsonl"
    nested.parent.mkdir()
    write(nested, rows())
    assert qwen_files({"HOME": str(tmp_path)}) == [str(p)]
    assert qwen.roots({"HOME": "/h"}) == ["/h/.qwen"]
    assert qwen.roots({"HOME": "/h", "QWEN_RUNTIME_DIR": "/rt"}) == ["/rt"]
    assert qwen.roots({"HOME": "/h", "QWEN_RUNTIME_DIR": "/rt", "DEJA_QWEN_ROOT": "/r"}) == ["/r"]
    assert qwen_files({"HOME": str(tmp_path / "nobody")}) == []


def test_bad_lines_and_a_vanished_file_are_counted(tmp_path):
    p = chat(tmp_path)
    good = rows()
    p.write_text(json.dumps(good[1]) + "\n{torn mid-write\n" + json.dumps({**good[2], "timestamp": "year 10000"}) + "\n")
    res = qwen.read(str(p))
    assert res.malformed == 2  # a line that is not JSON, a time that is not a time
    assert [m.role for m in res.sessions[0].messages] == ["user", "assistant"]
    assert res.sessions[0].messages[1].ts is None
    gone = qwen.read(str(tmp_path / "gone.jsonl"))
    assert gone.error and gone.sessions == []


SAMPLE = Path(__file__).resolve().parents[1] / "data_samples" / "qwen"


def test_a_value_of_the_wrong_type_costs_that_value_not_the_line(tmp_path):
    (src,) = SAMPLE.rglob("*.jsonl")
    p = chat(tmp_path)
    rs = [json.loads(x) for x in src.read_text().splitlines()]
    rs[3]["message"]["parts"][0]["functionResponse"]["name"] = {"tool": "read_file"}
    write(p, rs)
    res = qwen.read(str(p))
    assert res.error == "" and res.malformed == 1 and res.faults[0][1] == "tool name a dict is not text"
    msgs = res.sessions[0].messages
    assert [m.role for m in msgs] == ["user", "assistant", "files", "tool-output", "files", "edit", "tool-output",
                                      "command", "tool-output", "assistant"]
    assert msgs[3].text.startswith("usable = page_height - margin_top") and msgs[3].tool is None
    assert msgs[7].exit_code == 0


def test_an_older_json_chat_with_a_message_of_an_odd_type_keeps_the_others(tmp_path):
    p = older_chat(tmp_path,
                   {"id": "m1", "timestamp": "2025-11-08T21:52:00.742Z", "type": "user",
                    "content": "the cart shows no products"},
                   {"id": "m2", "timestamp": "2025-11-08T21:52:10.000Z", "type": ["qwen"], "content": "an odd copy"},
                   ANSWER)
    res = qwen.read(str(p))
    assert res.error == "" and res.malformed == 1
    [s] = res.sessions
    assert [(m.role, m.text) for m in s.messages] == [("user", "the cart shows no products"),
                                                      ("assistant", "The cart reads the wrong store key.")]
