"""Reading one source file through the per-record stages: read → normalize → redact.

This is what reader worker processes run, so it imports nothing heavy: no
pyarrow, polars or duckdb. It returns plain column lists; in the main process
a big run turns them into Arrow, a small one writes them as they are
(pipeline/batch.py).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from deja.stages import normalize, redact
from deja.stages.sources import reader
from deja.stages.sources.locate import REMOTE_PREFIX, include_subagents
from deja.stages.sources.values import Faults

from deja.pipeline import manifest as mf

STORE_TEXT_CAP = 64 << 10  # bytes kept per message, cut after redaction
# Redaction runs on the part of a message that can be stored, plus a margin so
# a secret straddling the cut is still masked whole; the rest is dropped anyway.
REDACT_WINDOW = STORE_TEXT_CAP + (16 << 10)


@dataclass
class FileOutput:
    action: mf.Action
    cols: dict | None
    meta: dict[str, dict]
    safe_offset: int
    prefix_hash: str
    malformed: int
    clipped: int
    redactions: dict[str, int]
    error: str
    rows: int = 0
    faults: list[str] | None = None  # the first few malformed lines and values: "line N: what"
    changed: bool = False  # vanished or replaced while it was read: nothing kept, read again next run
    edge_hash: str = ""  # manifest.edge_hash of the file as read
    # A database read against its earlier sessions (``prior`` with fingerprints):
    # the sessions it still holds unchanged (their records stay as written),
    # and every session it holds now. None: the read replaces the file whole.
    kept: set[str] | None = None
    # A file read before whose read failed this run: what the index holds of it
    # stays as written (pipeline/run.py, carry_failed), its row keeps the error.
    held: bool = False
    present: set[str] | None = None
    # A later slice of a file too big to read at once: its records and sessions
    # fold into the first slice's output (pipeline/run.py, read_sliced, accept).
    continues: FileOutput | None = None


def process_file(action: mf.Action, prior: dict[str, dict], light: bool = False,
                 limit: int | None = None, prefix: mf.PrefixHash | None = None) -> FileOutput:
    """Read one file from its start offset and run the per-record stages on it.

    ``prior`` holds this file's file_sessions rows from earlier runs (for an
    append: seq numbering and the project found by the first read; for a
    database read again: the fingerprints of its sessions, see ``fingerprints``).
    ``light`` (worker processes) keeps polars out: see redact.redact_many.
    ``limit``: read up to this offset only (a slice: see run.read_sliced; only
    readers that hold back a call waiting for its result take it).
    """
    remote = action.path.startswith(REMOTE_PREFIX)  # a database server: nothing to stat
    try:
        before = None if remote else os.stat(action.path)
    except OSError:
        return _changed(action, "vanished before it was read")
    try:
        mod = reader(action.harness)
        if getattr(mod, "HOLDS_PENDING", False):  # (the index reads live transcripts: jsonl.held_back)
            res = mod.read(action.path, action.start, live=True, limit=limit)
        else:
            res = mod.read(action.path, action.start)
    except Exception as exc:  # a reader bug costs one file, never the run
        return FileOutput(action, None, {}, action.start, "", 0, 0, {}, f"{type(exc).__name__}: {exc}")
    if res.error:
        return FileOutput(action, None, {}, action.start, "", res.malformed, 0, {}, res.error)
    database = mf.is_database(action.path)
    present = {normalize.session_key(s.harness, s.session_id) for s in res.sessions} if database else None
    if not include_subagents(os.environ):
        # Subagents a harness marks only inside the file (Codex's source.subagent);
        # Claude Code's live in their own folders and are never listed (stages/sources/locate.py).
        res.sessions = [s for s in res.sessions if not s.spawned]
    prints = fingerprints(res.sessions) if database else {}
    kept = None
    if database and any(r.get("fingerprint") for r in prior.values()):
        kept = {k for k, fp in prints.items() if k in prior and prior[k].get("fingerprint") == fp}
        res.sessions = [s for s in res.sessions if normalize.session_key(s.harness, s.session_id) not in kept]
    seq_start = {k: (r.get("max_seq", -1) + 1) for k, r in prior.items()} if action.start else {}
    projects = {k: (r.get("project") or "", r.get("project_root") or "") for k, r in prior.items()} if action.start else {}
    faults = Faults()
    faults.first = list(res.faults)
    cols, meta = normalize.to_columns(res.sessions, action.path, seq_start, projects, faults,
                                      *(_named(res.sessions, prior) if action.start else (None, None)))
    counts = redact_texts(cols, vectorized=not light)
    for key, m in meta.items():
        redact_meta(m)
        if key in prints:
            m["fingerprint"] = prints[key]
    digest = (prefix or mf.PrefixHash(action.path)).to(res.safe_offset) if res.safe_offset else ""
    why = "" if remote else _changed_since(action.path, before)
    if why:
        return _changed(action, why)
    edge = mf.edge_hash(action.path)
    out = FileOutput(action, cols, meta, res.safe_offset, digest, res.malformed + faults.count, res.clipped, counts, "")
    out.rows = len(cols["text"])
    out.faults = fault_lines(action.path, faults.first)
    out.edge_hash = edge
    out.kept, out.present = kept, present
    return out


def _named(parts, prior: dict[str, dict]) -> tuple[dict[str, tuple[set[str], int | None]], dict[str, str]]:
    """For an append: the names earlier reads wrote of each session (stored
    redacted) and its last time (normalize.names writes a name once), for
    the sessions this file gave turns before. A name that reads the same
    once redacted counts as the same. And the name of each session this file
    only named so far (a /rename before the first prompt): it is written
    with the session's first turn."""
    turned = {k: r for k, r in prior.items() if (r.get("max_seq") if r.get("max_seq") is not None else -1) >= 0}
    named = {k: (set(r.get("named") or ()), r.get("updated")) for k, r in turned.items()}
    waiting = {k: r["title"] for k, r in prior.items()
               if k not in turned and r.get("title") and (r.get("title_rank") or 0) >= 1}
    for part in parts:
        before = named.get(normalize.session_key(part.harness, part.session_id))
        if before is None:
            continue
        for _, t in part.titles or [(-1, part.title)]:
            t = t.strip() if isinstance(t, str) else ""
            if t and t not in before[0] and redact.redact(t)[0] in before[0]:
                before[0].add(t)
    return named, waiting


