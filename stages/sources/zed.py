"""Zed's agent threads, ``<Zed data dir>/threads/threads.db`` (harness-formats
section 14 "Zed"; the schema checked against zed-industries/zed
``crates/agent/src/db.rs``).

``threads(id, summary, updated_at, data_type, data, parent_id?,
folder_paths?, folder_paths_order?, created_at?)``: the last four came with
migrations, so they are probed. ``data`` is the thread document, one zstd
frame when ``data_type`` is ``zstd`` (how Zed writes it now), plain JSON when
``json``. Document ``0.3.0``: ``messages`` of ``{"User": {content: [{"Text"}
| {"Mention": {content}}]}}``, ``{"Agent": {content: [{"Text"}, {"Thinking"},
{"ToolUse": {name, input}}], tool_results}}`` or ``"Resume"``; the older
document has ``{role, segments: [{type, text}]}`` messages. Thinking, images
and ``Resume`` are left out.

No per-message time: every message gets the thread's ``created_at`` (else
``updated_at``). The cwd is the first of ``folder_paths`` (else the
document's first worktree). A thread with ``parent_id`` is a subagent.
Work records: the dialect of harness-formats 1.2 (``terminal`` runs
``command``; file tools name ``path``/``paths``); Zed's ``edit_file`` carries
no old text, so no ``edit`` records. A thread whose body does not decode (a
zstd frame cut short, JSON of another shape) costs that thread: counted in
``malformed``, the rest of the store is read. No resume command (an editor).

Read through ``sqlite_store``: a snapshot of the database, never the live file.
"""

from __future__ import annotations

import os
from typing import Mapping

import orjson

from deja.stages import work_records as work
from deja.stages.sources import sqlite_store
from deja.stages.sources.base import Message, ReadResult, SessionPart, SourceFile
from deja.stages.sources.jsonl import clip, speech, parse_ts
from deja.stages.sources.locate import include_subagents, zed_db, zed_files
from deja.stages.sources.values import Faults

HARNESS = "zed"
_FILE_TOOLS = frozenset(("edit_file", "read_file", "create_directory", "delete_path", "move_path", "copy_path",
                         "open", "diagnostics", "save_file", "restore_file_from_disk"))
_PATH_KEYS = ("path", "source_path", "destination_path")
_MAX_BODY = 256 << 20  # a decompressed thread larger than this is not a chat: refuse, not exhaust memory


def roots(env: Mapping[str, str]) -> list[str]:
    return [zed_db(env)]


def discover(env: Mapping[str, str]) -> list[SourceFile]:
    return [SourceFile(p, HARNESS) for p in zed_files(env)]


def read(path: str, start: int = 0) -> ReadResult:
    return sqlite_store.read_store(path, _read, "zed")


def _read(snap) -> ReadResult:
    res = ReadResult()
    if "threads" not in snap.tables():
        return ReadResult(error="schema changed: no threads table (Zed store of another version)")
    cols = snap.columns("threads")
    if not {"id", "data_type", "data"} <= cols:
        return ReadResult(error="schema changed: threads has no id/data_type/data (Zed store of another version)")
    want = ("id", "summary", "updated_at", "data_type", "data", "parent_id", "folder_paths", "created_at")
    pick = ", ".join(c if c in cols else f"NULL AS {c}" for c in want)
    with_sub = include_subagents(os.environ)
    faults = Faults()
    for n, (tid, summary, updated, dtype, data, parent, folders, created) in enumerate(
            snap.rows(f"SELECT {pick} FROM threads ORDER BY id")):
        snap.check()
        if not isinstance(tid, str):
            res.malformed += 1
            continue
        if isinstance(parent, str) and parent and not with_sub:
            continue
        doc = _body(dtype, data)
        if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
            faults.note(n, f"thread {tid}: body does not decode ({dtype})")
            continue
        ts = parse_ts(created) or parse_ts(updated) or parse_ts(doc.get("updated_at"))
        part = SessionPart(harness=HARNESS, session_id=tid, cwd=_cwd(folders, doc))
        title = summary if isinstance(summary, str) and summary.strip() else doc.get("title") or doc.get("summary")
        if isinstance(title, str) and title.strip():
            part.title, part.title_rank = title.strip(), 1
        if isinstance(parent, str) and parent:
            part.kind, part.parent, part.spawned = "subagent", parent, True
        for i, msg in enumerate(doc["messages"]):
            part.messages.extend(_message(msg, ts, i, res, faults))
        if part.messages:
            res.sessions.append(part)
    res.malformed += faults.count
    res.faults = faults.first
    return res


