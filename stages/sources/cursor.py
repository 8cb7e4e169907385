"""Cursor: the IDE's SQLite key/value stores and the CLI agent's transcripts
(harness-formats section 7 and "Seen in real published transcripts → Cursor").

Three shapes, told apart by the file name:

* ``state.vscdb`` (IDE): ``cursorDiskKV`` rows ``composerData:<id>`` (a
  session: name, createdAt, the bubble order in ``fullConversationHeadersOnly``
  or, older, the bubbles inline in ``conversation``) and
  ``bubbleId:<composer>:<bubble>`` (a message: ``type`` 1 user, else
  assistant; ``text``/``rawText``; ``toolFormerData`` for a tool call); and the
  older ``ItemTable`` chat panel, ``workbench.panel.aichat.view.aichat.chatdata``
  (``tabs[].bubbles[]``, ``type`` "user"/"ai"). A workspace store's folder is
  in ``workspace.json`` beside it. Read through ``sqlite_store`` (a snapshot;
  the live file is never opened by SQLite).
* ``agent-transcripts/**/<id>.jsonl`` (CLI): ``{role, message:{content}}``
  lines, Anthropic-shaped ``tool_use`` blocks in Cursor's vocabulary, no
  times, no tool results.
* ``agent-transcripts/<id>.txt`` (older CLI): ``user:``/``assistant:`` turns,
  ``[Tool call] Name`` followed by ``  key: value`` argument lines (a value
  continues on unindented lines), ``[Tool result] Name`` with no body.

Neither CLI format has times: every message gets the file's mtime. The
project is the workspace folder the CLI encoded into its ``projects/<enc>``
folder name, spelled as the tool paths spell it (the encoding loses
separators); a numeric ``<enc>`` is a window with no folder, whose project is
the folder the session's tool paths share.
"""

from __future__ import annotations

import os
import re
from typing import Mapping
from urllib.parse import unquote, urlparse

import orjson

from deja.stages import work_records as work
from deja.stages.sources import sqlite_store
from deja.stages.sources.base import Message, ReadResult, SessionPart, SourceFile
from deja.stages.sources.jsonl import Lines, clip, is_regular_file, json_cell, parse_ts
from deja.stages.sources.locate import cursor_cli_home, cursor_files, cursor_user_dir
from deja.stages.sources.values import Faults

HARNESS = "cursor"

# Cursor CLI's dialect (harness-formats 1.2), plus the IDE's tool names.
_FILE_TOOLS = frozenset(("Read", "ReadFile", "Write", "StrReplace", "Delete", "EditNotebook",
                         "read_file", "edit_file", "search_replace", "delete_file", "write"))
_SHELL_TOOLS = frozenset(("Shell", "run_terminal_cmd", "run_terminal_command", "run_terminal_command_v2"))
_PATH_KEYS = ("path", "target_file", "file_path", "relative_workspace_path", "target_notebook")
_OLD_KEYS = ("old_string", "old_str")
_PATCH_TOOLS = frozenset(("ApplyPatch", "apply_patch"))
_LEGACY_CHAT = "workbench.panel.aichat.view.aichat.chatdata"


def roots(env: Mapping[str, str]) -> list[str]:
    """Where this reader looks, for `deja doctor`."""
    return [cursor_user_dir(env), os.path.join(cursor_cli_home(env), "projects")]


def discover(env: Mapping[str, str]) -> list[SourceFile]:
    return [SourceFile(p, HARNESS) for p in cursor_files(env)]


def read(path: str, start: int = 0) -> ReadResult:
    if not is_regular_file(path):
        return ReadResult(safe_offset=start, error=f"not a readable regular file: {path}")
    try:
        if path.endswith(sqlite_store.SQLITE_SUFFIXES):
            return _read_store(path)
        if path.endswith(".txt"):
            return _read_txt(path)
        return _read_jsonl(path)
    except OSError as exc:
        return ReadResult(safe_offset=start, error=f"{type(exc).__name__}: {exc}")
    except Exception as exc:  # one bad file costs that file, never the run
        return ReadResult(safe_offset=start, error=f"cursor reader failed: {type(exc).__name__}: {exc}")


# ----------------------------------------------------------------------------- tools


