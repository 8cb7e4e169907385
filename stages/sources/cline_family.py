"""What Cline, Roo Code and Kilo Code share: one task folder, one parse.

Roo Code is a fork of Cline and Kilo Code a fork of Roo; the three keep a
task as ``tasks/<taskId>/`` holding whole JSON documents rewritten in place
(harness-formats §11, §14 "Roo Code"):

* ``api_conversation_history.json``: ``[{role, content, ts?}]`` in the
  Anthropic shape, ``content`` a string or ``text``/``tool_use``/
  ``tool_result``/``image`` blocks. Roo and Kilo stamp each message with
  ``ts`` (ms); Cline's older builds do not, and their turns get the task's
  start plus one second per turn.
* the task's history item, for its title (``task``), start (``ts``), folder
  (``cwdOnTaskInitialization`` in Cline, ``workspace`` in Roo and Kilo) and
  parent (``parentTaskId``, Roo's and Kilo's subtasks): Roo and Kilo write it
  to ``history_item.json`` in the folder, Cline to ``state/taskHistory.json``
  beside ``tasks/`` (all tasks in one array).
* ``ui_messages.json``: what the panel showed, ``[{ts, type: say|ask, say|ask,
  text}]``; read only when the API conversation is missing.

Tools came first as XML in the assistant's text (``<execute_command>
<command>npm test</command></execute_command>``, results in the next user turn
as ``[execute_command for 'npm test'] Result:``), later as native ``tool_use``
blocks with the same names and parameters; both yield the same work records
through one dialect table (``work_of``).

Whole documents are read whole: ``safe_offset`` stays 0, so a rewritten file
is read again and replaces its session (pipeline/manifest.py), and a document
of another shape costs that file, counted as malformed.
"""

from __future__ import annotations

import os
import re

import orjson

from .. import work_records as work
from .base import Message, ReadResult, SessionPart
from .jsonl import clip, is_regular_file, parse_ts
from .projects import project_from_cwd
from .values import Faults, show

TITLE_CAP = 120

# ---- reading a document -----------------------------------------------------------


def load(path: str):
    """The decoded document; raises OSError when the file cannot be read and
    ValueError when it is not JSON."""
    with open(path, "rb") as fh:
        data = fh.read()
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc})") from None


def load_quiet(path: str):
    """A side document (history item, manifest): None when absent or unreadable."""
    if not is_regular_file(path):
        return None
    try:
        return load(path)
    except (OSError, ValueError):
        return None


_HISTORY_CACHE: dict[str, tuple[tuple[int, int], dict]] = {}


def task_history(path: str) -> dict:
    """Cline's ``state/taskHistory.json`` as id → item, kept while its stat holds
    (a reader process reads every task of a store against the one index)."""
    try:
        st = os.stat(path)
    except OSError:
        return {}
    key = (st.st_size, st.st_mtime_ns)
    hit = _HISTORY_CACHE.get(path)
    if hit and hit[0] == key:
        return hit[1]
    doc = load_quiet(path)
    items = {}
    if isinstance(doc, list):
        for it in doc:
            if isinstance(it, dict) and isinstance(it.get("id"), (str, int)):
                items[str(it["id"])] = it
    _HISTORY_CACHE[path] = (key, items)
    return items


def title_of(text) -> str:
    """A task's first non-empty line, cut to ``TITLE_CAP`` characters."""
    if not isinstance(text, str):
        return ""
    for line in unwrap_user(text).splitlines():
        line = line.strip()
        if line:
            return line if len(line) <= TITLE_CAP else line[: TITLE_CAP - 1].rstrip() + "…"
    return ""


# ---- plumbing in the texts ------------------------------------------------------------

