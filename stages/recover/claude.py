"""Crash recovery for Claude Code: the recovery interface of ``base.py``.

A session lives in ``<projects>/<encoded cwd>/<session id>.jsonl``. Current
builds encode the cwd by turning every non-alphanumeric character into ``-``;
older ones kept dots (``/home/ann.lee/app`` → ``-home-ann.lee-app``). The
encoding is lossy (``my.app`` and ``my-app`` collide) and may change again, so
a folder is never trusted by its name: a transcript is a candidate only when
the cwd recorded inside it is this folder. The current encoding's folder wins;
an older build's folder beside it is stale and ignored (the current build's
native resume does not look there). When no encoding names a folder that
verifies, every folder is probed for transcripts that record the cwd.

Subagent transcripts (``<session>/subagents/agent-*.jsonl``, older builds'
``agent-*.jsonl`` beside the sessions) and sidechain lines are never
candidates or state.
"""

from __future__ import annotations

import os
import re
import uuid
from collections import deque
from dataclasses import dataclass, field
from typing import BinaryIO, Mapping

from deja.stages.recover.base import (
    incomplete_note,
    HEAD_BYTES,
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
from deja.stages.sources import claude
from deja.stages.sources.jsonl import is_regular_file, parse_ts, read_head

HARNESS = "claude"

# Lines of live traffic; a session at rest ends in untimestamped bookkeeping
# (last-prompt, titles, modes) instead.
_TRAFFIC = frozenset(("user", "assistant", "system", "progress", "attachment"))
_EDIT_TOOLS = frozenset(("Edit", "Write", "MultiEdit", "NotebookEdit"))
_IDE_BLOCK = ("<ide_opened_file>", "<ide_selection>", "<ide_diagnostics>")
_NOT_ASKS = ("<bash-stdout>", "<bash-stderr>", "<local-command-", "<task-notification>")
# Slash commands that drive the UI rather than ask for work.
_UI_COMMANDS = frozenset(
    "/add-dir /agents /bashes /clear /compact /config /context /cost /doctor /effort /exit /export /fast "
    "/help /hooks /ide /login /logout /mcp /memory /model /output-style /permissions /plugin "
    "/privacy-settings /recover /release-notes /resume /rewind /status /statusline /terminal-setup "
    "/theme /upgrade /usage /vim".split()
)
_COMMAND_NAME = re.compile(r"<command-name>\s*(.*?)\s*</command-name>", re.S)
_COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.S)
_EXIT_CODE = re.compile(r"Exit code (-?\d+)")
# The input that says what a call did, by the tools that have it, in order of preference.
_DETAIL_KEYS = (
    "file_path", "notebook_path", "command", "pattern", "url", "query", "description", "skill", "path", "prompt",
)
_RECENT_ASKS = 8
_RECENT_ACTIONS = 16


# ------------------------------------------------------------------ candidates


def slug_variants(cwd: str) -> list[str]:
    """Folder names Claude Code builds give ``cwd``: current first, then the dot-keeping one."""
    current = re.sub(r"[^A-Za-z0-9]", "-", cwd)
    older = re.sub(r"[/\\:]", "-", cwd)
    return [current] if older == current else [current, older]


def recover_candidates(cwd: str, env: Mapping[str, str]) -> FolderScan:
    root = claude.roots(env)[0]
    out = FolderScan(looked=[("Claude Code", [root])])
    if not os.path.isdir(root):
        return out
    forms = cwd_forms(cwd)
    # the folder as given, and as its symlinks resolve: a session run through a
    # link (~/code -> /data/src) is filed under one spelling, one run at the real
    # path under the other, and both are this folder's
    spellings = list(dict.fromkeys([cwd, *(f for f in forms if f != cwd.rstrip("/"))]))
    variants: list[str] = []
    chosen = ""
    for spelling in spellings:
        chosen_here = ""
        for name in slug_variants(spelling):
            if name in variants:  # (two spellings, one folder: read once)
                continue
            variants.append(name)
            folder = os.path.join(root, name)
            if not os.path.isdir(folder):
                continue
            found = _sessions(folder, forms)
            if not found:
                out.notes.append(f"ignored {folder}: no transcript in it records {cwd}")
            elif chosen_here:
                out.notes.append(f"ignored {folder}: an older Claude Code build's folder, superseded by {chosen_here}")
            else:
                chosen = chosen_here = folder
                out.candidates.extend(found)
    if not chosen:
        for folder in _folders_recording(root, forms, set(variants)):
            out.candidates.extend(_sessions(folder, forms))
            out.notes.append(f"found {folder} by the cwd its transcripts record")
    return out


