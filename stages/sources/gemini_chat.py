"""What Gemini CLI and its fork Qwen Code share: their chat records, tool
dialect and project folders (harness-formats §5, §9 and "Seen in real
published transcripts").

Two record shapes exist in both harnesses' stores:

* the *conversation record* (Gemini's ``session-*.json[l]``, Qwen's older
  ``tmp/<hash>/chats/*.json``): messages ``{id, timestamp, type, content,
  toolCalls?}``, ``type`` ``user`` or the assistant's name (``gemini``,
  ``model``, ``qwen``), tool results inside the call that asked for them;
* the *model content* (Gemini's ``checkpoint*.json``, Qwen's JSONL lines):
  ``{role, parts}`` with ``text``, ``functionCall`` and ``functionResponse``
  parts, the responses in a later ``user`` turn.

``Turns`` turns either into deja's messages; the readers only walk their files.
Both harnesses name a project folder by a hash of its root (``sha256``) or,
in newer Gemini builds, by a slug listed in ``projects.json`` with a
``.project_root`` file beside the chats; ``recorded_cwd`` finds the folder
where the store records it, so the one project identity rule applies.
"""

from __future__ import annotations

import hashlib
import os
import re

import orjson

from deja.stages import work_records as work
from deja.stages.replies import answers_text, questions_text
from deja.stages.sources.base import Message
from deja.stages.sources.jsonl import clip, parse_ts
from deja.stages.sources.values import Faults

ASSISTANT_TYPES = frozenset(("gemini", "model", "qwen", "assistant"))
# the tool dialect (harness-formats §1.2): Gemini says ``replace``, Qwen ``edit``
SHELL_TOOLS = frozenset(("run_shell_command",))
FILE_TOOLS = frozenset(("read_file", "write_file", "replace", "edit", "read_many_files"))
ASK_TOOLS = frozenset(("ask_user", "ask_user_question"))
# ``@path`` in a prompt appends the files' contents after this line: not what was asked
_REFERENCED = "\n--- Content from referenced files ---"
# shell output framing: ``Command: …\nDirectory: …\nOutput: <body>\nError: …\nExit Code: N\n…``
_SHELL_HEAD = re.compile(r"\A(?:Command: [^\n]*\n(?:[^\n]*\n)*?)?(?:Directory: [^\n]*\n)?Output: ?")
_SHELL_TAIL = re.compile(
    r"\n(?:Error: [^\n]*|Exit Code: -?\d+|Signal: [^\n]*|Background PIDs: [^\n]*|Process Group PGID: [^\n]*)\s*\Z"
)
_EXIT = re.compile(r"^Exit Code: (-?\d+)\s*$", re.M)
_EMPTY = frozenset(("(empty)", "(none)"))
# where Gemini's own session preamble names the folder it runs in
_WORKSPACE = re.compile(r"Workspace Directories:\*{0,2}\s*\n\s*-\s+(\S[^\n]*?)\s*$", re.M)
_WORKING_IN = re.compile(r"I'm currently working in the directory:\s*(\S[^\n]*?)\s*$", re.M)
_PREAMBLE = "This is the Gemini CLI. We are setting up the context"
# chat compression puts the model's <state_snapshot> of the turns it folds in their place,
# as a user turn followed by this canned model turn (chatCompressionService.ts)
_SNAPSHOT = "<state_snapshot>"
_SNAPSHOT_ACK = "Got it. Thanks for the additional context!"
_HEX64 = re.compile(r"^[0-9a-f]{64}$")


# --------------------------------------------------------------------------- messages


def ms(value) -> int | None:
    """A time as the line reader left it (epoch ms) or as written (nested records)."""
    if type(value) is int:
        return value
    return parse_ts(value)


def content_text(content) -> str:
    """The text of a ``content``: a string, a part, or a list of parts; thoughts left out."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return ""
    out = []
    for part in content:
        if isinstance(part, str):
            out.append(part)
        elif isinstance(part, dict) and not part.get("thought"):
            text = part.get("text")
            if isinstance(text, str) and text:
                out.append(text)
    return "\n".join(out)


def asked(text: str) -> str:
    """A prompt without the file contents ``@path`` appended to it."""
    i = text.find(_REFERENCED)
    return text[:i] if i >= 0 else text


def is_preamble(text: str) -> bool:
    """Gemini's untagged first turn of a checkpoint (its tagged form is stripped by normalize)."""
    return text.lstrip().startswith(_PREAMBLE)


def unframe_shell(text: str) -> tuple[str, int | None]:
    """(what the command printed, its exit code when recorded)."""
    m = _EXIT.search(text)
    code = int(m.group(1)) if m else None
    body = text
    head = _SHELL_HEAD.match(body)
    if head:
        body = body[head.end():]
    while True:
        tail = _SHELL_TAIL.search(body)
        if not tail:
            break
        body = body[: tail.start()]
    body = body.strip()
    return ("" if body in _EMPTY else body), code


