"""`deja restore <path>`: the spans edits replaced in a file, newest first.

An ``edit`` record is ``path\\nold text`` (stages/work_records.edit_record):
the text an agent's edit or patch took out of the file. Restore lists the
edits whose path is the file asked for, and hands one back. A relative path in
a record is the session's folder joined with it (as blame reads them); a bare
name that is not a file here matches by name alone.
"""

from __future__ import annotations

import os

from deja.stages.store.read import LiveStore

from .blame import Target
from .session_obj import session_object, session_rows
from .show import iso_ms
from .work_common import not_deleted

REDACTED_MARK = "[redacted:"


def _same_file(recorded: str, cwd: str, target: Target) -> bool:
    if not target.path.startswith("/"):  # a bare name: the name is all there is to match
        return os.path.basename(recorded.rstrip("/")) == target.base
    path = os.path.expanduser(recorded)
    if not path.startswith("/") and cwd:
        path = os.path.join(cwd, path)
    return os.path.normpath(path) == target.path


def edits(live: LiveStore, target: Target) -> list[dict]:
    """Every edit that replaced text in the file, newest first: ``{n, path, time,
    session, lines, chars, redacted, text}`` (``n`` counts from 1, newest)."""
    if not live.has("records"):
        return []
    rows = live.con.execute(
        f"""SELECT s.ord, s.cwd, r.text, epoch_ms(r.ts) AS ts, r.seq, r.record_id
            FROM records r JOIN sessions s USING (session_key)
            WHERE r.role = 'edit' AND {not_deleted()}
              AND regexp_extract(split_part(r.text, chr(10), 1), '[^/\\\\]+$') = $base""",
        {"base": target.base},
    ).fetchall()
    found = []
    for ord_, cwd, text, ts, seq, rid in rows:
        path, _, old = (text or "").partition("\n")
        if old and _same_file(path, cwd or "", target):
            found.append((ts or 0, seq or 0, rid, ord_, path, old))
    found.sort(key=lambda f: (-f[0], -f[1], -f[2]))
    sessions = session_rows(live.con, sorted({f[3] for f in found}))
    out = []
    for n, (ts, _, _, ord_, path, old) in enumerate(found, 1):
        row = sessions.get(ord_)
        out.append({
            "n": n,
            "path": path,
            "time": iso_ms(ts or None),
            "session": session_object(row) if row else None,
            "lines": old.count("\n") + 1,
            "chars": len(old),
            "redacted": REDACTED_MARK in old,
            "text": old,
        })
    return out

