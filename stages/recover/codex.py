"""Crash recovery for Codex CLI: the recovery interface of ``base.py``.

Rollouts (``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl``)
are filed by date, not by folder: a rollout belongs to the folder its first
``session_meta`` records as ``cwd``. Threads Codex spawned for itself
(``source: {"subagent": …}``: reviews, spawned agents) are not sessions a
person can lose, so they are never candidates, as Claude's subagent folders are not.
A fork's replay of its parent's history is left out by the index's own rule
(``stages/sources/codex.py``, ``Replay``).

Codex's counterparts of Claude's state: ``update_plan`` calls are the todo
list, shell and ``apply_patch`` calls the tool actions, patch headers the
files touched, ``turn_context`` the modes, ``task_started`` without
``task_complete`` an unfinished turn.
"""

from __future__ import annotations

import os
import re
from collections import deque
from dataclasses import dataclass, field
from typing import BinaryIO, Mapping

import orjson

from deja.stages.recover.base import (
    incomplete_note,
    PROBE_SIZES,
    Action,
    Candidate,
    FolderScan,
    Problem,
    Todo,
    WorkingState,
    cwd_forms,
    dumps,
    iter_raw_lines,
    line_problems,
    read_window,
    same_dir,
)
from deja.stages import work_records as work
from deja.stages.display import one_line
from deja.stages.normalize import strip_plumbing
from deja.stages.sources import codex
from deja.stages.sources.jsonl import is_regular_file, parse_ts, read_head
from deja.stages.sources.locate import codex_rollouts

HARNESS = "codex"

_META_PEEK = 4 << 10  # session_meta writes cwd within its first few hundred bytes
_META_LIMITS = (64 << 10, 1 << 20)  # then the whole first line, which instructions can make large
_CWD = re.compile(rb'"cwd"\s*:\s*"((?:[^"\\]|\\.)*)"')
_AT_REST = frozenset(("task_complete", "turn_aborted"))
_CALLS = frozenset(("function_call", "custom_tool_call", "local_shell_call"))
_OUTPUTS = {"function_call": "function_call_output", "custom_tool_call": "custom_tool_call_output",
            "local_shell_call": "function_call_output"}
_RECENT_ASKS = 8
_RECENT_ACTIONS = 16


# ------------------------------------------------------------------ candidates


def recover_candidates(cwd: str, env: Mapping[str, str]) -> FolderScan:
    home = codex.codex_home(env)
    out = FolderScan(looked=[("Codex", [os.path.join(home, "sessions")])])
    forms = cwd_forms(cwd)
    for path in codex_rollouts(home):
        if path.endswith(".zst"):
            continue  # compressed a week after it was last written: no crash left to recover
        if not is_regular_file(path) or not _may_record(path, forms):
            continue
        meta = _meta(path)
        if meta is None or not same_dir(_s(meta.get("cwd")), forms) or _spawned(meta):
            continue
        probe = _probe(path)
        if probe is not None:
            sid = _s(meta.get("id")) or _s(meta.get("session_id")) or codex.filename_id(path)
            out.candidates.append(Candidate(HARNESS, sid, path, *probe))
    return out


def _may_record(path: str, forms: frozenset[str]) -> bool:
    """A cheap look at the first bytes: False only when they name another cwd."""
    try:
        with open(path, "rb") as fh:
            peek = fh.read(_META_PEEK)
    except OSError:
        return False
    m = _CWD.search(peek)
    if not m:
        return True  # not in the first bytes: decide on the whole first line
    try:
        return same_dir(orjson.loads(b'"' + m.group(1) + b'"'), forms)
    except orjson.JSONDecodeError:
        return True


def _meta(path: str) -> dict | None:
    """The first ``session_meta`` payload: the thread's own identity (a fork's
    second one is its parent's)."""
    try:
        for limit in _META_LIMITS:
            for obj in read_head(path, limit):
                payload = obj.get("payload")
                if obj.get("type") == "session_meta" and isinstance(payload, dict):
                    return payload
    except OSError:  # vanished meanwhile
        pass
    return None


def _spawned(meta: dict) -> bool:
    source = meta.get("source")
    return isinstance(source, dict) and "subagent" in source


