"""`deja last` and `deja show`: recent sessions, and one session's messages.

Both read only the live store (``store.read.open_live``): ``last`` the sessions
dataset, ``show`` one session's records. The session object is the contract's
(cli-contract §3.1), built by ``session_obj`` exactly as search builds it.

Ids (cli-contract §1): a command takes an id *prefix*; pasted ids are cleaned of
surrounding quotes and backticks; ``<harness>:<id>`` is accepted too. An exact
id wins over longer ids it prefixes; otherwise an ambiguous prefix picks the
most recently updated session and says so. ``show --json`` needs the exact id
and ``--harness`` (``resolve(..., exact=True)``).

Messages are the session's records in order (``ts``, then ``seq``). The window
of ``show`` (offset/limit/total) counts the *speech* records only (user,
assistant, tool-output, summary, note); the work records (command, files, edit)
never appear in JSON, and in text each rides with the message before it.

Nothing here imports pyarrow or polars: these are interactive commands.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from deja.stages.display import GONE_MARK, own_day
from deja.stages.roles import WORK_ROLES

from . import project_match
from .session_obj import COLUMNS, session_object
from deja.stages.store.read import LiveStore

SPEECH_ROLES = ("user", "assistant", "tool-output", "summary", "note")
# `last --role r`: sessions holding at least one record of that role (from the session's counts)
ROLE_COUNT = {
    "user": "n_user",
    "assistant": "n_assistant",
    "tool-output": "n_tool_output",
    "tool": "n_tool_output",
    "summary": "n_summary",
    "command": "n_command",
    "files": "n_files",
    "edit": "n_edit",
}
JSON_LIMIT_DEFAULT = 50
JSON_LIMIT_MAX = 200
TEXT_MENTION_FLAGS_ABOVE = 1000
_QUOTES = "'\"`‘’‚‛“”„‟«»‹›"
_ORDER = "updated DESC NULLS LAST, started DESC NULLS LAST, session_key"


class ShowError(Exception):
    """A user-facing failure (unknown id, id not exact for --json, bad window)."""


@dataclass
class Resolved:
    row: dict  # the sessions row (COLUMNS plus session_key, cwd, branch)
    session: dict  # the contract's session object
    notice: str = ""  # what was picked when the prefix was ambiguous

    @property
    def key(self) -> str:
        return self.row["session_key"]


@dataclass
class Window:
    offset: int
    limit: int | None  # None: everything from offset on
    total: int
    messages: list[dict] = field(default_factory=list)  # {role, text, time}
    # text mode: (index into messages, or -1 before the first, record) for the work records
    work: list[tuple[int, dict]] = field(default_factory=list)

    def as_json(self) -> dict:
        return {"offset": self.offset, "limit": self.limit, "total": self.total, "returned": len(self.messages)}


# --------------------------------------------------------------------------- ids


def clean_id(raw: str) -> str:
    """A pasted id without surrounding whitespace, quotes or backticks."""
    s = (raw or "").strip()
    while s and (s[0] in _QUOTES or s[-1] in _QUOTES):
        s = s.strip(_QUOTES).strip()
    return s


def split_harness(ident: str, known: list[str]) -> tuple[str | None, str]:
    """``claude:7f1c…`` → ("claude", "7f1c…"); anything else → (None, ident)."""
    head, sep, rest = ident.partition(":")
    if sep and head in known and rest:
        return head, rest
    return None, ident


def _rows(store: LiveStore, where: str, params: list) -> list[dict]:
    if not store.has("sessions"):  # an index with no session yet has a column-less placeholder view
        return []
    cur = store.con.execute(
        f"SELECT {COLUMNS}, cwd, branch FROM sessions WHERE {where} ORDER BY {_ORDER}", params
    )
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]


def candidates(store: LiveStore, prefix: str, harness: str | None = None) -> list[dict]:
    """Sessions whose id starts with ``prefix`` (case-insensitive), most recent first;
    an exactly equal id comes before the longer ids it prefixes. A session
    synced in from another machine is also found by the id it has there."""
    rows = _rows(
        store,
        "(starts_with(lower(session_id), lower(?)) OR starts_with(lower(coalesce(orig_id, '')), lower(?))) "
        "AND (?::VARCHAR IS NULL OR harness = ?)",
        [prefix, prefix, harness, harness],
    )
    exact = [r for r in rows if prefix in (r["session_id"], r.get("orig_id"))]
    exact_ci = [r for r in rows if r not in exact and prefix.lower() in _ids(r)]
    rest = [r for r in rows if r not in exact and r not in exact_ci]
    return exact + exact_ci + rest


def _ids(row: dict) -> tuple[str, str]:
    """A session's ids in lower case: its own, and the one it has where it ran (synced in)."""
    return row["session_id"].lower(), (row.get("orig_id") or "").lower()


