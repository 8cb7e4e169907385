"""Gemini CLI chats (harness-formats §5 and "Seen in real published
transcripts → Gemini CLI").

``~/.gemini/tmp/<project>/chats/session-*.jsonl`` (a header line, messages,
``{"$set": …}`` updates and ``{"$rewindTo": id}``), the older whole-document
``session-*.json``, and the saved conversations ``tmp/<project>/checkpoint*.json``
(a bare list of ``{role, parts}``, or ``{history: [...]}``).

A JSONL chat is replayed much as Gemini itself loads it: a message id
written again replaces its earlier copy in place (the first copy lacks the
tool calls and their results), ``$rewindTo`` drops that message and everything
after it. Unlike Gemini, ``$set.messages`` (the whole list, rewritten on chat
compression, tool-output masking, a failed turn's rollback) only upserts by
id: the turns compression folded away stay, a tool result read whole is never
replaced by its ``<tool_output_masked>`` stub, and the ``<state_snapshot>``
Gemini puts in their place is a summary (``gemini_chat.Turns``). Since later lines rewrite
earlier ones, every form is read whole: ``safe_offset`` stays 0, so a file
that changed is read again in full (the plan never appends to it).

The project is the folder the store records for ``<project>``
(``gemini_chat.recorded_cwd``); the records carry no cwd of their own.
"""

from __future__ import annotations

import os
from typing import Mapping

import orjson

from deja.stages.sources import gemini_chat as chat
from deja.stages.sources.base import ReadResult, SessionPart, SourceFile
from deja.stages.sources.jsonl import Lines, is_regular_file
from deja.stages.sources.locate import gemini_files, gemini_home
from deja.stages.sources.values import Faults, show

HARNESS = "gemini"

# Cloud Shell's agent server writes every session under this one id: key those by file
_SHARED_IDS = frozenset(("a2a-server",))
_DOC_CAP = 256 << 20  # a JSON document larger than this is not a chat
_MASK = "<tool_output_masked>"  # toolOutputMaskingService's stub, the full output saved elsewhere


def roots(env: Mapping[str, str]) -> list[str]:
    return [gemini_home(env)]


def discover(env: Mapping[str, str]) -> list[SourceFile]:
    return [SourceFile(p, HARNESS) for p in gemini_files(env)]


def read(path: str, start: int = 0) -> ReadResult:
    if not is_regular_file(path):
        return ReadResult(safe_offset=0, error=f"not a readable regular file: {path}")
    try:
        if path.endswith(".jsonl"):
            return _read_jsonl(path)
        return _read_document(path)
    except OSError as exc:
        return ReadResult(safe_offset=0, error=f"{type(exc).__name__}: {exc.strerror or exc}")
    except Exception as exc:  # one bad file costs that file, never the run
        return ReadResult(safe_offset=0, error=f"gemini reader failed: {type(exc).__name__}: {exc}")


# --------------------------------------------------------------------------- the session record


class _Session:
    """A conversation record rebuilt from its lines, as Gemini loads it."""

    def __init__(self):
        self.meta: dict = {}
        self.messages: dict[str, tuple[int, dict]] = {}  # id -> (line offset, last copy); first position kept
        self.auto = 0

    def line(self, offset: int, obj: dict) -> None:
        if "$rewindTo" in obj:
            self.rewind(obj.get("$rewindTo"))
        elif isinstance(obj.get("$set"), dict):
            upd = obj["$set"]
            if isinstance(upd.get("messages"), list):
                # Gemini rewrites its whole list when it compresses the chat (a summary
                # in place of the turns it folded), masks old tool output, rolls back a
                # failed turn or loads a saved chat: an update, since what was said
                # before stays said (only ``$rewindTo`` is the person taking turns back)
                self.extend(offset, upd["messages"])
            self.meta.update({k: v for k, v in upd.items() if k != "messages"})
        elif "sessionId" in obj and "type" not in obj:  # the header, or a whole legacy record on one line
            self.meta.update({k: v for k, v in obj.items() if k != "messages"})
            if isinstance(obj.get("messages"), list):
                self.extend(offset, obj["messages"])
        elif "type" in obj:
            self.put(offset, obj)

    def extend(self, offset: int, msgs: list) -> None:
        for m in msgs:
            if isinstance(m, dict):
                self.put(offset, m)

    def put(self, offset: int, msg: dict) -> None:
        mid = msg.get("id")
        if not isinstance(mid, str) or not mid:
            self.auto += 1
            mid = f"\0{self.auto}"
        prev = self.messages.get(mid)
        if prev is not None:
            msg = _unmasked(prev[1], msg)
        self.messages[mid] = (offset, msg)

    def rewind(self, mid) -> None:
        if not isinstance(mid, str) or mid not in self.messages:
            self.messages.clear()  # as Gemini does with an id it does not know
            return
        keys = list(self.messages)
        for k in keys[keys.index(mid):]:
            del self.messages[k]


def _unmasked(prev: dict, msg: dict) -> dict:
    """``msg`` with each tool result Gemini masked (to save context) given back
    whole from ``prev``, the copy read before it, where that one had it whole."""
    calls, before = msg.get("toolCalls"), prev.get("toolCalls")
    if not isinstance(calls, list) or not isinstance(before, list):
        return msg
    whole = {c["id"]: c["result"] for c in before
             if isinstance(c, dict) and isinstance(c.get("id"), str) and c.get("result") is not None
             and not _masked(c["result"])}
    out = []
    for c in calls:
        if isinstance(c, dict) and c.get("id") in whole and _masked(c.get("result")):
            c = {**c, "result": whole[c["id"]]}
        out.append(c)
    return {**msg, "toolCalls": out}


