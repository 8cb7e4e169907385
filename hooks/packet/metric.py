"""The recovery metric: raw tool calls between a capture and the first edit (seed 000/001).

`deja stats` reports how many native tool invocations an agent made after a
compaction capture before its first explicit editing tool, the edit itself not
counted: sample count, median and 75th percentile, with pending and unmeasured
captures apart.

Everything is reconstructed from a bounded usage log, ``<index>.usage`` (JSONL,
beside the index dir like ``<index>.hookseen``). Its events carry identifiers
and counts only, never transcript text:

* ``capture``  {session, harness, path, offset, head_hash} — written at capture;
  ``offset`` is the transcript size then, ``head_hash`` is `head_hash()` of it.
* ``recovery`` {session, harness, offset, state, calls | why} — one final
  result per capture, written by `record_measurement`.

The count is read from the transcript itself (`measure`), so tools that never
run a deja hook count too, and a later editing hook (or stats) can recover a
first-edit boundary already written. Stdlib only; nothing here raises.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from datetime import datetime, timezone
from pathlib import Path

LOG_TRIM_BYTES = 512 << 10
LOG_KEEP_LINES = 2000
HEAD_BYTES = 64 << 10
WINDOW = 4 << 20  # the transcript window the reader may inspect after the capture offset
CHUNK = 256 << 10
MAX_STR = 512  # identifiers only: a longer string is not an identifier

from deja.hooks.common import CLAUDE_EDIT_TOOLS as CLAUDE_EDITS  # noqa: E402  (stdlib-only, like this module)
_APPLY_PATCH = re.compile(r"(?:^|[;&|(\n])\s*(?:\S*/)?apply_?patch(?:\s|<|$)")


# --------------------------------------------------------------------------- the log


def log_path(root: Path) -> Path:
    from deja.stages.store.config import usage_log

    return usage_log(root)


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _scalar(v):
    # Only ids and counts go in: anything structured is dropped, long strings clipped.
    if v is None or isinstance(v, (bool, int, float)):
        return v
    if isinstance(v, str):
        return v[:MAX_STR]
    return None


def log(root: Path, kind: str, **fields) -> bool:
    """Append one event; trim to the newest LOG_KEEP_LINES past LOG_TRIM_BYTES."""
    try:
        path = log_path(root)
        rec = {"t": _now(), "kind": str(kind)[:64]}
        rec.update({k: _scalar(v) for k, v in fields.items() if k not in ("t", "kind")})
        line = (json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        path.parent.mkdir(parents=True, exist_ok=True)
        # One O_APPEND write per event, so concurrent hooks do not interleave lines.
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line)
            size = os.fstat(fd).st_size
        finally:
            os.close(fd)
        if size > LOG_TRIM_BYTES:
            _trim(path)
        return True
    except Exception:
        return False


def _trim(path: Path) -> None:
    """Keep the newest lines, replacing the file atomically (best effort under a lock)."""
    import fcntl

    try:
        lock = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return  # someone else is trimming
        with open(path, "rb") as fh:
            lines = fh.read().splitlines(keepends=True)
        if lines and not lines[-1].endswith(b"\n"):
            lines[-1] += b"\n"
        from deja.hooks.common import replace_file

        replace_file(path, b"".join(lines[-LOG_KEEP_LINES:]))
    finally:
        os.close(lock)


def events(root: Path, kinds=None) -> list[dict]:
    """The log's events in order, optionally only ``kinds`` (a name or a collection)."""
    if isinstance(kinds, str):
        kinds = {kinds}
    out: list[dict] = []
    try:
        with open(log_path(root), "rb") as fh:
            for raw in fh:
                try:
                    ev = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(ev, dict) and (kinds is None or ev.get("kind") in kinds):
                    out.append(ev)
    except OSError:
        pass
    return out


# --------------------------------------------------------------------------- capture marks


