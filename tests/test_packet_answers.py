"""The packet's objective and the questions awaiting an answer (issue 13).

A reply that only picks an option or agrees ("a", "2", "ok, do it") answers the
question before it: the objective stays the last request that asks for
something, with the latest answer beside it. Questions put through Claude
Code's AskUserQuestion tool are read: unanswered, they are listed as awaiting
the user; answered (the tool_result carries the answers), they are not.
"""

from __future__ import annotations

import json

import pytest

from conftest import claude_assistant, claude_user, write_jsonl
from deja.hooks.packet.extract import carries_request, extract
from deja.hooks.packet.render import render
from deja.stages.sources import claude, codex

SID = "a5a5a5a5-0000-4000-8000-000000000013"
UID = "019b55c1-d022-7061-bbb9-b0c90708472c"
REQUEST = "Implement the STT API with reazonspeech: upload and WebSocket streaming."


def _rollout(tmp_path, replies: list[str]):
    """A Codex rollout shaped like the real speckit clarify session: a request,
    then the agent's option tables each answered with one letter."""
    t = iter(range(60))

    def line(typ, payload):
        return json.dumps({"timestamp": f"2025-12-25T17:40:{next(t):02d}.000Z", "type": typ, "payload": payload})

    def msg(text, role="user"):
        kind = "output_text" if role == "assistant" else "input_text"
        return line("response_item", {"type": "message", "role": role, "content": [{"type": kind, "text": text}]})

    rows = [line("session_meta", {"id": UID, "timestamp": "2025-12-25T17:40:00.000Z", "cwd": "/home/dev/voice",
                                  "originator": "codex_cli_rs", "cli_version": "0.77.0", "source": "cli"}),
            msg(REQUEST)]
    for n, r in enumerate(replies):
        rows.append(msg(f"**Recommended:** Option A\n\n| Option | Description |\n|---|---|\n| A | WAV only |\n"
                        f"| B | WAV + FLAC |\n| C | All formats |\n\nQuestion {n + 1}: which audio formats?",
                        role="assistant"))
        rows.append(msg(r))
    d = tmp_path / "sessions" / "2025" / "12" / "25"
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"rollout-2025-12-25T17-40-00-{UID}.jsonl"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    res = codex.read(str(path))
    return extract(res.sessions[0].messages, session_id=UID, harness="codex")


def test_option_replies_keep_the_request_as_objective_with_the_latest_answer_beside_it(tmp_path):
    p = _rollout(tmp_path, ["a", "b", "c"])
    assert p["objective"]["text"] == REQUEST
    assert p["answer"]["text"] == "c"
    out = render(p, {"state": "unchanged"})
    line = next(ln for ln in out.splitlines() if ln.startswith("Objective: "))
    assert line.startswith(f"Objective: {REQUEST}  (latest answer: c)")


def test_agreeing_after_the_request_is_an_answer_too(tmp_path):
    p = _rollout(tmp_path, ["B, A", "ok, do it"])
    assert p["objective"]["text"] == REQUEST and p["answer"]["text"] == "ok, do it"


@pytest.mark.parametrize("reply", ["a", "2", "B", "option B", "yes", "ok, do it", "sounds good", "go ahead",
                                   "Q1: B, Q2: A", "the second one", "お願いします。"])
def test_a_reply_that_only_picks_or_agrees_is_not_a_request(reply):
    assert not carries_request(reply)


@pytest.mark.parametrize("ask", ["fix it", "run the tests", "use uv", "option B but keep the CSV order",
                                     "T13", "restart"])
def test_short_requests_still_ask_for_something(ask):
    assert carries_request(ask)


QUESTION = {"question": "Where should archived media land?", "header": "Media dest", "multiSelect": False,
            "options": [{"label": "GCP bucket", "description": "Upload to the existing bucket."},
                        {"label": "PRIVATE repo (git LFS)", "description": "Commit media with LFS."}]}


