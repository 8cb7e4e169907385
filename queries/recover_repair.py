"""Check and repair a crash-damaged transcript: ``deja recover --check`` and ``--repair``.

Each harness's recovery module (``stages/recover/``) finds the damage and
writes the mended lines; this module picks the output file, which is always a
new one: the original transcript is never opened for writing.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from types import ModuleType

from deja.queries.recover import resume_command
from deja.stages.recover.base import Candidate, Problem, RecoverError, dumps
from deja.stages.shown import shown, shown_data

_UUID_TAIL = re.compile(r"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\.jsonl$")


def check(cand: Candidate, mod: ModuleType) -> list[Problem]:
    fn = getattr(mod, "recover_check", None)
    if not callable(fn):
        raise RecoverError(f"checking transcripts is not available for {cand.harness} yet")
    return fn(cand.path)


def check_json(cand: Candidate, problems: list[Problem]) -> dict:
    return {
        "schema_version": 2,
        "harness": cand.harness,
        "id": cand.session_id,
        "path": cand.path,
        "damaged": bool(problems),
        "problems": [{"kind": p.kind, "line": p.line, "detail": p.detail} for p in problems],
    }


def render_check(cand: Candidate, problems: list[Problem]) -> str:
    if not problems:
        return f"{cand.path}: no crash damage found"
    lines = [f"{cand.path}: {len(problems)} problem(s)"]
    lines += [f"  line {p.line}: {p.kind}: {p.detail}" for p in problems]
    lines.append(f"  deja recover --session {cand.session_id} --repair --out FILE writes a repaired copy")
    return "\n".join(lines)


def repair(cand: Candidate, mod: ModuleType, out: str) -> tuple[list[str], str | None]:
    """Write a repaired copy of the transcript to ``out``: (what was fixed, the
    copy's new session id or None). The original is never opened for writing."""
    fn = getattr(mod, "recover_repair", None)
    if not callable(fn):
        raise RecoverError(f"repairing transcripts is not available for {cand.harness} yet")
    dest = Path(out).expanduser()
    if dest.exists():
        raise RecoverError(f"{dest} exists; repair writes a new file and never overwrites one")
    if not dest.parent.is_dir():
        raise RecoverError(f"{dest.parent} is not a directory")
    if os.path.realpath(dest) == os.path.realpath(cand.path):
        raise RecoverError("--out names the original transcript; repair never touches it")
    # A copy named after another session id (the store's own naming) is made
    # that session, so the native resume finds it and appends there, not to the original.
    m = _UUID_TAIL.search(dest.name)
    new_id = m.group(1) if m and m.group(1) != cand.session_id else None
    try:  # exclusive create: never replaces a file, even one created meanwhile
        fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise RecoverError(f"{dest} exists; repair writes a new file and never overwrites one")
    try:
        with os.fdopen(fd, "wb") as fh:
            fixes = fn(cand.path, _Shown(fh), cand.session_id, new_id)
    except BaseException:
        dest.unlink(missing_ok=True)  # no half-written copy left behind
        raise
    return fixes, new_id


class _Shown:
    """The copy's writer: each line's text under today's redaction rules, like
    everything else deja writes (deja.stages.shown). The harness modules write
    whole lines; a JSON line nothing changed in is written byte for byte."""

    def __init__(self, fh):
        self.fh = fh

    def write(self, data: bytes) -> int:
        for line in data.splitlines(keepends=True):
            self.fh.write(_shown_line(line))
        return len(data)


def _shown_line(line: bytes) -> bytes:
    import json

    body = line.rstrip(b"\r\n")
    end = line[len(body):]
    try:
        obj = json.loads(body)
    except ValueError:
        text = body.decode("utf-8", "surrogateescape")
        new = shown(text)
        return line if new == text else new.encode("utf-8", "surrogateescape") + end
    new = shown_data(obj)
    return line if new == obj else dumps(new) + end


def repair_json(cand: Candidate, out: str, fixes: list[str], new_id: str | None) -> dict:
    return {
        "schema_version": 2,
        "harness": cand.harness,
        "id": cand.session_id,
        "out": out,
        "fixes": fixes,
        "new_id": new_id,
        "resume": resume_command(cand.harness, new_id) if new_id else "",
    }


def render_repair(cand: Candidate, out: str, fixes: list[str], new_id: str | None) -> str:
    lines = [f"wrote {out}" + (f" ({len(fixes)} fix(es))" if fixes else " (nothing needed fixing)")]
    lines += [f"  {f}" for f in fixes]
    cmd = resume_command(cand.harness, new_id) if new_id else ""
    if cmd:
        lines.append(f"  it is session {new_id}; if it sits in the store, resume it with: {cmd}")
    else:
        lines.append(
            "  to resume it natively, write it into the store under a new session id "
            "(e.g. --out <store folder>/<new uuid>.jsonl); the original is untouched"
        )
    return "\n".join(lines)