def resolve(store: LiveStore, ident: str, harness: str | None = None, exact: bool = False) -> Resolved:
    """The session an id (prefix) names. Raises ``ShowError`` when none does."""
    if not ident:
        raise ShowError("a session id (or the start of one) is needed")
    if exact:
        rows = [r for r in candidates(store, ident, harness) if ident in (r["session_id"], r.get("orig_id"))]
        if not rows:
            near = candidates(store, ident, harness)
            if near:
                r = near[0]
                more = f" (and {len(near) - 1} more)" if len(near) > 1 else ""
                raise ShowError(
                    f"--json needs the exact id: {ident!r} is the start of {r['harness']} {r['session_id']}{more}"
                )
            raise ShowError(f"no session matches id {ident!r}" + (f" in {harness}" if harness else ""))
        return Resolved(rows[0], session_object(rows[0]))
    rows = candidates(store, ident, harness)
    if not rows:
        raise ShowError(f"no session matches id {ident!r}" + (f" in {harness}" if harness else ""))
    best = rows[0]
    notice = ""
    exact_hits = [r for r in rows if ident.lower() in _ids(r)]
    if len(exact_hits) > 1 or (not exact_hits and len(rows) > 1):
        matched = exact_hits or rows
        when = own_day(best.get("updated") or best.get("started"))
        # the others by the ids that tell them apart: a synced-in copy of a session shares
        # the id it had where it ran, and only its own id here names it
        others = ", ".join(f"{r['harness']} {r['session_id']}" + (f" (from {r['from_machine']})"
                                                                  if r.get("from_machine") else "")
                           for r in matched[1:4])
        notice = (
            f"id {ident!r} matches {len(matched)} sessions; showing the most recent: {best['harness']} "
            f"{best['session_id']}" + (f" ({when})" if when else "") + f"; also {others}"
            + (" …" if len(matched) > 4 else "") + " — give more of the id" + ("" if harness else " or --harness")
        )
    return Resolved(best, session_object(best), notice)


# --------------------------------------------------------------------------- last


def last(
    store: LiveStore,
    n: int = 10,
    harness: str | None = None,
    project: str | None = None,
    since_ms: int | None = None,
    role: str | None = None,
    origin: str | None = None,
) -> list[dict]:
    """The ``n`` most recently updated sessions as contract session objects (no messages)."""
    if not store.has("sessions"):
        return []
    in_project, project_params = project_match.positional(project)
    where = ["(?::VARCHAR IS NULL OR harness = ?)", in_project, "(?::BIGINT IS NULL OR epoch_ms(updated) >= ?)"]
    params: list = [harness, harness, *project_params, since_ms, since_ms]
    if role:
        where.append(f"coalesce({ROLE_COUNT[role]}, 0) > 0")
    if origin == "local":
        where.append("coalesce(origin, 'local') = 'local'")
    elif origin:
        where.append("from_machine = ?")
        params.append(origin)
    cur = store.con.execute(
        f"SELECT {COLUMNS} FROM sessions WHERE {' AND '.join(where)} ORDER BY {_ORDER} LIMIT ?", params + [n]
    )
    names = [d[0] for d in cur.description]
    return [session_object(dict(zip(names, r))) for r in cur.fetchall()]


def session_count(store: LiveStore) -> int:
    if not store.has("sessions"):
        return 0
    return store.con.execute("SELECT count(*) FROM sessions").fetchone()[0]


def sessions_where(store: LiveStore, keys: list[str] | None = None, project: str | None = None,
                   before=None) -> list[dict]:
    """(key, harness, session_id, project, title, started, updated) of the sessions
    among ``keys``, in the projects ``project`` names (deja's own notes left
    out: they are primary data), last active before ``before``; newest first."""
    where, params = ["true"], []
    if keys is not None:
        where.append("session_key IN (SELECT unnest(?))")
        params.append(keys)
    if project:
        in_project, project_params = project_match.positional(project)
        where.append(f"{in_project} AND harness <> 'deja'")
        params.extend(project_params)
    if before is not None:
        where.append("coalesce(updated, started) < ?")
        params.append(before)
    rows = store.con.execute(
        f"SELECT session_key AS key, harness, session_id, project, title, started, updated FROM sessions "
        f"WHERE {' AND '.join(where)} ORDER BY updated DESC NULLS LAST, session_key", params).fetchall()
    names = ["key", "harness", "session_id", "project", "title", "started", "updated"]
    return [dict(zip(names, r)) for r in rows]


