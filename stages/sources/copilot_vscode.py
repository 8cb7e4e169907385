"""GitHub Copilot Chat in VS Code (VS Code, Insiders, VSCodium): the chat
sessions VS Code itself stores, checked against microsoft/vscode
``src/vs/workbench/contrib/chat/common/model/`` (``chatSessionStore.ts``,
``chatSessionOperationLog.ts``, ``objectMutationLog.ts``).

Where: ``<User>/workspaceStorage/<workspace id>/chatSessions/<sessionId>.json``
or ``.jsonl``; windows without a folder keep theirs under
``<User>/globalStorage/emptyWindowChatSessions/`` (and, before that,
``workspaceStorage/no-workspace/chatSessions/``). The workspace's folder is
the ``folder`` (or ``workspace``) URI of ``workspace.json`` beside
``chatSessions``: the session's cwd.

Two generations of one document, ``ISerializableChatData``
``{version, sessionId, creationDate, customTitle, requests: [...]}``:

* ``<id>.json`` (before VS Code 1.109): the document, rewritten whole.
* ``<id>.jsonl`` (1.109 on): a change log. Line 1 is ``{"kind": 0, "v":
  <document>}``; then ``kind`` 1 sets ``v`` at the key path ``k``, 2 pushes
  the items ``v`` onto the array at ``k`` after cutting it to length ``i``
  when ``i`` is given, 3 deletes the key at ``k``. A later line may change
  an earlier request (a reply grows), and VS Code rewrites the file as one
  new ``kind`` 0 line when the log grows long, so the log is replayed whole
  on every change (``safe_offset`` 0), never read from an offset. When both
  files exist VS Code reads the log; so does deja (the locator drops the
  ``.json``).

Each request is the person's turn (``message.text``, ``timestamp`` in ms)
and its ``response`` the reply: a list of parts, markdown strings
(``{value}``) and typed parts (``kind``). Work records come from the parts
(Copilot's tool dialect, harness-formats 1.2): ``toolInvocationSerialized``
with terminal data (``commandLine``, its exit code and output), a tool's
``rawInput`` (``filePath``, ``oldString``, ``replacements``, an ``input``
patch), the files its messages and ``resultDetails`` link, and the files
``textEditGroup`` parts and ``editedFileEvents`` edited. A serialized tool
call keeps no arguments otherwise, so most edits carry no old text.
``customTitle`` is the title (VS Code stores its generated title there too:
rank 1).
"""

from __future__ import annotations

import os
from typing import Mapping
from urllib.parse import unquote, urlparse

import orjson

from deja.stages import work_records as work
from deja.stages.sources.base import Message, ReadResult, SessionPart, SourceFile
from deja.stages.sources.dialect import Dialect, Turn, flags
from deja.stages.sources.jsonl import clip, file_uri_path, parse_ts, read_document, read_whole_document
from deja.stages.sources.locate import vscode_chat_files, vscode_user_dirs
from deja.stages.sources.values import Faults

HARNESS = "copilot-vscode"

# Copilot's tools whose rawInput names a file (vscode-copilot-chat toolNames.ts)
_DIALECT = Dialect(
    file_tools=frozenset(("copilot_readFile", "copilot_replaceString", "copilot_multiReplaceString",
                          "copilot_createFile", "copilot_insertEdit", "copilot_editNotebook",
                          "vscode_editFile_internal", "read_file", "replace_string_in_file",
                          "create_file", "insert_edit_into_file")),
    shell_tools=frozenset(),
    path_keys=("filePath", "path", "file_path"),
    old_keys=("oldString", "old_string", "old_str"),
    edits_key="replacements",
)
_SET, _PUSH, _DELETE = 1, 2, 3


def roots(env: Mapping[str, str]) -> list[str]:
    return vscode_user_dirs(env)


def discover(env: Mapping[str, str]) -> list[SourceFile]:
    return [SourceFile(p, HARNESS) for p in vscode_chat_files(env)]


