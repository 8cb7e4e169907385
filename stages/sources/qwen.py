"""Qwen Code chats (harness-formats §9 and "Seen in real published
transcripts → Qwen Code"). Qwen Code is a fork of Gemini CLI: what the two
share is in ``gemini_chat``.

* ``~/.qwen/projects/<encoded cwd>/chats/<sessionId>.jsonl``: one line per
  event, each with ``sessionId``, ``timestamp``, ``type``, ``cwd`` and
  ``gitBranch``. ``user`` and ``assistant`` lines hold ``message: {role,
  parts}``; tool output is only on ``tool_result`` lines (``functionResponse``
  parts, with ``toolCallResult.status``); ``system`` lines (telemetry, slash
  commands) are not conversation, but a ``custom_title`` one names the session
  (``systemPayload: {customTitle, titleSource: manual|auto}``, written by
  ``/rename`` and by Qwen's own titling). Append-only: read from the last offset.
* the older ``~/.qwen/tmp/<sha256 of the cwd>/chats/session-*.json``: Gemini's
  whole-document conversation record with assistant ``type`` ``"qwen"``;
  read whole every time it changes (``safe_offset`` 0). Its project is where
  the store records the folder (``gemini_chat.recorded_cwd``), else the hash.

A command's exit code is on its ``tool_result`` line, after the call; as
with Claude Code, a read that ends between the two records the command
without it (holding the call back could hold a crashed session's last turn
back for good).
"""

from __future__ import annotations

import os
from typing import Mapping

from deja.stages.sources import gemini
from deja.stages.sources import gemini_chat as chat
from deja.stages.sources.base import ReadResult, SessionPart, SourceFile
from deja.stages.sources.jsonl import Lines, is_regular_file
from deja.stages.sources.locate import qwen_files, qwen_home

HARNESS = "qwen"


def roots(env: Mapping[str, str]) -> list[str]:
    return [qwen_home(env)]


def discover(env: Mapping[str, str]) -> list[SourceFile]:
    return [SourceFile(p, HARNESS) for p in qwen_files(env)]


def read(path: str, start: int = 0) -> ReadResult:
    if not is_regular_file(path):
        return ReadResult(safe_offset=start, error=f"not a readable regular file: {path}")
    try:
        if path.endswith(".jsonl"):
            return _read_jsonl(path, start)
        res = gemini.read(path)  # the document forms are Gemini's own
        for part in res.sessions:
            part.harness = HARNESS
        return res
    except OSError as exc:
        return ReadResult(safe_offset=start, error=f"{type(exc).__name__}: {exc.strerror or exc}")
    except Exception as exc:  # one bad file costs that file, never the run
        return ReadResult(safe_offset=start, error=f"qwen reader failed: {type(exc).__name__}: {exc}")


def _title(payload, best: tuple[str, int]) -> tuple[str, int]:
    """A ``custom_title`` line's title over ``best``: the person's (``/rename``,
    ``manual``) over Qwen's own (``auto``), a later one over an earlier of its
    kind. Qwen writes the line again as the file grows and at exit, so the last
    of each kind is the one in force; a later read's title wins on the same
    terms where sessions are merged (``title_rank``)."""
    if not isinstance(payload, dict) or not isinstance(payload.get("customTitle"), str):
        return best
    text = payload["customTitle"].strip()
    rank = 2 if payload.get("titleSource") == "manual" else 1
    return (text, rank) if text and rank >= best[1] else best


def _read_jsonl(path: str, start: int) -> ReadResult:
    lines = Lines(path, start)
    sid = os.path.splitext(os.path.basename(path))[0]
    cwd = branch = ""
    title = ("", 0)
    turns = chat.Turns(faults=lines.faults)
    bad = 0
    for offset, obj in lines:
        try:
            if isinstance(obj.get("sessionId"), str) and obj["sessionId"]:
                sid = obj["sessionId"]
            if isinstance(obj.get("cwd"), str) and obj["cwd"] and obj["cwd"] != cwd:
                cwd = turns.cwd = obj["cwd"]
            if isinstance(obj.get("gitBranch"), str):
                branch = obj["gitBranch"]
            kind = obj.get("type")
            if kind == "system" and obj.get("subtype") == "custom_title":
                title = _title(obj.get("systemPayload"), title)
                continue
            msg = obj.get("message")
            if kind not in ("user", "assistant", "tool_result") or not isinstance(msg, dict):
                continue
            ts = obj.get("timestamp")
            if kind == "tool_result":
                result = obj.get("toolCallResult")
                failed = isinstance(result, dict) and result.get("status") == "error"
                turns.content("tool", msg.get("parts"), ts, offset, failed)
            else:
                turns.content("user" if kind == "user" else "assistant", msg.get("parts"), ts, offset)
        except Exception as exc:  # one bad line costs that line only
            bad += 1
            lines.failed(offset, exc)
    sessions = []
    if turns.out or title[1] or start == 0:
        sessions.append(SessionPart(harness=HARNESS, session_id=sid, cwd=cwd, branch=branch, messages=turns.out,
                                    title=title[0], title_rank=title[1]))
    return ReadResult(sessions=sessions, safe_offset=lines.end, malformed=lines.malformed + lines.faults.count + bad,
                      faults=lines.faults.first, clipped=turns.clipped)
