"""ZCode (Z.ai's coding agent: a desktop app and a CLI). Closed source: the
shapes come from the user's own earlier tool's registry note and the
third-party readers it cites (``zcode-stats``' queries, the 3.14.4 runtime's
restore-legacy-sessions skill); no real ZCode store was seen here. Three stores:

* ``~/.zcode/projects/<encoded cwd>/<session>.jsonl``: Command Code's flat
  lines (``role``, ``content``, ``timestamp``, ``sessionId``; a ``usage`` block
  on some, ignored), parsed by ``commandcode``. Appended: read from the last
  offset. The lines record no folder, so the project is the folder's encoded
  cwd, as for Claude Code.
* ``~/.zcode/cli/db/db.sqlite``: opencode's schema (``session``, ``message``,
  ``part`` with JSON ``data``), parsed by ``opencode.build``, but its tool parts
  carry Claude Code's names and arguments (``Bash {command}``, ``Read
  {file_path}``, ``Edit {file_path, old_string, new_string}``, ``Write
  {file_path, content}``). An ``Edit`` ZCode refused (``state.status:
  "error"``) is not a change. A session whose ``task_type`` is
  ``subagent_child`` or ``fork`` was started by the agent: kept only with
  DEJA_INCLUDE_SUBAGENTS=1.
* ``~/.zcode/v2/sessions/<workspaceHash>/<taskId>.json``: the older app's
  snapshots, ``{meta: {taskId, acpSessionId, workspacePath, title, createdAt,
  updatedAt}, messages: [{role, content, timestamp}]}``, read whole when they
  change. The id is ``acpSessionId`` (the one a restore gives the session),
  else ``taskId``; one whose id is in the CLI database is read from there
  instead.
"""

from __future__ import annotations

import os
from typing import Mapping

from deja.stages.sources import commandcode, opencode, sqlite_store
from deja.stages.sources.base import Message, ReadResult, SessionPart, SourceFile
from deja.stages.sources.dialect import Dialect, block_text
from deja.stages.sources.jsonl import clip, parse_ts, read_whole_document
from deja.stages.sources.locate import zcode_db, zcode_files, zcode_legacy_root, zcode_root

HARNESS = "zcode"

# The CLI database's tool parts, as a store the 3.14.4 runtime wrote names them (Claude Code's).
DIALECT = Dialect(
    file_tools=frozenset(("Read", "Write", "Edit", "MultiEdit")),
    shell_tools=frozenset(("Bash",)),
    path_keys=("file_path",),
    old_keys=("old_string",),
    command_keys=("command",),
)
SPAWNED = {"subagent_child": "subagent", "fork": "fork"}  # session.task_type → kind


def roots(env: Mapping[str, str]) -> list[str]:
    return [zcode_root(env), zcode_db(env), zcode_legacy_root(env)]


def discover(env: Mapping[str, str]) -> list[SourceFile]:
    return [SourceFile(p, HARNESS) for p in zcode_files(env)]


def read(path: str, start: int = 0) -> ReadResult:
    if path.endswith(".jsonl"):
        res = commandcode.read_as(path, start, HARNESS)
        folder = os.path.basename(os.path.dirname(path))
        for part in res.sessions:
            if not part.cwd and not part.project:
                from deja.stages.sources.claude import decode_project_dir

                part.project = decode_project_dir(folder)
        return res
    if path.endswith(".json"):
        return read_whole_document(path, 0, _read_snapshot, HARNESS)
    return sqlite_store.read_store(path, _read_db, HARNESS)


def _read_db(snap) -> ReadResult:
    if not {"session", "message", "part"} <= snap.tables():
        return ReadResult(error="schema changed: no session/message/part tables (ZCode store of another version)")
    cols = snap.columns("session")
    pick = ", ".join(c if c in cols else f"NULL AS {c}"
                     for c in ("id", "directory", "title", "parent_id", "task_type"))
    sessions = list(snap.rows(f"SELECT {pick} FROM session ORDER BY id"))
    sql = ("SELECT m.session_id, m.id, m.time_created, m.data, p.data FROM message m "
           "LEFT JOIN part p ON p.message_id = m.id ORDER BY m.session_id, m.time_created, m.id, p.id")
    res = opencode.build((s[:4] for s in sessions), snap.rows(sql), HARNESS, snap.check, DIALECT)
    kinds = {s[0]: SPAWNED[s[4]] for s in sessions if s[4] in SPAWNED}
    for part in res.sessions:
        kind = kinds.get(part.session_id)
        if kind:
            part.kind, part.spawned = kind, True
    return res


def _read_snapshot(path: str, doc, _mtime: int) -> ReadResult:
    if not isinstance(doc, dict) or not isinstance(doc.get("meta"), dict) or not isinstance(doc.get("messages"), list):
        what = type(doc).__name__ if not isinstance(doc, dict) else "an object without meta and messages"
        return ReadResult(malformed=1, faults=[(0, f"snapshot is {what}")])
    meta = doc["meta"]
    sid = next((meta[k] for k in ("acpSessionId", "taskId") if isinstance(meta.get(k), str) and meta[k]),
               os.path.basename(path)[: -len(".json")])
    if sid in _database_ids(path):
        return ReadResult()  # restored into the CLI database: read there
    part = SessionPart(harness=HARNESS, session_id=sid)
    if isinstance(meta.get("workspacePath"), str):
        part.cwd = meta["workspacePath"]
    if isinstance(meta.get("title"), str) and meta["title"].strip():
        part.title, part.title_rank = meta["title"].strip(), 1
    res = ReadResult()
    fallback = parse_ts(meta.get("createdAt"))
    for n, m in enumerate(doc["messages"]):
        if not isinstance(m, dict):
            res.malformed += 1
            continue
        role = m.get("role")
        if role not in ("user", "assistant"):
            continue
        text, cut = clip(block_text(m.get("content")))
        res.clipped += cut
        if text.strip():
            ts = parse_ts(m.get("timestamp"))
            part.messages.append(Message(role, text, ts if ts is not None else fallback, byte_offset=n))
    res.sessions = [part] if part.messages else []
    return res


_ids: dict[str, tuple[tuple, frozenset]] = {}


def _database_ids(snapshot_path: str) -> frozenset:
    """The session ids in the CLI database (DEJA_ZCODE_DB, else beside the
    snapshots' ``~/.zcode``), read once per database state; none when there is
    no database or it cannot be read."""
    home = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(snapshot_path))))
    db = zcode_db(os.environ) if os.environ.get("DEJA_ZCODE_DB") else os.path.join(home, "cli", "db", "db.sqlite")
    try:
        key = sqlite_store.stat_key(db)
    except OSError:
        return frozenset()
    hit = _ids.get(db)
    if hit is not None and hit[0] == key:
        return hit[1]
    ids: frozenset = frozenset()
    try:
        with sqlite_store.snapshot(db) as snap:
            if "session" in snap.tables():
                ids = frozenset(r[0] for r in snap.rows("SELECT id FROM session") if isinstance(r[0], str))
    except Exception:  # an unreadable database is that store's error; the snapshots still read
        ids = frozenset()
    _ids[db] = (key, ids)
    return ids