def read(path: str, start: int = 0) -> ReadResult:
    if path.endswith(".jsonl"):
        return _read_log(path)
    return read_whole_document(path, 0, lambda p, doc, _m: _session(p, doc, Faults()), HARNESS)


# --------------------------------------------------------------------------- the change log


def _read_log(path: str) -> ReadResult:
    """Replay a ``.jsonl`` change log into its document, then read that."""
    from deja.stages.sources.locate import is_regular_file

    if not is_regular_file(path):
        return ReadResult(error=f"not a readable regular file: {path}")
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        return ReadResult(error=f"{type(exc).__name__}: {exc}")
    try:
        state, faults = replay(raw)
        if state is None:
            return ReadResult(malformed=faults.count, faults=faults.first)
        return _session(path, state, faults)
    except Exception as exc:  # one bad file costs that file, never the run
        return ReadResult(error=f"{HARNESS} reader failed: {type(exc).__name__}: {exc}")


def replay(raw: bytes) -> tuple[object, Faults]:
    """The document a change log describes, and the lines that could not be
    applied. A last line without its newline that does not decode is a write
    in progress: left for the next read, not counted."""
    faults = Faults()
    state = None
    offset = 0
    for line in raw.split(b"\n"):
        at, offset = offset, offset + len(line) + 1
        if not line.strip():
            continue
        try:
            entry = orjson.loads(line)
        except orjson.JSONDecodeError:
            if offset > len(raw):  # the torn last line
                break
            faults.note(at, "line is not JSON")
            continue
        kind = entry.get("kind") if isinstance(entry, dict) else None
        if kind == 0:
            state = entry.get("v")
            continue
        if state is None or kind not in (_SET, _PUSH, _DELETE) or not isinstance(entry.get("k"), list):
            faults.note(at, "change before the initial state" if state is None and kind in (1, 2, 3)
                        else f"not a change entry (kind {kind!r})")
            continue
        if not _apply(state, kind, entry["k"], entry.get("v"), entry.get("i")):
            faults.note(at, f"key path {entry['k']!r} not in the document")
    return state, faults


def _apply(state, kind: int, path: list, value, cut) -> bool:
    if not path:
        return False
    node = state
    for key in path[:-1]:
        node = _child(node, key)
        if node is None:
            return False
    key = path[-1]
    if kind == _PUSH:
        arr = _child(node, key)
        if arr is None:
            arr = []
        if not isinstance(arr, list) or not _settable(node, key):
            return False
        if isinstance(cut, int) and cut >= 0:
            del arr[cut:]
        if isinstance(value, list):
            arr.extend(value)
        node[key] = arr
        return True
    if not _settable(node, key):
        return False
    if kind == _DELETE:
        if isinstance(node, dict):
            node.pop(key, None)
        else:
            node[key] = None  # JS ``arr[i] = undefined`` keeps the slot
        return True
    node[key] = value
    return True


def _child(node, key):
    if isinstance(node, dict) and isinstance(key, str):
        return node.get(key)
    if isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node):
        return node[key]
    return None


def _settable(node, key) -> bool:
    return (isinstance(node, dict) and isinstance(key, str)) or (
        isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node))


# --------------------------------------------------------------------------- the document


def _session(path: str, doc, faults: Faults) -> ReadResult:
    if not isinstance(doc, dict) or not isinstance(doc.get("requests", []), list):
        faults.note(0, f"session document is a {type(doc).__name__} without a requests list")
        return ReadResult(malformed=faults.count, faults=faults.first)
    sid = doc.get("sessionId")
    name = os.path.basename(path)
    sid = sid if isinstance(sid, str) and sid else name[: name.rfind(".")]
    cwd = workspace_folder(path)
    part = SessionPart(harness=HARNESS, session_id=sid, cwd=cwd)
    title = doc.get("customTitle")
    if isinstance(title, str) and title.strip():
        part.title, part.title_rank = title.strip(), 1
    fl = flags()
    created = parse_ts(doc.get("creationDate"))
    for i, req in enumerate(doc.get("requests") or ()):
        if not isinstance(req, dict):
            faults.note(0, f"request {i} is not an object")
            continue
        _request(part, req, i, created, cwd, fl)
    clipped = 0
    for m in part.messages:
        m.text, cut = clip(m.text)
        clipped += cut
    return ReadResult(sessions=[part] if part.messages else [], malformed=faults.count,
                      faults=faults.first, clipped=clipped)