def response_text(resp) -> tuple[str, bool]:
    """(text, is it an error) of a ``functionResponse.response`` (``{output}`` or ``{error}``)."""
    if isinstance(resp, str):
        return resp, False
    if not isinstance(resp, dict):
        return "", False
    err = resp.get("error")
    if isinstance(err, str) and err.strip():
        return err, True
    out = resp.get("output")
    if isinstance(out, str):
        return out, False
    if out is not None:
        return orjson.dumps(out).decode(), False
    content = resp.get("content")  # MCP results
    return content_text(content), False


class Turns:
    """The messages of one session, built from either record shape."""

    __slots__ = ("cwd", "flags", "out", "pending", "clipped", "faults")

    def __init__(self, cwd: str = "", faults: Faults | None = None):
        self.cwd = cwd
        self.flags = {f: work.enabled(f) for f in ("PATHS", "COMMANDS", "EDITS", "TOOL_OUTPUT")}
        self.out: list[Message] = []
        self.pending: dict[str, tuple[str, Message]] = {}  # call id -> (command, its record): the exit code comes later
        self.clipped = 0
        self.faults = faults if faults is not None else Faults()  # the reader's: values set to unknown

    def add(self, role: str, text: str, ts, offset: int, tool=None, exit_code=None, is_error=None) -> Message | None:
        if not isinstance(text, str) or not text.strip():
            return None
        text, cut = clip(text)
        self.clipped += cut
        m = Message(role, text, ts, tool, exit_code, is_error, offset)
        self.out.append(m)
        return m

    def user(self, text: str, ts, offset: int) -> None:
        self.add("user", asked(text), ts, offset)

    # ---- the conversation record

    def record(self, msg: dict, ts_default, offset: int) -> None:
        """One conversation-record message (Gemini ``.json[l]``, Qwen ``.json``)."""
        kind = self.faults.text(offset, "type", msg.get("type"))
        ts = ms(msg.get("timestamp"))
        ts = ts if ts is not None else ts_default
        if kind == "user":
            text = content_text(msg.get("content"))
            if _SNAPSHOT in text:  # chat compression's summary, sent as a user turn: not the person's words
                self.add("summary", text, ts, offset)
            else:
                self.user(text, ts, offset)
        elif kind in ASSISTANT_TYPES:
            text = content_text(msg.get("content"))
            if not (text.strip() == _SNAPSHOT_ACK and self.out and self.out[-1].role == "summary"):
                self.add("assistant", text, ts, offset)  # the ack after a summary is canned, not the model's
            calls = msg.get("toolCalls")
            if isinstance(calls, list):
                good = [c for c in calls if isinstance(c, dict)]
                self.calls([(c.get("name"), c.get("args"), c.get("id")) for c in good], ts, offset)
                for c in good:
                    self.result(c, ts, offset)
        # info, error, warning: the harness talking about itself

    def result(self, call: dict, ts, offset: int) -> None:
        """The results a conversation record keeps inside its tool call."""
        res = call.get("result")
        parts = res if isinstance(res, list) else [res] if res is not None else []
        failed = call.get("status") == "error"
        for part in parts:
            if isinstance(part, dict) and isinstance(part.get("functionResponse"), dict):
                fr = part["functionResponse"]
                if isinstance(fr.get("id"), str) and fr["id"] != call.get("id"):
                    continue  # masking syncs a whole user turn into each call: its siblings' results too
                self.response(fr.get("name") or call.get("name"), fr.get("response"), call.get("id"), ts, offset,
                              failed)
            elif isinstance(part, (str, dict)):
                text = part if isinstance(part, str) else content_text(part)
                self.response(call.get("name"), {"output": text}, call.get("id"), ts, offset, failed)

    # ---- the model content

    def content(self, role, parts, ts, offset: int, failed: bool = False) -> None:
        """One ``{role, parts}`` turn (Gemini checkpoints, Qwen JSONL)."""
        if isinstance(parts, dict):
            parts = [parts]
        if not isinstance(parts, list):
            parts = [{"text": parts}] if isinstance(parts, str) else []
        text = content_text([p for p in parts if isinstance(p, dict) and "text" in p])
        role = self.faults.text(offset, "role", role)
        if role == "user":
            self.user(text, ts, offset)
        elif role in ASSISTANT_TYPES:
            self.add("assistant", text, ts, offset)
        calls = []
        for p in parts:
            if not isinstance(p, dict):
                continue
            fc = p.get("functionCall")
            if isinstance(fc, dict):
                calls.append((fc.get("name"), fc.get("args"), fc.get("id")))
            fr = p.get("functionResponse")
            if isinstance(fr, dict):
                self.response(fr.get("name"), fr.get("response"), fr.get("id"), ts, offset, failed)
        if calls:
            self.calls(calls, ts, offset)

    # ---- work records (harness-formats §1.2, Gemini/Qwen dialect)

    def calls(self, calls: list[tuple], ts, offset: int) -> None:
        """One message's tool calls: commands, one files record, edits."""
        paths: list[str] = []
        edits: list[tuple[str, str]] = []
        path_tool = None
        for name, args, call_id in calls:
            if not isinstance(name, str) or not isinstance(args, dict):
                continue
            if name in ASK_TOOLS:
                self.add("assistant", questions_text(args), ts, offset, name)
            elif name in SHELL_TOOLS:
                cmd = args.get("command")
                if self.flags["COMMANDS"] and isinstance(cmd, str):
                    m = self.add("command", work.command_record(cmd) or "", ts, offset, name)
                    if m is not None and isinstance(call_id, str):
                        self.pending[call_id] = (cmd, m)
            elif name in FILE_TOOLS:
                named = args.get("file_path") or args.get("absolute_path") or args.get("path")
                found = [named] if isinstance(named, str) else []
                many = args.get("paths") or args.get("file_paths")
                if isinstance(many, list):
                    found += [p for p in many if isinstance(p, str)]
                found = [self.absolute(p) for p in found if p]
                if found:
                    paths += found
                    path_tool = path_tool or name
                old = args.get("old_string")
                if found and isinstance(old, str):
                    rec = work.edit_record(found[0], old)
                    if rec:
                        edits.append((rec, name))
        if paths and self.flags["PATHS"]:
            self.add("files", work.files_record(paths) or "", ts, offset, path_tool)
        if self.flags["EDITS"]:
            for rec, name in edits:
                self.add("edit", rec, ts, offset, name)

    def response(self, name, resp, call_id, ts, offset: int, failed: bool = False) -> None:
        name = self.faults.text(offset, "tool name", name)
        text, is_error = response_text(resp)
        is_error = is_error or failed
        code = None
        if name in SHELL_TOOLS and text:
            text, code = unframe_shell(text)
            if code is not None:
                is_error = is_error or code != 0
        entry = self.pending.pop(call_id, None) if isinstance(call_id, str) else None
        if entry is not None and code is not None:
            cmd, m = entry
            m.exit_code = code
            m.text = work.command_record(cmd, code) or m.text
        if name in ASK_TOOLS:
            self.add("user", answers_text(text), ts, offset, name)
            return
        if self.flags["TOOL_OUTPUT"]:
            self.add("tool-output", text, ts, offset, name, None, True if is_error else None)

    def absolute(self, path: str) -> str:
        """A path the agent gave relative to the folder it ran in, joined to it when known."""
        if not self.cwd or work.is_absolute(path):
            return path
        sep = "\\" if "\\" in self.cwd and "/" not in self.cwd else "/"
        return self.cwd.rstrip("/\\") + sep + path


