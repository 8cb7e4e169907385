"""Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``; a
thread archived in Codex's app or IDE extension is moved, whole, to
``~/.codex/archived_sessions/``) and ``history.jsonl`` (harness-formats
section 4 and "Seen in real published transcripts → Codex CLI").

A rollout untouched for a week may be compressed, in either folder, to
``rollout-*.jsonl.zst``. It is read as the JSONL it holds (``jsonl.open_bytes``:
offsets are the JSONL's), whole whenever it changes (the plan never appends to
it), and a damaged or cut stream is that file's error, which keeps what the
index already holds of it.

Every rollout line is ``{"timestamp", "type", "payload"}``. Speech comes from
``response_item`` messages; the ``event_msg`` copies of the same turns are kept
aside and used only when a file has no ``response_item`` messages at all (old,
events-only rollouts). Work comes from ``function_call`` (three generations of
shell tools), ``custom_tool_call`` ``apply_patch`` and their outputs; a
unified-exec command still running when its call returned takes the exit code
a later ``write_stdin`` output for its session reports. A ``web_search_call``'s
query is kept as the ``web_search`` tool's output, an ``agent_message`` (between
agents) as assistant speech, and the last ``thread_name_updated`` (``/rename``)
is the session's title. In code mode each ``tools.exec_command({cmd})`` in
the JavaScript of an ``exec`` custom tool call is a command (no exit code: the
script's output is its own). (``session_index.jsonl`` repeats those names; it is not
read: the rollout holds each one.)

Spawned/forked threads start with two ``session_meta`` lines (the thread's own,
then the parent's) followed by a replay of the parent's history stamped at the
fork time; the replay is dropped so the parent's turns are indexed once. The
replay ends at the first ``task_started`` whose start time (``started_at``, or
the UUIDv7 time of its ``turn_id``) is not earlier than the thread's own
creation second — replayed turns all started before the fork. Without a start
time the second ``task_started`` ends it, and a line stamped more than
``_REPLAY_GUARD_MS`` after the replay began always does (replayed lines carry
the fork time, ±50 ms).
"""

from __future__ import annotations

import os
import re
from typing import Mapping

import orjson

from deja.stages import work_records as work
from deja.stages.normalize import strip_plumbing
from deja.stages.replies import answers_text, questions_text
from deja.stages.sources.base import Message, ReadResult, SessionPart, SourceFile
from deja.stages.sources.jsonl import COMPRESSED, Lines, clip, held_back, is_regular_file, parse_ts, read_head
from deja.stages.sources.locate import CODEX_ARCHIVED, codex_files, codex_home  # noqa: F401  (codex_home: recover, capture)
from deja.stages.sources.locate import codex_rollouts as _rollout_paths

HARNESS = "codex"

# Calls that wait on the person, not on a program: the question is what a
# recovery packet needs while it waits (held_back never waits for them).
_ASKS = frozenset({"request_user_input"})

_HEAD = 64 << 10
_HEAD_MAX = 16 << 20  # larger head passes for huge first lines or a long fork replay
_REPLAY_GUARD_MS = 5000

_UUID_TAIL = re.compile(r"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\.jsonl(?:\.zst)?$")
_NAME = re.compile(r"rollout-(?:\d{4}-\d{2}-\d{2}T\d{2}[-:]\d{2}[-:]\d{2}(?:\.\d+)?Z?-)?(.+?)\.jsonl(?:\.zst)?$")

# Envelope-less lines of the earliest rollouts are bare response items.
_ITEM_TYPES = frozenset(
    "message function_call function_call_output custom_tool_call custom_tool_call_output "
    "local_shell_call reasoning".split()
)
_SHELL_TOOLS = frozenset(("exec_command", "shell_command", "shell", "container.exec", "local_shell"))
_PATCH_TOOLS = frozenset(("apply_patch", "applypatch"))
_PATCH_BEGIN = "*** Begin Patch"
_PATCH_END = "*** End Patch"

