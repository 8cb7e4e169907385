"""Continue (VS Code / JetBrains extension and the ``cn`` CLI): one JSON
document per session, ``<global dir>/sessions/<sessionId>.json``, beside an
index ``sessions.json`` (harness-formats section 15; checked against
continuedev/continue ``core/index.d.ts``, ``core/util/history.ts`` and
``core/util/paths.ts``).

A session is ``{sessionId, title, workspaceDirectory, history: [{message,
contextItems, toolCallStates, …}]}``; ``message.role`` is user, assistant,
thinking, system or tool; assistant tool calls are OpenAI-shaped
(``toolCalls[].function.{name, arguments}``, arguments a JSON string) and
their results are ``tool`` messages. No message carries a time: the index's
``dateCreated`` (epoch ms as a string) dates the session, else the file's
mtime. Continue rewrites a session file in place on every change, so the file
is read whole each time and replaces that session.
"""

from __future__ import annotations

import os
from typing import Mapping

from deja.stages.sources.base import Message, ReadResult, SessionPart, SourceFile
from deja.stages.sources.dialect import Dialect, Turn, arguments, block_text, flags
from deja.stages.sources.jsonl import clip, file_uri_path, parse_ts, read_document, read_whole_document
from deja.stages.sources.locate import continue_files, continue_home

HARNESS = "continue"

# The extension's built-in tools (core/tools/builtIn.ts) and the CLI's (extensions/cli/src/tools).
DIALECT = Dialect(
    file_tools=frozenset(("read_file", "read_file_range", "edit_existing_file", "single_find_and_replace",
                          "multi_edit", "create_new_file", "Read", "Write", "Edit", "MultiEdit")),
    shell_tools=frozenset(("run_terminal_command", "Bash")),
    path_keys=("filepath", "file_path"),
    old_keys=("old_string",),
)
_UNTITLED = "New Session"  # core/util/constants.ts NEW_SESSION_TITLE
_index_cache: dict[str, tuple[tuple[int, int], dict]] = {}


def roots(env: Mapping[str, str]) -> list[str]:
    return [os.path.join(continue_home(env), "sessions")]


def discover(env: Mapping[str, str]) -> list[SourceFile]:
    return [SourceFile(p, HARNESS) for p in continue_files(env)]


def read(path: str, start: int = 0) -> ReadResult:
    return read_whole_document(path, start, _session, "continue")


def _session(path: str, doc, mtime: int) -> ReadResult:
    res = ReadResult()
    history = doc.get("history") if isinstance(doc, dict) else None
    if not isinstance(history, list):
        res.malformed, res.faults = 1, [(0, "not a Continue session (no history list)")]
        return res
    sid = doc.get("sessionId") if isinstance(doc.get("sessionId"), str) and doc.get("sessionId") else \
        os.path.basename(path)[:-len(".json")]
    meta = session_index(os.path.dirname(path)).get(sid, {})
    ts = parse_ts(meta.get("dateCreated")) or parse_ts(mtime)
    cwd = file_uri_path(doc.get("workspaceDirectory") or meta.get("workspaceDirectory") or "")
    part = SessionPart(harness=HARNESS, session_id=sid, cwd=cwd)
    title = doc.get("title") if isinstance(doc.get("title"), str) else meta.get("title")
    if isinstance(title, str) and title.strip() and title.strip() != _UNTITLED:
        part.title, part.title_rank = title.strip(), 1
    flag = flags()
    for n, item in enumerate(history):
        msg = item.get("message") if isinstance(item, dict) else None
        if not isinstance(msg, dict):
            res.malformed += 1
            continue
        role = msg.get("role")
        text = block_text(msg.get("content"))
        if role in ("user", "assistant") and text.strip():
            text, cut = clip(text)
            res.clipped += cut
            part.messages.append(Message(role, text, ts, byte_offset=n))
        elif role == "tool" and text.strip() and flag["TOOL_OUTPUT"]:
            part.messages.append(Message("tool-output", clip(text)[0], ts, byte_offset=n))
        if role == "assistant":
            turn = Turn(DIALECT, flag)
            calls = msg.get("toolCalls")
            if not isinstance(calls, list):  # older sessions kept them only in the call states
                states = item.get("toolCallStates")
                calls = [s.get("toolCall") for s in states if isinstance(s, dict)] if isinstance(states, list) else []
            for c in calls:
                fn = c.get("function") if isinstance(c, dict) else None
                if isinstance(fn, dict):
                    turn.call(fn.get("name"), arguments(fn.get("arguments")))
            part.messages.extend(turn.messages(ts, n))
    res.sessions = [part] if part.messages else []
    return res


def session_index(folder: str) -> dict:
    """sessionId → its ``sessions.json`` entry, re-read only when the index changed."""
    p = os.path.join(folder, "sessions.json")
    try:
        st = os.stat(p)
        key = (st.st_size, st.st_mtime_ns)
        hit = _index_cache.get(p)
        if hit and hit[0] == key:
            return hit[1]
        doc = read_document(p)
    except (OSError, ValueError):
        return {}
    out = {e["sessionId"]: e for e in doc if isinstance(e, dict) and isinstance(e.get("sessionId"), str)} \
        if isinstance(doc, list) else {}
    _index_cache[p] = (key, out)
    return out
