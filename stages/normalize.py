"""Text that is not memory, stripped at ingest (harness-formats 1.6), and titles.

Harnesses write their own plumbing into user turns: reminders, slash-command
expansions, environment preambles, our own earlier recall blocks. Indexed,
they would dominate ranking because they are identical in every session.
"""

from __future__ import annotations

import re

from .display import CONTROLS, one_line
from .outcome import outcome
from .sources import values as v
from .sources.base import WORK_ROLES
from .sources.projects import project_root, short_name
from .store.layout import SESSION_COUNTS

# 1. our own earlier output echoed back, raw or HTML-escaped (Gemini)
_RECALL = re.compile(r"<deja-recall\b.*?</deja-recall>|&lt;deja-recall\b.*?&lt;/deja-recall&gt;", re.S)
# 2. complete plumbing blocks anywhere
_BLOCKS = re.compile(
    r"<system-reminder>.*?</system-reminder>"
    r"|<local-command-caveat>.*?</local-command-caveat>"
    r"|<command-message>.*?</command-message>"
    r"|<command-name>.*?</command-args>",
    re.S,
)
# 3. wrappers whose inside is the real text
_UNWRAP = re.compile(r"</?(?:user_query|hook_context)>")
# 4. preambles, only at the start (people quote these tags in real questions)
_PREAMBLE_TAGS = (
    "session_context",
    "timestamp",
    "environment_context",
    "recommended_plugins",
    "permissions instructions",
    "skills_instructions",
    "user_instructions",
)
_AGENTS_MD = re.compile(r"#\s*AGENTS\.md instructions[^\n]*\n\s*<INSTRUCTIONS>", re.S)
# 5. whole lines that are harness notices
_DROP_LINES = re.compile(
    r"^(?:This session is being continued from a previous conversation"
    r"|\[Request interrupted by user"
    r"|\[Your previous response had no visible output"
    r"|UserPromptSubmit hook additional context:"
    r"|SessionStart hook additional context:).*$\n?",
    re.M,
)
_HINTS = ("<", "[Request", "[Your", "This session", "hook additional", "# AGENTS", "&lt;deja")


def strip_plumbing(text: str) -> str:
    """The message with harness plumbing removed; "" when nothing else is left."""
    if not text or not any(h in text for h in _HINTS):
        return text.strip() if text else ""
    if "deja-recall" in text:
        text = _RECALL.sub("", text)
    if "<" in text:
        text = _BLOCKS.sub("", text)
        text = _UNWRAP.sub("", text)
        text = _strip_preambles(text)
    text = _DROP_LINES.sub("", text)
    return text.strip()


def _strip_preambles(text: str) -> str:
    while True:
        s = text.lstrip()
        if s.startswith("#"):
            m = _AGENTS_MD.match(s)
            if m:
                end = _closing(s, "INSTRUCTIONS", m.end())
                if end < 0:
                    return s
                text = s[end:]
                continue
            return s
        if not s.startswith("<"):
            return s
        for tag in _PREAMBLE_TAGS:
            if s.startswith("<" + tag) and s[len(tag) + 1 : len(tag) + 2] in (">", " "):
                end = _closing(s, tag, len(tag) + 1)
                if end < 0:
                    return s
                text = s[end:]
                break
        else:
            return s


def _closing(s: str, tag: str, pos: int) -> int:
    """Index just past the matching ``</tag>``, counting nested opens; -1 if none."""
    depth = 1
    open_t, close_t = "<" + tag, "</" + tag + ">"
    while depth:
        c = s.find(close_t, pos)
        if c < 0:
            return -1
        o = s.find(open_t, pos)
        if 0 <= o < c:
            depth += 1
            pos = o + len(open_t)
        else:
            depth -= 1
            pos = c + len(close_t)
    return pos


# Titles skip user turns that are plumbing or notifications rather than asks.
_TITLE_SKIP = ("<local-command", "<command-", "<task-notification", "<teammate-message", "Caveat:")
_GREETING_WORDS = 3