# Framing written before a tool's output, by generation (harness-formats, "Shell
# commands by generation"): `Exit code: N\nWall time: …\n[Total output lines: K\n]Output:\n…`
# (shell_command, user `!cmd`), `Command: …\nChunk ID: …\nWall time: …\nProcess exited
# with code N\nOriginal token count: …\nOutput:\n…` (exec_command).
_FRAME_STARTS = (
    "Exit code:",
    "Command:",
    "Chunk ID:",
    "Wall time:",
    "Process exited with code",
    "Process running with session ID",
    "Original token count:",
    "Total output lines:",
    "Duration:",
)
_FRAME_LINE = re.compile(
    r"(?:Exit code: -?\d+|Chunk ID: \S*|Wall time: [^\n]*|Process exited with code -?\d+"
    r"|Process running with session ID \d+|Original token count: \d+|Total output lines: \d+"
    r"|Duration: [^\n]*|Command: [^\n]*)\r?$"
)
_EXIT = re.compile(r"^(?:Exit code:|Process exited with code)\s*(-?\d+)", re.M)
_RUNNING = re.compile(r"^Process running with session ID (\d+)", re.M)
# Code mode: the model writes JavaScript run by the `exec` tool, which calls
# tools.exec_command({cmd: "..."}); a JS string literal of any quote.
_JS_EXEC = re.compile(r"""exec_command\(\s*\{[^{}]*?\bcmd\s*:\s*("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`[^`]*`)""")
_OUTPUT_LINE = re.compile(r"^Output:[ \t]*\r?$\n?", re.M)


# --------------------------------------------------------------------------- discover


def roots(env: Mapping[str, str]) -> list[str]:
    """Where this reader looks, for `deja doctor`."""
    return [codex_home(env)]


def discover(env: Mapping[str, str]) -> list[SourceFile]:
    return [SourceFile(p, HARNESS) for p in codex_files(env)]


# --------------------------------------------------------------------------- read


# The index reads with ``live``: a call still running in a live rollout waits
# for its output (jsonl.held_back). Recovery and packets read without it.
HOLDS_PENDING = True


def read(path: str, start: int = 0, live: bool = False, limit: int | None = None) -> ReadResult:
    """``limit``: as the Claude reader's (a slice of a file too big to read at once)."""
    if not is_regular_file(path):
        return ReadResult(safe_offset=start, error=f"not a readable regular file: {path}")
    try:
        if os.path.basename(path) == "history.jsonl":
            return _read_history(path, start)
        compressed = path.endswith(COMPRESSED)  # (a week cold: no call in it is still running)
        return _read_rollout(path, start, live=live and not compressed, limit=limit)
    except OSError as exc:
        return ReadResult(safe_offset=start, error=f"{type(exc).__name__}: {exc}")
    except ValueError as exc:
        if path.endswith(COMPRESSED):  # (jsonl.open_bytes: damaged, cut short)
            return ReadResult(safe_offset=start, error=f"compressed rollout unreadable: {exc}")
        return ReadResult(safe_offset=start, error=f"codex reader failed: {type(exc).__name__}: {exc}")
    except Exception as exc:  # one bad file costs that file, never the run
        return ReadResult(safe_offset=start, error=f"codex reader failed: {type(exc).__name__}: {exc}")


def filename_id(path: str) -> str:
    """The thread id in a rollout file name: the trailing uuid."""
    name = os.path.basename(path)
    m = _UUID_TAIL.search(name)
    if m:
        return m.group(1)
    m = _NAME.search(name)
    if m:
        return m.group(1)
    name = name[: -len(COMPRESSED)] if name.endswith(COMPRESSED) else name
    return name[:-6] if name.endswith(".jsonl") else name


def project_of(cwd: str) -> str:
    """Basename of a cwd, POSIX or Windows."""
    s = cwd.rstrip("/\\")
    return re.split(r"[/\\]", s)[-1] if s else ""


def _read_rollout(path: str, start: int, stop: int | None = None, live: bool = False,
                  limit: int | None = None) -> ReadResult:
    flags = {f: work.enabled(f) for f in ("PATHS", "COMMANDS", "EDITS", "TOOL_OUTPUT")}
    r = _Rollout(path, flags)
    if start > 0:
        r = _primed(path, start, flags)
    lines = Lines(path, start, stop=stop if stop is not None else limit)
    r.bad += lines.each(lambda offset, obj: r.step(offset, obj, True))
    if (live or limit is not None) and stop is None:
        cut = held_back(path, r.calls, r.results, r.said, always=limit is not None)
        if cut is not None and cut < lines.end:
            # a call still running: its exit code and its output's tool come in a later line
            return _read_rollout(path, start, cut) if cut > start else ReadResult(safe_offset=start)
    res = r.result(path, lines.end, lines.malformed + lines.faults.count)
    res.faults = lines.faults.first
    return res