def _claude_session(tmp_path, answered: bool):
    ts = "2026-04-10T10:%02d:00.000Z"
    rows = [
        claude_user(SID, "Archive the vault's media files out of the repository.", ts % 0, "u0"),
        claude_assistant(SID, [{"type": "text", "text": "Before I move anything, one choice for you."},
                               {"type": "tool_use", "id": "toolu_ask1", "name": "AskUserQuestion",
                                "input": {"questions": [QUESTION]}}], ts % 1, "a1", msg_id="m1", parent="u0"),
    ]
    if answered:
        row = claude_user(SID, "", ts % 2, "u2", parent="a1")
        row["message"]["content"] = [{"type": "tool_result", "tool_use_id": "toolu_ask1", "content":
                                      'Your questions have been answered: "Where should archived media land?"='
                                      '"GCP bucket". You can now continue with these answers in mind.'}]
        row["toolUseResult"] = {"questions": [QUESTION], "answers": {"Where should archived media land?": "GCP bucket"}}
        rows.append(row)
    path = tmp_path / "projects" / "-home-dev-vault" / f"{SID}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_jsonl(path, rows)
    res = claude.read(str(path))
    return extract(res.sessions[0].messages, session_id=SID, harness="claude")


def test_unanswered_ask_user_question_is_listed_as_awaiting_the_user(tmp_path):
    p = _claude_session(tmp_path, answered=False)
    awaiting = [e["text"] for e in p["keep"] if e["kind"] == "awaiting"]
    assert awaiting == ["Where should archived media land? — GCP bucket | PRIVATE repo (git LFS)"]
    out = render(p, {"state": "unchanged"})
    assert "- [awaiting the user] Where should archived media land?" in out


def test_answered_ask_user_question_is_not_awaiting_and_is_the_latest_answer(tmp_path):
    p = _claude_session(tmp_path, answered=True)
    assert not [e for e in p["keep"] if e["kind"] == "awaiting"]
    assert p["objective"]["text"] == "Archive the vault's media files out of the repository."
    assert p["answer"]["text"] == "GCP bucket"


def _codex_asked(tmp_path, answered: bool):
    """Codex's request_user_input: a function_call whose output carries the answers."""
    def line(t, payload):
        return json.dumps({"timestamp": f"2026-04-15T12:00:{t:02d}.000Z", "type": "response_item", "payload": payload})

    args = {"questions": [{"id": "db", "header": "Database", "question": "Which database should the cache use?",
                           "options": [{"label": "Postgres", "description": "the existing one"},
                                       {"label": "SQLite", "description": "a local file"}]}]}
    rows = [json.dumps({"timestamp": "2026-04-15T12:00:00.000Z", "type": "session_meta",
                        "payload": {"id": UID, "timestamp": "2026-04-15T12:00:00.000Z", "cwd": "/home/dev/cache",
                                    "originator": "codex_cli_rs", "cli_version": "0.118.0", "source": "cli"}}),
            line(1, {"type": "message", "role": "user", "content": [{"type": "input_text", "text":
                                                                      "Add a cache for the exchange rates."}]}),
            line(2, {"type": "function_call", "name": "request_user_input", "arguments": json.dumps(args),
                     "call_id": "call_q1"})]
    if answered:
        rows.append(line(3, {"type": "function_call_output", "call_id": "call_q1",
                             "output": json.dumps({"answers": {"db": {"answers": ["SQLite"]}}})}))
    d = tmp_path / "sessions" / "2026" / "04" / "15"
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"rollout-2026-04-15T12-00-00-{UID}.jsonl"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return extract(codex.read(str(path)).sessions[0].messages, session_id=UID, harness="codex")


def test_codex_request_user_input_awaits_until_answered(tmp_path):
    p = _codex_asked(tmp_path / "open", answered=False)
    assert [e["text"] for e in p["keep"] if e["kind"] == "awaiting"] == \
        ["Which database should the cache use? — Postgres | SQLite"]
    p = _codex_asked(tmp_path / "done", answered=True)
    assert not [e for e in p["keep"] if e["kind"] == "awaiting"]
    assert p["objective"]["text"] == "Add a cache for the exchange rates." and p["answer"]["text"] == "SQLite"