def title_worthy(text: str) -> bool:
    return bool(text) and not text.lstrip().startswith(_TITLE_SKIP)


# Han, kana and Hangul write without spaces: a character there says about as
# much as a short word ("修复连接池耗尽" is a request, not a greeting).
_UNSPACED = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


def _words(text: str) -> int:
    """Words, counting each character of a script written without spaces as one."""
    unspaced = len(_UNSPACED.findall(text))
    return len(_UNSPACED.sub(" ", text).split()) + unspaced


def derive_title(first_user: list[str], first_assistant: str, first_output: str) -> tuple[str, bool]:
    """(title, agent_title) from the earliest turns when the harness gave none.

    ``first_user`` holds the first couple of title-worthy user turns in time
    order: a greeting-length first turn yields to the next substantial one.
    """
    users = [u for u in first_user if title_worthy(u)]
    if users:
        pick = users[0]
        if len(users) > 1 and _words(pick) <= _GREETING_WORDS < _words(users[1]):
            pick = users[1]
        return one_line(pick), False
    if first_assistant:
        return one_line(first_assistant), True
    if first_output:
        return "tool output: " + one_line(first_output), False
    return "", False


# ---------------------------------------------------------------------------
# Reader output → one Arrow table of records with the fixed schema.

_TITLE_USERS = 2


RECORD_COLUMNS = (
    "session_key", "session_id", "project", "seq", "role", "text", "ts", "tool", "exit_code", "is_error",
    "source_path", "byte_offset", "project_root",
)


def record_schema():
    import pyarrow as pa

    return pa.schema(
        [
            ("session_key", pa.string()),
            ("session_id", pa.string()),
            ("project", pa.string()),
            ("seq", pa.int32()),
            ("role", pa.string()),
            ("text", pa.large_string()),
            ("ts", pa.timestamp("ms", tz="UTC")),
            ("tool", pa.string()),
            ("exit_code", pa.int16()),
            ("is_error", pa.bool_()),
            ("source_path", pa.string()),
            ("byte_offset", pa.int64()),
            ("project_root", pa.string()),
        ]
    )


def session_key(harness: str, session_id: str) -> str:
    return f"{harness}:{session_id}"


def to_table(cols: dict[str, list]):
    """The Arrow table of ``to_columns`` output, with the fixed record schema."""
    import pyarrow as pa

    return pa.table(cols, schema=record_schema())