def _primed(path: str, start: int, flags: dict) -> "_Rollout":
    """A reader whose identity/fork state is that of the lines before ``start``.

    The 64 KiB head normally holds it all; a head whose lines are bigger (a
    developer preamble can be 50 KB) or a long fork replay is re-read larger.
    """
    limit = min(start, _HEAD)
    while True:
        r = _Rollout(path, flags)
        for obj in read_head(path, limit):
            try:
                r.step(0, obj, False)
            except Exception:
                pass
        if (r.meta and not r.fork.on and r.has_ri) or limit >= start or limit >= _HEAD_MAX:
            return r
        limit = min(start, limit * 16)


class Replay:
    """Which lines of a rollout are a fork's replay of its parent's history (the
    rule in this module's docstring), fed every line in order. The one rule for
    the index (``_Rollout``) and for recovery (``stages/recover/codex.py``)."""

    __slots__ = ("own_id", "fork_ms", "started", "on", "seen", "since", "tasks")

    def __init__(self) -> None:
        self.own_id = ""
        self.fork_ms: int | None = None  # when the thread was created
        self.started = False  # a line other than session_meta seen
        self.on = False  # inside the replay
        self.seen = False
        self.since: int | None = None  # the time stamped on the replay's lines
        self.tasks = 0

    def own_meta(self, sid: str, p: dict, ts: int | None) -> None:
        """The first ``session_meta``: the thread's own."""
        self.own_id = sid
        self.fork_ms = parse_ts(p.get("timestamp")) or _uuid7_ms(sid) or ts

    def later_meta(self, p: dict, ts: int | None) -> str:
        """A later ``session_meta``: the parent's id when it opens a replay, else "".
        The same id is a resumed run (nothing to drop); a different one directly
        after ours is the parent's, and the parent's history is replayed next."""
        if self.started or self.seen:
            return ""
        other = p.get("id")
        if not isinstance(other, str):
            other = p.get("session_id")
        if isinstance(other, str) and other and other != self.own_id:
            self.on = self.seen = True
            self.since = ts
            return other
        return ""

    def replayed(self, t, p: dict, ts: int | None) -> bool:
        """Whether this line (any but ``session_meta``; ``ts``: the latest time
        read) belongs to the replay."""
        self.started = True
        if not self.on:
            return False
        if ts is not None and self.since is not None and ts - self.since > _REPLAY_GUARD_MS:
            self.on = False
        elif t == "event_msg" and p.get("type") == "task_started":
            self.tasks += 1
            when = _task_ms(p)
            if when is not None and self.fork_ms is not None:
                self.on = when // 1000 < self.fork_ms // 1000
            else:
                self.on = self.tasks < 2
        return self.on