def _probe(path: str) -> tuple[int | None, bool] | None:
    """(last timestamp, live tail) from a small tail read."""
    try:
        for size in PROBE_SIZES:  # the larger read only when the last line does not fit the smaller
            win = read_window(path, size, head=False)
            if win.lines or not win.partial:
                break
    except OSError:
        return None
    last = next((ts for o in reversed(win.lines) if (ts := parse_ts(o.get("timestamp"))) is not None), None)
    # Codex ends every turn with task_complete (or turn_aborted); anything else
    # last means a turn was running when the file was last written.
    end = win.lines[-1] if win.lines else {}
    at_rest = end.get("type") == "event_msg" and _payload(end).get("type") in _AT_REST
    return last, win.torn or not at_rest


# ---------------------------------------------------------------------- state


def recover_state(path: str, session_id: str) -> WorkingState:
    win = read_window(path)
    b = _Builder(WorkingState(HARNESS, session_id, path, partial=win.partial, size=win.size))
    for o in win.head:  # identity only: the middle of the session was not read
        b.identity(o)
    for o in win.lines:
        b.line(o)
    return b.finish(win.torn)


@dataclass
class _Builder:
    s: WorkingState
    meta: bool = False
    # A fork replays its parent's history first: the index's own rule drops it
    # here too, or the fork would carry the parent's title, asks and actions.
    fork: codex.Replay = field(default_factory=codex.Replay)
    ts: int | None = None  # the latest time read, which the replay rule reads
    first_ask: str = ""
    asks: deque = field(default_factory=lambda: deque(maxlen=_RECENT_ASKS))
    n_asks: int = 0
    n_replies: int = 0
    answer: str = ""
    fallback: list = field(default_factory=list)  # event_msg turns, for rollouts that write no messages
    has_items: bool = False
    pending: dict = field(default_factory=dict)  # call_id -> Action still waiting for its output
    actions: deque = field(default_factory=lambda: deque(maxlen=_RECENT_ACTIONS))
    files: dict = field(default_factory=dict)
    turn_open: bool = False
    event: str = ""  # the last thing that happened: ask, answer, tool, result, interrupt
    error: str = ""  # an error Codex reported after it, instead of an answer

    # -- lines

    def identity(self, o: dict) -> None:
        if self.own(o) and not self.first_ask and o.get("type") == "response_item":
            p = _payload(o)
            if p.get("role") == "user":
                self.first_ask = _ask(p.get("content"))

    def own(self, o: dict) -> bool:
        """Whether a line is the thread's own: not a session_meta, not a fork's replay."""
        ts = parse_ts(o.get("timestamp"))
        self.ts = ts if ts is not None else self.ts
        if o.get("type") == "session_meta":
            self.session_meta(_payload(o))
            return False
        return not self.fork.replayed(o.get("type"), _payload(o), self.ts)

    def line(self, o: dict) -> None:
        ts = parse_ts(o.get("timestamp"))
        if ts is not None:
            self.s.updated = ts if self.s.updated is None else max(self.s.updated, ts)
        if not self.own(o):
            return
        t, p = o.get("type"), _payload(o)
        if t == "turn_context":
            self.modes(p)
        elif t == "response_item":
            self.item(p)
        elif t == "event_msg":
            self.event_msg(p)

    def session_meta(self, p: dict) -> None:
        if self.meta:
            self.fork.later_meta(p, self.ts)  # a fork's second session_meta is its parent's
            return
        self.meta = True
        self.fork.own_meta(_s(p.get("id")) or _s(p.get("session_id")) or self.s.session_id, p, self.ts)
        self.s.cwd = _s(p.get("cwd"))
        git = p.get("git")
        if isinstance(git, dict):
            self.s.branch = _s(git.get("branch"))

    def modes(self, p: dict) -> None:
        sandbox = p.get("sandbox_policy")
        collab = p.get("collaboration_mode")
        found = {
            "approval": _s(p.get("approval_policy")),
            "sandbox": _s(sandbox.get("type") or sandbox.get("mode")) if isinstance(sandbox, dict) else _s(sandbox),
            "mode": _s(collab.get("mode")) if isinstance(collab, dict) else "",
            "model": _s(p.get("model")),
            "effort": _s(p.get("effort")),
        }
        self.s.modes.update({k: v for k, v in found.items() if v})

    def item(self, p: dict) -> None:
        pt = p.get("type")
        if pt == "message":
            if p.get("role") == "user":
                self.has_items = True
                self.user(p.get("content"))
            elif p.get("role") == "assistant":
                self.has_items = True
                self.say(codex.content_text(p.get("content")))
        elif pt == "function_call":
            self.call(p)
        elif pt == "custom_tool_call":
            patch = p.get("input")
            name = _s(p.get("name")) or "tool"
            self.start(p, Action(name, self.patch(patch) if isinstance(patch, str) else ""))
        elif pt == "local_shell_call":
            action = p.get("action")
            cmd = action.get("command") if isinstance(action, dict) else None
            self.start(p, Action("shell", _command(cmd)))
        elif pt in ("function_call_output", "custom_tool_call_output"):
            self.output(p)

    def user(self, content) -> None:
        parts = content if isinstance(content, list) else [{"text": content}]
        for part in parts:
            text = part.get("text") if isinstance(part, dict) else None
            if not isinstance(text, str):
                continue
            s = text.lstrip()
            if s.startswith("<user_shell_command>"):  # the person's own `!` command
                cmd = codex.text_between(s, "<command>", "</command>") or ""
                self.actions.append(Action("! shell", one_line(cmd, 300)))
            elif s.startswith("<turn_aborted>"):
                self.event = "interrupt"
        text = _ask(content)
        if text:
            self.ask(text)

    def ask(self, text: str) -> None:
        self.asks.append(text)
        self.n_asks += 1
        self.first_ask = self.first_ask or text
        self.event, self.error = "ask", ""
        self.s.plan = ""  # an update_plan explanation belongs to its turn
        self.pending.clear()  # calls of an earlier turn that never returned: that turn is over

    def say(self, text: str) -> None:
        if text.strip():
            self.answer = text.strip()
            self.n_replies += 1
            self.event, self.error = "answer", ""

    def call(self, p: dict) -> None:
        name = _s(p.get("name")) or "tool"
        args = codex.json_object(p.get("arguments"))
        if name == "update_plan":
            plan = args.get("plan")
            if isinstance(plan, list):
                self.s.todos = [_todo(step) for step in plan if isinstance(step, dict)]
                self.s.todo_source = "update_plan"
            if isinstance(args.get("explanation"), str):
                self.s.plan = args["explanation"]
            detail = f"{len(plan) if isinstance(plan, list) else 0} steps"
        elif name in codex._SHELL_TOOLS:
            cmd = args.get("cmd") if args.get("cmd") is not None else args.get("command")
            if isinstance(cmd, list) and cmd and cmd[0] in codex._PATCH_TOOLS:  # apply_patch run as argv
                detail = self.patch(cmd[-1] if isinstance(cmd[-1], str) else "")
            else:
                detail = _command(cmd)
        elif name in codex._PATCH_TOOLS:
            patch = args.get("input") or args.get("patch") or p.get("arguments")
            detail = self.patch(patch if isinstance(patch, str) else "")
        else:
            detail = next((one_line(v, 200) for v in args.values() if isinstance(v, str) and v.strip()), "")
        self.start(p, Action(name, detail))

    def start(self, p: dict, act: Action) -> None:
        self.actions.append(act)
        call_id = p.get("call_id")
        if isinstance(call_id, str):
            self.pending[call_id] = act
        self.event, self.error = "tool", ""

    def patch(self, patch: str) -> str:
        files, _ = work.patch_records(patch, self.s.cwd)
        paths = [f for f in files.split("\n") if f] if files else []
        for path in paths:
            self.files.pop(path, None)
            self.files[path] = None
        return ", ".join(paths)

    def output(self, p: dict) -> None:
        self.event, self.error = "result", ""
        act = self.pending.pop(p.get("call_id"), None)
        if act is None:
            return
        body, code = codex.unframe_output(codex.output_text(p.get("output")))
        if code:
            act.status = f"exit {code}"
        elif body.startswith("apply_patch verification failed"):
            act.status = "failed"

    def event_msg(self, p: dict) -> None:
        pt = p.get("type")
        if pt == "task_started":
            self.turn_open = True
        elif pt == "task_complete":
            self.turn_open = False
        elif pt == "turn_aborted":
            self.turn_open = False
            self.event = "interrupt"
        elif pt == "error":
            self.error = one_line(_s(p.get("message")), 160) or "an error"
        elif pt in ("user_message", "agent_message") and isinstance(p.get("message"), str):
            self.fallback.append((pt, p["message"]))

    # -- result

    def finish(self, torn: bool) -> WorkingState:
        if not self.has_items:  # oldest rollouts: only the event stream holds the conversation
            for pt, text in self.fallback:
                if pt == "user_message":
                    ask = strip_plumbing(text)
                    if ask:
                        self.ask(ask)
                else:
                    self.say(text)
        s = self.s
        if self.first_ask:
            s.title, s.title_from_ask = one_line(self.first_ask, 200), True
        s.asks = list(self.asks)
        s.last_prompt = s.asks[-1] if s.asks else ""
        s.answer = self.answer
        for act in self.pending.values():
            act.status = "no result"
        s.actions = list(self.actions)
        s.files = list(self.files)
        s.messages = self.n_asks + self.n_replies
        pending = list(self.pending.values())
        s.incomplete = _incomplete(self.event, pending, s.actions, self.turn_open, torn, self.error)
        return s