def to_columns(parts, path: str, seq_start: dict[str, int] | None = None, projects: dict[str, str] | None = None,
               faults: v.Faults | None = None, named: dict[str, tuple[set[str], int | None]] | None = None,
               waiting: dict[str, str] | None = None):
    """Records of one read, plumbing stripped, empties dropped; and per-session stats.

    Plain lists, not Arrow: this runs in reader worker processes, which stay
    light (no pyarrow import) and hand their columns back by pickle.
    ``seq_start`` continues numbering for sessions this file already fed (an
    append); ``projects`` supplies the (project, project_root) a previous read
    found when this read did not see the session's identity lines again.
    Every value is checked against its column here, once for all readers
    (sources/values.py): one out of range becomes unknown and is noted in
    ``faults`` with its line's offset.
    Each name the harness or a person gave a session becomes a title record
    too (``names``); ``named`` holds, for an append, the names earlier reads
    wrote and the session's last time they saw, so a name is written once;
    ``waiting``, a name an earlier read found for a session it saw no turn of.
    Returns ({column: list}, {session_key: partial-metadata dict}).
    """
    seq_start = seq_start or {}
    projects = projects or {}
    named = named or {}
    waiting = waiting or {}
    faults = faults if faults is not None else v.Faults()
    cols: dict[str, list] = {name: [] for name in RECORD_COLUMNS}
    meta: dict[str, dict] = {}
    for part in parts:
        _check_part(part, faults)
        key = session_key(part.harness, part.session_id)
        project, root = identity(part, projects.get(key))
        m = meta.get(key)
        if m is None:
            m = meta[key] = _new_meta(part, key, project, root)
        else:
            _merge_part_fields(m, part, project, root)
        seq = seq_start.get(key, 0) + m["_n"]
        before, before_ts = named.get(key) or (set(), None)
        # (a file that only names a session, no turn yet, makes no session of it)
        titles = names(part, before | set(m["named"]), m["named"], waiting.get(key)) \
            if part.messages or key in named else []
        last_ts = None
        for msg in part.messages:
            text = msg.text
            if not text:
                continue
            if not isinstance(text, str):
                faults.note(msg.byte_offset, f"{msg.role} text {v.show(text)} is not text")
                continue
            _check_message(msg, faults)
            if msg.role not in WORK_ROLES:
                text = strip_plumbing(text)
                if not text:
                    continue
            while titles and msg.byte_offset > titles[0][0]:  # a name where its line is
                offset, title = titles.pop(0)
                seq = _title(cols, key, part, project, root, path, faults, seq, title,
                             last_ts if last_ts is not None else msg.ts, max(offset, 0))
            _account(m, msg.role, text, msg.ts)
            _append(cols, key, part.session_id, project, root, path, faults, seq, msg.role, text, msg.ts,
                    msg.tool, msg.exit_code, msg.is_error, msg.byte_offset)
            last_ts = msg.ts if msg.ts is not None else last_ts
            seq += 1
        for offset, title in titles:  # after every message of the read (or of an append only renaming)
            seq = _title(cols, key, part, project, root, path, faults, seq, title,
                         last_ts if last_ts is not None else before_ts, max(offset, 0))
        m["_n"] = seq - seq_start.get(key, 0)
        m["max_seq"] = seq - 1
    for m in meta.values():
        m.pop("_n", None)
        set_touched(m, m.pop("_touch"))
    return cols, meta


def _append(cols, key, sid, project, root, path, faults, seq, role, text, ts, tool, exit_code, is_error, offset):
    cols["session_key"].append(key)
    cols["session_id"].append(sid)
    cols["project"].append(project)
    cols["seq"].append(seq if seq <= v.INT32[1] else faults.note(offset, f"seq {seq} past int32"))
    cols["role"].append(role)
    cols["text"].append(text)
    cols["ts"].append(ts)
    cols["tool"].append(tool)
    cols["exit_code"].append(exit_code)
    cols["is_error"].append(is_error)
    cols["source_path"].append(path)
    cols["byte_offset"].append(offset)
    cols["project_root"].append(root)


_ELLIPSIS = ("…", "...")


def names(part, before: set[str], handled: list[str], waiting: str | None = None) -> list[tuple[int, str]]:
    """The names of a session part that become title records: (offset, name).

    A name a person gave (a rename) or the harness wrote (Claude's ai-title,
    Cursor's and opencode's chat names, Gemini's summary) holds words the
    turns may not: "the upload saga" finds the session its person named so.
    Not a placeholder (``_check_part`` dropped those), nor a name ``before``
    holds (an earlier read's, or this read's other part's), nor one that is
    only the harness's spelling of what the part's turns already hold (a
    first prompt cut short). (A summary the turns were compacted into does
    not count: a search reads it only when asked to.) Every name looked at
    is added to ``handled`` (the session's ``named``), so an append that sees
    it again passes it by. A note is its own text; a synced-in session's
    batch holds its names as title records, unless an older deja wrote it."""
    if part.harness == "deja" or (part.from_machine and any(m.role == "title" for m in part.messages)):
        return []
    given = part.titles or ([(-1, part.title)] if part.title and (part.title_rank or 0) >= 1 else [])
    if waiting:  # (named by an earlier read, before any turn)
        given = [(-1, waiting)] + list(given)
    out = []
    for offset, name in given:
        name = name.strip() if isinstance(name, str) else ""
        if not name or name in before or type(offset) is not int:
            continue
        before.add(name)
        handled.append(name)
        if not _said(name, part.messages):
            out.append((offset, name))
    return out


_SPACED_LOOK = 4  # first prompts whose spacing a harness's title may have folded


