"""Claude Code transcripts: ``~/.claude/projects/<encoded-cwd>/<sessionId>.jsonl``.

harness-formats section 3 plus the notes measured on real published
transcripts. Only ``user``/``assistant`` lines become speech; the metadata lines
give titles, the last prompt, touched files and compaction summaries. Lines of
a person are kept; harness-authored turns (meta, synthetic API errors, peer or
task notifications, local command output) are dropped here, the plumbing tags
inside real turns are stripped later by ``normalize.strip_plumbing``.

Subagent transcripts (``<project>/<sessionId>/subagents/agent-<id>.jsonl`` and
the older project-level ``agent-<id>.jsonl``) are skipped by ``discover``
unless ``DEJA_INCLUDE_SUBAGENTS=1``. When read, a current-layout subagent file
is one ``sidechain`` session whose lines already present in the parent file
(compaction and ``/btw`` agents replay the parent conversation) are dropped.
So are a resumed session's copies: a file that begins with lines of an
earlier session (its ``sessionId``, their ``uuid``) copied from that
session's own file beside it; the earlier file is read on its own, and the
session is one (harness-formats 1.8). Lines of that id the earlier file does
not hold stay: they are nowhere else.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from typing import Mapping

from .. import work_records as work
from ..replies import answers_text, questions_text
from .base import Message, ReadResult, SessionPart, SourceFile
from .jsonl import Lines, clip, held_back, is_regular_file, parse_ts  # noqa: F401
from .locate import claude_files, claude_root
from .projects import project_from_cwd  # noqa: F401  (the hooks import it without this reader)

HARNESS = "claude"

# Line types that never carry anything deja keeps: skipped after one dict lookup.
_SKIP_TYPES = frozenset(
    (
        "progress",
        "queue-operation",
        "permission-mode",
        "mode",
        "bridge-session",
        "agent-name",
        "pr-link",
        "frame-link",
        "teleported-from",
        "fork-context-ref",
    )
)
_FILE_TOOLS = frozenset(("Read", "Write", "Edit", "MultiEdit", "NotebookEdit"))
_EXIT_CODE = re.compile(r"Exit code (-?\d+)")
_BASH_OUT = re.compile(r"<bash-(stdout|stderr)>(.*?)</bash-\1>", re.S)
_LOCAL_OUT = re.compile(r"<local-command-(?:stdout|stderr)>.*?</local-command-(?:stdout|stderr)>", re.S)
# VS Code adds these as separate text blocks before the real prompt: IDE
# context, not what the person typed.
_IDE_BLOCK = ("<ide_opened_file>", "<ide_selection>", "<ide_diagnostics>")
_PARENT_UUID = re.compile(rb'"uuid": ?"([^"]+)"')


# --------------------------------------------------------------------- discover


def roots(env: Mapping[str, str]) -> list[str]:
    """Where this reader looks, for `deja doctor`."""
    return [claude_root(env)]


def discover(env: Mapping[str, str]) -> list[SourceFile]:
    return [SourceFile(p, HARNESS) for p in claude_files(env)]


# ---------------------------------------------------------------------- project


_ENCODE = re.compile(r"[^A-Za-z0-9]")
_DRIVE = re.compile(r"^([A-Za-z])--(.*)$", re.S)
_MAX_PARTS = 24


def resolve_project_dir(name: str) -> str | None:
    """The on-disk directory an encoded project directory name stands for, if any.

    Claude replaces every non-alphanumeric character of the cwd with ``-``.
    Walking down from the root, a component is any existing directory entry
    whose own encoding matches the next stretch of the name; shorter matches
    (the hyphen was a separator) are tried before longer ones (it was literal).
    """
    if not name:
        return None
    m = _DRIVE.match(name)
    if m:
        roots = [(m.group(1) + ":\\", m.group(2))]
    else:
        rest = name
        for _ in range(2):  # pi-style names end in "--"
            if len(rest) > 1 and rest.endswith("-"):
                rest = rest[:-1]
        roots = [(os.sep, rest[1:] if rest.startswith("-") else rest)]
        if rest.startswith("--"):  # "--x--" (pi) rather than "/.x"
            roots.append((os.sep, rest[2:]))
    for base, rest in roots:
        if len(rest.split("-")) > _MAX_PARTS:
            return None
        if not os.path.isdir(base):
            continue
        found = _descend(base, rest, {})
        if found:
            return found
    return None


def _descend(base: str, rest: str, listings: dict) -> str | None:
    if not rest:
        return base
    entries = listings.get(base)
    if entries is None:
        try:
            entries = [(e, _ENCODE.sub("-", e)) for e in os.listdir(base)]
        except OSError:
            entries = []
        listings[base] = entries
    cands = [(enc, e) for e, enc in entries if rest == enc or rest.startswith(enc + "-")]
    cands.sort(key=lambda c: (len(c[0]), c[1]))
    for enc, e in cands:
        path = os.path.join(base, e)
        if not os.path.isdir(path):
            continue
        if len(enc) == len(rest):
            return path
        found = _descend(path, rest[len(enc) + 1 :], listings)
        if found:
            return found
    return None


@lru_cache(maxsize=4096)
def decode_project_dir(name: str) -> str:
    """Display project name (``parent/base``) for an encoded project directory name.

    Resolved on disk when the directory still exists; otherwise (project
    deleted, store copied from another machine, more than 24 parts) the last
    two ``-``-separated pieces, which is lossy by nature.
    """
    path = resolve_project_dir(name)
    if path:
        proj = project_from_cwd(path)
        if proj:
            return proj
    s = name
    cut = s.find("--claude-worktrees-")
    if cut > 0:
        s = s[:cut]
    m = _DRIVE.match(s)
    if m:
        s = m.group(2)
    pieces = [p for p in s.split("-") if p]
    return "/".join(pieces[-2:])


# ------------------------------------------------------------------------- read

_parent_cache: dict[str, tuple[int, int, frozenset]] = {}


def _parent_uuids(path: str) -> frozenset:
    """``uuid`` values of the parent transcript, from a regex over its raw bytes."""
    try:
        st = os.stat(path)
    except OSError:
        return frozenset()
    hit = _parent_cache.get(path)
    if hit and hit[0] == st.st_size and hit[1] == st.st_mtime_ns:
        return hit[2]
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return frozenset()
    uuids = frozenset(m.decode("utf-8", "replace") for m in _PARENT_UUID.findall(data))
    if len(_parent_cache) > 16:
        _parent_cache.clear()
    _parent_cache[path] = (st.st_size, st.st_mtime_ns, uuids)
    return uuids


def result_text(content) -> str:
    """Text of a tool_result ``content``: a string or a list of blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for b in content:
            if isinstance(b, dict):
                t = b.get("text")
                if isinstance(t, str) and t:
                    parts.append(t)
            elif isinstance(b, str) and b:
                parts.append(b)
        return "\n".join(parts)
    return ""


