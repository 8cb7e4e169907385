"""bench/quality/locomo.py turns LoCoMo's conversations into a store deja reads as the
agents write theirs, and its questions into labels score.py checks: a question's answer
session is the session its evidence turn was said in."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import REPO, deja_cmd

CONVERT = REPO / "bench" / "quality" / "locomo.py"

# LoCoMo's shape (locomo10.json): a list of conversations, each with two speakers,
# numbered sessions with their date, and questions whose evidence names turns (D<session>:<turn>)
LOCOMO = [{
    "sample_id": "conv-t1",
    "conversation": {
        "speaker_a": "Ingrid", "speaker_b": "Tomas",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ingrid", "dia_id": "D1:1",
             "text": "Hey Tomas! I finally signed up for the pottery class downtown."},
            {"speaker": "Tomas", "dia_id": "D1:2", "text": "Nice! I spent the weekend fixing my old sailboat.",
             "img_url": ["https://example.invalid/boat.jpg"], "blip_caption": "a small sailboat on a trailer"},
        ],
        "session_2_date_time": "7:10 pm on 25 May, 2023",
        "session_2": [
            {"speaker": "Tomas", "dia_id": "D2:1", "text": "How was your week, Ingrid?"},
            {"speaker": "Ingrid", "dia_id": "D2:2",
             "text": "Busy. My sister moved to Lisbon for a marine biology job."},
        ],
        "session_3_date_time": "9:00 am on 2 June, 2023",
        "session_3": [],
    },
    "qa": [
        {"question": "What class did Ingrid sign up for?", "answer": "pottery", "evidence": ["D1:1"], "category": 4},
        {"question": "Where did Ingrid's sister move?", "answer": "Lisbon", "evidence": ["D2:2"], "category": 1},
        {"question": "When did Tomas fix his boat?", "answer": "May 2023", "evidence": ["D1:2; D2:1"], "category": 2},
        {"question": "What is Ingrid's favourite colour?", "adversarial_answer": "blue", "evidence": ["D1:1"],
         "category": 5},
        {"question": "Who is Ingrid's dentist?", "answer": "unknown", "evidence": [], "category": 4},
    ],
}]


def convert(tmp_path: Path) -> Path:
    data, out = tmp_path / "locomo10.json", tmp_path / "corpus"
    data.write_text(json.dumps(LOCOMO), encoding="utf-8")
    subprocess.run([sys.executable, str(CONVERT), "--data", str(data), "--out", str(out)], check=True,
                   capture_output=True, text=True)
    return out


def test_each_session_is_a_claude_transcript_and_each_answerable_question_names_its_sessions(tmp_path):
    out = convert(tmp_path)
    sessions = [json.loads(x) for x in (out / "sessions.jsonl").read_text().splitlines()]
    questions = [json.loads(x) for x in (out / "questions.jsonl").read_text().splitlines()]
    assert len(sessions) == 2  # an empty session is no transcript
    files = sorted((out / "claude" / "projects").rglob("*.jsonl"))
    assert len(files) == 2 and all(f.parent.name == "-home-dev-chats-conv-t1" for f in files)
    # the adversarial question and one without evidence have no session to find
    assert [q["kind"] for q in questions] == ["single-hop", "multi-hop", "temporal"]
    by_n = {s["title"].rsplit(" ", 1)[1]: s["id"] for s in sessions}
    assert questions[0]["answer_sessions"] == [by_n["1"]]
    assert questions[1]["answer_sessions"] == [by_n["2"]]
    assert sorted(questions[2]["answer_sessions"]) == sorted([by_n["1"], by_n["2"]])  # "D1:2; D2:1"
    lines = [json.loads(x) for x in files[0].read_text().splitlines()] + \
        [json.loads(x) for x in files[1].read_text().splitlines()]
    said = {(d["type"], json.dumps(d["message"]["content"])) for d in lines}
    assert any(t == "user" and "Ingrid: Hey Tomas" in c for t, c in said)
    assert any(t == "assistant" and "[shares a photo of a small sailboat on a trailer]" in c for t, c in said)
    # the same input writes the same bytes
    again = tmp_path / "again"
    again.mkdir()
    assert convert(again).joinpath("questions.jsonl").read_bytes() == (out / "questions.jsonl").read_bytes()


def test_deja_indexes_the_converted_store_and_finds_a_question_s_session(tmp_path):
    out = convert(tmp_path)
    env = {"PATH": os.environ.get("PATH", ""), "DEJA_SERVE": "off", "LANG": "C.UTF-8", "HOME": str(tmp_path / "home"),
           "DEJA_INDEX_DIR": str(tmp_path / "index"), "DEJA_CLAUDE_ROOT": str(out / "claude" / "projects"),
           "DEJA_CODEX_ROOT": str(tmp_path / "no-codex"), "DEJA_EMBED": "off"}
    subprocess.run(deja_cmd() + ["index"], env=env, check=True, capture_output=True, text=True)
    questions = [json.loads(x) for x in (out / "questions.jsonl").read_text().splitlines()]
    for q in questions[:2]:
        got = subprocess.run(deja_cmd() + ["search", "--json", q["query"]], env=env, check=True, capture_output=True,
                             text=True)
        hits = json.loads(got.stdout)["hits"]
        assert hits and hits[0]["session"]["id"] in q["answer_sessions"], q["query"]


def test_a_file_that_is_not_locomo_is_one_line_and_no_corpus(tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text(json.dumps({"not": "locomo"}), encoding="utf-8")
    p = subprocess.run([sys.executable, str(CONVERT), "--data", str(bad), "--out", str(tmp_path / "c")],
                       capture_output=True, text=True)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr
    assert not (tmp_path / "c").exists()