class _Rollout:
    __slots__ = (
        "flags", "sid", "cwd", "branch", "kind", "parent", "agent", "spawned", "meta", "fork", "has_ri",
        "ts", "last_raw_ts", "out", "fallback", "names", "pending", "bad", "calls", "results", "said",
        "running", "polls", "title", "titles",
    )

    def __init__(self, path: str, flags: dict):
        self.flags = flags
        self.sid = filename_id(path)
        self.cwd = ""
        self.branch = ""
        self.kind = ""
        self.parent = ""
        self.agent = ""
        self.spawned = False
        self.meta = False  # first session_meta seen
        self.fork = Replay()
        self.has_ri = False  # the file writes response_item messages
        self.ts: int | None = None
        self.last_raw_ts = None
        self.out: list[Message] = []
        self.fallback: list[int] = []  # indices in out that came from the event stream
        self.names: dict[str, str] = {}  # call_id -> tool name
        self.pending: dict[str, tuple[str, Message]] = {}  # call_id -> (command, its record)
        self.bad = 0
        self.calls: dict[str, int] = {}  # call_id -> its line's offset (read: jsonl.held_back)
        self.results: dict[str, int] = {}  # call_id -> the offset of its output's line
        self.said = -1  # the last line of speech read
        # unified exec: session ID -> (its command's call_id, that call's output record)
        self.running: dict[str, tuple[str, Message | None]] = {}
        self.polls: dict[str, str] = {}  # a write_stdin call_id -> the session ID it polls
        self.title = ""  # the thread's name (/rename): the last one written
        self.titles: list[tuple[int, str]] = []  # every name given, where it was first written

    # ---- dispatch

    def step(self, offset: int, obj: dict, emit: bool) -> None:
        raw_ts = obj.get("timestamp")
        if raw_ts is not None and raw_ts != self.last_raw_ts:
            parsed = parse_ts(raw_ts)
            if parsed is not None:
                self.ts = parsed
                self.last_raw_ts = raw_ts
        t = obj.get("type")
        payload = obj.get("payload")
        if payload is None:
            if t in _ITEM_TYPES:  # earliest rollouts: bare response items
                payload, t = obj, "response_item"
            elif t is None and not self.meta and "id" in obj and "timestamp" in obj:
                payload, t = obj, "session_meta"  # earliest rollouts: bare meta first line
            else:
                return  # events without a payload are ignored
        if not isinstance(payload, dict):
            return
        if t == "session_meta":
            self._meta(payload)
            return
        replayed = self.fork.replayed(t, payload, self.ts)
        if t == "response_item" and payload.get("type") == "message":
            self.has_ri = True
        if replayed:
            return
        if not emit:
            return
        if t == "response_item":
            self._item(payload, offset)
        elif t == "event_msg":
            self._event(payload, offset)
        elif t == "compacted":
            msg = payload.get("message")
            if isinstance(msg, str) and msg.strip():
                self._add("summary", msg, offset)

    # ---- identity and forks

    def _meta(self, p: dict) -> None:
        if not self.meta:
            self.meta = True
            if "id" in p:
                pid = p.get("id")
                if isinstance(pid, str) and pid:
                    self.sid = pid
            else:
                sid = p.get("session_id")
                if isinstance(sid, str) and sid:
                    self.sid = sid
            cwd = p.get("cwd")
            if isinstance(cwd, str):
                self.cwd = cwd
            git = p.get("git")
            if isinstance(git, dict) and isinstance(git.get("branch"), str):
                self.branch = git["branch"]
            self._edge(p)
            self.fork.own_meta(self.sid, p, self.ts)
            return
        parent = self.fork.later_meta(p, self.ts)
        if parent and self.kind != "subagent_fork":
            self.kind = "subagent_fork"
            self.parent = parent

    def _edge(self, p: dict) -> None:
        source = p.get("source")
        if isinstance(source, dict) and "subagent" in source:
            self.kind = "subagent"
            self.spawned = True
            sub = source.get("subagent")
            role = p.get("agent_role")
            if isinstance(sub, str):
                self.agent = sub
            elif isinstance(sub, dict) and sub:
                key = next(iter(sub))
                info = sub.get(key)
                if isinstance(info, dict):
                    parent = info.get("parent_thread_id")
                    if isinstance(parent, str):
                        self.parent = parent
                    role = info.get("agent_role") or role
                self.agent = role if isinstance(role, str) and role else str(key)
        fork = p.get("forked_from_id")
        if isinstance(fork, str) and fork:
            self.kind = "subagent_fork"
            self.parent = fork

    # ---- records

    def _called(self, call_id, name, offset: int) -> None:
        """A call's tool (for its output) and its line (a call with no output yet waits: jsonl.held_back)."""
        if isinstance(call_id, str) and isinstance(name, str):
            self.names[call_id] = name
            if name not in _ASKS:
                self.calls.setdefault(call_id, offset)

    def _add(self, role: str, text: str, offset: int, tool=None, exit_code=None, is_error=None) -> Message:
        if role in ("user", "assistant"):
            self.said = offset  # (a call before this was interrupted: jsonl.held_back)
        m = Message(role, text, self.ts, tool, exit_code, is_error, offset)
        self.out.append(m)
        return m

    def _item(self, p: dict, offset: int) -> None:
        pt = p.get("type")
        if pt == "message":
            role = p.get("role")
            if role == "user":
                self._user(p.get("content"), offset)
            elif role == "assistant":
                text = content_text(p.get("content"))
                if text.strip():
                    self._add("assistant", text, offset)
        elif pt == "function_call":
            self._call(p, offset)
        elif pt in ("function_call_output", "custom_tool_call_output"):
            self._output(p, offset)
        elif pt == "custom_tool_call":
            name = p.get("name")
            call_id = p.get("call_id")
            self._called(call_id, name, offset)
            patch = p.get("input")
            if isinstance(patch, str) and (name in _PATCH_TOOLS or _PATCH_BEGIN in patch):
                self._patch(patch, name if isinstance(name, str) else "apply_patch", offset)
            elif name == "exec" and isinstance(patch, str):  # code mode: a command per exec_command call
                for lit in _JS_EXEC.findall(patch):
                    self._shell(_js_string(lit), "exec", None, offset)
        elif pt == "local_shell_call":
            action = p.get("action")
            if isinstance(action, dict):
                self._shell(action.get("command"), "local_shell", p.get("call_id"), offset)
        elif pt == "web_search_call":
            # What the agent looked up: its only record (the results are not
            # persisted), kept as the search tool's output so it is found.
            text = _web_search_text(p.get("action"))
            if text and self.flags["TOOL_OUTPUT"]:
                self._add("tool-output", text, offset, "web_search")
        elif pt == "agent_message":
            # A message between agents (multi-agent): an agent's words, though
            # not a turn of this thread's conversation with its person, so it
            # leaves held_back's `said` alone (a wait on that agent is pending).
            text = content_text(p.get("content"))
            if text.strip():
                self.out.append(Message("assistant", text, self.ts, None, None, None, offset))

    def _user(self, content, offset: int) -> None:
        parts = content if isinstance(content, list) else [{"text": content}]
        keep: list[str] = []
        for part in parts:
            if not isinstance(part, dict) or part.get("type") == "input_image":
                continue
            text = part.get("text")
            if not isinstance(text, str) or not text.strip():
                continue
            s = text.lstrip()
            if s.startswith("<user_shell_command>"):
                self._user_shell(s, offset)
                continue
            if s.startswith("<turn_aborted>"):
                continue  # harness notice
            if not strip_plumbing(text):
                continue  # a part that is nothing but harness preamble
            keep.append(text)
        if keep:
            self._add("user", "\n".join(keep), offset)

    def _user_shell(self, text: str, offset: int) -> None:
        """The user's ``!cmd``: ``<user_shell_command><command>X</command><result>…``."""
        cmd = text_between(text, "<command>", "</command>")
        result = text_between(text, "<result>", "</result>", last=True)
        body, code = unframe_output(result) if result is not None else ("", None)
        if cmd is not None and self.flags["COMMANDS"]:
            rec = work.command_record(cmd.strip(), code)
            if rec:
                self._add("command", rec, offset, "user_shell", code)
        if body and self.flags["TOOL_OUTPUT"]:
            self._add("tool-output", body, offset, "user_shell", None, _is_error(code, body))

    def _call(self, p: dict, offset: int) -> None:
        name = p.get("name")
        call_id = p.get("call_id")
        self._called(call_id, name, offset)
        args = p.get("arguments")
        if name == "request_user_input":  # the agent's question with options: its turn
            q = questions_text(json_object(args))
            if q:
                self._add("assistant", q, offset, name)
            return
        if name == "write_stdin":
            session = json_object(args).get("session_id")
            if isinstance(session, (int, str)) and isinstance(call_id, str):
                self.polls[call_id] = str(session)
            return
        if name in _SHELL_TOOLS:
            a = json_object(args)
            cmd = a.get("cmd") if name == "exec_command" else a.get("command")
            if cmd is None:
                cmd = a.get("command") if name == "exec_command" else a.get("cmd")
            self._shell(cmd, name, call_id, offset)
            return
        if name in _PATCH_TOOLS:
            a = json_object(args)
            patch = a.get("input") or a.get("patch")
            if not isinstance(patch, str) and isinstance(args, str) and args.lstrip().startswith(_PATCH_BEGIN):
                patch = args
            if isinstance(patch, str):
                self._patch(patch, name, offset)
            return
        if isinstance(args, str) and _PATCH_BEGIN in args:
            patch = _find_patch(json_object(args))
            if patch:
                self._patch(patch, name if isinstance(name, str) else "apply_patch", offset)

    def _shell(self, cmd, tool: str, call_id, offset: int) -> None:
        if isinstance(cmd, list):
            argv = [c for c in cmd if isinstance(c, str)]
            if argv and argv[0] in _PATCH_TOOLS and len(argv) > 1:
                self._patch(argv[-1], tool, offset)
                return
            cmd = argv[-1] if argv else None
        if not isinstance(cmd, str):
            return
        if _PATCH_BEGIN in cmd:
            patch = _cut_patch(cmd)
            if patch:
                self._patch(patch, tool, offset)
                return
        if not self.flags["COMMANDS"]:
            return
        rec = work.command_record(cmd)
        if rec:
            m = self._add("command", rec, offset, tool)
            if isinstance(call_id, str):
                self.pending[call_id] = (cmd, m)

    def _patch(self, patch: str, tool: str, offset: int) -> None:
        files, edits = work.patch_records(patch, self.cwd)
        if files and self.flags["PATHS"]:
            self._add("files", files, offset, tool)
        if self.flags["EDITS"]:
            for e in edits:
                self._add("edit", e, offset, tool)

    def _output(self, p: dict, offset: int) -> None:
        call_id = p.get("call_id")
        if isinstance(call_id, str):
            self.results.setdefault(call_id, offset)
        raw = output_text(p.get("output"))
        body, code = unframe_output(raw)
        if isinstance(call_id, str) and self.names.get(call_id) == "request_user_input":
            if body.strip():  # what the person picked: their turn
                self._add("user", answers_text(body), offset, "request_user_input")
            return
        if isinstance(call_id, str):
            self._set_exit(call_id, code)
        m = None
        if body and self.flags["TOOL_OUTPUT"]:
            tool = self.names.get(call_id) if isinstance(call_id, str) else None
            m = self._add("tool-output", body, offset, tool, None, _is_error(code, body))
        if isinstance(call_id, str):
            self._unified_exit(call_id, raw, code, m)

    def _unified_exit(self, call_id: str, raw: str, code: int | None, out: Message | None) -> None:
        """Unified exec: a command that outlives its first wait answers ``Process
        running with session ID N``; its exit status comes later, in the output of
        a ``write_stdin`` call polling session N (``exec_command_end``, which has
        it, is not persisted by default). It goes to the command's record, and
        its first output is flagged as a failed command's is."""
        if call_id in self.pending and code is None:
            end = _OUTPUT_LINE.search(raw)
            m = _RUNNING.search(raw, 0, end.start() if end else 1024)  # (the framing, not the output)
            if m:
                self.running[m.group(1)] = (call_id, out)
        elif code is not None and call_id in self.polls:
            started = self.running.pop(self.polls[call_id], None)
            if started is not None:
                self._set_exit(started[0], code)
                if started[1] is not None:
                    started[1].is_error = code > 0

    def _set_exit(self, call_id: str, code: int | None, override: bool = True) -> None:
        entry = self.pending.get(call_id)
        if entry is None or code is None:
            return
        cmd, m = entry
        if m.exit_code is not None and not override:
            return
        m.exit_code = code
        m.text = work.command_record(cmd, code) or m.text

    def _event(self, p: dict, offset: int) -> None:
        pt = p.get("type")
        if pt == "user_message" or pt == "agent_message":
            msg = p.get("message")
            if isinstance(msg, str) and msg.strip():
                self.fallback.append(len(self.out))
                self._add("assistant" if pt == "agent_message" else "user", msg, offset)
        elif pt == "thread_name_updated":  # /rename: the last name given is the thread's
            name = p.get("thread_name")
            if isinstance(name, str) and name.strip():
                self.title = name.strip()
                if all(t != self.title for _, t in self.titles):
                    self.titles.append((offset, self.title))
        elif pt == "exec_command_end":
            call_id = p.get("call_id")
            code = p.get("exit_code")
            code = code if isinstance(code, int) and not isinstance(code, bool) else None
            if isinstance(call_id, str) and (call_id in self.pending or call_id in self.names):
                # A call this read has seen: its function_call_output is the record;
                # the end event only supplies an exit status the output may lack.
                self._set_exit(call_id, code, override=False)
                return
            # Events-only rollouts: the end event is the only record of the command.
            argv = p.get("command")
            cmd = argv[-1] if isinstance(argv, list) and argv and isinstance(argv[-1], str) else argv
            if isinstance(cmd, str) and self.flags["COMMANDS"]:
                rec = work.command_record(cmd, code)
                if rec:
                    self.fallback.append(len(self.out))
                    self._add("command", rec, offset, "exec_command", code)
            out = p.get("aggregated_output")
            if not isinstance(out, str) or not out.strip():
                out = "".join(s for s in (p.get("stdout"), p.get("stderr")) if isinstance(s, str))
            out = out.strip()
            if out and self.flags["TOOL_OUTPUT"]:
                self.fallback.append(len(self.out))
                self._add("tool-output", out, offset, "exec_command", None, _is_error(code, out))

    # ---- result

    def result(self, path: str, end: int, malformed: int) -> ReadResult:
        msgs = self.out
        if self.fallback and self.has_ri:
            drop = set(self.fallback)
            msgs = [m for i, m in enumerate(msgs) if i not in drop]
        clipped = 0
        for m in msgs:
            m.text, cut = clip(m.text)
            clipped += cut
        sessions: list[SessionPart] = []
        if msgs or self.meta:
            project = project_of(self.cwd) or os.path.basename(os.path.dirname(os.path.abspath(path)))
            sessions.append(
                SessionPart(
                    harness=HARNESS,
                    session_id=self.sid,
                    project=project,
                    cwd=self.cwd,
                    branch=self.branch,
                    kind=self.kind,
                    parent=self.parent,
                    agent=self.agent,
                    spawned=self.spawned,
                    title=self.title,
                    title_rank=2 if self.title else 0,  # (a person named it)
                    titles=self.titles,
                    messages=msgs,
                )
            )
        return ReadResult(sessions=sessions, safe_offset=end, malformed=malformed + self.bad, clipped=clipped)