def _payload(o: dict) -> dict:
    p = o.get("payload")
    return p if isinstance(p, dict) else {}


def _s(v) -> str:
    return v if isinstance(v, str) else ""


def _ask(content) -> str:
    """What a person typed in a user message: harness preambles and notices left out."""
    parts = content if isinstance(content, list) else [{"text": content}]
    keep = []
    for part in parts:
        text = part.get("text") if isinstance(part, dict) else None
        if not isinstance(text, str) or text.lstrip().startswith(("<user_shell_command>", "<turn_aborted>")):
            continue
        text = strip_plumbing(text)
        if text:
            keep.append(text)
    return "\n".join(keep)


def _command(cmd) -> str:
    if isinstance(cmd, list):  # argv: ["bash", "-lc", "…"]
        cmd = next((c for c in reversed(cmd) if isinstance(c, str)), "")
    if not isinstance(cmd, str) or not cmd.strip():
        return ""
    first = cmd.strip().splitlines()[0]
    return first + (" …" if "\n" in cmd.strip() else "")


def _todo(step: dict) -> Todo:
    status = step.get("status") if step.get("status") in ("pending", "in_progress", "completed") else "pending"
    return Todo(_s(step.get("step")) or _s(step.get("content")), status)


def _incomplete(
    event: str, pending: list[Action], actions: list[Action], turn_open: bool, torn: bool, error: str
) -> str:
    return incomplete_note(event, pending, actions, torn, error, noun="rollout", output="output",
                           unanswered="it never reached task_complete", turn_open=turn_open)