def _request(part: SessionPart, req: dict, i: int, created, cwd: str, fl: dict) -> None:
    """One request: the person's turn, then the reply's parts in order. Only a
    terminal call records its own time; the rest of the reply is placed at the
    latest time known so far, and its end at when the reply finished."""
    ts = parse_ts(req.get("timestamp"))
    if ts is None:
        ts = created
    out = part.messages
    msg = req.get("message")
    text = msg.get("text") if isinstance(msg, dict) else msg
    if isinstance(text, str) and text.strip():
        out.append(Message("user", text, ts, byte_offset=i))
    done = _reply_ts(req, ts)
    turn = Turn(_DIALECT, fl)
    said: list[str] = []
    now = [ts]

    def speak(when):
        body = "".join(said).strip()
        if body:
            out.append(Message("assistant", body, when, byte_offset=i))
        said.clear()

    response = req.get("response")
    if isinstance(response, str):
        response = [{"value": response}]
    for item in response if isinstance(response, list) else ():
        if not isinstance(item, dict):
            if isinstance(item, str):
                said.append(item)
            continue
        kind = item.get("kind")
        if kind is None or kind in ("markdownContent", "markdownVuln"):
            said.append(_markdown(item.get("content") if kind else item))
        elif kind == "inlineReference":
            said.append(_reference_name(item))
        elif kind == "toolInvocationSerialized":
            speak(now[0])
            _tool(item, turn, cwd, now, i, fl, out)
            out.extend(Message(r, t, now[0], tool=tool or None, byte_offset=i) for r, t, tool in turn.records)
            turn.records.clear()
        elif kind in ("textEditGroup", "notebookEditGroup", "codeblockUri"):
            if kind != "codeblockUri" or item.get("isEdit"):
                turn.paths.append(uri_path(item.get("uri")))
    end = done if done is not None and (now[0] is None or done >= now[0]) else now[0]
    speak(end)
    events = req.get("editedFileEvents")
    for ev in events if isinstance(events, list) else ():  # (a number there raised: the whole file lost)
        if isinstance(ev, dict):
            turn.paths.append(uri_path(ev.get("uri")))
    turn.paths = [p for p in turn.paths if p]
    out.extend(turn.messages(end, i))


def _reply_ts(req: dict, ts):
    """When the reply finished: ``modelState.completedAt``, else the request's
    time plus ``result.timings.totalElapsed``, else the request's time."""
    state = req.get("modelState")
    done = parse_ts(state.get("completedAt")) if isinstance(state, dict) else None
    if done is not None:
        return done
    result = req.get("result")
    timings = result.get("timings") if isinstance(result, dict) else None
    elapsed = timings.get("totalElapsed") if isinstance(timings, dict) else None
    if ts is not None and type(elapsed) in (int, float) and 0 <= elapsed < 86_400_000:
        return ts + int(elapsed)
    return ts


def _tool(item: dict, turn: Turn, cwd: str, now: list, i: int, fl: dict, out: list[Message]) -> None:
    name = item.get("toolId") if isinstance(item.get("toolId"), str) else ""
    data = item.get("toolSpecificData")
    data = data if isinstance(data, dict) else {}
    if data.get("kind") == "terminal":
        _terminal(data, name, now, i, fl, out)
    elif data.get("kind") == "input":
        raw = data.get("rawInput")
        if isinstance(raw, str):
            try:
                raw = orjson.loads(raw)
            except orjson.JSONDecodeError:
                raw = {"input": raw}
        if isinstance(raw, dict):
            turn.call(name, raw)
            for rep in raw.get("replacements") or ():
                if isinstance(rep, dict):
                    turn.call(name, rep)
            patch = raw.get("input")
            if isinstance(patch, str) and "*** Begin Patch" in patch:
                files, edits = work.patch_records(patch, cwd)
                if files:
                    turn.paths.extend(files.split("\n"))
                if fl["EDITS"]:
                    turn.records.extend(("edit", e, name) for e in edits)
    for key in ("pastTenseMessage", "invocationMessage"):
        msg = item.get(key)
        uris = msg.get("uris") if isinstance(msg, dict) else None
        if isinstance(uris, dict) and uris:
            turn.paths.extend(uri_path(u) for u in uris.values())
            break
    details = item.get("resultDetails")
    if isinstance(details, list):
        turn.paths.extend(uri_path(d.get("uri") if isinstance(d, dict) and "uri" in d else d) for d in details)