# --------------------------------------------------------------------------- history.jsonl


def _read_history(path: str, start: int) -> ReadResult:
    home = os.path.dirname(os.path.abspath(path))
    have = {filename_id(p) for p in _rollout_paths(home) + _rollout_paths(home, folder=CODEX_ARCHIVED)}
    parts: dict[str, SessionPart] = {}
    lines = Lines(path, start)
    bad = clipped = 0
    for offset, obj in lines:
        try:
            sid = obj.get("session_id")
            text = obj.get("text")
            if not isinstance(sid, str) or not sid or sid in have:
                continue
            if not isinstance(text, str) or not text.strip():
                continue
            text, cut = clip(text)
            clipped += cut
            part = parts.get(sid)
            if part is None:
                part = parts[sid] = SessionPart(harness=HARNESS, session_id=sid, project="history")
            part.messages.append(Message("user", text, parse_ts(obj.get("ts")), byte_offset=offset))
        except Exception as exc:
            bad += 1
            lines.failed(offset, exc)
    return ReadResult(
        sessions=list(parts.values()), safe_offset=lines.end, malformed=lines.malformed + bad + lines.faults.count,
        clipped=clipped, faults=lines.faults.first,
    )


# --------------------------------------------------------------------------- helpers


def _uuid7_ms(value) -> int | None:
    """Unix ms of a UUIDv7 (thread and turn ids are v7), else None."""
    if not isinstance(value, str) or len(value) < 36 or value[14] != "7":
        return None
    try:
        return int(value[0:8] + value[9:13], 16)
    except ValueError:
        return None