def accepted_alongside(store: LiveStore, project: str, key: str) -> list[str]:
    """``harness:id`` of the other sessions in ``project`` already promoted as accepted."""
    return [r[0] for r in store.con.execute(
        "SELECT s.harness || ':' || s.session_id FROM sessions s JOIN lifecycle l ON l.session_key = s.session_key "
        "WHERE l.state = 'accepted' AND s.project = ? AND s.session_key <> ? AND s.harness <> 'deja'",
        [project, key],
    ).fetchall()]


# --------------------------------------------------------------------------- show


def window(store: LiveStore, res: Resolved, offset: int = 0, limit: int | None = None, work: bool = False) -> Window:
    """Messages ``offset`` … ``offset+limit`` of the session (speech records, in order);
    with ``work`` also the work records that follow each of those messages."""
    if offset < 0:
        raise ShowError("--offset takes a number ≥ 0")
    if limit is not None and limit < 1:
        raise ShowError("--limit takes a number ≥ 1")
    win = Window(offset, limit, 0)
    if not store.has("records"):
        return win
    speech = list(SPEECH_ROLES)
    roles = speech + (list(WORK_ROLES) if work else [])
    rows = store.con.execute(
        f"""
        WITH r AS (
            SELECT role, text, epoch_ms(ts) AS ms, exit_code, tool,
                   sum(CASE WHEN list_contains($speech, role) THEN 1 ELSE 0 END)
                       OVER (ORDER BY ts NULLS LAST, seq, record_id ROWS UNBOUNDED PRECEDING) AS n,
                   ts, seq, record_id
            FROM {store.records_of([res.key])}
            WHERE session_key = $key
              AND list_contains($roles, role)
              AND record_id NOT IN (SELECT record_id FROM deletes)
        )
        SELECT role, text, ms, exit_code, tool, n, max(n) OVER () AS total
        FROM r
        ORDER BY ts NULLS LAST, seq, record_id
        """,
        {"speech": speech, "key": res.key, "roles": roles},
    ).fetchall()
    if not rows:
        return win
    win.total = int(rows[0][6] or 0)
    end = win.total if limit is None else offset + limit
    for role, text, ms, exit_code, tool, n, _ in rows:
        if role in SPEECH_ROLES:
            i = n - 1
            if offset <= i < end:
                win.messages.append({"role": role, "text": text or "", "time": iso_ms(ms)})
        else:
            anchor = n - 1  # the message this work record follows; -1 before the first
            if offset <= max(anchor, 0) < end and (anchor >= 0 or offset == 0):
                win.work.append((anchor - offset if anchor >= 0 else -1,
                                 {"role": role, "text": text or "", "time": iso_ms(ms), "exit_code": exit_code,
                                  "tool": tool}))
    return win


def spawn_edges(store: LiveStore, res: Resolved) -> tuple[dict | None, list[dict]]:
    """(the parent session row if recorded, the sessions this one spawned)."""
    row = res.row
    parent = None
    if row.get("parent"):
        found = _rows(store, "harness = ? AND session_id = ?", [row["harness"], row["parent"]])
        parent = found[0] if found else {"harness": row["harness"], "session_id": row["parent"]}
    children = _rows(store, "harness = ? AND parent = ?", [row["harness"], row["session_id"]])
    children.sort(key=lambda r: (r.get("started") is None, r.get("started") or 0, r["session_id"]))
    return parent, children


def iso_ms(ms) -> str:
    if ms is None:
        return ""
    from datetime import datetime, timezone

    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def show_json(res: Resolved, win: Window) -> dict:
    session = dict(res.session)
    session["messages"] = win.messages
    return {"schema_version": 2, "session": session, "window": win.as_json()}


# --------------------------------------------------------------------------- text