def _said(name: str, messages) -> bool:
    """Whether the turns hold the name (a cut-off's ellipsis dropped; the first
    prompts whitespace aside, as a harness titles a session by its first one)."""
    core = " ".join(name.split())
    for e in _ELLIPSIS:
        if core.endswith(e):
            core = core[: -len(e)].rstrip()
    if not core:
        return False
    said = [m.text for m in messages if m.role != "summary" and isinstance(m.text, str)]
    if any(core in t for t in said):  # (a plain search: every turn of a long session, cheaply)
        return True
    asks = [m.text for m in messages if m.role == "user" and isinstance(m.text, str)][:_SPACED_LOOK]
    return any(core in " ".join(t.split()) for t in asks)


def _title(cols, key, part, project, root, path, faults, seq, title, ts, offset) -> int:
    """A name's title record, at ``seq``; the next seq. (Not counted among
    the session's turns, nor in its times: a name's line has no time.)"""
    _append(cols, key, part.session_id, project, root, path, faults, seq, "title", title, ts, None, None, None,
            offset)
    return seq + 1


TOUCHED_KEPT = 50  # the files a session touched most, kept with it


def set_touched(m: dict, counts: dict[str, int]) -> None:
    """A session's ``touched`` files (and their counts): the most touched first."""
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:TOUCHED_KEPT]
    m["touched"] = [p for p, _ in ranked]
    m["touched_counts"] = [c for _, c in ranked]


_ABSOLUTE = re.compile(r"^(?:[/~]|[A-Za-z]:[/\\\\])")


def identity(part, prior: tuple[str, str] | None = None) -> tuple[str, str]:
    """A session part's (project, project_root), the same way for every harness
    (stages/sources/projects.py): the root from the recorded cwd, or from a
    reader's project hint when that is a path (a note's project); the project
    is the root's last two segments. With neither, the reader's name stands
    (Claude's folder name, Codex's history), or what an earlier read found."""
    hint = part.project or ""
    root = project_root(part.cwd) if part.cwd else ""
    if not root and _ABSOLUTE.match(hint):
        root = project_root(hint)
    if root:
        return short_name(root), root
    if hint:
        return hint, ""
    return prior if prior else ("", "")


def _check_message(msg, faults: v.Faults) -> None:
    """A message's values within their columns' bounds, else unknown (noted)."""
    at = msg.byte_offset
    if type(at) is not int or not v.INT64[0] <= at <= v.INT64[1]:
        msg.byte_offset = at = faults.note(0, f"byte offset {v.show(at)} out of range") or 0
    if msg.ts is not None and not v.valid_ms(msg.ts):
        msg.ts = faults.note(at, f"timestamp {v.show(msg.ts)} is not a time in 1970-2200")
    if msg.exit_code is not None and not v.int_in(msg.exit_code, v.INT16):
        msg.exit_code = faults.note(at, f"exit code {v.show(msg.exit_code)} out of int16")
    if msg.is_error is not None and type(msg.is_error) is not bool:
        msg.is_error = faults.note(at, f"is_error {v.show(msg.is_error)} is not true/false")
    if msg.tool is not None:
        msg.tool = faults.name(at, "tool", msg.tool) or None


_PART_NAMES = ("project", "cwd", "branch", "kind", "parent", "agent", "from_machine", "orig_id")


_CONTROLS = re.compile(f"[\t\n{CONTROLS}]")  # (the ones display sanitises, and tab and newline)
# What an agent calls a session before it has a name: opencode's "New session -
# 2026-03-02T10:00:00.000Z" (and "Child session - …" for a subagent's), Continue's
# "New Session", an editor's "New Chat" or "Untitled". No title: a session is
# titled by its first prompt instead, and no placeholder is a name to search by.
_PLACEHOLDER = re.compile(r"\s*(?:new|child|untitled)(?:\s+(?:session|chat|thread|conversation|task|agent))?"
                          r"(?:\s*[-–—:]?\s*[\d\-:.TZ+ ]*)?\s*", re.I)