def _task_ms(p: dict) -> int | None:
    started = p.get("started_at")
    if isinstance(started, (int, float)) and not isinstance(started, bool) and started > 0:
        return int(started * 1000) if started < 1e12 else int(started)
    return _uuid7_ms(p.get("turn_id"))


def _js_string(lit: str) -> str:
    """A JavaScript string literal's text (a template's ``${…}`` left as written)."""
    if lit[0] == "`":
        return lit[1:-1]
    body = lit[1:-1]
    if lit[0] == "'":
        body = body.replace("\\'", "'").replace('"', '\\"')
    try:
        out = orjson.loads('"' + body + '"')
    except orjson.JSONDecodeError:
        return body
    return out if isinstance(out, str) else body


def _web_search_text(action) -> str:
    """The words of a ``web_search_call`` action: a search's query (or queries),
    a page opened, a pattern looked for in one."""
    if not isinstance(action, dict):
        return ""
    words = [action.get("query"), action.get("url"), action.get("pattern")]
    queries = action.get("queries")
    if isinstance(queries, list):
        words.extend(queries)
    seen: list[str] = []
    for w in words:
        if isinstance(w, str) and w.strip() and w.strip() not in seen:
            seen.append(w.strip())
    return "\n".join(seen)


def content_text(content) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts = []
    for part in content:
        if isinstance(part, dict) and part.get("type") != "input_image":
            text = part.get("text")
            if isinstance(text, str) and text:
                texts.append(text)
    return "\n".join(texts)