class _Reader:
    def __init__(self, path: str, start: int, stop: int | None = None):
        self.path = path
        self.start = start
        self.stop = stop  # jsonl.held_back's: read up to this line
        self.calls: dict[str, int] = {}  # Bash tool_use id -> its line's offset
        self.results: dict[str, int] = {}  # tool_use id -> the offset of its tool_result's line
        self.at = start  # the line being read
        self.said = -1  # the last line of speech read
        self.result = ReadResult(safe_offset=start)
        self.sessions: dict[str, SessionPart] = {}
        # per part: (rank, offset, title); summary-line candidates wait for the uuid check
        self.best_title: dict[int, tuple[int, int, str]] = {}
        self.summary_titles: list[tuple[SessionPart, int, str, str]] = []
        self.uuids: set[str] = set()
        self.pending: dict[str, tuple[Message, str]] = {}  # Bash tool_use id -> (record, command)
        self.asked: set[str] = set()  # AskUserQuestion tool_use ids whose answers have not come back
        self.answers: list[str] = []  # what the person answered, from the line blocks() is reading
        self.last_ts: int | None = None
        self.want_paths = work.enabled("PATHS")
        self.want_commands = work.enabled("COMMANDS")
        self.want_edits = work.enabled("EDITS")
        self.want_output = work.enabled("TOOL_OUTPUT")

        name = os.path.basename(path)
        self.stem = name[:-6] if name.endswith(".jsonl") else os.path.splitext(name)[0]
        parts = os.path.normpath(path).split(os.sep)
        self.parent_uuids: frozenset = frozenset()
        self.agent_file = False
        self.agent_parent = ""
        # <project>/<sessionId>/subagents/[…/]agent-<agentId>.jsonl
        i = next((k for k in range(len(parts) - 2, max(len(parts) - 5, 0), -1) if parts[k] == "subagents"), -1)
        if i > 0:
            self.agent_file = True
            self.agent_parent = parts[i - 1] if i >= 1 else ""
            self.project_dir = parts[i - 2] if i >= 2 else ""
            if i >= 2:
                parent_file = os.sep.join(parts[: i - 1] + [self.agent_parent + ".jsonl"])
                self.parent_uuids = _parent_uuids(parent_file)
        else:
            self.project_dir = parts[-2] if len(parts) >= 2 else ""
            self.agent_file = self.stem.startswith("agent-")
        self.sub: SessionPart | None = None
        self.sub_confirmed = False
        self.main_sid = ""  # first sessionId of a main-conversation line
        self.loose_touched: list[str] = []  # snapshot paths: those lines carry no sessionId
        self.sibling_uuids: dict[str, frozenset] = {}  # another session's id → the uuids its own file holds

    # ---------------------------------------------------------------- sessions

    def part_for(self, o: dict) -> SessionPart:
        if self.agent_file:
            sub = self.sub
            if sub is None:
                sid = self.stem[6:] if self.stem.startswith("agent-") else self.stem
                sub = self.sub = SessionPart(HARNESS, sid, kind="sidechain", parent=self.agent_parent)
                self.sessions[sid] = sub
            if not self.sub_confirmed:
                aid = o.get("agentId")
                if isinstance(aid, str) and aid:
                    sub.session_id = aid
                    self.sub_confirmed = True
            if not sub.parent:
                sub.parent = o.get("sessionId") or ""
            if not sub.agent:
                sub.agent = o.get("attributionAgent") or ""
            return sub
        aid = o.get("agentId") if o.get("isSidechain") else None
        if isinstance(aid, str) and aid:
            part = self.sessions.get(aid)
            if part is None:
                part = self.sessions[aid] = SessionPart(
                    HARNESS, aid, kind="sidechain", parent=o.get("sessionId") or ""
                )
            if not part.agent:
                part.agent = o.get("attributionAgent") or ""
            return part
        sid = o.get("sessionId") or o.get("session_id")
        if not isinstance(sid, str) or not sid:
            sid = self.main_sid or self.stem
        elif not self.main_sid:
            self.main_sid = sid
        part = self.sessions.get(sid)
        if part is None:
            part = self.sessions[sid] = SessionPart(HARNESS, sid)
        return part

    def where(self, part: SessionPart, o: dict) -> None:
        if not part.cwd:
            cwd = o.get("cwd")
            if isinstance(cwd, str) and cwd:
                part.cwd = cwd
        if not part.branch:
            b = o.get("gitBranch")
            if isinstance(b, str) and b:
                part.branch = b

    def emit(self, part: SessionPart, role: str, text: str, ts, offset: int, **kw) -> Message | None:
        if not text:
            return None
        if role in ("user", "assistant"):
            self.said = offset  # (a call before this was interrupted: jsonl.held_back)
        text, cut = clip(text)
        if cut:
            self.result.clipped += 1
        msg = Message(role, text, ts, byte_offset=offset, **kw)
        part.messages.append(msg)
        return msg

    def time(self, o: dict) -> int | None:
        ts = parse_ts(o.get("timestamp"))
        if ts is None:
            return self.last_ts
        self.last_ts = ts
        return ts

    # ------------------------------------------------------------------- lines

    def run(self) -> ReadResult:
        lines = Lines(self.path, self.start, stop=self.stop)
        bad = 0
        parent_uuids = self.parent_uuids
        for offset, o in lines:
            self.at = offset
            try:
                t = o.get("type")
                if t in _SKIP_TYPES:
                    continue
                if parent_uuids and o.get("uuid") in parent_uuids:
                    continue
                if self.copied(o):
                    continue
                if t == "assistant":
                    self.assistant(o, offset)
                elif t == "user":
                    self.user(o, offset)
                elif t == "attachment":
                    self.attachment(o, offset)
                elif t == "system":
                    self.system(o, offset)
                elif t == "ai-title":
                    self.title(o, o.get("aiTitle"), 1, offset)
                elif t == "custom-title":
                    self.title(o, o.get("customTitle"), 2, offset)
                elif t == "last-prompt":
                    lp = o.get("lastPrompt")
                    if isinstance(lp, str) and lp:
                        self.part_for(o).last_prompt = lp
                elif t == "file-history-snapshot":
                    snap = o.get("snapshot")
                    if isinstance(snap, dict):
                        tracked = snap.get("trackedFileBackups")
                        if isinstance(tracked, dict) and tracked:
                            self.loose_touched.extend(tracked)
                elif t == "file-history-delta":
                    p = o.get("trackingPath")
                    if isinstance(p, str) and p:
                        self.loose_touched.append(p)
                elif t == "summary":
                    self.summary(o, offset)
            except Exception as exc:  # one odd line costs that line, never the file
                bad += 1
                lines.failed(offset, exc)
        self.result.safe_offset = lines.end
        self.result.malformed = lines.malformed + bad + lines.faults.count
        self.result.faults = lines.faults.first
        return self.finish()

    def copied(self, o: dict) -> bool:
        """A line of another session that its own file beside this one holds
        too: a resumed session's copy of its earlier turns."""
        sid = o.get("sessionId")
        if self.agent_file or not isinstance(sid, str) or not sid or sid == self.stem:
            return False
        uuids = self.sibling_uuids.get(sid)
        if uuids is None:
            own = os.path.join(os.path.dirname(self.path), sid + ".jsonl")
            uuids = self.sibling_uuids[sid] = _parent_uuids(own) if "/" not in sid and is_regular_file(own) \
                else frozenset()
        return o.get("uuid") in uuids

    def touch(self, part: SessionPart, paths) -> None:
        seen = set(part.touched)
        for p in paths:
            if isinstance(p, str) and p and p not in seen:
                seen.add(p)
                part.touched.append(p)

    def title(self, o: dict, title, rank: int, offset: int) -> None:
        if not isinstance(title, str) or not title.strip():
            return
        part = self.part_for(o)
        title = title.strip()
        if all(t != title for _, t in part.titles):  # (Claude Code writes it again every turn)
            part.titles.append((offset, title))
        cur = self.best_title.get(id(part))
        if cur is None or (rank, offset) >= cur[:2]:
            self.best_title[id(part)] = (rank, offset, title)

    def summary(self, o: dict, offset: int) -> None:
        text = o.get("summary")
        if not isinstance(text, str) or not text.strip():
            return
        part = self.part_for(o)
        self.emit(part, "summary", text, self.last_ts, offset)
        leaf = o.get("leafUuid")
        if isinstance(leaf, str) and leaf:
            self.summary_titles.append((part, offset, text.strip(), leaf))

    def system(self, o: dict, offset: int) -> None:
        if o.get("subtype") != "compact_boundary":
            return
        part = self.part_for(o)
        self.where(part, o)
        content = o.get("content")
        if isinstance(content, str) and content.strip():
            self.emit(part, "summary", content, self.time(o), offset)

    def attachment(self, o: dict, offset: int) -> None:
        a = o.get("attachment")
        if not isinstance(a, dict) or a.get("type") != "queued_command":
            return
        if o.get("isMeta") or a.get("isMeta"):
            return
        if not _human(o.get("origin")) or not _human(a.get("origin")):
            return
        mode = a.get("commandMode")
        if mode not in (None, "prompt", "bash"):
            return  # task-notification and other harness-queued turns
        prompt = a.get("prompt")
        text = prompt if isinstance(prompt, str) else result_text(prompt)
        part = self.part_for(o)
        self.where(part, o)
        ts = self.time(o)
        if mode == "bash":
            if self.want_commands:
                rec = work.command_record(text)
                if rec:
                    self.emit(part, "command", rec, ts, offset, tool="Bash")
            return
        self.user_text(part, text, ts, offset)

    def user(self, o: dict, offset: int) -> None:
        part = self.part_for(o)
        self.where(part, o)
        u = o.get("uuid")
        if u:
            self.uuids.add(u)
        if o.get("isMeta") or not _human(o.get("origin")):
            return
        m = o.get("message")
        if not isinstance(m, dict):
            return  # e.g. a char-indexed object written by an SDK build
        content = m.get("content")
        if content is None:
            return
        role = m.get("role") or "user"
        if role not in ("user", "assistant"):
            return
        ts = self.time(o)
        if o.get("isCompactSummary"):
            role = "summary"
        if isinstance(content, str):
            if role == "user":
                self.user_text(part, content, ts, offset)
            else:
                self.emit(part, role, content, ts, offset)
            return
        if not isinstance(content, list):
            return
        texts, speech, is_error, uses = self.blocks(content)
        for a in self.answers:  # the person answered the agent's question: their turn
            self.emit(part, "user", a, ts, offset, tool="AskUserQuestion")
        self.answers = []
        if texts:
            if not speech:  # every text-bearing block was a tool result
                if self.want_output:
                    self.emit(part, "tool-output", "\n".join(texts), ts, offset, is_error=is_error)
            elif role == "user":
                self.user_text(part, "\n".join(texts), ts, offset)
            else:
                self.emit(part, role, "\n".join(texts), ts, offset)
        if uses:
            self.tools(part, uses, ts, offset)

    def user_text(self, part: SessionPart, text: str, ts, offset: int) -> None:
        """A person's turn, unless it is shell mode or harness output dressed as one."""
        s = text.lstrip()
        if s.startswith("<"):
            if s.startswith("<bash-input>"):
                end = s.find("</bash-input>")
                cmd = s[12:end] if end >= 0 else s[12:]
                if self.want_commands:
                    rec = work.command_record(cmd)
                    if rec:
                        self.emit(part, "command", rec, ts, offset, tool="Bash")
                return
            if s.startswith(("<bash-stdout>", "<bash-stderr>")):
                if self.want_output:
                    out = "\n".join(v.strip("\n") for _, v in _BASH_OUT.findall(s) if v.strip())
                    self.emit(part, "tool-output", out, ts, offset)
                return
            if s.startswith("<local-command-"):
                text = _LOCAL_OUT.sub("", s).strip()
                if not text:
                    return
            elif s.startswith("<task-notification>") and s.rstrip().endswith("</task-notification>"):
                return
        self.emit(part, "user", text, ts, offset)

    def blocks(self, content: list):
        """(texts in block order, how many were speech, is_error of the results, tool_use blocks).

        Join rule: a block's ``text``, else its ``content`` (string or the
        text of its sub-blocks). Thinking, images and documents carry neither.
        """
        texts: list[str] = []
        uses: list[dict] = []
        speech = 0
        is_error = None
        pending = self.pending
        for b in content:
            if not isinstance(b, dict):
                if isinstance(b, str) and b:
                    texts.append(b)
                    speech += 1
                continue
            bt = b.get("type")
            if bt == "text":
                t = b.get("text")
                if isinstance(t, str) and t and not t.startswith(_IDE_BLOCK):
                    texts.append(t)
                    speech += 1
            elif bt == "tool_use":
                uses.append(b)
            elif bt == "tool_result":
                tid = b.get("tool_use_id")
                if isinstance(tid, str):
                    self.results.setdefault(tid, self.at)
                t = result_text(b.get("content"))
                err = b.get("is_error")
                if err:
                    is_error = True
                elif err is not None and is_error is None:
                    is_error = False
                if self.asked and b.get("tool_use_id") in self.asked:
                    self.asked.discard(b.get("tool_use_id"))
                    self.answers.append(answers_text(t))
                    continue
                if pending and t.startswith("Exit code "):
                    hit = pending.pop(b.get("tool_use_id"), None)
                    m = _EXIT_CODE.match(t)
                    if hit and m:
                        msg, cmd = hit
                        code = int(m.group(1))
                        msg.exit_code = code
                        msg.text = work.command_record(cmd, code) or msg.text
                if t:
                    texts.append(t)
            elif bt in ("thinking", "redacted_thinking", "image", "document"):
                continue
            else:
                t = b.get("text")
                if not isinstance(t, str):
                    t = result_text(b.get("content"))
                if t:
                    texts.append(t)
                    speech += 1
        return texts, speech, is_error, uses

    def assistant(self, o: dict, offset: int) -> None:
        part = self.part_for(o)
        self.where(part, o)
        u = o.get("uuid")
        if u:
            self.uuids.add(u)
        if o.get("isApiErrorMessage") or o.get("isMeta"):
            return
        m = o.get("message")
        if not isinstance(m, dict) or m.get("model") == "<synthetic>":
            return
        content = m.get("content")
        if content is None:
            return
        role = m.get("role") or "assistant"
        if role not in ("user", "assistant"):
            return
        ts = self.time(o)
        if isinstance(content, str):
            self.emit(part, role, content, ts, offset)
            return
        if not isinstance(content, list):
            return
        texts, _, _, uses = self.blocks(content)
        if texts:
            self.emit(part, role, "\n".join(texts), ts, offset)
        if uses:
            self.tools(part, uses, ts, offset)

    def tools(self, part: SessionPart, uses: list[dict], ts, offset: int) -> None:
        """Work records of one line's tool calls: commands, one files record, edits."""
        paths: list[str] = []
        edits: list[tuple[str, str]] = []
        path_tool = None
        for b in uses:
            name = b.get("name")
            inp = b.get("input")
            if not isinstance(inp, dict):
                continue
            if name == "AskUserQuestion":
                q = questions_text(inp)
                if q:
                    self.emit(part, "assistant", q, ts, offset, tool=name)
                    if isinstance(b.get("id"), str):
                        self.asked.add(b["id"])
            elif name == "Bash":
                if not self.want_commands:
                    continue
                cmd = inp.get("command")
                rec = work.command_record(cmd)
                if rec:
                    msg = self.emit(part, "command", rec, ts, offset, tool="Bash")
                    tid = b.get("id")
                    if msg is not None and isinstance(tid, str):
                        self.pending[tid] = (msg, cmd)
                        self.calls.setdefault(tid, offset)
            elif name in _FILE_TOOLS:
                fp = inp.get("file_path") or inp.get("notebook_path")
                if not isinstance(fp, str) or not fp:
                    continue
                paths.append(fp)
                path_tool = path_tool or name
                if not self.want_edits:
                    continue
                rec = work.edit_record(fp, inp.get("old_string"))
                if rec:
                    edits.append((rec, name))
                subs = inp.get("edits")
                if isinstance(subs, list):
                    for e in subs:
                        if isinstance(e, dict):
                            rec = work.edit_record(fp, e.get("old_string"))
                            if rec:
                                edits.append((rec, name))
        if paths and self.want_paths:
            rec = work.files_record(paths)
            if rec:
                self.emit(part, "files", rec, ts, offset, tool=path_tool)
        for rec, name in edits:
            self.emit(part, "edit", rec, ts, offset, tool=name)

    # ------------------------------------------------------------------ finish

    def finish(self) -> ReadResult:
        if self.loose_touched:
            # snapshots belong to the file's own conversation, known only once a line named it
            self.touch(self.part_for({}), self.loose_touched)
        for part, offset, text, leaf in self.summary_titles:
            if leaf in self.uuids:
                cur = self.best_title.get(id(part))
                if cur is None or (1, offset) >= cur[:2]:
                    self.best_title[id(part)] = (1, offset, text)
        out = []
        for part in self.sessions.values():
            best = self.best_title.get(id(part))
            if best:
                part.title_rank, part.title = best[0], best[2]
            if not (part.messages or part.title or part.last_prompt or part.touched):
                continue
            if part.cwd:
                part.project = project_from_cwd(part.cwd)
                if part.touched:
                    part.touched = _absolute(part.touched, part.cwd)
            if not part.project and self.start == 0 and self.project_dir:
                part.project = decode_project_dir(self.project_dir)
            out.append(part)
        self.result.sessions = out
        return self.result


