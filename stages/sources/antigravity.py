"""Google Antigravity: one JSONL transcript per conversation,
``~/.gemini/antigravity*/brain/<conversationId>/.system_generated/logs/transcript.jsonl``
(harness-formats section 14 "Antigravity"; built to the reference, no real
transcript seen).

A line is ``{source, type, created_at, content}``. ``USER_EXPLICIT`` is the
person (an outer ``<USER_REQUEST>`` unwrapped, ``<ADDITIONAL_METADATA>`` and
``<USER_SETTINGS_CHANGE>`` blocks dropped); ``MODEL`` with ``type``
``PLANNER_RESPONSE`` (or none) is the agent speaking. Other ``MODEL`` rows are
steps: ``RUN_COMMAND``/``GENERIC`` name their command on a ``Task
Description:`` line, ``VIEW_FILE``/``CODE_ACTION``/``LIST_DIRECTORY`` a file
(``File Path:``, ``Created file``, ``Edited file``, ``Modified file``, often a
``file://`` URI in backticks); the rest of a step's body is tool output.

Project: the IDE's ``cache/conversation_metadata.json``
(``conversations[<id>].summary.WorkspaceURIs``), else the CLI's
``cache/last_conversations.json`` (``{workspace: conversationId}``), else the
folder the session's absolute file paths share. The file is re-read whole
each time it changes (``safe_offset`` 0).
"""

from __future__ import annotations

import os
import re
from typing import Mapping
from urllib.parse import unquote, urlparse

import orjson

from deja.stages import work_records as work
from deja.stages.sources.base import Message, ReadResult, SessionPart, SourceFile
from deja.stages.sources.jsonl import Lines, clip, is_regular_file, parse_ts
from deja.stages.sources.locate import antigravity_files, antigravity_roots

HARNESS = "antigravity"

_REQUEST = re.compile(r"^\s*<USER_REQUEST>\s*(.*?)\s*</USER_REQUEST>\s*", re.S)
_DROP = re.compile(r"<(ADDITIONAL_METADATA|USER_SETTINGS_CHANGE)>.*?</\1>\s*", re.S)
_TASK = re.compile(r"^\s*Task Description:\s*(.+?)\s*$", re.M)
_FILE = re.compile(r"^\s*(?:File Path:|Created file|Edited file|Modified file)\s*:?\s*`?([^`\n]+?)`?\s*$", re.M)
_STAMPS = re.compile(r"^(?:\s*(?:Created At|Completed At):[^\n]*\n?)+")
_COMMAND_STEPS = frozenset(("RUN_COMMAND", "GENERIC"))
_FILE_STEPS = frozenset(("VIEW_FILE", "CODE_ACTION", "LIST_DIRECTORY"))


def roots(env: Mapping[str, str]) -> list[str]:
    return antigravity_roots(env) or [os.path.join(env.get("HOME") or os.path.expanduser("~"), ".gemini", "antigravity")]


def discover(env: Mapping[str, str]) -> list[SourceFile]:
    return [SourceFile(p, HARNESS) for p in antigravity_files(env)]


def conversation_of(path: str) -> tuple[str, str]:
    """(conversation id, the versioned root) of a transcript path."""
    conv = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(path))))
    return os.path.basename(conv), os.path.dirname(os.path.dirname(conv))


def read(path: str, start: int = 0) -> ReadResult:
    if not is_regular_file(path):
        return ReadResult(error=f"not a readable regular file: {path}")
    try:
        return _read(path)
    except OSError as exc:
        return ReadResult(error=f"{type(exc).__name__}: {exc}")
    except Exception as exc:  # one bad file costs that file, never the run
        return ReadResult(error=f"antigravity reader failed: {type(exc).__name__}: {exc}")