def head_hash(path: str, offset: int) -> str:
    """sha256 of the transcript's first min(64 KiB, offset) bytes; "" if unreadable.

    Bounded by ``offset`` so that appending to a short transcript does not look
    like a rewrite.
    """
    try:
        with open(path, "rb") as fh:
            return hashlib.sha256(fh.read(max(0, min(HEAD_BYTES, int(offset))))).hexdigest()
    except (OSError, ValueError, TypeError):
        return ""


# --------------------------------------------------------------------------- measuring


def _typed(line: bytes, marker: bytes, kind: str) -> dict | None:
    """The JSON object of a transcript line of this type; ``marker`` must occur
    in it, a byte check that spares parsing the lines that cannot be one."""
    if marker not in line:
        return None
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) and obj.get("type") == kind else None


def _claude_calls(line: bytes):
    """(tool id, is_edit) for each tool_use block of one Claude Code line, in order."""
    obj = _typed(line, b'"tool_use"', "assistant")
    if obj is None:
        return
    msg = obj.get("message")
    content = msg.get("content") if isinstance(msg, dict) else None
    if not isinstance(content, list):
        return
    for i, block in enumerate(content):
        if isinstance(block, dict) and block.get("type") == "tool_use":
            name = block.get("name")
            yield (block.get("id") or f"{obj.get('uuid')}:{i}", name in CLAUDE_EDITS)


def _is_apply_patch(cmd) -> bool:
    if isinstance(cmd, list):
        if not cmd:
            return False
        if os.path.basename(str(cmd[0])) in ("apply_patch", "applypatch"):
            return True
        cmd = cmd[-1]  # ["bash", "-lc", "<script>"] and the like
    if not isinstance(cmd, str):
        return False
    text = cmd.lstrip()
    return text.startswith("*** Begin Patch") or bool(_APPLY_PATCH.search(text))


def _codex_calls(line: bytes):
    """(call id, is_edit) for a Codex rollout line that is a tool invocation."""
    obj = _typed(line, b'"response_item"', "response_item")
    if obj is None:
        return
    p = obj.get("payload")
    if not isinstance(p, dict):
        return
    kind = p.get("type")
    # Every *_call item is one invocation (function, custom, local shell, web search, ...);
    # their results are *_call_output items and do not count.
    if not isinstance(kind, str) or not kind.endswith("_call"):
        return
    name = p.get("name")
    edit = False
    if name == "apply_patch" and kind in ("function_call", "custom_tool_call"):
        edit = True
    elif kind == "local_shell_call":
        action = p.get("action")
        edit = _is_apply_patch(action.get("command") if isinstance(action, dict) else None)
    elif kind == "function_call":
        try:
            args = json.loads(p.get("arguments") or "{}")
        except (ValueError, TypeError):
            args = None
        if isinstance(args, dict):
            edit = _is_apply_patch(args.get("command") if args.get("command") is not None else args.get("cmd"))
    yield (p.get("call_id") or p.get("id") or obj.get("timestamp"), edit)


_READERS = {"claude": _claude_calls, "codex": _codex_calls}


def measure(path: str, harness: str, offset: int, head_hash: str, window: int = WINDOW) -> dict:
    """Tool calls from ``offset`` to the first editing tool, the edit excluded.

    {"state": "measured", "calls": n} | {"state": "pending"} (no edit yet, window
    not exhausted) | {"state": "unmeasured", "why": "rewritten"|"unreadable"|"window"}.
    """
    reader = _READERS.get(harness)
    try:
        offset = int(offset)
    except (TypeError, ValueError):
        return {"state": "unmeasured", "why": "unreadable"}
    if reader is None or offset < 0 or not head_hash or not path:
        return {"state": "unmeasured", "why": "unreadable"}
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size < offset:
                return {"state": "unmeasured", "why": "rewritten"}
            if hashlib.sha256(fh.read(min(HEAD_BYTES, offset))).hexdigest() != head_hash:
                return {"state": "unmeasured", "why": "rewritten"}
            fh.seek(offset)
            calls, seen, rest, used = 0, set(), b"", 0
            while used < window:
                chunk = fh.read(min(CHUNK, window - used))
                if not chunk:
                    break
                used += len(chunk)
                *lines, rest = (rest + chunk).split(b"\n")
                for line in lines:
                    for key, edit in reader(line):
                        if edit:
                            return {"state": "measured", "calls": calls}
                        if key in seen:  # a line repeated by the host is one invocation
                            continue
                        seen.add(key)
                        calls += 1
            # A final line without its newline is counted only if it is complete JSON.
            if rest and used < window:
                for key, edit in reader(rest):
                    if edit:
                        return {"state": "measured", "calls": calls}
            if size - offset > window:
                return {"state": "unmeasured", "why": "window"}
            return {"state": "pending"}
    except (OSError, MemoryError):
        return {"state": "unmeasured", "why": "unreadable"}