def local_time(iso: str, with_seconds: bool = False) -> str:
    """An ISO UTC time in the reader's zone, ``YYYY-MM-DD HH:MM[:SS]``."""
    if not iso:
        return ""
    from datetime import datetime

    try:
        dt = datetime.fromisoformat(iso.replace("Z", "+00:00")).astimezone()
    except ValueError:
        return iso
    return dt.strftime("%Y-%m-%d %H:%M:%S" if with_seconds else "%Y-%m-%d %H:%M")




def last_line(s: dict, width: int = 120) -> str:
    """harness, id prefix, date, project, title (and GONE_MARK)."""
    from deja.stages.display import sanitize_display

    when = local_time(s.get("updated") or s.get("started") or "")
    head = f"{s['harness']:<7} {s['id'][:12]:<12}  {when:<16}  {sanitize_display(s.get('project') or '-')}"
    title = " ".join(sanitize_display(s.get("title") or "(untitled)").split())
    if s.get("kind"):
        title = f"[{s['kind']}] {title}"
    mark = f"  {GONE_MARK}" if s.get("source_gone") else ""
    room = max(10, width - len(head) - 2 - len(mark))
    if len(title) > room:
        title = title[: room - 1] + "…"
    return f"{head}  {title}{mark}"


def work_line(rec: dict, width: int = 160) -> str:
    """A work record as one compact line: ``$ cmd  → exit N``, ``files: a, b``, ``edit: path (N lines)``."""
    from deja.stages.display import sanitize_display

    text = sanitize_display(rec["text"])
    if rec["role"] == "command":
        line = text.splitlines()[0] if text else "$"
        code = rec.get("exit_code")
        if code and code > 0 and "→ exit" not in line:
            line += f"  → exit {code}"
    elif rec["role"] == "files":
        paths = [p for p in text.splitlines() if p.strip()]
        line = "files: " + ", ".join(paths)
    else:
        lines = text.splitlines()
        path = lines[0] if lines else ""
        n = len(lines) - 1
        line = f"edit: {path} ({n} line{'s' if n != 1 else ''} replaced)"
    line = " ".join(line.split()) if rec["role"] != "command" else line
    return line if len(line) <= width else line[: width - 1] + "…"


def render_text(res: Resolved, win: Window, tty: bool = False) -> str:
    """The session header, then every message of the window (work records as compact lines)."""
    from deja.stages.display import sanitize_display

    s = res.session
    bold, plain = ("\033[1m", "\033[0m") if tty else ("", "")
    out = [bold + " ".join(sanitize_display(s.get("title") or "(untitled)").split()) + plain]
    span = local_time(s.get("started") or "")
    if s.get("updated") and s.get("updated") != s.get("started"):
        span += " → " + local_time(s["updated"])
    meta = [f"{s['harness']} {s['id']}", sanitize_display(s.get("project") or "-")]
    if span:
        meta.append(span)
    meta.append(f"{win.total} message{'s' if win.total != 1 else ''}")
    out.append(" · ".join(meta))
    if s.get("path"):
        out.append(sanitize_display(s["path"]) + (f"  {GONE_MARK}" if s.get("source_gone") else ""))
    work_by: dict[int, list[dict]] = {}
    for i, rec in win.work:
        work_by.setdefault(i, []).append(rec)

    def work(i: int) -> None:
        for rec in work_by.get(i, []):
            out.append("  " + work_line(rec))

    if work_by.get(-1):
        out.append("")
        work(-1)
    for i, m in enumerate(win.messages):
        out.append("")
        out.append(f"{bold}[{m['role']}]{plain} {local_time(m['time'], with_seconds=True)}".rstrip())
        out.append(sanitize_display(m["text"]).rstrip("\n"))
        work(i)
    return "\n".join(out) + "\n"


__all__ = [
    "GONE_MARK", "JSON_LIMIT_DEFAULT", "JSON_LIMIT_MAX", "ROLE_COUNT", "Resolved", "ShowError", "SPEECH_ROLES", "Session",
    "TEXT_MENTION_FLAGS_ABOVE", "WORK_ROLES", "Window", "candidates", "clean_id", "iso_ms", "last", "last_line",
    "local_time", "render_text", "resolve", "session_count", "show_json", "spawn_edges", "split_harness", "window",
    "work_line",
]


@dataclass
class Session:
    """One session as `deja show` prints it (deja.pipeline.api.session): its
    Resolved and Window, and the sessions it was spawned from and spawned."""

    resolved: object
    window: object
    parent: dict | None = None
    children: list[dict] = field(default_factory=list)

    def as_json(self) -> dict:
        return show_json(self.resolved, self.window)