def _transcripts(folder: str) -> list[str]:
    """Session transcripts directly in a project folder; subfolders hold subagents and tool output."""
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    return [
        os.path.join(folder, n)
        for n in names
        if n.endswith(".jsonl") and not n.startswith("agent-") and is_regular_file(os.path.join(folder, n))
    ]


def _sessions(folder: str, forms: frozenset[str]) -> list[Candidate]:
    out = []
    for path in _transcripts(folder):
        probe = _probe(path)
        if probe is not None and same_dir(probe[0], forms):
            out.append(Candidate(HARNESS, os.path.basename(path)[:-6], path, probe[1], probe[2]))
    return out


def _folders_recording(root: str, forms: frozenset[str], skip: set[str]) -> list[str]:
    """Project folders whose newest transcripts record the cwd (the name did not say)."""
    found = []
    try:
        folders = sorted(e.path for e in os.scandir(root) if e.is_dir() and e.name not in skip)
    except OSError:
        return found
    for folder in folders:
        newest = sorted(_transcripts(folder), key=_mtime, reverse=True)[:3]
        if any(same_dir(_recorded_cwd(p), forms) for p in newest):
            found.append(folder)
    return found


def _mtime(path: str) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0


def _probe(path: str) -> tuple[str, int | None, bool] | None:
    """(recorded cwd, last timestamp, live tail) from small head and tail reads."""
    try:
        for size in PROBE_SIZES:
            win = read_window(path, size, head=False)
            last = _last_ts(win.lines)
            if last is not None or not win.partial:
                break
        cwd = _recorded_cwd(path) or _first_cwd(win.lines)
    except OSError:
        return None
    live = win.torn or bool(win.lines and win.lines[-1].get("type") in _TRAFFIC)
    return cwd, last, live


def _recorded_cwd(path: str) -> str:
    """The first cwd in the head; the opening lines are usually small, a pasted
    image can make them large."""
    for size in (16 << 10, HEAD_BYTES):
        cwd = _first_cwd(read_head(path, size))
        if cwd:
            return cwd
    return ""


def _first_cwd(lines) -> str:
    """The first cwd recorded: the folder Claude filed the session under (cwd changes mid-session)."""
    for o in lines:
        if not o.get("isSidechain"):
            cwd = o.get("cwd")
            if isinstance(cwd, str) and cwd:
                return cwd
    return ""