def json_object(value) -> dict:
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            obj = orjson.loads(value)
        except orjson.JSONDecodeError:
            return {}
        return obj if isinstance(obj, dict) else {}
    return {}


def _find_patch(obj) -> str | None:
    """The first apply_patch patch among the (nested) string values of arguments."""
    if isinstance(obj, str):
        return _cut_patch(obj) if _PATCH_BEGIN in obj else None
    if isinstance(obj, dict):
        obj = list(obj.values())
    if isinstance(obj, list):
        for v in obj:
            found = _find_patch(v)
            if found:
                return found
    return None


def _cut_patch(text: str) -> str | None:
    i = text.find(_PATCH_BEGIN)
    if i < 0:
        return None
    j = text.find(_PATCH_END, i)
    return text[i:] if j < 0 else text[i : j + len(_PATCH_END)]


def text_between(text: str, open_tag: str, close_tag: str, last: bool = False) -> str | None:
    i = text.find(open_tag)
    if i < 0:
        return None
    i += len(open_tag)
    j = text.rfind(close_tag) if last else text.find(close_tag, i)
    if j < i:
        return text[i:]
    return text[i:j]


def output_text(out) -> str:
    if isinstance(out, str):
        return out
    if isinstance(out, dict):  # structured payload of some builds
        if isinstance(out.get("output"), str):
            return orjson.dumps(out).decode()  # unwrapped (with its exit code) by unframe_output
        content = out.get("content")
        return content if isinstance(content, str) else ""
    if isinstance(out, list):  # content items (MCP results)
        return "\n".join(
            it["text"] for it in out if isinstance(it, dict) and isinstance(it.get("text"), str)
        )
    return ""