# --------------------------------------------------------------------------- results


def _key(ev: dict) -> tuple:
    try:
        off = int(ev.get("offset") or 0)
    except (TypeError, ValueError):
        off = -1
    return (str(ev.get("harness") or ""), str(ev.get("session") or ""), off)


def record_measurement(root: Path, capture_event: dict, result: dict) -> bool:
    """Log the final result for one capture, once; a pending result is not final."""
    state = (result or {}).get("state")
    if state not in ("measured", "unmeasured"):
        return False
    key = _key(capture_event)
    if any(_key(ev) == key for ev in events(root, "recovery")):
        return False
    fields = {"session": key[1], "harness": key[0], "offset": key[2], "state": state}
    if state == "measured":
        fields["calls"] = int(result.get("calls") or 0)
    else:
        fields["why"] = str(result.get("why") or "")
    return log(root, "recovery", **fields)


def _captures_and_recoveries(root: Path) -> tuple[dict, dict]:
    caps: dict = {}
    recs: dict = {}
    for ev in events(root, ("capture", "recovery")):
        (caps if ev.get("kind") == "capture" else recs)[_key(ev)] = ev  # the latest wins
    return caps, recs


def settle_pending(root: Path, session_id: str | None = None, harness: str | None = None) -> list[dict]:
    """Measure captures that have no result yet and record the final ones.

    Only this session's captures when ``session_id`` is given (the tool hook,
    before an edit runs); every pending capture otherwise (stats). A capture
    whose edit is not in the transcript yet stays pending. Returns the results.
    """
    out: list[dict] = []
    try:
        caps, recs = _captures_and_recoveries(root)
        for key, cap in caps.items():
            if key in recs:
                continue
            if session_id is not None and key[1] != session_id:
                continue
            if harness is not None and key[0] != harness:
                continue
            res = measure(str(cap.get("path") or ""), key[0], key[2], str(cap.get("head_hash") or ""))
            record_measurement(root, cap, res)
            out.append(dict(res, session=key[1], harness=key[0], offset=key[2]))
    except Exception:
        pass
    return out


def _quantile(xs: list[int], q: float):
    """Linear interpolation between closest ranks (the median is the usual one)."""
    if not xs:
        return None
    s = sorted(xs)
    pos = (len(s) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    v = s[lo] + (s[hi] - s[lo]) * (pos - lo)
    return int(v) if float(v).is_integer() else round(v, 2)


def summary(root: Path) -> dict:
    """{"samples", "median", "p75", "pending", "unmeasured"} from the usage log.

    A result whose capture event was already trimmed from the log still counts.
    """
    caps, recs = _captures_and_recoveries(root)
    calls = [int(r.get("calls") or 0) for r in recs.values() if r.get("state") == "measured"]
    return {
        "samples": len(calls),
        "median": _quantile(calls, 0.5),
        "p75": _quantile(calls, 0.75),
        "pending": sum(1 for k in caps if k not in recs),
        "unmeasured": sum(1 for r in recs.values() if r.get("state") == "unmeasured"),
    }