class _Turn:
    """Work records of one message, collected as its tool calls are seen."""

    def __init__(self, flags: dict, cwd: str):
        self.flags, self.cwd = flags, cwd
        self.paths: list[str] = []
        self.records: list[tuple[str, str, str]] = []  # (role, text, tool)

    def call(self, name: str, args) -> None:
        if name in _PATCH_TOOLS:
            patch = args if isinstance(args, str) else _first(args, ("patch", "input", "patchText"))
            files, edits = work.patch_records(patch or "", self.cwd)
            if files:
                self.paths.extend(files.split("\n"))
            if self.flags["EDITS"]:
                self.records.extend(("edit", e, name) for e in edits)
            return
        if not isinstance(args, dict):
            return
        if name in _SHELL_TOOLS:
            cmd = args.get("command")
            rec = work.command_record(cmd) if isinstance(cmd, str) and self.flags["COMMANDS"] else None
            if rec:
                self.records.append(("command", rec, name))
            return
        path = _first(args, _PATH_KEYS)
        if not path:
            return
        if name in _FILE_TOOLS:
            self.paths.append(path)
        old = _first(args, _OLD_KEYS)
        if old and self.flags["EDITS"]:
            rec = work.edit_record(path, old)
            if rec:
                self.records.append(("edit", rec, name))

    def messages(self, ts, offset: int) -> list[Message]:
        out = [Message(r, t, ts, tool=tool, byte_offset=offset) for r, t, tool in self.records]
        files = work.files_record(self.paths) if self.flags["PATHS"] else None
        if files:
            out.append(Message("files", files, ts, byte_offset=offset))
        return out


def _first(args, keys) -> str:
    if not isinstance(args, dict):
        return ""
    for k in keys:
        v = args.get(k)
        if isinstance(v, str) and v:
            return v
    return ""


def _flags() -> dict:
    return {f: work.enabled(f) for f in ("PATHS", "COMMANDS", "EDITS", "TOOL_OUTPUT")}


# ----------------------------------------------------------------------- CLI project

_ENC = re.compile(r"[^A-Za-z0-9]+")


def _project_dir_name(path: str) -> str:
    """The ``projects/<enc>`` folder a CLI transcript lies under, or ""."""
    parts = path.replace("\\", "/").split("/")
    if "agent-transcripts" in parts:
        i = parts.index("agent-transcripts")
        return parts[i - 1] if i > 0 else ""
    return ""


def _folder_of(enc: str, paths: list[str]) -> str:
    """The workspace folder as the session's tool paths spell it: the ancestor
    of a path whose Cursor encoding (non-alphanumerics as ``-``, no leading
    dash) is ``enc``; a numeric ``enc`` (no folder) is the folder they share."""
    absolute = [p for p in paths if work.is_absolute(p)]
    if not enc or enc.isdigit():
        return _common_folder(absolute)
    want = enc.strip("-").lower()
    for p in absolute:
        segs = re.split(r"[/\\]", p)
        for n in range(len(segs) - 1, 0, -1):
            folder = "/".join(segs[:n]) if "/" in p else "\\".join(segs[:n])
            if _ENC.sub("-", folder).strip("-").lower() == want:
                return folder
    from deja.stages.sources.claude import resolve_project_dir

    return resolve_project_dir("-" + enc) or ""


def _common_folder(paths: list[str]) -> str:
    if not paths:
        return ""
    split = [re.split(r"[/\\]", p)[:-1] for p in paths]
    common = split[0]
    for s in split[1:]:
        n = 0
        while n < min(len(common), len(s)) and common[n].lower() == s[n].lower():
            n += 1
        common = common[:n]
    sep = "\\" if "\\" in paths[0] and "/" not in paths[0] else "/"
    return sep.join(common) if len([c for c in common if c]) >= 2 else ""


def _cli_part(path: str, messages: list[Message], paths: list[str]) -> SessionPart:
    sid = os.path.basename(path).rsplit(".", 1)[0]
    enc = _project_dir_name(path)
    cwd = _folder_of(enc, paths)
    part = SessionPart(harness=HARNESS, session_id=sid, cwd=cwd, messages=messages)
    if not cwd and enc and not enc.isdigit():
        from deja.stages.sources.claude import decode_project_dir

        part.project = decode_project_dir("-" + enc)
    parts = path.replace("\\", "/").split("/")
    if "subagents" in parts:
        part.spawned = True
    return part