# ---------------------------------------------------------- check and repair


def recover_check(path: str) -> list[Problem]:
    problems = line_problems(path)
    for n, name, _ in _dangling(path):
        problems.append(Problem("dangling-tool-call", n, f"the {name} call never got an output"))
    return sorted(problems, key=lambda p: p.line)


def recover_repair(path: str, out: BinaryIO, session_id: str, new_id: str | None) -> list[str]:
    """Copy the rollout without its crash damage: unreadable lines dropped, an
    ``aborted`` output added right after every call that never got one.
    Untouched lines are copied byte for byte."""
    dangling = {n: kind for n, _, kind in _dangling(path)}
    fixes: list[str] = []
    renamed = False
    for n, body, obj, has_nl in iter_raw_lines(path):
        if obj is None:
            if body.strip():
                fixes.append(f"line {n}: dropped a {'malformed' if has_nl else 'half-written'} line")
            continue
        if new_id and not renamed and obj.get("type") == "session_meta":
            renamed = True  # the first session_meta is the thread's own identity
            _payload(obj)["id"] = new_id
            body = dumps(obj)
        out.write(body + b"\n")
        if n in dangling:
            p = _payload(obj)
            output = {"type": _OUTPUTS[dangling[n]], "call_id": p.get("call_id"),
                      "output": "aborted: the session ended before this call returned [deja recover --repair]"}
            out.write(dumps({"timestamp": obj.get("timestamp"), "type": "response_item", "payload": output}) + b"\n")
            fixes.append(f"after line {n}: added an aborted output for {p.get('name') or dangling[n]} (never returned)")
    if renamed:
        fixes.append(f"renamed the thread to {new_id}")
    return fixes


def _dangling(path: str) -> list[tuple[int, str, str]]:
    """(line, tool name, call type) of every call with no output in the rollout."""
    calls: dict[str, tuple[int, str, str]] = {}
    answered: set[str] = set()
    for n, _, obj, _ in iter_raw_lines(path):
        if obj is None or obj.get("type") != "response_item":
            continue
        p = _payload(obj)
        call_id = p.get("call_id")
        if not isinstance(call_id, str):
            continue
        if p.get("type") in _CALLS:
            calls.setdefault(call_id, (n, _s(p.get("name")) or "shell", p["type"]))
        elif p.get("type") in ("function_call_output", "custom_tool_call_output"):
            answered.add(call_id)
    return sorted(v for k, v in calls.items() if k not in answered)