def unframe_output(out: str) -> tuple[str, int | None]:
    """(output text without the harness framing, exit code if recorded)."""
    code: int | None = None
    s = out
    if s.startswith('{"output"') or s.startswith('{ "output"'):
        try:
            obj = orjson.loads(s)
        except orjson.JSONDecodeError:
            obj = None
        if isinstance(obj, dict) and isinstance(obj.get("output"), str):
            s = obj["output"]
            meta = obj.get("metadata")
            if isinstance(meta, dict):
                ec = meta.get("exit_code")
                if isinstance(ec, int) and not isinstance(ec, bool):
                    code = ec
    stripped = s.lstrip("\r\n")
    if stripped.startswith(_FRAME_STARTS):
        s = stripped
        if s.startswith("Command:"):
            # exec_command: the command may span lines; the first `Output:` line ends the frame
            m = _OUTPUT_LINE.search(s)
            if m:
                header, s = s[: m.start()], s[m.end() :]
            else:
                header = s
                s = ""
        else:
            header, s = _split_frame(s)
        if code is None:
            m = _EXIT.search(header)
            if m:
                code = int(m.group(1))
    return s.strip(), code


def _split_frame(s: str) -> tuple[str, str]:
    """(framing header lines, the rest) for `Key: value` framing ended by `Output:`."""
    pos, n = 0, len(s)
    for _ in range(12):
        if pos >= n:
            break
        nl = s.find("\n", pos)
        end = n if nl < 0 else nl
        nxt = n if nl < 0 else nl + 1
        line = s[pos:end]
        if _FRAME_LINE.match(line):
            pos = nxt
            continue
        if line.rstrip() == "Output:":
            return s[:pos], s[nxt:]
        break
    return s[:pos], s[pos:]


def _is_error(code: int | None, body: str) -> bool | None:
    if code is not None:
        return code > 0
    if body.startswith("apply_patch verification failed"):
        return True
    return None