def _absolute(paths: list[str], cwd: str) -> list[str]:
    """Snapshot keys are absolute or relative to the cwd; make them all absolute."""
    if all(work.is_absolute(p) for p in paths):
        return paths
    sep = "\\" if "\\" in cwd and "/" not in cwd else "/"
    base = cwd.rstrip("/\\")
    out: dict[str, None] = {}
    for p in paths:
        out.setdefault(p if work.is_absolute(p) else base + sep + p, None)
    return list(out)


def _human(origin) -> bool:
    """No ``origin`` (older builds) or ``origin.kind == "human"``."""
    if not isinstance(origin, dict):
        return True
    kind = origin.get("kind")
    return kind is None or kind == "human"


# The index reads with ``live``: a command still running in a live transcript
# waits for its result (jsonl.held_back). Recovery and packets read without it:
# the command running when a session died is what they are for.
HOLDS_PENDING = True


def read(path: str, start: int = 0, live: bool = False, limit: int | None = None) -> ReadResult:
    """``limit``: read only the lines before this offset (a slice of a file too
    big to read at once), held back, as a live file's end is, at a call whose
    result lies past it."""
    try:
        reader = _Reader(path, start, limit)
        res = reader.run()
        if not live and limit is None:
            return res
        stop = held_back(path, reader.calls, reader.results, reader.said, always=limit is not None)
        if stop is None or stop >= res.safe_offset:
            return res
        # a command still running: its exit code comes in a later line
        return _Reader(path, start, stop).run() if stop > start else ReadResult(safe_offset=start)
    except OSError as e:
        return ReadResult(safe_offset=start, error=f"{type(e).__name__}: {e.strerror or e}")
    except Exception as e:  # never let one file stop the index
        return ReadResult(safe_offset=start, error=f"{type(e).__name__}: {e}")
