"""The incremental plan: what each source file needs this run.

A file is read from its last safe offset only when the bytes already read are
still byte-for-byte what was read: a rewind that truncates and regrows past the
old length looks exactly like growth, and appending onto it would leave the
replaced turns in the store for good. The recorded prefix hash tells the two
apart.

A file rewritten to the same size with its mtime put back (``cp -p``,
``touch -r``) looks unchanged to a stat. `deja index` also hashes a small
window at each end (``edge_hash``) of the files the stat calls unchanged; a
query's freshness check does not, to keep its budget.

A transcript gone from disk is not a session gone from memory: agents delete
their own history (Claude Code after ``cleanupPeriodDays``, 30 by default),
and that history is what a memory is for. A vanished file is marked GONE (the
manifest's ``gone_at``; its records and sessions stay), and only
``deja index --prune-gone`` (REMOVE) or ``deja forget`` takes it out. The same
path appearing again is read anew (REPLACE), which clears the mark.

A transcript that moved (its store's folder renamed or reached by another
path: a new HOME, a root given through a symlink) is the same file at a new
path: the new path's beginning is byte for byte what was read from a path no
longer among the sources, under the same name in a folder of the same name.
It is read at its new path (NEW) and its old path's records leave (REMOVE):
kept as a gone file beside the new one, every turn of it was in the store
twice.
"""

from __future__ import annotations

import os
import re

from deja.stages.sources.locate import COMPRESSED, REMOTE_PREFIX
from deja.stages.sources.sqlite_store import SQLITE_SUFFIXES, stat_key
from deja.stages.sources.task_folders import replaced_by
from deja.stages.store.config import CONTENT_VERSION

SKIP, NEW, APPEND, REPLACE, REMOVE, GONE = "skip", "new", "append", "replace", "remove", "gone"
# (the run's own: a rebuild carries a gone transcript's records over from the old parts)
CARRY = "carry"


class Action:
    """What one source file needs (a plain class: importing dataclasses is a
    noticeable share of the freshness check in front of every query)."""

    __slots__ = ("kind", "path", "harness", "start", "size", "mtime_ns")

    def __init__(self, kind: str, path: str, harness: str, start: int = 0, size: int = 0, mtime_ns: int = 0):
        self.kind, self.path, self.harness, self.start, self.size, self.mtime_ns = kind, path, harness, start, size, mtime_ns

    def __eq__(self, other) -> bool:
        return isinstance(other, Action) and all(getattr(self, k) == getattr(other, k) for k in self.__slots__)

    def __repr__(self) -> str:
        return f"Action({', '.join(f'{k}={getattr(self, k)!r}' for k in self.__slots__)})"


def prefix_hash(path: str, length: int) -> str:
    return PrefixHash(path).to(length)


class PrefixHash:
    """``prefix_hash`` of a file's first bytes, extended as a read moves on: a
    file read in slices (run.read_sliced) hashes each slice's bytes once, not
    the file again from its start at every slice (a 1 GB transcript in 32 MB
    slices: 16 GB hashed)."""

    def __init__(self, path: str):
        import xxhash  # (here: a query's freshness check hashes only when a file grew)

        self.path, self.hash, self.at = path, xxhash.xxh64(), 0

    def to(self, length: int) -> str:
        """The hash of the file's first ``length`` bytes; "" when it is shorter."""
        if length < self.at:  # (behind what was hashed: from the start again)
            self.hash.reset()
            self.at = 0
        from deja.stages.sources.jsonl import open_bytes  # (here: the plan is on every search's path, jsonl is not)

        with open_bytes(self.path) as fh:  # (a compressed transcript: the JSONL it holds)
            fh.seek(self.at)
            while self.at < length:
                chunk = fh.read(min(length - self.at, 4 << 20))
                if not chunk:
                    return ""  # the file is shorter than the prefix: cannot match
                self.hash.update(chunk)
                self.at += len(chunk)
        return self.hash.hexdigest()


