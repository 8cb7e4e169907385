"""Packets in the catalog: the latest per session/workspace pair, delivered once.

Seed 000/001: the ``packets`` table of ``catalog.duckdb`` (its SQL is in
stages/store/packets.py) keeps the newest packet of up to 32
session/workspace pairs (24 KiB each, oldest evicted); index runs, full or
incremental, never touch the table. A packet stays after delivery, marked
delivered, because the next capture of that session carries its
keep-until-closed list and standing instructions forward.

Hooks must not open DuckDB on every prompt just to learn that nothing is
waiting, so a capture also drops an empty marker file beside the index
(``<index>.pending/<key>``); a hook looks for its marker with one stat and
opens the catalog only when there is one.

DuckDB lets one process hold a database read-write. A hook takes the catalog
for a few milliseconds with a short retry and never waits behind a running
``deja index`` commit: busy means a best-effort miss (the marker stays, so the
next hook of the session tries again).
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

MAX_PAIRS = 32
MAX_STORED = 24 * 1024
RETRIES = 4  # × 50–200 ms: a commit holds the catalog for well under a second


class Busy(Exception):
    """The catalog is held by another process: a best-effort miss."""


def pair_key(sid: str, cwd: str) -> str:
    return hashlib.sha256(f"{sid}\0{cwd}".encode("utf-8", "replace")).hexdigest()[:24]


def pending_dir(root: Path) -> Path:
    return root.with_name(root.name + ".pending")


def is_pending(root: Path, sid: str, cwd: str) -> bool:
    return bool(sid) and (pending_dir(root) / pair_key(sid, cwd)).exists()


def _mark(root: Path, sid: str, cwd: str, on: bool) -> None:
    flag = pending_dir(root) / pair_key(sid, cwd)
    try:
        if on:
            flag.parent.mkdir(parents=True, exist_ok=True)
            flag.touch()
        else:
            flag.unlink()
    except OSError:
        pass


def _watch_flag(root: Path, sid: str) -> Path:
    return pending_dir(root) / ("m-" + hashlib.sha256(sid.encode("utf-8", "replace")).hexdigest()[:24])


def watch(root: Path, sid: str) -> None:
    """This session has a capture whose recovery metric waits for its first edit."""
    flag = _watch_flag(root, sid)
    try:
        flag.parent.mkdir(parents=True, exist_ok=True)
        flag.touch()
    except OSError:
        pass


def watching(root: Path, sid: str) -> bool:
    return bool(sid) and _watch_flag(root, sid).exists()


def unwatch(root: Path, sid: str) -> None:
    try:
        _watch_flag(root, sid).unlink()
    except OSError:
        pass


def connect(root: Path, create: bool = False):
    """The catalog read-write, or Busy. ``create`` makes an empty store first
    (a capture before the first index run): an empty generation table is not a
    ready index, so search and hooks still treat it as not built."""
    from deja.stages.store.catalog import Busy as StoreBusy, Store

    store = Store(root)
    if not store.exists():
        if not create:
            raise Busy("no index")
        try:
            store.init()
        except StoreBusy as exc:
            raise Busy(str(exc))
    try:
        return store.connect(retries=RETRIES)
    except StoreBusy as exc:
        raise Busy(str(exc))


def previous(con, sid: str, cwd: str) -> dict | None:
    from deja.stages.store import packets

    return _decode(packets.body(con, sid, cwd))


def _decode(body: str | None) -> dict | None:
    try:
        return json.loads(body)
    except (TypeError, ValueError):
        return None


def save(con, root: Path, packet: dict, sid: str, cwd: str, harness: str) -> bool:
    """Replace this pair's packet and evict the oldest pairs past 32. False if too big."""
    body = json.dumps(packet, ensure_ascii=False, separators=(",", ":"))
    if len(body.encode("utf-8")) > MAX_STORED:
        return False
    from deja.stages.store import packets

    evicted = packets.replace(con, sid, cwd, harness, body, MAX_PAIRS)
    for s, w in evicted:
        _mark(root, s, w, False)
    _mark(root, sid, cwd, True)
    return True


def peek(root: Path, sid: str, cwd: str) -> dict | None:
    """The pair's undelivered packet, or None. Busy when the catalog is held
    (the marker stays for the next hook)."""
    if not is_pending(root, sid, cwd):
        return None
    from deja.stages.store import packets

    con = connect(root)
    try:
        body = packets.body(con, sid, cwd, undelivered=True)
    finally:
        con.close()
    if body is None:
        _mark(root, sid, cwd, False)
        return None
    return _decode(body)


def mark_delivered(root: Path, sid: str, cwd: str) -> bool:
    """Claim the delivery: True for exactly one caller, however many hooks race."""
    from deja.stages.store import packets

    con = connect(root)
    try:
        claimed = packets.claim(con, sid, cwd)
    finally:
        con.close()
    _mark(root, sid, cwd, False)
    return claimed


def remove(con, root: Path, pairs: list[tuple[str, str]]) -> None:
    """Delete these (session_id, workspace) packets and their markers (deja forget)."""
    from deja.stages.store import packets

    for sid, cwd in pairs:
        packets.delete(con, sid, cwd)
        _mark(root, sid, cwd, False)


def now_ms() -> int:
    return int(time.time() * 1000)
