"""Amp (Sourcegraph): one JSON document per thread,
``${XDG_DATA_HOME:-~/.local/share}/amp/threads/<T-id>.json`` (harness-formats
section 15). Amp is closed source: the shape is from Amp's manual and
published third-party readers, not from Amp's own code.

A thread is ``{id, title, created (ms), messages: [{role, messageId, content:
[blocks], meta: {sentAt}}], env: {initial: {trees: [{uri: file://<cwd>}]}}}``.
Blocks are Anthropic-shaped: ``text``, ``thinking``, ``tool_use {id, name,
input}`` in assistant messages, ``tool_result {toolUseID, run: {status,
result}}`` in user messages. ``info`` messages (summaries) are not memory.
Amp rewrites the file in place: it is read whole each time and replaces that
thread.
"""

from __future__ import annotations

import os
from typing import Mapping

import orjson

from deja.stages.sources.base import Message, ReadResult, SessionPart, SourceFile
from deja.stages.sources.dialect import Dialect, Turn, block_text, flags
from deja.stages.sources.jsonl import clip, file_uri_path, parse_ts, read_whole_document
from deja.stages.sources.locate import amp_files, amp_home
from deja.stages.sources.values import Faults

HARNESS = "amp"

DIALECT = Dialect(
    file_tools=frozenset(("Read", "edit_file", "create_file", "undo_edit", "format_file")),
    shell_tools=frozenset(("Bash",)),
    path_keys=("path", "file_path"),
    old_keys=("old_str", "old_string"),
    command_keys=("cmd", "command"),
)
_FAILED = frozenset(("error", "cancelled", "rejected-by-user"))


def roots(env: Mapping[str, str]) -> list[str]:
    return [os.path.join(amp_home(env), "threads")]


def discover(env: Mapping[str, str]) -> list[SourceFile]:
    return [SourceFile(p, HARNESS) for p in amp_files(env)]


def read(path: str, start: int = 0) -> ReadResult:
    return read_whole_document(path, start, _thread, "amp")


def _cwd(doc: dict) -> str:
    env = doc.get("env")
    initial = env.get("initial") if isinstance(env, dict) else None
    if not isinstance(initial, dict):
        return ""
    if isinstance(initial.get("cwd"), str):
        return initial["cwd"]
    trees = initial.get("trees")
    for t in trees if isinstance(trees, list) else []:
        uri = t.get("uri") if isinstance(t, dict) else None
        if isinstance(uri, str) and uri:
            return file_uri_path(uri)
    return ""


def _result_text(run) -> str:
    if not isinstance(run, dict):
        return ""
    r = run.get("result")
    if isinstance(r, dict):
        r = r.get("output") if isinstance(r.get("output"), str) else orjson.dumps(r).decode()
    elif isinstance(r, list):
        r = block_text(r) or orjson.dumps(r).decode()
    return r if isinstance(r, str) else ""


def _thread(path: str, doc, mtime: int) -> ReadResult:
    res = ReadResult()
    messages = doc.get("messages") if isinstance(doc, dict) else None
    if not isinstance(messages, list):
        res.malformed, res.faults = 1, [(0, "not an Amp thread (no messages list)")]
        return res
    tid = doc.get("id") if isinstance(doc.get("id"), str) and doc.get("id") else os.path.basename(path)[:-5]
    part = SessionPart(harness=HARNESS, session_id=tid, cwd=_cwd(doc))
    if isinstance(doc.get("title"), str) and doc["title"].strip():
        part.title, part.title_rank = doc["title"].strip(), 1
    ts = parse_ts(doc.get("created")) or parse_ts(mtime)
    flag = flags()
    faults = Faults()
    for n, msg in enumerate(messages):
        if not isinstance(msg, dict):
            res.malformed += 1
            continue
        role = msg.get("role")
        if role not in ("user", "assistant"):
            continue  # info: summaries and notices Amp wrote, not said by anyone
        meta = msg.get("meta")
        ts = (parse_ts(meta.get("sentAt")) if isinstance(meta, dict) else None) or ts
        content = msg.get("content")
        text = block_text(content)
        if text.strip():
            text, cut = clip(text)
            res.clipped += cut
            part.messages.append(Message(role, text, ts, byte_offset=n))
        turn = Turn(DIALECT, flag)
        for b in content if isinstance(content, list) else []:
            if not isinstance(b, dict):
                continue
            if b.get("type") == "tool_use":
                turn.call(b.get("name"), b.get("input"))
            elif b.get("type") == "tool_result" and flag["TOOL_OUTPUT"]:
                run = b.get("run")
                out = _result_text(run)
                if out.strip():
                    failed = isinstance(run, dict) and faults.text(n, "status", run.get("status")) in _FAILED
                    part.messages.append(Message("tool-output", clip(out)[0], ts, is_error=failed or None,
                                                 byte_offset=n))
        part.messages.extend(turn.messages(ts, n))
    res.malformed += faults.count
    res.faults = faults.first
    res.sessions = [part] if part.messages else []
    return res