def _last_ts(lines: list[dict]) -> int | None:
    for o in reversed(lines):
        ts = parse_ts(o.get("timestamp"))
        if ts is not None:
            return ts
    return None


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
    titles: dict[int, str] = field(default_factory=dict)  # rank (2 custom, 1 ai) -> latest title
    first_ask: str = ""
    last_prompt_line: str = ""
    asks: deque = field(default_factory=lambda: deque(maxlen=_RECENT_ASKS))
    n_asks: int = 0
    replies: set = field(default_factory=set)  # assistant message ids
    answer_id: object = None
    answer: list = field(default_factory=list)
    pending: dict = field(default_factory=dict)  # tool_use id -> Action still waiting for its result
    actions: deque = field(default_factory=lambda: deque(maxlen=_RECENT_ACTIONS))
    files: dict = field(default_factory=dict)  # path -> None, least recent first
    event: str = ""  # the last thing that happened: ask, answer, tool, result, interrupt
    error: str = ""  # an API error reported after it, instead of an answer

    # -- lines

    def identity(self, o: dict) -> None:
        if o.get("isSidechain"):
            return
        self.where(o)
        t = o.get("type")
        if t in ("ai-title", "custom-title"):
            self.title(o)
        elif t == "user" and not self.first_ask:
            first = _ask_text(o)
            if first:
                self.first_ask = first

    def line(self, o: dict) -> None:
        if o.get("isSidechain"):
            return
        self.where(o)
        ts = parse_ts(o.get("timestamp"))
        if ts is not None:
            self.s.updated = ts if self.s.updated is None else max(self.s.updated, ts)
        t = o.get("type")
        if t == "user":
            self.user(o)
        elif t == "assistant":
            self.assistant(o)
        elif t == "attachment":
            self.queued(o)
        elif t == "system" and o.get("subtype") == "api_error":
            self.error = self.error or "an API error"
        elif t in ("ai-title", "custom-title"):
            self.title(o)
        elif t == "last-prompt" and isinstance(o.get("lastPrompt"), str):
            self.last_prompt_line = o["lastPrompt"]
        elif t == "permission-mode" and isinstance(o.get("permissionMode"), str):
            self.s.modes["permission mode"] = o["permissionMode"]
        elif t == "mode" and isinstance(o.get("mode"), str):
            self.s.modes["mode"] = o["mode"]
        elif t == "file-history-snapshot":
            snap = o.get("snapshot")
            tracked = snap.get("trackedFileBackups") if isinstance(snap, dict) else None
            for p in tracked if isinstance(tracked, dict) else ():
                self.files.setdefault(p, None)  # every snapshot lists them all: no recency here
        elif t == "file-history-delta" and isinstance(o.get("trackingPath"), str):
            self.touch(o["trackingPath"])

    def where(self, o: dict) -> None:
        cwd = o.get("cwd")
        if not self.s.cwd and isinstance(cwd, str) and cwd:
            self.s.cwd = cwd
        branch = o.get("gitBranch")
        if isinstance(branch, str) and branch:
            self.s.branch = branch

    def title(self, o: dict) -> None:
        rank, key = (2, "customTitle") if o.get("type") == "custom-title" else (1, "aiTitle")
        text = o.get(key)
        if isinstance(text, str) and text.strip():
            self.titles[rank] = text.strip()

    def user(self, o: dict) -> None:
        m = o.get("message")
        content = m.get("content") if isinstance(m, dict) else None
        if isinstance(content, list):
            for b in content:
                if isinstance(b, dict) and b.get("type") == "tool_result":
                    self.result(b)
        if o.get("isMeta") or o.get("isCompactSummary") or not _human(o.get("origin")):
            return
        text = _typed_text(content)
        if text:
            self.typed(text)

    def typed(self, text: str) -> None:
        s = text.lstrip()
        if s.startswith("[Request interrupted by user"):
            self.event = "interrupt"
            return
        if s.startswith("<bash-input>"):  # the person's own `!` shell command
            cmd = s[len("<bash-input>") :].split("</bash-input>")[0]
            self.act(Action("! shell", one_line(cmd, 300)))
            return
        if s.startswith(_NOT_ASKS):
            return
        ask = strip_plumbing(text)
        if not ask or ask.startswith("<command-"):  # a slash command: keep what was asked for
            ask = _slash_command(s)
        if ask:
            self.ask(ask)

    def ask(self, text: str) -> None:
        self.asks.append(text)
        self.n_asks += 1
        self.first_ask = self.first_ask or text
        self.event, self.error = "ask", ""
        self.s.plan = ""  # a plan belongs to the turn it was made in
        self.pending.clear()  # calls of an earlier turn that never returned: that turn is over

    def queued(self, o: dict) -> None:
        """A prompt typed while the agent was busy (``queued_command``)."""
        a = o.get("attachment")
        if not isinstance(a, dict) or a.get("type") != "queued_command" or o.get("isMeta") or a.get("isMeta"):
            return
        if not (_human(o.get("origin")) and _human(a.get("origin"))):
            return
        prompt = a.get("prompt")
        text = prompt if isinstance(prompt, str) else claude.result_text(prompt)
        if a.get("commandMode") == "bash":
            self.act(Action("! shell", one_line(text, 300)))
        elif a.get("commandMode") in (None, "prompt") and text:
            self.typed(text)

    def result(self, b: dict) -> None:
        self.event, self.error = "result", ""
        act = self.pending.pop(b.get("tool_use_id"), None)
        if act is None:
            return
        text = claude.result_text(b.get("content"))
        m = _EXIT_CODE.match(text)
        if m and m.group(1) != "0":
            act.status = f"exit {m.group(1)}"
        elif b.get("is_error"):
            act.status = "failed"

    def assistant(self, o: dict) -> None:
        m = o.get("message")
        if o.get("isMeta") or not isinstance(m, dict):
            return
        if o.get("isApiErrorMessage") or m.get("model") == "<synthetic>":
            # Claude's stand-in for an answer that failed ("Prompt is too long", limits)
            self.error = one_line(_typed_text(m.get("content")), 160) or "an API error"
            return
        mid = m.get("id") or o.get("uuid")
        content = m.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for b in blocks if isinstance(blocks, list) else ():
            if not isinstance(b, dict):
                continue
            if b.get("type") == "text" and isinstance(b.get("text"), str) and b["text"].strip():
                self.say(mid, b["text"])
            elif b.get("type") == "tool_use":
                self.replies.add(mid)
                self.tool(b)

    def say(self, mid, text: str) -> None:
        self.replies.add(mid)
        if mid != self.answer_id:
            self.answer_id, self.answer = mid, []
        self.answer.append(text.strip())
        self.event, self.error = "answer", ""

    def tool(self, b: dict) -> None:
        name = b.get("name") if isinstance(b.get("name"), str) else "tool"
        inp = b.get("input") if isinstance(b.get("input"), dict) else {}
        if name == "TodoWrite" and isinstance(inp.get("todos"), list):
            self.s.todos = [_todo(t) for t in inp["todos"] if isinstance(t, dict)]
            self.s.todo_source = "TodoWrite"
        elif name == "ExitPlanMode" and isinstance(inp.get("plan"), str):
            self.s.plan = inp["plan"]
        if name in _EDIT_TOOLS:
            fp = inp.get("file_path") or inp.get("notebook_path")
            if isinstance(fp, str) and fp:
                self.touch(fp)
        act = Action(name, _detail(name, inp))
        self.act(act)
        if isinstance(b.get("id"), str):
            self.pending[b["id"]] = act
        self.event, self.error = "tool", ""

    def act(self, act: Action) -> None:
        self.actions.append(act)

    def touch(self, path: str) -> None:
        self.files.pop(path, None)
        self.files[path] = None

    # -- result

    def finish(self, torn: bool) -> WorkingState:
        s = self.s
        if self.titles:
            s.title = self.titles[max(self.titles)]
        elif self.first_ask:
            s.title, s.title_from_ask = one_line(self.first_ask, 200), True
        s.asks = list(self.asks)
        s.last_prompt = _last_instruction(self.last_prompt_line, s.asks)
        s.answer = "\n\n".join(self.answer)
        for act in self.pending.values():
            act.status = "no result"
        s.actions = list(self.actions)
        s.files = _absolute(list(self.files), s.cwd)
        s.messages = self.n_asks + len(self.replies)
        s.incomplete = _incomplete(self.event, list(self.pending.values()), s.actions, torn, self.error)
        return s