_ENV = re.compile(r"<environment_details>.*?(?:</environment_details>|\Z)", re.S)
_CWD = re.compile(r"# Current (?:Working|Workspace) Directory \((.+?)\) Files")
_WRAPPERS = re.compile(r"^\s*<(task|feedback|user_message|answer|user_input)(?:\s[^>]*)?>(.*?)</\1>\s*$", re.S)
_RESULT = re.compile(r"^\[([A-Za-z_]+)(?: for [^\]\n]*)?\] Result:[ \t]*\n?")
# Harness-authored turns: reminders after a turn with no tool, resumptions.
_PLUMBING = re.compile(r"^\s*(?:\[ERROR\] You did not use a tool|\[TASK RESUMPTION\]|"
                       r"<explicit_instructions type=|# Reminder: Instructions for Tool Use)")
_THINKING = re.compile(r"</?thinking>")
_FEEDBACK = re.compile(r"<feedback>(.*?)</feedback>", re.S)


def cwd_in(text: str) -> str:
    """The folder a turn's environment details name (Cline: Working, Roo: Workspace)."""
    m = _CWD.search(text)
    return m.group(1).strip() if m else ""


def unwrap_user(text: str) -> str:
    text = _ENV.sub("", text)
    m = _WRAPPERS.match(text)
    if m:
        text = m.group(2)
    return text.strip()


# ---- the tool dialect (harness-formats 1.2) --------------------------------------------

COMMAND_TOOLS = {"execute_command": "command", "run_commands": "commands"}
# tools whose path names a file (list_files and search_files name folders)
FILE_TOOLS = frozenset(
    "read_file read_files write_to_file replace_in_file apply_diff insert_content search_and_replace "
    "search_replace edit_file editor delete_file apply_patch new_rule".split()
)
# tools whose parameter is the agent's prose to the person
PROSE_TOOLS = {"attempt_completion": "result", "ask_followup_question": "question", "plan_mode_respond": "response",
               "new_task": "message"}
TOOLS = frozenset(FILE_TOOLS | set(COMMAND_TOOLS) | set(PROSE_TOOLS)
                  | {"list_files", "search_files", "list_code_definition_names", "browser_action",
                     "use_mcp_tool", "access_mcp_resource", "switch_mode", "codebase_search",
                     "update_todo_list", "fetch_instructions", "condense", "summarize_task", "web_fetch"})
_XML_TOOL = re.compile(r"<(" + "|".join(sorted(TOOLS, key=len, reverse=True)) + r")>(.*?)</\1>", re.S)
_XML_PARAM = re.compile(r"<([a-z_]+)>(.*?)</\1>", re.S)
_XML_FILE = re.compile(r"<file>(.*?)</file>", re.S)
_SEARCH = re.compile(
    r"^[ \t]*(?:<{3,}|-{3,}) ?SEARCH[ \t]*\n(.*?)^[ \t]*={3,}[ \t]*$", re.S | re.M)
_LINE_HINT = re.compile(r"\A(?:[ \t]*:(?:start|end)_line:[ \t]*\d*[ \t]*\n)+(?:[ \t]*-{3,}[ \t]*\n)?")


def xml_params(body: str) -> dict:
    """A tool's XML parameters: ``path`` keeps every occurrence (multi-file reads)."""
    params: dict = {}
    for name, value in _XML_PARAM.findall(body):
        if name == "path":
            params.setdefault("path", []).append(value.strip())
        else:
            params.setdefault(name, value)
    files = _XML_FILE.findall(body)
    if files:
        params["file_blocks"] = files
    return params


def search_blocks(diff) -> list[str]:
    """The SEARCH halves of a SEARCH/REPLACE diff (Cline's ``------- SEARCH``,
    Roo's ``<<<<<<< SEARCH`` with ``:start_line:`` hints)."""
    if not isinstance(diff, str):
        return []
    out = []
    for m in _SEARCH.finditer(diff):
        text = _LINE_HINT.sub("", m.group(1))
        if text.endswith("\n"):
            text = text[:-1]
        out.append(text)
    return out