def fingerprints(parts) -> dict[str, str]:
    """session key → xxh64 of everything a database read says of the session.

    A database holds many sessions and an agent changes one at a time; the
    fingerprint of each, kept in the catalog's ``file_sessions``, tells the
    next read of a changed store which sessions to write again. The rest keep
    their records, ids and postings as they are (pipeline/run.py)."""
    import xxhash

    hashes: dict[str, object] = {}
    for part in parts:
        key = normalize.session_key(part.harness, part.session_id)
        h = hashes.get(key)
        if h is None:
            h = hashes[key] = xxhash.xxh64()
        h.update(repr((part.project, part.cwd, part.branch, part.title, part.title_rank, part.last_prompt,
                       part.kind, part.parent, part.agent, part.spawned, part.touched)).encode("utf-8", "replace"))
        for m in part.messages:
            # (not byte_offset: a database reader numbers rows across the whole
            # store, so one session's new row renumbers every later session's)
            h.update(repr((m.role, m.ts, m.tool, m.exit_code, m.is_error)).encode())
            h.update(m.text.encode("utf-8", "replace") if isinstance(m.text, str) else repr(m.text).encode())
            h.update(b"\x00")
    return {k: h.hexdigest() for k, h in hashes.items()}


def fault_lines(path: str, faults: list[tuple[int, str]]) -> list[str]:
    """``line N: what`` for faults noted by byte offset: one pass over the file
    up to the last of them, only for files that have any."""
    if not faults:
        return []
    faults = sorted(faults)
    out, line, pos = [], 1, 0
    try:
        with open(path, "rb") as fh:
            for offset, what in faults:
                while pos < offset:
                    chunk = fh.read(min(offset - pos, 1 << 20))
                    if not chunk:
                        break
                    line += chunk.count(b"\n")
                    pos += len(chunk)
                out.append(f"line {line}: {what}")
    except OSError:  # gone since it was read: the offsets still say where
        return [f"byte {offset}: {what}" for offset, what in faults]
    return out


def _changed_since(path: str, before: os.stat_result) -> str:
    """Why what was read may not be the file now at ``path``, or "".

    A transcript only grows; another inode, or fewer bytes, means it was
    replaced or rewritten under the reader (a live append is neither)."""
    try:
        after = os.stat(path)
    except OSError:
        return "vanished while it was read"
    if (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino) or after.st_size < before.st_size:
        return "replaced while it was read"
    return ""


def _changed(action: mf.Action, why: str) -> FileOutput:
    """Nothing of the read is kept; the error makes the next run plan it again
    (or drop it, if it is gone)."""
    out = FileOutput(action, None, {}, action.start, "", 0, 0, {}, why + "; read again next run")
    out.changed = True
    return out


def redact_texts(cols: dict, vectorized: bool = True) -> dict[str, int]:
    """Secrets out, before anything is written; then the storage cut."""
    texts = [t if len(t) <= REDACT_WINDOW else t[:REDACT_WINDOW] for t in cols["text"]]
    texts, counts = redact.redact_many(texts, vectorized)
    cols["text"] = [_cut(t) for t in texts]
    return counts


def redact_meta(m: dict) -> None:
    """Titles, prompts and the files a session touched are derived from the
    text (a path comes from a tool call's arguments) and stored too: same redaction."""
    for key in ("title", "last_prompt", "first_assistant", "first_output", "decision"):
        if m.get(key):
            m[key] = redact.redact(m[key])[0]
    for key in ("first_user", "named"):
        m[key] = [redact.redact(t)[0] for t in m.get(key, [])]
    if m.get("touched"):
        counts: dict[str, int] = {}
        for path, n in zip(m["touched"], m.get("touched_counts") or []):
            path = redact.redact(path)[0]
            counts[path] = counts.get(path, 0) + n  # (two paths may now read the same)
        normalize.set_touched(m, counts)


def _cut(text: str) -> str:
    if len(text) * 4 <= STORE_TEXT_CAP:
        return text
    raw = text.encode("utf-8")
    if len(raw) <= STORE_TEXT_CAP:
        return text
    return raw[:STORE_TEXT_CAP].decode("utf-8", "ignore")
