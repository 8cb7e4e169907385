#!/usr/bin/env python3
"""LoCoMo (a public benchmark of long multi-session conversations) as a corpus score.py can run:

    python bench/quality/locomo.py --data locomo10.json --out /tmp/deja-locomo
    python bench/quality/score.py --corpus /tmp/deja-locomo [--embed]

LoCoMo (Maharana et al., 2024, https://snap-research.github.io/locomo/) is ten conversations
between two people, each of 19 to 32 sessions held weeks apart, with questions whose evidence
names the turns that answer them. Its data is not ours to ship (CC BY-NC 4.0): fetch
`locomo10.json` (the file with `qa`, `conversation` and `sample_id` per conversation; the
LoCoMo repository and several memory projects' evaluation folders carry it) and point --data
at it.

Each LoCoMo session becomes one Claude Code session, laid out as the real store is
(`claude/projects/<encoded-cwd>/<uuid>.jsonl`, one project per conversation): the first
speaker's turns are the user's, the second's the assistant's, each turn prefixed by its
speaker's name (the questions name people), a shared photo as its caption. Timestamps are the
session's date, a minute a turn. Every question with evidence becomes a line of
questions.jsonl whose answer sessions are the sessions its evidence turns are in; its kind is
LoCoMo's category: single-hop, multi-hop, temporal, open-domain (the adversarial category,
questions with no answer in the conversation, is left out: there is no session to find).
Same input, same bytes.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import sys
import uuid

KINDS = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}  # 5: adversarial, unanswerable
NAMESPACE = uuid.UUID("5d0c2a3e-6f1b-4c59-9a51-0c0ca1e0b0a5")
VERSION = "2.1.7"


def when(text: str) -> dt.datetime:
    """'1:56 pm on 8 May, 2023' → an aware datetime (UTC: the benchmark gives no zone)."""
    return dt.datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=dt.timezone.utc)


def iso(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def turn_text(turn: dict) -> str:
    text = (turn.get("text") or "").strip()
    caption = (turn.get("blip_caption") or "").strip()
    if caption:
        text = f"{text} [shares a photo of {caption}]".strip()
    return f"{turn['speaker']}: {text}"


def session_lines(sid: str, cwd: str, start: dt.datetime, turns: list[dict], first: str) -> list[dict]:
    """One session's Claude Code lines: user and assistant messages chained by parentUuid."""
    out, parent, t = [], None, start
    for i, turn in enumerate(turns):
        u = str(uuid.uuid5(NAMESPACE, f"{sid}:{i}"))
        base = {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": cwd, "sessionId": sid,
                "version": VERSION, "gitBranch": "main", "uuid": u, "timestamp": iso(t)}
        if turn["speaker"] == first:
            base.update({"type": "user", "message": {"role": "user", "content": turn_text(turn)}})
        else:
            base.update({"type": "assistant", "message": {
                "model": "claude-sonnet-4-5", "id": "msg_" + u.replace("-", "")[:24], "type": "message",
                "role": "assistant", "content": [{"type": "text", "text": turn_text(turn)}],
                "stop_reason": "end_turn", "stop_sequence": None}})
        out.append(base)
        parent = u
        t += dt.timedelta(minutes=1)
    return out


def convert(data: list[dict], out: str) -> tuple[int, int]:
    sessions_out, questions_out = [], []
    for conv in data:
        name = str(conv.get("sample_id") or f"conv-{len(sessions_out)}")
        c = conv["conversation"]
        first = c["speaker_a"]
        cwd = f"/home/dev/chats/{name}"
        folder = os.path.join(out, "claude", "projects", re.sub(r"[^A-Za-z0-9]", "-", cwd))
        os.makedirs(folder, exist_ok=True)
        sid_of = {}
        for key in sorted((k for k in c if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k.split("_")[1])):
            turns = c[key]
            if not turns:
                continue
            n = int(key.split("_")[1])
            sid = str(uuid.uuid5(NAMESPACE, f"{name}:{n}"))
            sid_of[n] = sid
            lines = session_lines(sid, cwd, when(c[f"{key}_date_time"]), turns, first)
            path = os.path.join(folder, f"{sid}.jsonl")
            with open(path, "w", encoding="utf-8") as f:
                for d in lines:
                    f.write(json.dumps(d, ensure_ascii=False) + "\n")
            last = when(c[f"{key}_date_time"]) + dt.timedelta(minutes=len(turns))
            os.utime(path, (last.timestamp(), last.timestamp()))
            sessions_out.append({"id": sid, "harness": "claude", "project": name, "cwd": cwd,
                                 "path": os.path.relpath(path, out), "title": f"{name} session {n}",
                                 "role": "answer", "lang": "en", "messages": len(turns)})
        for i, q in enumerate(conv.get("qa") or []):
            kind = KINDS.get(q.get("category"))
            found = {int(m) for e in q.get("evidence") or [] for m in re.findall(r"D(\d+):\d+", str(e))}
            answers = sorted({sid_of[n] for n in found if n in sid_of})
            if kind is None or not answers or not str(q.get("question") or "").strip():
                continue
            questions_out.append({"id": f"{name}.{i}", "query": q["question"].strip(), "kind": kind,
                                  "answer_sessions": answers, "scenario": name, "lang": "en"})
    for fname, rows in (("sessions.jsonl", sessions_out), ("questions.jsonl", questions_out)):
        with open(os.path.join(out, fname), "w", encoding="utf-8") as f:
            for r in rows:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
    return len(sessions_out), len(questions_out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="LoCoMo's locomo10.json")
    ap.add_argument("--out", required=True, help="directory to write the corpus into (must be empty or absent)")
    args = ap.parse_args(argv)
    try:
        with open(args.data, encoding="utf-8") as f:
            data = json.load(f)
        if not isinstance(data, list) or not all(isinstance(c, dict) and "conversation" in c for c in data):
            raise ValueError("not LoCoMo's locomo10.json (a list of conversations with 'conversation' and 'qa')")
    except (OSError, ValueError) as exc:
        print(f"locomo.py: {args.data}: {exc}", file=sys.stderr)
        return 2
    if os.path.isdir(args.out) and os.listdir(args.out):
        print(f"locomo.py: {args.out} is not empty", file=sys.stderr)
        return 2
    n_sessions, n_questions = convert(data, args.out)
    print(f"{n_sessions} sessions, {n_questions} questions → {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