def _strs(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return []


def _paths(params: dict) -> list[str]:
    out: list[str] = []
    for key in ("path", "file_path", "target_file", "absolutePath"):
        out.extend(_strs(params.get(key)))
    files = params.get("files")
    if isinstance(files, list):
        for f in files:
            if isinstance(f, str):
                out.append(f)
            elif isinstance(f, dict):
                out.extend(_strs(f.get("path")))
    return [p.strip() for p in out if p.strip()]


def _absolute(path: str, cwd: str) -> str:
    if not cwd or work.is_absolute(path):
        return path
    sep = "\\" if "\\" in cwd and "/" not in cwd else "/"
    return cwd.rstrip("/\\") + sep + path


def work_of(name: str, params: dict, cwd: str) -> tuple[list[str], list[str], list[tuple[str, str]]]:
    """(commands, paths, edits as (path, old text)) of one tool call."""
    commands: list[str] = []
    paths: list[str] = []
    edits: list[tuple[str, str]] = []
    if name in COMMAND_TOOLS:
        commands = [c for c in _strs(params.get(COMMAND_TOOLS[name])) if c.strip()]
        return commands, paths, edits
    if name not in FILE_TOOLS:
        return commands, paths, edits
    if name == "apply_patch":
        for p, removed in work.parse_patch(params.get("patch") or params.get("input") or "", cwd):
            paths.append(p)
            if removed:
                edits.append((p, removed))
        return commands, paths, edits
    blocks = params.get("file_blocks")
    if isinstance(blocks, list):  # Roo's multi-file XML: <args><file><path>…</path><diff><content>…
        for b in blocks:
            sub = xml_params(b)
            for p in _paths(sub):
                p = _absolute(p, cwd)
                paths.append(p)
                for content in re.findall(r"<content>(.*?)</content>", b, re.S):
                    edits.extend((p, old) for old in search_blocks(content) or [])
        if paths:
            return commands, paths, edits
    found = [_absolute(p, cwd) for p in _paths(params)]
    paths.extend(found)
    target = found[0] if found else ""
    if not target:
        return commands, paths, edits
    for old in search_blocks(params.get("diff")):
        edits.append((target, old))
    for key in ("old_string", "old_text", "old_str"):
        if isinstance(params.get(key), str):
            edits.append((target, params[key]))
    if name == "search_and_replace":
        ops = params.get("operations")
        for op in ops if isinstance(ops, list) else [params]:
            if isinstance(op, dict) and isinstance(op.get("search"), str):
                edits.append((target, op["search"]))
    return commands, paths, edits


# ---- one conversation -------------------------------------------------------------------


class Conversation:
    """Messages of one task, turn by turn, with their work records."""

    def __init__(self, part: SessionPart, base_ms: int | None, faults: Faults):
        self.part = part
        self.base = base_ms
        self.faults = faults
        self.clipped = 0
        self.want = {f: work.enabled(f) for f in ("PATHS", "COMMANDS", "EDITS", "TOOL_OUTPUT")}
        self.tool_names: dict[str, str] = {}  # tool_use id → tool name, for its result

    def emit(self, role: str, text: str, ts, tool=None, is_error=None) -> None:
        if not text or not text.strip():
            return
        text, cut = clip(text)
        self.clipped += cut
        self.part.messages.append(Message(role, text, ts=ts, tool=tool, is_error=is_error))

    def time(self, raw, i: int, offset: int = 0) -> int | None:
        if raw is not None:
            ms = parse_ts(raw)
            if ms is not None:
                return ms
            self.faults.note(offset, f"ts {show(raw)} is not a time in 1970-2200")
        return self.base + i * 1000 if self.base is not None else None

    def read(self, msgs: list, ui: bool = False) -> None:
        for i, msg in enumerate(msgs):
            try:
                (self.ui_message if ui else self.turn)(msg, i)
            except Exception as exc:  # a message of a shape not foreseen costs that message only
                self.faults.note(0, f"message {i} could not be read ({type(exc).__name__})")

    def turn(self, msg, i: int) -> None:
        if not isinstance(msg, dict):
            self.faults.note(0, f"message {i} is {show(msg)}, not an object")
            return
        role = msg.get("role")
        ts = self.time(msg.get("ts"), i)
        content = msg.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list):
            self.faults.note(0, f"message {i} content is {show(content)}")
            return
        if role == "user":
            self.user(blocks, ts, i)
        elif role == "assistant":
            self.assistant(blocks, ts)

    def user(self, blocks: list, ts, i: int) -> None:
        result = None  # the XML era: a "[tool] Result:" block, its output in the blocks after it
        for b in blocks:
            if not isinstance(b, dict):
                continue
            kind = b.get("type")
            if kind == "text" and isinstance(b.get("text"), str):
                text = b["text"]
                if not self.part.cwd:
                    self.part.cwd = cwd_in(text)
                m = _RESULT.match(text)
                if m:
                    result, text = m.group(1), text[m.end():]
                if _PLUMBING.match(text):
                    continue
                said = _FEEDBACK.search(text)
                if said:  # the person answered the tool call instead of letting it run
                    self.emit("user", said.group(1).strip(), ts)
                elif result:
                    if self.want["TOOL_OUTPUT"]:
                        self.emit("tool-output", unwrap_user(text), ts, tool=result)
                else:
                    self.emit("user", unwrap_user(text), ts)
            elif kind == "tool_result" and self.want["TOOL_OUTPUT"]:
                call = self.faults.text(0, f"message {i} tool_use_id", b.get("tool_use_id"))
                self.emit("tool-output", unwrap_user(_result_text(b.get("content"))), ts,
                          tool=self.tool_names.get(call), is_error=True if b.get("is_error") is True else None)

    def assistant(self, blocks: list, ts) -> None:
        calls: list[tuple[str, dict]] = []
        prose: list[str] = []
        for b in blocks:
            if not isinstance(b, dict):
                continue
            kind = b.get("type")
            if kind == "text" and isinstance(b.get("text"), str):
                prose.append(self._xml_calls(b["text"], calls))
            elif kind == "tool_use" and isinstance(b.get("name"), str) and isinstance(b.get("input"), dict):
                name, inp = b["name"], b["input"]
                if isinstance(b.get("id"), str):
                    self.tool_names[b["id"]] = name
                if name in PROSE_TOOLS and isinstance(inp.get(PROSE_TOOLS[name]), str):
                    prose.append(inp[PROSE_TOOLS[name]])
                calls.append((name, inp))
        self.emit("assistant", "\n\n".join(p.strip() for p in prose if p.strip()), ts)
        self.work(calls, ts)

    def _xml_calls(self, text: str, calls: list) -> str:
        """The text with its XML tool calls taken out (a prose tool's words stay)."""
        def take(m: re.Match) -> str:
            params = xml_params(m.group(2))
            calls.append((m.group(1), params))
            said = params.get(PROSE_TOOLS.get(m.group(1), ""), "")
            return said.strip() if isinstance(said, str) else ""
        return _THINKING.sub("", _XML_TOOL.sub(take, text))

    def work(self, calls: list[tuple[str, dict]], ts) -> None:
        paths: list[str] = []
        edits: list[tuple[str, str, str]] = []
        path_tool = None
        for name, params in calls:
            commands, found, spans = work_of(name, params, self.part.cwd)
            if self.want["COMMANDS"]:
                for c in commands:
                    rec = work.command_record(c)
                    if rec:
                        self.emit("command", rec, ts, tool=name)
            if found:
                paths.extend(found)
                path_tool = path_tool or name
            edits.extend((p, old, name) for p, old in spans)
        if paths and self.want["PATHS"]:
            rec = work.files_record(paths)
            if rec:
                self.emit("files", rec, ts, tool=path_tool)
        if self.want["EDITS"]:
            for p, old, name in edits:
                rec = work.edit_record(p, old)
                if rec:
                    self.emit("edit", rec, ts, tool=name)

    def ui_message(self, msg, i: int) -> None:
        """One ``ui_messages.json`` entry (read when the API conversation is missing)."""
        if not isinstance(msg, dict):
            self.faults.note(0, f"message {i} is {show(msg)}, not an object")
            return
        ts = self.time(msg.get("ts"), i)
        kind = msg.get("say") if msg.get("type") == "say" else msg.get("ask")
        text = msg.get("text") if isinstance(msg.get("text"), str) else ""
        if kind in ("task", "user_feedback"):
            self.emit("user", unwrap_user(text), ts)
        elif kind in ("text", "completion_result", "followup"):
            if kind == "followup" and text.startswith("{"):
                try:
                    text = str(orjson.loads(text).get("question") or "")
                except (orjson.JSONDecodeError, AttributeError):
                    pass
            self.emit("assistant", text, ts)
        elif kind == "command" and self.want["COMMANDS"]:
            rec = work.command_record(text)
            if rec:
                self.emit("command", rec, ts, tool="execute_command")
        elif kind == "command_output" and self.want["TOOL_OUTPUT"]:
            self.emit("tool-output", text, ts, tool="execute_command")