def _read(path: str) -> ReadResult:
    sid, root = conversation_of(path)
    lines = Lines(path, 0)
    flags = {f: work.enabled(f) for f in ("PATHS", "COMMANDS", "EDITS", "TOOL_OUTPUT")}
    messages: list[Message] = []
    all_paths: list[str] = []
    res = ReadResult()
    for offset, obj in lines:
        source, content = obj.get("source"), obj.get("content")
        if not isinstance(content, str) or not content.strip():
            continue
        kind = lines.faults.text(offset, "type", obj.get("type")) or ""
        ts = parse_ts(obj.get("created_at"))
        text, cut = clip(content)
        res.clipped += cut
        if source == "USER_EXPLICIT":
            text = _user_text(text)
            if text:
                messages.append(Message("user", text, ts, byte_offset=offset))
        elif source == "MODEL" and kind in ("", "PLANNER_RESPONSE"):
            messages.append(Message("assistant", text.strip(), ts, byte_offset=offset))
        elif source == "MODEL":
            messages.extend(_step(kind, text, ts, offset, flags, all_paths))
    res.malformed, res.faults = lines.malformed + lines.faults.count, lines.faults.first
    if messages:
        part = SessionPart(harness=HARNESS, session_id=sid, messages=messages)
        part.cwd = _workspace(root, sid) or _common_folder(all_paths)
        res.sessions = [part]
    return res


def _user_text(text: str) -> str:
    m = _REQUEST.match(text)
    if m:
        text = m.group(1) + text[m.end():]
    return _DROP.sub("", text).strip()


def _step(kind: str, text: str, ts, offset: int, flags: dict, all_paths: list[str]) -> list[Message]:
    out: list[Message] = []
    body = text
    if kind in _COMMAND_STEPS:
        m = _TASK.search(text)
        if m:
            rec = work.command_record(m.group(1)) if flags["COMMANDS"] else None
            if rec:
                out.append(Message("command", rec, ts, tool=kind, byte_offset=offset))
            body = text[:m.start()] + text[m.end():]
    elif kind in _FILE_STEPS:
        paths = [_file_path(p) for p in _FILE.findall(text)]
        paths = [p for p in paths if p]
        all_paths.extend(paths)
        files = work.files_record(paths) if flags["PATHS"] else None
        if files:
            out.append(Message("files", files, ts, tool=kind, byte_offset=offset))
        body = _FILE.sub("", text)
    body = _STAMPS.sub("", body.lstrip()).strip()
    if body and flags["TOOL_OUTPUT"]:
        out.append(Message("tool-output", body, ts, tool=kind or None, byte_offset=offset))
    return out


def _file_path(raw: str) -> str:
    raw = raw.strip().strip("`").strip()
    if raw.startswith("file://"):
        u = urlparse(raw)
        path = unquote(u.path)
        return path[1:] if re.match(r"^/[A-Za-z]:", path) else path
    return raw


def _workspace(root: str, sid: str) -> str:
    """The folder the IDE or the CLI recorded for the conversation, or ""."""
    cache = os.path.join(root, "cache")
    doc = _load(os.path.join(cache, "conversation_metadata.json"))
    conv = doc.get("conversations") if isinstance(doc, dict) else None
    entry = conv.get(sid) if isinstance(conv, dict) else None
    summary = entry.get("summary") if isinstance(entry, dict) else None
    uris = summary.get("WorkspaceURIs") if isinstance(summary, dict) else None
    if isinstance(uris, list):
        for uri in uris:
            if isinstance(uri, str) and uri:
                return _file_path(uri)
    last = _load(os.path.join(cache, "last_conversations.json"))
    if isinstance(last, dict):
        for workspace, conv_id in last.items():
            if conv_id == sid and isinstance(workspace, str):
                return _file_path(workspace)
    return ""


def _load(path: str):
    try:
        with open(path, "rb") as fh:
            return orjson.loads(fh.read())
    except (OSError, orjson.JSONDecodeError):
        return None


def _common_folder(paths: list[str]) -> str:
    """The deepest folder (at least four segments) all absolute paths share."""
    absolute = [p for p in paths if work.is_absolute(p)]
    if not absolute:
        return ""
    split = [re.split(r"[/\\]", p)[:-1] for p in absolute]
    common = split[0]
    for s in split[1:]:
        n = 0
        while n < min(len(common), len(s)) and common[n] == s[n]:
            n += 1
        common = common[:n]
    if len([c for c in common if c]) < 3:  # "" + three names = four segments of a path
        return ""
    return "/".join(common)  # (normalize climbs to the git work tree holding it)