def _absolute(paths: list[str], cwd: str) -> list[str]:
    """Paths made absolute (snapshots record them relative to the cwd) and
    de-duplicated, the most recent place of each kept."""
    sep = "\\" if "\\" in cwd and "/" not in cwd else "/"
    out: dict[str, None] = {}
    for p in paths:
        full = p if work.is_absolute(p) or not cwd else cwd.rstrip("/\\") + sep + p
        out.pop(full, None)
        out[full] = None
    return list(out)


def _typed_text(content) -> str:
    """The text a person typed in a user line: no tool results, no IDE context blocks."""
    if isinstance(content, str):
        return content
    texts = []
    for b in content if isinstance(content, list) else ():
        if isinstance(b, str):
            texts.append(b)
        elif isinstance(b, dict) and b.get("type") == "text":
            t = b.get("text")
            if isinstance(t, str) and t.strip() and not t.startswith(_IDE_BLOCK):
                texts.append(t)
    return "\n".join(texts)


def _ask_text(o: dict) -> str:
    """A real ask in a user line, for the title when the harness wrote none."""
    m = o.get("message")
    if o.get("isMeta") or not isinstance(m, dict) or not _human(o.get("origin")):
        return ""
    text = _typed_text(m.get("content")).lstrip()
    if not text or text.startswith(_NOT_ASKS) or text.startswith(("[Request interrupted", "<bash-input>")):
        return ""
    return strip_plumbing(text) or _slash_command(text)


def _slash_command(text: str) -> str:
    """``/name args`` of a slash-command line, unless the command only drives the UI."""
    m = _COMMAND_NAME.search(text)
    if not m:
        return ""
    name = m.group(1).strip()
    name = name if name.startswith("/") else "/" + name
    if name in _UI_COMMANDS:
        return ""
    args = _COMMAND_ARGS.search(text)
    return (name + " " + (args.group(1).strip() if args else "")).strip()