def _result_text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))
    return ""


# ---- a task folder -------------------------------------------------------------------------


def base_time(*candidates) -> int | None:
    for c in candidates:
        ms = parse_ts(c)
        if ms is not None:
            return ms
    return None


def read_task(path: str, harness: str, prefix: str) -> ReadResult:
    """One task folder of the VS Code extensions (or their CLIs), from its
    API conversation (or, missing that, its UI messages)."""
    if not is_regular_file(path):
        return ReadResult(error=f"not a readable regular file: {path}")
    try:
        doc = load(path)
    except ValueError as exc:
        return ReadResult(malformed=1, faults=[(0, str(exc))])
    folder = os.path.dirname(path)
    task_id = os.path.basename(folder)
    root = os.path.dirname(os.path.dirname(folder))
    item = load_quiet(os.path.join(folder, "history_item.json"))
    if not isinstance(item, dict):
        item = task_history(os.path.join(root, "state", "taskHistory.json")).get(task_id) or {}
    faults = Faults()
    part = SessionPart(harness, prefix + task_id)
    cwd = next((v for k in ("cwdOnTaskInitialization", "workspace", "shadowGitConfigWorkTree")
                if isinstance(v := item.get(k), str) and v.strip()), "")
    part.cwd = cwd
    part.title = title_of(item.get("task"))
    part.title_rank = 1 if part.title else 0
    parent = item.get("parentTaskId")
    if isinstance(parent, (str, int)) and str(parent):
        part.kind, part.parent, part.spawned = "subtask", prefix + str(parent), True
    if not isinstance(doc, list):
        faults.note(0, f"document is {show(doc)}, not a list of messages")
        return ReadResult(malformed=faults.count, faults=faults.first)
    mtime = None
    try:
        mtime = os.stat(path).st_mtime_ns // 1_000_000
    except OSError:
        pass
    # Cline's task ids are the start in ms; Roo's and Kilo's are UUIDs
    conv = Conversation(part, base_time(item.get("ts"), task_id if task_id.isdigit() else None, mtime), faults)
    conv.read(doc, ui=os.path.basename(path) == "ui_messages.json")
    if part.cwd:
        part.project = project_from_cwd(part.cwd)
    sessions = [part] if part.messages or part.title else []
    return ReadResult(sessions=sessions, malformed=faults.count, faults=faults.first, clipped=conv.clipped)


def guarded(read, path: str) -> ReadResult:
    """A reader's whole-file read: a vanished file or a reader bug costs that file."""
    try:
        return read(path)
    except OSError as exc:
        return ReadResult(error=f"{type(exc).__name__}: {exc.strerror or exc}")
    except Exception as exc:  # one bad file costs that file, never the run
        return ReadResult(error=f"{type(exc).__name__}: {exc}")