# Bytes hashed at each end of a file: small enough for the unchanged run's
# budget over hundreds of files; a rewrite that keeps size and mtime almost
# always changes the first line (ids, times) or the last turns.
EDGE_WINDOW = 16 << 10


def edge_hash(path: str, size: int | None = None) -> str:
    """xxh64 of the first and last EDGE_WINDOW bytes and the size; "" if unreadable."""
    import xxhash

    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return ""
    try:
        size = os.fstat(fd).st_size if size is None else size
        h = xxhash.xxh64(str(size).encode())
        h.update(os.pread(fd, EDGE_WINDOW, 0))
        if size > EDGE_WINDOW:
            h.update(os.pread(fd, EDGE_WINDOW, max(EDGE_WINDOW, size - EDGE_WINDOW)))
        return h.hexdigest()
    except OSError:
        return ""
    finally:
        os.close(fd)


# A database server cannot be stat'ed: its store is read again when this
# window turns over (so a query's freshness check starts at most one
# background read of it per window, and `deja index` re-reads it no sooner).
REMOTE_WINDOW_NS = 600 * 10**9


def is_database(path: str) -> bool:
    """A SQLite file or a database server: its sessions are rows that change one
    by one, so a changed store replaces only the sessions that changed
    (pipeline/ingest.py ``fingerprints``)."""
    return path.startswith(REMOTE_PREFIX) or path.endswith(SQLITE_SUFFIXES)


def source_stat(path: str) -> tuple[int, int]:
    """(size, mtime_ns) of a source; a SQLite store's counts its WAL (sqlite_store.stat_key)."""
    if path.startswith(REMOTE_PREFIX):
        import time

        return 0, time.time_ns() // REMOTE_WINDOW_NS * REMOTE_WINDOW_NS
    if path.endswith(SQLITE_SUFFIXES):
        return stat_key(path)
    st = os.stat(path)
    return st.st_size, st.st_mtime_ns


def plan(sources: list[tuple[str, str]], manifest: dict[str, dict], rebuild: bool = False,
         verify: bool = False, prune_gone: bool = False) -> list[Action]:
    """Actions for every current source and every manifest row whose file is gone.

    ``sources`` is [(path, harness)]; ``manifest`` maps path → its catalog row.
    A file that vanished is GONE once (marked, kept) and then needs nothing;
    ``prune_gone`` turns every vanished file, marked or not, into REMOVE.
    A harness with no source at all is a store this environment cannot see (a
    relocated CLAUDE_CONFIG_DIR, a hook run with another HOME), not a store
    whose every transcript was deleted: its unmarked files are left alone.
    ``verify``: files whose stat is unchanged are checked by ``edge_hash`` too.
    """
    actions: list[Action] = []
    seen = set()
    moved = Moves(sources, manifest)

    def vanished(path: str, harness: str, row: dict) -> None:
        if prune_gone or not row.get("records"):  # (nothing of it kept to mark)
            actions.append(Action(REMOVE, path, harness))
        elif not row.get("gone_at"):
            actions.append(Action(GONE, path, harness))

    for path, harness in sources:
        seen.add(path)
        try:
            size, mtime = source_stat(path)
        except OSError:
            if path in manifest:
                vanished(path, harness, manifest[path])
            continue
        row = manifest.get(path)
        if row is None:
            origin = moved.origin(path, harness, size)
            if origin is not None:
                actions.append(Action(REMOVE, origin, harness))
            actions.append(Action(NEW, path, harness, 0, size, mtime))
            continue
        if (rebuild or row.get("gone_at") or row.get("content_version") != CONTENT_VERSION
                or row.get("harness") != harness):
            actions.append(Action(REPLACE, path, harness, 0, size, mtime))  # (gone_at: back on disk)
            continue
        if row.get("size") == size and row.get("mtime_ns") == mtime and not row.get("error"):
            if not (verify and row.get("edge_hash") and edge_hash(path, size) != row["edge_hash"]):
                actions.append(Action(SKIP, path, harness, 0, size, mtime))
                continue
            actions.append(Action(REPLACE, path, harness, 0, size, mtime))  # same stat, other bytes
            continue
        safe = row.get("safe_offset") or 0
        if path.endswith(COMPRESSED):  # (never appended to: written whole, once, by its agent)
            actions.append(Action(REPLACE, path, harness, 0, size, mtime))
        elif size >= safe and safe > 0 and row.get("prefix_hash") and prefix_hash(path, safe) == row["prefix_hash"]:
            actions.append(Action(APPEND, path, harness, safe, size, mtime))
        else:
            actions.append(Action(REPLACE, path, harness, 0, size, mtime))
    visible = {h for _, h in sources}
    for path, row in manifest.items():
        if path in moved.claimed or path in seen:
            continue
        if replaced_by(path, row.get("harness", "")) in seen:  # (marked gone by an older deja, too)
            actions.append(Action(REMOVE, path, row.get("harness", "")))
        elif verify and row.get("gone_at") and moved.still_here(path, row):
            actions.append(Action(REMOVE, path, row.get("harness", "")))  # a copy an older deja kept
        elif row.get("harness") in visible or (prune_gone and row.get("gone_at")):
            vanished(path, row.get("harness", ""), row)
    return actions