def _human(origin) -> bool:
    return not isinstance(origin, dict) or origin.get("kind") in (None, "human")


def _todo(t: dict) -> Todo:
    text = t.get("content") if isinstance(t.get("content"), str) else str(t.get("activeForm") or "")
    status = t.get("status") if t.get("status") in ("pending", "in_progress", "completed") else "pending"
    return Todo(text, status)


def _detail(name: str, inp: dict) -> str:
    if name == "TodoWrite":
        return f"{len(inp.get('todos') or [])} items"
    for key in _DETAIL_KEYS:
        v = inp.get(key)
        if isinstance(v, str) and v.strip():
            first = v.strip().splitlines()[0]
            return first + (" …" if "\n" in v.strip() else "")
    return ""


def _last_instruction(line: str, asks: list[str]) -> str:
    """The last-prompt line, completed from the last ask when that line is a truncation of it."""
    last = asks[-1] if asks else ""
    if not line:
        return last
    stem = one_line(line, 10_000).rstrip("…").rstrip()
    if last and stem and one_line(last, 100_000).startswith(stem):
        return last
    return line


def _incomplete(event: str, pending: list[Action], actions: list[Action], torn: bool, error: str) -> str:
    return incomplete_note(event, pending, actions, torn, error, noun="transcript", output="result",
                           unanswered="tool results came back but the agent never answered")


# ---------------------------------------------------------- check and repair


@dataclass(slots=True)
class _Line:
    """What repair needs to know of one transcript line."""

    n: int
    ok: bool
    uuid: str = ""
    parent: str = ""
    sidechain: bool = False
    type: str = ""
    msg_id: str = ""
    uses: list = field(default_factory=list)  # (tool_use id, tool name)
    results: list = field(default_factory=list)  # tool_use ids answered
    only_results: bool = False


@dataclass(slots=True)
class _Plan:
    problems: list[Problem] = field(default_factory=list)
    reparent: dict = field(default_factory=dict)  # line index -> new parentUuid
    bridged: set = field(default_factory=set)  # line indices whose lost parent is bridged
    # line index -> [(synthetic uuid, its parent uuid, [(tool_use id, name)], index of the calling line)]
    inserts: dict = field(default_factory=dict)


def recover_check(path: str) -> list[Problem]:
    problems = line_problems(path) + _plan(_index(path)).problems
    return sorted(problems, key=lambda p: p.line)


def recover_repair(path: str, out: BinaryIO, session_id: str, new_id: str | None) -> list[str]:
    """Copy the transcript without its crash damage: unreadable lines dropped, a
    lost parent bridged, a result added for every call on the live thread that
    never got one. Untouched lines are copied byte for byte."""
    lines = _index(path)
    plan = _plan(lines)
    fixes: list[str] = []
    sources: dict[int, dict] = {}  # lines holding calls that get a synthetic result
    wanted = {src for adds in plan.inserts.values() for *_, src in adds}
    for n, body, obj, has_nl in iter_raw_lines(path):
        k = n - 1
        if obj is None:
            if body.strip():
                fixes.append(f"line {n}: dropped a {'malformed' if has_nl else 'half-written'} line")
            continue
        if k in wanted:
            sources[k] = obj
        changed = False
        if k in plan.reparent:
            obj["parentUuid"] = plan.reparent[k]
            changed = True
        if new_id:
            changed = _rename(obj, session_id, new_id) or changed
        out.write((dumps(obj) if changed else body) + b"\n")
        if k in plan.bridged:
            fixes.append(f"line {n}: re-attached to the line before it (its parent was lost)")
        for syn_uuid, parent, uses, src in plan.inserts.get(k, ()):
            out.write(dumps(_synthetic_result(sources[src], syn_uuid, parent, uses, session_id, new_id)) + b"\n")
            names = ", ".join(nm for _, nm in uses)
            fixes.append(f"after line {n}: added an error result for {names} (never returned)")
    if new_id:
        fixes.append(f"renamed the session to {new_id}")
    return fixes