def _masked(result) -> bool:
    """A result whose output Gemini replaced by its ``<tool_output_masked>`` stub."""
    for part in result if isinstance(result, list) else [result]:
        fr = part.get("functionResponse") if isinstance(part, dict) else None
        resp = fr.get("response") if isinstance(fr, dict) else None
        out = resp.get("output") if isinstance(resp, dict) else None
        if isinstance(out, str) and out.lstrip().startswith(_MASK):
            return True
    return False


def _read_jsonl(path: str) -> ReadResult:
    lines = Lines(path, 0)
    s = _Session()
    bad = lines.each(s.line)
    res = _result(path, s.meta, list(s.messages.values()), lines.faults)
    res.malformed += lines.malformed + bad
    return res


def _read_document(path: str) -> ReadResult:
    faults = Faults()
    with open(path, "rb") as fh:
        data = fh.read(_DOC_CAP + 1)
    try:
        doc = orjson.loads(data) if len(data) <= _DOC_CAP else None
    except orjson.JSONDecodeError:
        doc = None
    if isinstance(doc, dict) and isinstance(doc.get("messages"), list):
        s = _Session()
        s.line(0, doc)
        return _result(path, s.meta, list(s.messages.values()), faults)
    history = doc.get("history") if isinstance(doc, dict) else doc
    # a turn of another shape costs that turn, not the saved conversation (``_checkpoint``)
    if isinstance(history, list) and (not history or any(isinstance(t, dict) and "parts" in t for t in history)):
        return _checkpoint(path, history, faults)
    # a JSON file of a shape Gemini does not write for a chat: counted, never a crash
    return ReadResult(safe_offset=0, malformed=1, faults=[(0, "not a Gemini chat or checkpoint document")])


def _result(path: str, meta: dict, msgs: list[tuple[int, dict]], faults: Faults) -> ReadResult:
    sid = meta.get("sessionId")
    stem = os.path.splitext(os.path.basename(path))[0]
    if not isinstance(sid, str) or not sid or sid in _SHARED_IDS:
        sid = stem
    started = chat.ms(meta.get("startTime"))
    first_user = next((m for _, m in msgs if m.get("type") == "user"), None)
    preamble = chat.content_text(first_user.get("content")) if first_user else ""
    project_dir = chat.project_dir_of(path)
    header_hash = meta.get("projectHash") if isinstance(meta.get("projectHash"), str) else ""
    cwd = chat.recorded_cwd(project_dir, header_hash, preamble) if project_dir else ""
    turns = chat.Turns(cwd, faults)
    for offset, m in msgs:
        try:
            turns.record(m, started, offset)
        except Exception as exc:  # one message of a shape not foreseen costs that message only
            faults.note(offset, f"message could not be read ({type(exc).__name__})")
    part = SessionPart(harness=HARNESS, session_id=sid, cwd=cwd,
                       project="" if cwd else os.path.basename(project_dir), messages=turns.out)
    summary = meta.get("summary")
    if isinstance(summary, str) and summary.strip():
        part.title, part.title_rank = summary.strip(), 1
    parent = os.path.basename(os.path.dirname(path))
    if meta.get("kind") == "subagent" or parent != "chats":
        part.kind, part.spawned = "subagent", True
        if parent != "chats":  # chats/<parent session id>/<id>.jsonl
            part.parent = parent
    return ReadResult(sessions=[part], safe_offset=0, malformed=faults.count, faults=faults.first,
                      clipped=turns.clipped)


def _checkpoint(path: str, history: list, faults: Faults) -> ReadResult:
    """A saved conversation: ``{role, parts}`` turns with no ids or times; the
    file's time stands for them all, and its folder and name for the id."""
    project_dir = chat.project_dir_of(path)
    name = os.path.basename(project_dir)
    ts = chat.ms(os.stat(path).st_mtime)
    turns_in = []
    for i, t in enumerate(history):
        if isinstance(t, dict) and "parts" in t:
            turns_in.append(t)
        else:
            faults.note(0, f"turn {i} has no parts" if isinstance(t, dict) else f"turn {i} is {show(t)}, not an object")
    preamble = ""
    if turns_in and turns_in[0].get("role") == "user":
        text = chat.content_text(turns_in[0].get("parts"))
        if chat.is_preamble(text):
            preamble = text
            turns_in = turns_in[1:]
            if turns_in and turns_in[0].get("role") == "model":  # "Got it. Thanks for the context!"
                turns_in = turns_in[1:]
    cwd = chat.recorded_cwd(project_dir, "", preamble) if project_dir else ""
    turns = chat.Turns(cwd, faults)
    for t in turns_in:
        try:
            turns.content(t.get("role"), t.get("parts"), ts, 0)
        except Exception as exc:  # one turn of a shape not foreseen costs that turn only
            faults.note(0, f"a turn could not be read ({type(exc).__name__})")
    stem = os.path.splitext(os.path.basename(path))[0]
    part = SessionPart(harness=HARNESS, session_id=f"{stem}-{name[:12]}" if name else stem, cwd=cwd,
                       project="" if cwd else name, messages=turns.out)
    return ReadResult(sessions=[part], safe_offset=0, malformed=faults.count, faults=faults.first,
                      clipped=turns.clipped)