class Moves:
    """The manifest's files no longer among the sources, by harness, folder
    name and file name (built when a new path first asks): where a new path
    may have moved from."""

    def __init__(self, sources: list[tuple[str, str]], manifest: dict[str, dict]):
        self.sources, self.manifest = sources, manifest
        self.by_name: dict[tuple[str, str], list[str]] | None = None  # gone from the sources
        self.here: dict[tuple[str, str], list[str]] | None = None  # sources already read
        self.claimed: set[str] = set()

    def origin(self, path: str, harness: str, size: int) -> str | None:
        """The old path ``path`` is the same file as, or None."""
        if is_database(path) or not self.manifest:
            return None
        if self.by_name is None:
            current = {p for p, _ in self.sources}
            self.by_name = {}
            for old, row in self.manifest.items():
                if old not in current and not is_database(old):
                    self.by_name.setdefault(_name(row.get("harness", ""), old), []).append(old)
        for old in self.by_name.get(_name(harness, path), ()):
            if old not in self.claimed and same_start(path, size, self.manifest[old]):
                self.claimed.add(old)
                return old
        return None

    def still_here(self, gone: str, row: dict) -> bool:
        """A gone file that is a source at another path, already read there
        (moved before deja knew moves: `deja index` takes the copy out)."""
        if is_database(gone):
            return False
        if self.here is None:
            self.here = {}
            for p, h in self.sources:
                if p in self.manifest and not is_database(p):
                    self.here.setdefault(_name(h, p), []).append(p)
        for p in self.here.get(_name(row.get("harness", ""), gone), ()):
            try:
                if same_start(p, os.stat(p).st_size, row):
                    return True
            except OSError:
                pass
        return False


_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def _name(harness: str, path: str) -> tuple[str, str, str]:
    """What a moved file keeps: its harness, its folder's name and its own
    (some agents name every session's file alike, events.jsonl in a folder
    named for the session; a moved store keeps its inner folders). A name
    that holds a UUID is the file's own wherever it goes: Codex moves an
    archived rollout from sessions/YYYY/MM/DD/ to archived_sessions/."""
    folder, name = os.path.split(path)
    name = name[: -len(COMPRESSED)] if name.endswith(COMPRESSED) else name  # (compressed where it lay: a move)
    return harness, "" if _UUID.search(name) else os.path.basename(folder), name


def same_start(path: str, size: int, row: dict) -> bool:
    """The file at ``path`` begins with the bytes a manifest row read."""
    safe = row.get("safe_offset") or 0
    if path.endswith(COMPRESSED):
        size = safe  # (its size is the compressed bytes': the hash says whether it holds that much)
    if not (row.get("records") and 0 < safe <= size and row.get("prefix_hash")):
        return False
    try:
        return prefix_hash(path, safe) == row["prefix_hash"]
    except ValueError:  # a damaged compressed file: not the same file (its own read says why)
        return False