def _index(path: str) -> list[_Line]:
    out = []
    for n, _, obj, _ in iter_raw_lines(path):
        if obj is None:
            out.append(_Line(n, False))
            continue
        info = _Line(n, True, _str(obj.get("uuid")), _str(obj.get("parentUuid")), bool(obj.get("isSidechain")),
                     _str(obj.get("type")))
        m = obj.get("message")
        if isinstance(m, dict):
            info.msg_id = _str(m.get("id"))
            content = m.get("content")
            blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
            info.uses = [(_str(b.get("id")), _str(b.get("name"))) for b in blocks if b.get("type") == "tool_use"]
            info.results = [_str(b.get("tool_use_id")) for b in blocks if b.get("type") == "tool_result"]
            info.only_results = bool(blocks) and len(info.results) == len(blocks)
        out.append(info)
    return out


def _str(v) -> str:
    return v if isinstance(v, str) else ""


def _plan(lines: list[_Line]) -> _Plan:
    """Damage on the live thread (the parentUuid chain from the last line back),
    which is what a native resume replays. Calls left unanswered on abandoned
    branches are history, not damage: Claude itself branches around them."""
    plan = _Plan()
    main = [k for k, ln in enumerate(lines) if ln.ok and ln.uuid and not ln.sidechain]
    if not main:
        return plan
    chain = _chain(lines, main, plan)
    answered = {r for ln in lines if ln.ok and not ln.sidechain for r in ln.results}
    for pos, k in enumerate(chain):
        missing = [(u, nm) for u, nm in lines[k].uses if u and u not in answered]
        if not missing:
            continue
        for _, nm in missing:
            plan.problems.append(Problem("dangling-tool-call", lines[k].n, f"the {nm} call never got a result"))
        end = pos  # results go after the rest of this reply and the results it did get
        while end + 1 < len(chain) and _same_exchange(lines[chain[end + 1]], lines[k]):
            end += 1
        syn = str(uuid.uuid4())
        plan.inserts.setdefault(chain[end], []).append((syn, lines[chain[end]].uuid, missing, k))
        if end + 1 < len(chain):
            plan.reparent[chain[end + 1]] = syn
    return plan


def _chain(lines: list[_Line], main: list[int], plan: _Plan) -> list[int]:
    """Line indices of the live thread, oldest first; a lost parent is bridged to
    the main-thread line written just before (recorded in ``plan``)."""
    by_uuid = {lines[k].uuid: k for k in main}
    chain: list[int] = []
    seen: set[int] = set()
    k: int | None = main[-1]
    while k is not None and k not in seen:
        seen.add(k)
        chain.append(k)
        parent = lines[k].parent
        if not parent:
            break
        j = by_uuid.get(parent)
        if j is None:
            if k == main[0]:
                break  # the session was continued from another transcript
            j = max(m for m in main if m < k)
            plan.reparent[k] = lines[j].uuid
            plan.bridged.add(k)
            plan.problems.append(
                Problem("broken-parent", lines[k].n, "its parent line is missing (lost in the crash); "
                        "a native resume would drop everything before it")
            )
        k = j
    chain.reverse()
    return chain


def _same_exchange(ln: _Line, use: _Line) -> bool:
    """Part of the reply holding a call and what came back for it: its other
    blocks, results, and the hook/progress lines written in between."""
    if ln.type == "assistant":
        return bool(ln.msg_id) and ln.msg_id == use.msg_id
    return (ln.type == "user" and ln.only_results) or ln.type in ("attachment", "progress")


def _rename(obj: dict, old: str, new: str) -> bool:
    changed = False
    for key in ("sessionId", "session_id"):
        if obj.get(key) == old:
            obj[key] = new
            changed = True
    return changed


def _synthetic_result(src: dict, syn_uuid: str, parent: str, uses, session_id: str, new_id: str | None) -> dict:
    """A user line answering calls that never returned, shaped like Claude's own error results."""
    note = "[deja recover --repair] No result was recorded: the session ended before this tool returned."
    line = {k: src[k] for k in ("userType", "entrypoint", "cwd", "version", "gitBranch") if k in src}
    sid = src.get("sessionId") or session_id
    return {
        "parentUuid": parent,
        "isSidechain": False,
        **line,
        "sessionId": new_id if new_id and sid == session_id else sid,
        "type": "user",
        "message": {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": u, "content": note, "is_error": True} for u, _ in uses],
        },
        "uuid": syn_uuid,
        "timestamp": src.get("timestamp"),
        "toolUseResult": "Error: " + note,
    }