def _terminal(data: dict, name: str, now: list, i: int, fl: dict, out: list[Message]) -> None:
    line = data.get("commandLine")
    if isinstance(line, dict):
        cmd = next((line[k] for k in ("userEdited", "toolEdited", "original")
                    if isinstance(line.get(k), str) and line[k].strip()), "")
    else:
        cmd = data.get("command") if isinstance(data.get("command"), str) else ""  # before 1.104
    state = data.get("terminalCommandState")
    code = state.get("exitCode") if isinstance(state, dict) else None
    code = code if type(code) is int and abs(code) < 1 << 31 else None
    when = parse_ts(state.get("timestamp")) if isinstance(state, dict) else None
    if when is not None and (now[0] is None or when > now[0]):
        now[0] = when
    when = now[0]
    rec = work.command_record(cmd, code) if cmd and fl["COMMANDS"] else None
    if rec:
        out.append(Message("command", rec, when, tool=name or None, exit_code=code, byte_offset=i))
    output = data.get("terminalCommandOutput")
    text = output.get("text") if isinstance(output, dict) else None
    if isinstance(text, str) and text.strip() and fl["TOOL_OUTPUT"]:
        out.append(Message("tool-output", text, when, tool=name or None, exit_code=code,
                           is_error=(code != 0) if code is not None else None, byte_offset=i))


def _markdown(value) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("value"), str):
        return value["value"]
    return ""


def _reference_name(item: dict) -> str:
    """An inline reference as the reply shows it: its name, else the file's name."""
    if isinstance(item.get("name"), str) and item["name"]:
        return "`" + item["name"] + "`"
    ref = item.get("inlineReference")
    path = uri_path(ref.get("uri") if isinstance(ref, dict) and "uri" in ref else ref)
    return "`" + os.path.basename(path.rstrip("/\\")) + "`" if path else ""


def uri_path(uri) -> str:
    """A file's path from a URI as VS Code serializes it (``{scheme, path,
    fsPath}`` or a string); "" for what is not a file (untitled, chat blocks)."""
    if isinstance(uri, str):
        if uri.startswith("file://"):
            return file_uri_path(uri)
        if uri.startswith("vscode-remote://"):
            return unquote(urlparse(uri).path)
        return ""
    if not isinstance(uri, dict):
        return ""
    scheme = uri.get("scheme")
    if scheme == "file":
        for key in ("fsPath", "path"):
            p = uri.get(key)
            if isinstance(p, str) and p:
                return p[1:] if len(p) > 3 and p[0] == "/" and p[2] == ":" and p[1].isalpha() else p
    if scheme == "vscode-remote" and isinstance(uri.get("path"), str):
        return uri["path"]
    return ""


def workspace_folder(path: str) -> str:
    """The folder of the workspace a chatSessions file belongs to, from
    ``workspace.json`` beside its folder (a ``.code-workspace`` file stands for
    the folder holding it); "" for an empty window's session."""
    try:
        doc = read_document(os.path.join(os.path.dirname(os.path.dirname(path)), "workspace.json"))
    except (OSError, ValueError):
        return ""
    if not isinstance(doc, dict):
        return ""
    if isinstance(doc.get("folder"), str):
        return uri_path(doc["folder"]).rstrip("/\\") or ""
    if isinstance(doc.get("workspace"), str):
        p = uri_path(doc["workspace"])
        return os.path.dirname(p) if p else ""
    return ""
