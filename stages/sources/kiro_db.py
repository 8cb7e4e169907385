"""The Kiro CLI's SQLite store, ``<local data dir>/kiro-cli/data.sqlite3``
(``~/.local/share`` on Linux, ``~/Library/Application Support`` on macOS),
and the same store of its predecessor, Amazon Q Developer CLI
(``…/amazon-q/data.sqlite3``). The schema is checked against
aws/amazon-q-developer-cli (``crates/chat-cli/src/database``: migrations
``007_conversations_table``/``008_multiple_conversations_per_path``, and
``cli/chat/conversation.rs``, ``message.rs``).

``conversations_v2(key, conversation_id, value, created_at, updated_at)``:
``key`` the folder the chat ran in, times epoch ms, ``value`` the whole
``ConversationState`` as JSON, rewritten after every turn. Older stores have
``conversations(key, value)``, one chat per folder. ``history`` is a list of
``{user, assistant, request_metadata}``:

* ``user.content`` is one of ``{"Prompt": {prompt}}`` (what the person typed),
  ``{"ToolUseResults": {tool_use_results}}`` or ``{"CancelledToolUses":
  {prompt?, tool_use_results}}``; a result is ``{tool_use_id, content:
  [{"Text": s} | {"Json": v}], status: "Success" | "Error"}``;
  ``user.timestamp`` is RFC 3339 (absent on tool results).
* ``assistant`` is ``{"Response": {content}}`` or ``{"ToolUse": {content,
  tool_uses: [{name, args}]}}``; its time is the entry's
  ``request_metadata.stream_end_timestamp_ms`` when recorded.

Tool calls go through Kiro's dialect (stages/sources/kiro.py). Read through
``sqlite_store``: a snapshot, never the live file (it also holds the CLI's
sign-in state, which is never read).
"""

from __future__ import annotations

import orjson

from deja.stages.sources import sqlite_store
from deja.stages.sources.base import Message, ReadResult, SessionPart
from deja.stages.sources.dialect import Turn, flags
from deja.stages.sources.jsonl import clip, parse_ts
from deja.stages.sources.kiro import DIALECT, call

HARNESS = "kiro"


def read(path: str) -> ReadResult:
    return sqlite_store.read_store(path, _read, "kiro")


def _read(snap) -> ReadResult:
    res = ReadResult()
    tables = snap.tables()
    if "conversations_v2" in tables:
        cols = snap.columns("conversations_v2")
        pick = ", ".join(c if c in cols else f"NULL AS {c}"
                         for c in ("key", "conversation_id", "value", "created_at", "updated_at"))
        rows = snap.rows(f"SELECT {pick} FROM conversations_v2 ORDER BY created_at, rowid")
    elif "conversations" in tables:
        rows = snap.rows("SELECT key, NULL, value, NULL, NULL FROM conversations ORDER BY rowid")
    else:
        return ReadResult(error="schema changed: no conversations table (Kiro CLI store of another version)")
    flag = flags()
    for n, (key, cid, raw, created, updated) in enumerate(rows):
        snap.check()
        try:
            state = orjson.loads(raw)
        except (orjson.JSONDecodeError, TypeError):
            res.malformed += 1
            continue
        history = state.get("history") if isinstance(state, dict) else None
        sid = cid if isinstance(cid, str) and cid else state.get("conversation_id") if isinstance(state, dict) else None
        if not isinstance(history, list) or not isinstance(sid, str) or not sid:
            res.malformed += 1
            continue
        part = SessionPart(harness=HARNESS, session_id=sid, cwd=key if isinstance(key, str) else "")
        ts = parse_ts(created) or parse_ts(updated)
        for entry in history:
            if isinstance(entry, list) and len(entry) >= 2:  # (user, assistant) pairs, as some versions wrote
                entry = {"user": entry[0], "assistant": entry[1]}
            if not isinstance(entry, dict):
                res.malformed += 1
                continue
            ts = _entry(entry, ts, n, part, flag, res)
        if part.messages:
            res.sessions.append(part)
    return res


def _entry(entry: dict, ts, at: int, part: SessionPart, flag: dict, res: ReadResult):
    """One user/assistant exchange into ``part``; returns the time it ended."""
    user = entry.get("user") if isinstance(entry.get("user"), dict) else {}
    ts = parse_ts(user.get("timestamp")) or ts
    if not part.cwd:
        env = (user.get("env_context") or {}).get("env_state") if isinstance(user.get("env_context"), dict) else None
        cwd = env.get("current_working_directory") if isinstance(env, dict) else None
        part.cwd = cwd if isinstance(cwd, str) else ""
    content = user.get("content") if isinstance(user.get("content"), dict) else {}
    for kind, body in content.items():
        if not isinstance(body, dict):
            continue
        prompt = body.get("prompt")
        if kind in ("Prompt", "CancelledToolUses") and isinstance(prompt, str) and prompt.strip():
            text, cut = clip(prompt.strip())
            res.clipped += cut
            part.messages.append(Message("user", text, ts, byte_offset=at))
        results = body.get("tool_use_results")
        for r in results if isinstance(results, list) and flag["TOOL_OUTPUT"] else []:
            text = _result_text(r.get("content")) if isinstance(r, dict) else ""
            if text.strip():
                part.messages.append(Message("tool-output", clip(text)[0], ts, is_error=r.get("status") == "Error",
                                             byte_offset=at))
    meta = entry.get("request_metadata") if isinstance(entry.get("request_metadata"), dict) else {}
    ts = parse_ts(meta.get("stream_end_timestamp_ms")) or ts
    assistant = entry.get("assistant") if isinstance(entry.get("assistant"), dict) else {}
    for body in assistant.values():
        if not isinstance(body, dict):
            continue
        if isinstance(body.get("content"), str) and body["content"].strip():
            text, cut = clip(body["content"].strip())
            res.clipped += cut
            part.messages.append(Message("assistant", text, ts, byte_offset=at))
        turn = Turn(DIALECT, flag)
        uses = body.get("tool_uses")
        for use in uses if isinstance(uses, list) else []:
            if isinstance(use, dict):
                call(turn, use.get("name"), use.get("args") if isinstance(use.get("args"), dict) else use.get("orig_args"))
        part.messages.extend(turn.messages(ts, at))
    return ts


def _result_text(blocks) -> str:
    out = []
    for b in blocks if isinstance(blocks, list) else []:
        if not isinstance(b, dict):
            continue
        if isinstance(b.get("Text"), str):
            out.append(b["Text"])
        elif "Json" in b and b["Json"] is not None:
            out.append(orjson.dumps(b["Json"]).decode())
    return "\n".join(t for t in out if t.strip())