def _check_part(part, faults: v.Faults) -> None:
    """A session part's identity and titles as bounded strings, else "" (noted).

    The offset of its first message stands for the line: identity fields are
    spread over many lines, and a reader keeps only the value, not where it was."""
    at = part.messages[0].byte_offset if part.messages and type(part.messages[0].byte_offset) is int else 0
    sid = part.session_id
    if not isinstance(sid, str) or not sid or len(sid) > v.NAME_CAP:
        # the key of every row: an unusable id is replaced by a stable stand-in, not dropped
        faults.note(at, f"session id {v.show(sid)} is not a usable id")
        part.session_id = "invalid-" + _digest(repr(sid))
    elif _CONTROLS.search(sid):
        # printed in every answer and handed to a terminal, a hook or an agent:
        # an escape sequence in it would set a title or clear the screen
        faults.note(at, f"session id {v.show(sid)} holds control characters (dropped)")
        part.session_id = _CONTROLS.sub("", sid) or "invalid-" + _digest(repr(sid))
    for f in _PART_NAMES:
        value = faults.name(at, f, getattr(part, f))
        if isinstance(value, str) and _CONTROLS.search(value):
            faults.note(at, f"{f} {v.show(value)} holds control characters (dropped)")
            value = _CONTROLS.sub("", value)
        setattr(part, f, value)
    part.title = faults.name(at, "title", part.title, v.PROSE_CAP)
    if part.title and _PLACEHOLDER.fullmatch(part.title):
        part.title, part.title_rank = "", 0
    if part.titles:
        part.titles = [(o, t) for o, t in ((o, faults.name(at, "title", t, v.PROSE_CAP)) for o, t in part.titles)
                       if t and not _PLACEHOLDER.fullmatch(t)]
    part.last_prompt = faults.name(at, "last prompt", part.last_prompt, v.PROSE_CAP)
    if not v.int_in(part.title_rank, (0, 2)):
        part.title_rank = faults.note(at, f"title rank {v.show(part.title_rank)} out of range") or 0
    if part.touched:
        part.touched = [p for p in (faults.name(at, "touched path", p) for p in part.touched) if p]


def _digest(s: str) -> str:
    import hashlib

    return hashlib.blake2b(s.encode("utf-8", "replace"), digest_size=8).hexdigest()


def _new_meta(part, key: str, project: str, root: str) -> dict:
    touch: dict[str, int] = {}
    for p in part.touched:
        touch[p] = touch.get(p, 0) + 1
    m = {
        "session_key": key,
        "harness": part.harness,
        "session_id": part.session_id,
        "project": project,
        "project_root": root,
        "cwd": part.cwd,
        "branch": part.branch,
        "title": part.title,
        "title_rank": part.title_rank,
        "last_prompt": part.last_prompt,
        "kind": part.kind,
        "parent": part.parent,
        "agent": part.agent,
        "from_machine": part.from_machine,
        "orig_id": part.orig_id,
        "started": None,
        "updated": None,
        "first_user": [],
        "first_assistant": "",
        "first_output": "",
        "max_seq": -1,
        "decision": "",
        "decision_ts": None,
        "gave_up": False,
        "named": [],
        "_n": 0,
        "_touch": touch,
    }
    for role in ("user", "assistant", "tool_output", "command", "files", "edit", "summary"):
        m["n_" + role] = 0
    m["words"] = 0
    return m


_IDENTITY = ("project", "project_root", "cwd", "branch", "kind", "parent", "agent", "from_machine", "orig_id")
COUNTS = SESSION_COUNTS  # the sessions dataset has a column of each (stages/store/layout.py)


def merge_identity(o: dict, n) -> None:
    """What a later read says about a session the earlier one knew: empty fields
    fill (a root found later brings its project name with it), a title of equal
    or higher rank replaces, the latest prompt wins."""
    if not o.get("project_root") and n.get("project_root"):
        o["project"] = n["project"]
    for f in _IDENTITY:
        if not o.get(f) and n.get(f):
            o[f] = n[f]
    if n.get("title") and (n.get("title_rank") or 0) >= (o.get("title_rank") or 0):
        o["title"], o["title_rank"] = n["title"], n["title_rank"]
    if n.get("last_prompt"):
        o["last_prompt"] = n["last_prompt"]