def _body(dtype, data):
    """The thread document, or None when it does not decode."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    if not isinstance(data, (bytes, bytearray, memoryview)):
        return None
    data = bytes(data)
    if dtype == "zstd":
        import zstandard  # imported here: only a Zed store pays for it

        try:
            # a frame without its size in the header still decodes (stream reader); a cut
            # frame raises ZstdError, never returns half a document
            with zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=False) as r:
                data = r.read(_MAX_BODY + 1)
        except zstandard.ZstdError:
            return None
        if len(data) > _MAX_BODY:
            return None
    elif dtype != "json":
        return None
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return None


def _cwd(folders, doc: dict) -> str:
    if isinstance(folders, str):
        first = next((line.strip() for line in folders.splitlines() if line.strip()), "")
        if first:
            return first
    snap = doc.get("initial_project_snapshot")
    trees = snap.get("worktree_snapshots") if isinstance(snap, dict) else None
    if isinstance(trees, list) and trees and isinstance(trees[0], dict):
        p = trees[0].get("worktree_path")
        if isinstance(p, str):
            return p
    return ""


def _message(msg, ts, at: int, res: ReadResult, faults: Faults) -> list[Message]:
    if not isinstance(msg, dict):
        return []  # "Resume", or a shape this reader does not know
    if "role" in msg:  # the older document
        role = msg.get("role")
        if role not in ("user", "assistant"):
            return []
        segs = msg.get("segments") if isinstance(msg.get("segments"), list) else []
        texts = [s["text"] for s in segs if isinstance(s, dict) and s.get("type") == "text"
                 and isinstance(s.get("text"), str)]
        return speech(role, texts, ts, at, res)
    if isinstance(msg.get("User"), dict):
        texts = []
        for c in faults.items(at, f"message {at} content", msg["User"].get("content")):
            if isinstance(c, dict) and isinstance(c.get("Text"), str):
                texts.append(c["Text"])
            elif isinstance(c, dict) and isinstance(c.get("Mention"), dict):
                m = c["Mention"].get("content")
                if isinstance(m, str):
                    texts.append(m)
        return speech("user", texts, ts, at, res)
    if isinstance(msg.get("Agent"), dict):
        agent = msg["Agent"]
        texts, paths, work_msgs = [], [], []
        flags = {f: work.enabled(f) for f in ("PATHS", "COMMANDS", "TOOL_OUTPUT")}
        for c in faults.items(at, f"message {at} content", agent.get("content")):
            if isinstance(c, dict) and isinstance(c.get("Text"), str):
                texts.append(c["Text"])
            elif isinstance(c, dict) and isinstance(c.get("ToolUse"), dict):
                work_msgs.extend(_tool(c["ToolUse"], ts, at, flags, paths))
        if flags["TOOL_OUTPUT"]:
            work_msgs.extend(_results(agent.get("tool_results"), ts, at))
        out = speech("assistant", texts, ts, at, res) + work_msgs
        files = work.files_record(paths) if flags["PATHS"] else None
        if files:
            out.append(Message("files", files, ts, byte_offset=at))
        return out
    return []


def _tool(use: dict, ts, at: int, flags: dict, paths: list[str]) -> list[Message]:
    name, args = use.get("name"), use.get("input")
    if not isinstance(name, str) or not isinstance(args, dict):
        return []
    if name == "terminal" and isinstance(args.get("command"), str):
        rec = work.command_record(args["command"]) if flags["COMMANDS"] else None
        return [Message("command", rec, ts, tool=name, byte_offset=at)] if rec else []
    if name in _FILE_TOOLS:
        paths.extend(args[k] for k in _PATH_KEYS if isinstance(args.get(k), str) and args[k])
        if isinstance(args.get("paths"), list):
            paths.extend(p for p in args["paths"] if isinstance(p, str) and p)
    return []


def _results(results, ts, at: int) -> list[Message]:
    """``tool_results``: ``{id: {tool_name, is_error, content: {"Text": …} | [..]}}``."""
    if not isinstance(results, dict):
        return []
    out = []
    for r in results.values():
        if not isinstance(r, dict):
            continue
        content = r.get("content")
        items = content if isinstance(content, list) else [content]
        text = "\n".join(c["Text"] for c in items if isinstance(c, dict) and isinstance(c.get("Text"), str))
        if text.strip():
            out.append(Message("tool-output", clip(text)[0], ts, tool=r.get("tool_name") if isinstance(
                r.get("tool_name"), str) else None, is_error=bool(r.get("is_error")), byte_offset=at))
    return out