def _mtime_ms(path: str) -> int | None:
    return parse_ts(os.stat(path).st_mtime_ns // 1_000_000)


# ----------------------------------------------------------------------- CLI JSONL


def _read_jsonl(path: str) -> ReadResult:
    ts = _mtime_ms(path)
    flags = _flags()
    lines = Lines(path, 0)
    messages: list[Message] = []
    all_paths: list[str] = []
    clipped = bad = 0
    for offset, obj in lines:
        try:
            role = obj.get("role")
            if role not in ("user", "assistant"):
                continue  # control lines ({"type": "turn_ended"}) have no role
            msg = obj.get("message")
            content = msg.get("content") if isinstance(msg, dict) else None
            turn = _Turn(flags, "")
            texts: list[str] = []
            if isinstance(content, str):
                texts.append(content)
            elif isinstance(content, list):
                for b in content:
                    if not isinstance(b, dict):
                        continue
                    if b.get("type") == "text" and isinstance(b.get("text"), str):
                        texts.append(b["text"])
                    elif b.get("type") == "tool_use" and isinstance(b.get("name"), str):
                        turn.call(b["name"], b.get("input"))
            text = "\n\n".join(t for t in texts if t.strip())
            if text:
                text, cut = clip(text)
                clipped += cut
                messages.append(Message(role, text, ts, byte_offset=offset))
            messages.extend(turn.messages(ts, offset))
            all_paths.extend(turn.paths)
        except Exception as exc:  # one bad line costs that line only
            bad += 1
            lines.failed(offset, exc)
    part = _cli_part(path, messages, all_paths)
    return ReadResult(sessions=[part] if messages else [], safe_offset=0,
                      malformed=lines.malformed + bad + lines.faults.count, faults=lines.faults.first, clipped=clipped)


# ------------------------------------------------------------------------- CLI TXT

_ARG = re.compile(r"^  ([A-Za-z_][A-Za-z0-9_]*): ?(.*)$")


def _read_txt(path: str) -> ReadResult:
    """The older plain-text transcript. Its offsets are line starts (faults name lines)."""
    ts = _mtime_ms(path)
    flags = _flags()
    with open(path, "rb") as fh:
        raw = fh.read()
    text = raw.decode("utf-8", "replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    messages: list[Message] = []
    all_paths: list[str] = []
    clipped = 0
    role = ""
    body: list[str] = []
    call: tuple[str, dict, str] | None = None  # (tool, args, key being continued)
    turn = _Turn(flags, "")
    offset = turn_offset = 0

    def end_call():
        nonlocal call
        if call:
            args = {k: v.rstrip("\n") for k, v in call[1].items()}
            turn.call(call[0], args)
            call = None

    def end_turn():
        nonlocal body, turn, clipped
        end_call()
        said = "\n".join(body).strip()
        if role and said:
            said, cut = clip(said)
            clipped += cut
            messages.append(Message(role, said, ts, byte_offset=turn_offset))
        if role:
            messages.extend(turn.messages(ts, turn_offset))
            all_paths.extend(turn.paths)
        body, turn = [], _Turn(flags, "")

    prev_blank = True
    for line in text.splitlines(keepends=True):
        s = line.rstrip("\r\n")
        if s in ("user:", "assistant:") and prev_blank:
            end_turn()
            role, turn_offset = s[:-1], offset
        elif s.startswith("[Tool call] "):
            end_call()
            call = (s[len("[Tool call] "):].strip(), {}, "")
        elif s.startswith("[Tool result] "):
            end_call()
        elif call is not None:
            m = _ARG.match(s)
            if m:
                call[1][m.group(1)] = m.group(2)
                call = (call[0], call[1], m.group(1))
            elif call[2]:
                call[1][call[2]] += "\n" + s
        elif role:
            body.append(s)
        prev_blank = not s.strip()
        offset += len(line.encode("utf-8", "replace"))
    end_turn()
    part = _cli_part(path, messages, all_paths)
    return ReadResult(sessions=[part] if messages else [], safe_offset=0, clipped=clipped)


# ------------------------------------------------------------------------ IDE store


def _read_store(path: str) -> ReadResult:
    folder = _workspace_folder(path)
    res = ReadResult()
    faults = Faults()
    try:
        with sqlite_store.snapshot(path) as snap:
            tables = snap.tables()
            parts: dict[str, SessionPart] = {}
            if "cursorDiskKV" in tables:
                _composers(snap, parts, folder, res, faults)
            if "ItemTable" in tables:
                _item_table(snap, parts, folder, res, faults)
    except sqlite_store.Empty:
        return ReadResult()
    except sqlite_store.Unreadable as exc:
        return ReadResult(error=str(exc))
    res.sessions = [p for p in parts.values() if p.messages]
    res.malformed += faults.count
    res.faults = faults.first
    return res


def _workspace_folder(path: str) -> str:
    """A workspace store's folder, from ``workspace.json`` beside it (``file://`` URI)."""
    try:
        with open(os.path.join(os.path.dirname(path), "workspace.json"), "rb") as fh:
            obj = orjson.loads(fh.read())
    except (OSError, orjson.JSONDecodeError):
        return ""
    uri = obj.get("folder") if isinstance(obj, dict) else None
    if not isinstance(uri, str) or not uri.startswith("file://"):
        return ""
    p = unquote(urlparse(uri).path)
    if re.match(r"^/[A-Za-z]:/", p):  # file:///c%3A/Users/… on Windows
        p = p[1:]
    return p


def _json(value, res: ReadResult):
    return None if value is None else json_cell(value, res)


def _composers(snap, parts: dict, folder: str, res: ReadResult, faults: Faults) -> None:
    rows = snap.rows("SELECT key, value FROM cursorDiskKV WHERE key >= 'composerData:' AND key < 'composerData;'")
    for n, (key, value) in enumerate(rows):
        if n % 64 == 0:
            snap.check()
        data = _json(value, res)
        if not isinstance(data, dict):
            continue
        cid = data.get("composerId") if isinstance(data.get("composerId"), str) else key.split(":", 1)[1]
        start = parse_ts(data.get("createdAt"))
        part = SessionPart(harness=HARNESS, session_id=cid, cwd=folder)
        if isinstance(data.get("name"), str) and data["name"].strip():
            part.title, part.title_rank = data["name"].strip(), 1
        inline = data.get("conversation")
        if isinstance(inline, list) and inline:
            bubbles = [b for b in inline if isinstance(b, dict)]
        else:
            bubbles = _bubbles(snap, cid, data.get("fullConversationHeadersOnly"), res, faults, n)
        _add_bubbles(part, bubbles, start, n)
        if part.messages:
            parts[cid] = part


def _bubbles(snap, cid: str, headers, res: ReadResult, faults: Faults, at: int) -> list[dict]:
    prefix = f"bubbleId:{cid}:"
    found: dict[str, dict] = {}
    for key, value in snap.rows("SELECT key, value FROM cursorDiskKV WHERE key >= ? AND key < ?",
                                (prefix, prefix[:-1] + ";")):
        b = _json(value, res)
        if isinstance(b, dict):
            found[key[len(prefix):]] = b
    if isinstance(headers, list) and headers:
        order = [faults.text(at, "header bubbleId", h.get("bubbleId")) for h in headers if isinstance(h, dict)]
        ordered = [found.pop(b) for b in order if b in found]
        return ordered + sorted(found.values(), key=_bubble_ms)  # bubbles the headers do not list yet
    return sorted(found.values(), key=_bubble_ms)


def _bubble_ms(b: dict) -> int:
    return _bubble_ts(b) or 0


def _bubble_ts(b: dict) -> int | None:
    for k in ("timestamp", "createdAt", "timingInfo"):
        v = b.get(k)
        if isinstance(v, dict):
            v = v.get("clientStartTime")
        ts = parse_ts(v)
        if ts is not None:
            return ts
    return None


def _add_bubbles(part: SessionPart, bubbles: list[dict], start: int | None, offset: int) -> None:
    turn_flags = _flags()
    for b in bubbles:
        kind = b.get("type")
        role = "user" if kind in (1, "user") else "assistant"
        ts = _bubble_ts(b) or start
        if not part.cwd and isinstance(b.get("workspaceProjectDir"), str):
            part.cwd = b["workspaceProjectDir"]
        text = b.get("text") if isinstance(b.get("text"), str) and b.get("text") else b.get("rawText")
        if isinstance(text, str) and text.strip():
            text, _ = clip(text)
            part.messages.append(Message(role, text, ts, byte_offset=offset))
        tool = b.get("toolFormerData")
        if isinstance(tool, dict) and isinstance(tool.get("name"), str):
            turn = _Turn(turn_flags, part.cwd)
            args = tool.get("rawArgs") or tool.get("params")
            if isinstance(args, str):
                try:
                    args = orjson.loads(args)
                except orjson.JSONDecodeError:
                    pass
            turn.call(tool["name"], args)
            part.messages.extend(turn.messages(ts, offset))
            result = tool.get("result")
            if isinstance(result, str) and result.strip() and turn_flags["TOOL_OUTPUT"]:
                part.messages.append(Message("tool-output", clip(result)[0], ts, tool=tool["name"],
                                             byte_offset=offset))


def _item_table(snap, parts: dict, folder: str, res: ReadResult, faults: Faults) -> None:
    for (value,) in snap.rows("SELECT value FROM ItemTable WHERE key = ?", (_LEGACY_CHAT,)):
        data = _json(value, res)
        tabs = data.get("tabs") if isinstance(data, dict) else None
        if not isinstance(tabs, list):
            if data is not None:
                res.malformed += 1  # a document of another shape: counted, not guessed at
            continue
        for tab in tabs:
            if not isinstance(tab, dict):
                res.malformed += 1
                continue
            tid = tab.get("tabId") or tab.get("id")
            if not isinstance(tid, str) or not tid:
                res.malformed += 1
                continue
            part = parts.get(tid) or SessionPart(harness=HARNESS, session_id=tid, cwd=folder)
            title = tab.get("chatTitle") or tab.get("title")
            if isinstance(title, str) and title.strip() and not part.title:
                part.title, part.title_rank = title.strip(), 1
            start = parse_ts(tab.get("lastSendTime")) or parse_ts(tab.get("createdAt"))
            bubbles = [b for b in faults.items(0, "tab bubbles", tab.get("bubbles")) if isinstance(b, dict)]
            _add_bubbles(part, bubbles, start, 0)
            if part.messages:
                parts[tid] = part