def _merge_part_fields(m: dict, part, project: str, root: str) -> None:
    merge_identity(m, {f: getattr(part, f) for f in ("cwd", "branch", "kind", "parent", "agent", "from_machine",
                                                     "orig_id", "title", "title_rank", "last_prompt")}
                   | {"project": project, "project_root": root})
    for p in part.touched:
        m["_touch"][p] = m["_touch"].get(p, 0) + 1


def fold_meta(into: dict[str, dict], meta: dict[str, dict], **also) -> None:
    """Sessions' metadata of a later read (``meta``, by session key) folded
    into ``into``: a session new to it is copied in (with ``also``), a known
    one merged (merge_meta)."""
    for key, m in meta.items():
        o = into.get(key)
        if o is None:
            into[key] = dict(m, **also)
        else:
            merge_meta(o, dict(m, **also) if also else m)


def merge_meta(o: dict, m: dict) -> None:
    """Fold a later read's metadata of one session (an append) into what this
    file said before, in place."""
    merge_identity(o, m)
    if m.get("started") is not None and (o.get("started") is None or m["started"] < o["started"]):
        o["started"] = m["started"]
    if m.get("updated") is not None and (o.get("updated") is None or m["updated"] > o["updated"]):
        o["updated"] = m["updated"]
    for f in COUNTS:
        o[f] = (o.get(f) or 0) + (m.get(f) or 0)
    o["first_user"] = (list(o.get("first_user") or []) + list(m.get("first_user") or []))[:_TITLE_USERS]
    o["first_assistant"] = o.get("first_assistant") or m.get("first_assistant")
    o["first_output"] = o.get("first_output") or m.get("first_output")
    counts = dict(zip(o.get("touched") or [], o.get("touched_counts") or []))
    for p, c in zip(m.get("touched") or [], m.get("touched_counts") or []):
        counts[p] = counts.get(p, 0) + c
    set_touched(o, counts)
    o["max_seq"] = max(-1 if o.get("max_seq") is None else o["max_seq"], -1 if m.get("max_seq") is None else m["max_seq"])
    if m.get("decision"):
        o["decision"], o["decision_ts"] = m["decision"], m.get("decision_ts")
    o["gave_up"] = bool(o.get("gave_up") or m.get("gave_up"))
    o["named"] = list(dict.fromkeys(list(o.get("named") or []) + list(m.get("named") or [])))


def _outcome(m: dict, text: str, ts: int | None) -> None:
    """The latest decision line of the agent's own turns, and any backing out."""
    line, backed = outcome(text)
    if line and (m["decision_ts"] is None or ts is None or ts >= m["decision_ts"]):
        m["decision"], m["decision_ts"] = line, ts
    if backed:
        m["gave_up"] = True


def _account(m: dict, role: str, text: str, ts: int | None) -> None:
    m["n_" + role.replace("-", "_")] = m.get("n_" + role.replace("-", "_"), 0) + 1
    if ts is not None:
        if m["started"] is None or ts < m["started"]:
            m["started"] = ts
        if m["updated"] is None or ts > m["updated"]:
            m["updated"] = ts
    if role == "user":
        m["words"] += len(text.split())
        if len(m["first_user"]) < _TITLE_USERS and title_worthy(text):
            m["first_user"].append(one_line(text, 400))
    elif role == "assistant":
        m["words"] += len(text.split())
        if not m["first_assistant"]:
            m["first_assistant"] = one_line(text, 400)
        _outcome(m, text, ts)
    elif role == "tool-output":
        if not m["first_output"]:
            m["first_output"] = one_line(text, 200)
    elif role == "files":
        for p in text.split("\n"):
            m["_touch"][p] = m["_touch"].get(p, 0) + 1