# --------------------------------------------------------------------------- projects


def project_hash(path: str) -> str:
    """The folder name both harnesses give a project root: ``sha256(root)``."""
    return hashlib.sha256(path.encode("utf-8", "surrogatepass")).hexdigest()


def registry(home: str) -> dict[str, str]:
    """``projects.json``'s ``{root: slug}`` (newer Gemini builds), {} when absent or odd."""
    try:
        with open(os.path.join(home, "projects.json"), "rb") as fh:
            data = orjson.loads(fh.read(1 << 20))
    except (OSError, orjson.JSONDecodeError):
        return {}
    projects = data.get("projects") if isinstance(data, dict) else None
    if not isinstance(projects, dict):
        return {}
    return {k: v for k, v in projects.items() if isinstance(k, str) and isinstance(v, str)}


def recorded_cwd(project_dir: str, header_hash: str = "", preamble: str = "") -> str:
    """The folder a project directory (``tmp/<slug or hash>``) stands for, where
    the store records it: its ``.project_root`` file, ``projects.json`` (by slug,
    or a root whose hash is the folder's or the session's ``projectHash``), or
    the session's own preamble (``Workspace Directories``, "working in the
    directory"). "" when nothing records it."""
    try:
        with open(os.path.join(project_dir, ".project_root"), "rb") as fh:
            root = fh.read(8192).decode("utf-8", "replace").strip()
        if root:
            return root
    except OSError:
        pass
    name = os.path.basename(project_dir.rstrip("/\\"))
    home = os.path.dirname(os.path.dirname(project_dir.rstrip("/\\")))  # <home>/tmp/<name>
    hashes = {h for h in (name, header_hash) if _HEX64.match(h or "")}
    for root, slug in registry(home).items():
        if slug == name or (hashes and project_hash(root) in hashes):
            return root
    if preamble:
        m = _WORKSPACE.search(preamble) or _WORKING_IN.search(preamble)
        if m:
            return m.group(1).rstrip("/\\") or m.group(1)
    return ""


def project_dir_of(path: str) -> str:
    """``<home>/tmp/<project>`` (or Qwen's ``projects/<project>``) holding a
    transcript, in it or in its ``chats`` (a subagent's one deeper); "" elsewhere."""
    d = os.path.dirname(os.path.abspath(path))
    for _ in range(3):
        if os.path.basename(os.path.dirname(d)) in ("tmp", "projects"):
            return d
        d = os.path.dirname(d)
    return ""
