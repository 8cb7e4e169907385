"""Grok Build: ``${GROK_HOME:-~/.grok}/sessions/<url-encoded cwd>/<id>/updates.jsonl``
with ``summary.json`` beside it (harness-formats section 14 "Grok Build";
built to the reference, no real transcript seen).

``updates.jsonl`` lines are ACP notifications ``{timestamp, params: {update:
{sessionUpdate, content, title, kind, _meta: {promptIndex}}, _meta:
{promptId}}}``: ``user_message_chunk`` is the person (chunks of one
``promptIndex`` joined), ``agent_message_chunk`` the agent (chunks of one
``promptId`` joined), ``tool_call``/``tool_call_update`` tool output (its
text blocks, else ``kind: title``). ``summary.json`` gives the id, cwd, the
title (``generated_title``, else ``session_summary``) and, for a subagent,
its parent edge (``session_kind``, ``parent_session_id``, ``agent_name``),
kept only with DEJA_INCLUDE_SUBAGENTS=1. The cwd is also the group folder's
name, url-encoded. Grok rewinds by truncating the file: the pipeline's prefix
hash re-reads it whole then. No resume command.

The separate grok CLI's ``~/.grok/grok.db`` (``DEJA_GROK_DB``) is read by
``grok_db``.
"""

from __future__ import annotations

import os
from typing import Mapping
from urllib.parse import unquote

import orjson

from deja.stages.sources.base import Message, ReadResult, SessionPart, SourceFile
from deja.stages.sources.jsonl import Lines, clip, read_guarded
from deja.stages.sources.locate import grok_db, grok_files, grok_home
from deja.stages import work_records as work

HARNESS = "grok"
_KINDS = {"user_message_chunk": "user", "agent_message_chunk": "assistant",
          "tool_call": "tool-output", "tool_call_update": "tool-output"}


def roots(env: Mapping[str, str]) -> list[str]:
    return [os.path.join(grok_home(env), "sessions"), grok_db(env)]


def discover(env: Mapping[str, str]) -> list[SourceFile]:
    return [SourceFile(p, HARNESS) for p in grok_files(env)]


def read(path: str, start: int = 0) -> ReadResult:
    if path.endswith(".db"):
        from deja.stages.sources import grok_db as store

        return store.read(path)
    return read_guarded(path, start, _read, "grok")


def _read(path: str, start: int) -> ReadResult:
    folder = os.path.dirname(path)
    part = SessionPart(harness=HARNESS, session_id=os.path.basename(folder),
                       cwd=unquote(os.path.basename(os.path.dirname(folder))))
    _summary(os.path.join(folder, "summary.json"), part)
    tool_output = work.enabled("TOOL_OUTPUT")
    lines = Lines(path, start)
    last_key = None
    for offset, obj in lines:
        params = obj.get("params")
        update = params.get("update") if isinstance(params, dict) else None
        if not isinstance(update, dict):
            continue
        role = _KINDS.get(lines.faults.text(offset, "sessionUpdate", update.get("sessionUpdate")))
        if role is None or (role == "tool-output" and not tool_output):
            continue
        text = _text(update)
        if not text:
            continue
        ts = obj.get("timestamp")  # (Lines turned it into epoch ms)
        meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
        umeta = update.get("_meta") if isinstance(update.get("_meta"), dict) else {}
        key = ((role, umeta.get("promptIndex")) if role == "user" else
               (role, meta.get("promptId")) if role == "assistant" else None)
        if key is not None and key[1] is not None and key == last_key and part.messages:
            prev = part.messages[-1]
            prev.text = clip(prev.text + text)[0]
        else:
            part.messages.append(Message(role, clip(text)[0], ts, tool=update.get("kind") if role == "tool-output"
                                         and isinstance(update.get("kind"), str) else None, byte_offset=offset))
        last_key = key
    res = ReadResult(safe_offset=lines.end, malformed=lines.malformed + lines.faults.count,
                     faults=lines.faults.first)
    if part.messages:
        res.sessions = [part]
    return res


def _summary(path: str, part: SessionPart) -> None:
    try:
        with open(path, "rb") as fh:
            doc = orjson.loads(fh.read())
    except (OSError, orjson.JSONDecodeError):
        return
    if not isinstance(doc, dict):
        return
    info = doc.get("info") if isinstance(doc.get("info"), dict) else {}
    if isinstance(info.get("id"), str) and info["id"]:
        part.session_id = info["id"]
    if isinstance(info.get("cwd"), str) and info["cwd"]:
        part.cwd = info["cwd"]
    for key in ("generated_title", "session_summary"):
        if isinstance(doc.get(key), str) and doc[key].strip():
            part.title, part.title_rank = doc[key].strip(), 1
            break
    kind = doc.get("session_kind")
    if kind in ("subagent", "subagent_fork"):
        part.kind, part.spawned = kind, True
        part.parent = doc.get("parent_session_id") if isinstance(doc.get("parent_session_id"), str) else ""
        part.agent = doc.get("agent_name") if isinstance(doc.get("agent_name"), str) else ""


def _text(update: dict) -> str:
    content = update.get("content")
    texts: list[str] = []
    for block in content if isinstance(content, list) else [content]:
        if not isinstance(block, dict):
            continue
        inner = block.get("content") if block.get("type") == "content" else block
        if isinstance(inner, dict) and inner.get("type") == "text" and isinstance(inner.get("text"), str):
            texts.append(inner["text"])
    text = "".join(texts) if update.get("sessionUpdate", "").endswith("_chunk") else "\n".join(texts)
    if not text.strip() and update.get("sessionUpdate", "").startswith("tool_call"):
        kind, title = update.get("kind"), update.get("title")
        if isinstance(title, str) and title:
            text = f"{kind}: {title}" if isinstance(kind, str) and kind else title
    return text
