"""Answers from the work itself: files, how, fix, friction (cli-contract §5.4–5.9);
blame lives in ``blame.py``.

Each reads the live store (``store.read.open_live``): the ``command``,
``files`` and ``tool-output`` records agents left behind, and the sessions
they belong to. Light imports only: re, DuckDB through the live store.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone

from deja.stages import failures as fl
from deja.stages.store.read import LiveStore

# blame's names, imported from here by the CLI (pipeline/cli_work.py)
from .blame import BLAME_LIMIT, Target, blame, blame_line, deleted_text, resolve_target, shared_span
from deja.stages.display import utc_day

from . import project_match
from .work_common import not_deleted

FILES_NEAR_MS = 20 * 60 * 1000
FILES_SESSIONS = 250
HOW_MAX = 200
FIX_LOOKAHEAD, FIX_RECUR, FIX_CMD_MAX = 10, 6, 200
FRICTION_MIN_SESSIONS = 3
FRICTION_WIDTH = 79


def _short_day(ms: int | None) -> str:
    if not ms:
        return ""
    dt = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    return f"{dt:%b} {dt.day}"


def _cut_bytes(text: str, width: int) -> str:
    b = text.encode("utf-8")
    if len(b) <= width:
        return text
    return b[: width - 3].decode("utf-8", "ignore") + "…"


# ================================================================== files
_NOT_REPO = re.compile(
    r"(?:^|/)(?:\.git|node_modules|\.venv|venv|site-packages|__pycache__|\.cache|\.claude|\.codex|\.npm|\.cargo)(?:/|$)"
    r"|^/(?:tmp|var|proc|dev|sys|private|etc)/"
)


def _repo_path(p: str, root: str = "") -> bool:
    """A file of a repository: inside the session's working folder (minus caches and
    vendored trees), or outside it but not in a temp, system or tool-state folder."""
    if not p or len(p) > 400 or "\n" in p or p.endswith("/"):
        return False
    root = root.rstrip("/").lower()
    if root and p.startswith(root + "/"):
        return not _NOT_REPO.search(p[len(root):])
    if _NOT_REPO.search(p):
        return False
    return "/" in p or "." in p


def files(live: LiveStore, topic: str, project: str | None = None, limit: int = 10) -> tuple[list[dict], str]:
    """Files the work on a topic touched: (rows, tier). Rows carry path, sessions, near, touched, score."""
    from .search import FILLER, Query, search
    from deja.stages.tokenize import query_terms

    env = search(live, Query(topic, limit=100, all=True, project=project))
    tier = env.get("tier", "exact")
    if tier == "relevance" or not env["hits"]:
        return [], tier
    hits = sorted(env["hits"], key=lambda h: h["session"].get("updated", ""), reverse=True)[:FILES_SESSIONS]
    keys = [f"{h['session']['harness']}:{h['session']['id']}" for h in hits]
    terms = [t for t in query_terms(topic) if t not in FILLER] or query_terms(topic)
    recs = live.con.execute(
        f"""SELECT session_key, role, lower(text) AS text, epoch_ms(ts) AS ts FROM records r
            WHERE session_key IN (SELECT unnest($keys)) AND {not_deleted()}
              AND role IN ('user', 'assistant', 'tool-output', 'summary', 'files')""",
        {"keys": keys},
    ).fetchall()
    mentions: dict[str, list[int]] = {}
    fileuse: list[tuple[str, int, list[str]]] = []
    stems = [t[:max(4, len(t) - 2)] if len(t) > 5 else t for t in terms]
    for key, role, text, ts in recs:
        if role == "files":
            fileuse.append((key, ts or 0, [p.strip() for p in text.split("\n") if p.strip()]))
        elif ts is not None and stems and all(s in text for s in stems):
            mentions.setdefault(key, []).append(ts)
    if not any(mentions.values()):  # no record holds every word: any one marks a mention
        for key, role, text, ts in recs:
            if role != "files" and ts is not None and any(s in text for s in stems):
                mentions.setdefault(key, []).append(ts)
    roots = dict(live.con.execute("SELECT session_key, coalesce(cwd, '') FROM sessions "
                                  "WHERE session_key IN (SELECT unnest($keys))", {"keys": keys}).fetchall())
    near: dict[str, dict] = {}
    for key, ts, paths in fileuse:
        times = mentions.get(key)
        if not times or not any(abs(ts - m) <= FILES_NEAR_MS for m in times):
            continue
        for p in paths:
            if not _repo_path(p, roots.get(key, "")):
                continue
            st = near.setdefault(p, {"sessions": set(), "near": 0, "last": 0})
            st["sessions"].add(key)
            st["near"] += 1
            st["last"] = max(st["last"], ts)
    if not near:
        return [], tier
    # how often each path is touched at all (the whole store), case-folded like the reads above
    totals = dict(live.con.execute(
        f"""SELECT p, count(*) FROM (
                SELECT unnest(string_split(lower(text), chr(10))) AS p FROM records r
                WHERE role = 'files' AND {not_deleted()})
            WHERE p IN (SELECT unnest($paths)) GROUP BY p""",
        {"paths": list(near)},
    ).fetchall())
    rows = []
    for p, st in near.items():
        total = max(totals.get(p, st["near"]), st["near"])
        score = len(st["sessions"]) * st["near"] / total
        rows.append({"path": p, "sessions": len(st["sessions"]), "near": st["near"], "touched": total,
                     "score": round(score, 4), "last": utc_day(st["last"])})
    # display the path as it was written (files records were lower-cased for matching)
    original = dict(live.con.execute(
        f"""SELECT lower(p), any_value(p) FROM (
                SELECT unnest(string_split(text, chr(10))) AS p FROM records r
                WHERE role = 'files' AND session_key IN (SELECT unnest($keys)) AND {not_deleted()})
            GROUP BY lower(p)""",
        {"keys": keys},
    ).fetchall())
    for r in rows:
        r["path"] = original.get(r["path"], r["path"]).strip()
    rows.sort(key=lambda r: (-r["score"], -r["sessions"], -r["near"], r["path"]))
    return rows[:limit], tier


# ================================================================== how
_EXIT_SUFFIX = re.compile(r"\s+→ exit (\d+)\s*$")


def command_text(record_text: str) -> tuple[str, int | None]:
    """(command, exit code from the record's `→ exit N` mark) of a command record's first line."""
    first = (record_text or "").split("\n", 1)[0].strip()
    code = None
    m = _EXIT_SUFFIX.search(first)
    if m:
        code = int(m.group(1))
        first = first[: m.start()]
    if first.startswith("$ "):
        first = first[2:]
    return first.strip(), code


def how_words(words: list[str]) -> list[str]:
    """The words a command must contain; filler (`how do I run`) is dropped while
    something else remains."""
    from .search import FILLER

    ws = [w for w in " ".join(words).split() if w]
    kept = [w for w in ws if w.lower() not in FILLER]
    return kept or ws


HOW_SQL_WORDS = 8


def how(live: LiveStore, words: list[str], project: str | None = None, limit: int = 8) -> list[dict]:
    """Real invocations of a program: one word names a program the command runs (the
    first word of a segment, after ``sudo``, ``FOO=1``, ``cd x &&``, or the one a
    runner starts), and every word is a case-insensitive substring of the command.
    So ``how make`` finds ``cd build && make -j4`` but not ``cat Makefile`` or
    ``grep make x``."""
    from deja.stages.work_records import programs

    words = list(dict.fromkeys(w.lower() for w in words))
    if not words or not live.has("records"):
        return []
    # the longest words narrow the scan in SQL; every word is checked below
    # (a condition per word of a pasted page made the query's plan take minutes)
    narrow = sorted(words, key=len, reverse=True)[:HOW_SQL_WORDS]
    conds = " AND ".join(f"contains(lower(r.text), $w{i})" for i in range(len(narrow)))
    params = {f"w{i}": w for i, w in enumerate(narrow)}
    params.update(project_match.named_params(project))
    rows = live.con.execute(
        f"""SELECT r.text, r.exit_code, epoch_ms(r.ts) AS ts, r.session_key
            FROM records r
            WHERE r.role = 'command' AND {not_deleted()} AND {conds}
              AND ($project_exact IS NULL OR {project_match.in_sessions("r.session_key")})""",
        params,
    ).fetchall()
    groups: dict[str, dict] = {}
    for text, exit_code, ts, key in rows:
        cmd, mark = command_text(text)
        if not cmd or len(cmd) > HOW_MAX:
            continue
        low = cmd.lower()
        if not all(w in low for w in words) or not set(words) & set(programs(low)):
            continue
        code = exit_code if exit_code is not None else mark
        failed = code is not None and code > 0
        ts = ts or 0
        g = groups.setdefault(low, {"runs": 0, "sessions": set(), "last": 0, "failed": 0, "ok": 0,
                                    "text": cmd, "text_ok_ts": -1, "last_code": None})
        g["runs"] += 1
        g["sessions"].add(key)
        if failed:
            g["failed"] += 1
        else:
            g["ok"] += 1
            if ts >= g["text_ok_ts"]:  # shown as its most recent successful spelling
                g["text"], g["text_ok_ts"] = cmd, ts
        if ts >= g["last"]:
            g["last"], g["last_code"] = ts, (code if failed else None)
            if g["text_ok_ts"] < 0:
                g["text"] = cmd
    out = [{"command": g["text"], "runs": g["runs"], "sessions": len(g["sessions"]), "last": utc_day(g["last"]),
            "last_ms": g["last"], "failed": g["failed"], "exit": g["last_code"]} for g in groups.values()]
    # most successful, then the contract's order (sessions, last run, command)
    out.sort(key=lambda r: (r["failed"] == r["runs"], -r["sessions"], -r["last_ms"], r["command"].lower()))
    for r in out:
        del r["last_ms"]
    return out[:limit]


# ================================================================== fix
_FIX_TOKEN = re.compile(r"[A-Za-z0-9_./-]{4,}")
_COMMON = frozenset(
    "error errors command commands found failed failure fatal bash sudo test tests http https line file files "
    "directory such module named cannot find permission denied connection refused reset timed timeout "
    "expired panic exception thread runtime with from that this have been into your none null true false "
    "undefined index range stack overflow typeerror keyerror attributeerror referenceerror build compilation "
    "resolved statement access code done then main when will what".split()
)


def _tokens(text: str) -> set[str]:
    out = set()
    for t in _FIX_TOKEN.findall(text):
        t = t.strip("/.").lower()
        if len(t) >= 4 and t not in _COMMON:
            out.add(t)
    return out


def _related(error: str, command: str, failed_command: str = "") -> bool:
    """A command that answers an error: it shares a meaningful token with it, or
    (an install) names the missing thing, or it runs the program whose run printed
    the error without being that same run (``go mod tidy`` after ``go build``)."""
    et, ct = _tokens(error), _tokens(command)
    if et & ct:
        return True
    if "install" in command.lower():  # pip install pyyaml after "No module named 'yaml'"
        return any(e in c for e in et for c in ct)
    if failed_command and command.lower() != failed_command.lower():
        from deja.stages.work_records import programs

        ran = [p for p in programs(failed_command) if p != "cd"]
        return bool(ran) and bool(set(ran) & set(programs(command)))
    return False


@dataclass
class FixAnswer:
    status: str  # "ok", "not-error", "none"
    rows: list[dict]


class _Wanted:
    """The pasted failure lines, as ``fix`` matches them: by their error part, the
    message without the file and line it was printed for (``undefined: x`` from
    ``./a.go:3:1: undefined: x`` answers the same error in ``b.go``)."""

    def __init__(self, error_text: str):
        self.sigs: dict[int, str] = {}
        for ln in error_text.splitlines():
            f = fl.failure_line(ln)
            if f:
                self.sigs.setdefault(fl.signature(f, located=False), f)

    def __bool__(self) -> bool:
        return bool(self.sigs)

    def lines(self) -> list[str]:
        return list(self.sigs.values())

    def key(self, line: str) -> int | None:
        """The wanted signature a failure line of the history answers, or None."""
        sig = fl.signature(line, located=False)
        return sig if sig in self.sigs else None


def fix(live: LiveStore, error_text: str, limit: int = 3) -> FixAnswer:
    wanted = _Wanted(error_text)
    if not wanted:
        return FixAnswer("not-error", [])
    if not live.has("records"):
        return FixAnswer("none", [])
    probes = sorted({fl.probe(fl.error_part(f)) for f in wanted.lines()})
    rows = live.con.execute(
        f"""WITH cand AS (
                SELECT DISTINCT session_key FROM records r
                WHERE role IN ('tool-output', 'assistant') AND {not_deleted()}
                  AND list_has_any(list_transform($probes, lambda n: contains(lower(r.text), n)), [true]))
            SELECT r.session_key, r.project, r.role, r.text, epoch_ms(r.ts) AS ts, r.exit_code
            FROM records r JOIN cand USING (session_key)
            WHERE {not_deleted()} ORDER BY r.session_key, r.seq""",
        {"probes": probes},
    ).fetchall()
    sessions: dict[str, list[tuple]] = {}
    for key, project, role, text, ts, code in rows:
        sessions.setdefault(key, []).append((role, text or "", ts or 0, code, project))
    pairs: dict[tuple[int, str], dict] = {}
    for key, msgs in sessions.items():
        for p in _mine(msgs, wanted):
            p["session"] = key
            k = (p["sig"], p["command"].lower())
            g = pairs.setdefault(k, {**p, "sessions": set()})
            g["sessions"].add(key)
            if p["ts"] > g["ts"]:
                g.update({kk: v for kk, v in p.items() if kk != "sessions"})
    served = [g for g in pairs.values()
              if _related(g["error"], g["command"], g["failed"]) or len(g["sessions"]) >= 2]
    served.sort(key=lambda g: (-g["ts"], g["command"]))
    out = [{"error": g["error"], "date": utc_day(g["ts"]), "command": g["command"], "session": g["session"],
            "project": g["project"], "sessions": len(g["sessions"])} for g in served[:limit]]
    return FixAnswer("ok" if out else "none", out)


def _looks(msg: tuple) -> bool:
    """A command that only looked (``ls``, ``grep``, ``git log``, ``go version``): it
    settles nothing, and ``fix`` reads past it as if it were not there."""
    from deja.stages.work_records import inspects

    return msg[0] == "command" and inspects(command_text(msg[1])[0])


# What counts towards fix's look-ahead: the agent's steps. Tool output, file
# lists and looking commands do not, so a long investigation (a dozen greps and
# `git show`s) between an error and the command that settled it does not hide it.
_STEPS = ("command", "edit", "assistant", "user")


def _after(msgs: list[tuple], start: int, count: int):
    """The indexes of every record from ``start`` up to the ``count``-th step after it."""
    j, seen = start, 0
    while j < len(msgs) and seen < count:
        if msgs[j][0] in _STEPS and not _looks(msgs[j]):
            seen += 1
        yield j
        j += 1


def _mine(msgs: list[tuple], wanted: _Wanted) -> list[dict]:
    """§5.6 over one session's records in order: the command that followed an error
    which did not come back within the next 6 steps. A command that neither shares
    a word with the error nor runs the program that failed is kept (a second
    session may vouch for it) and the scan goes on for one that does: an agent
    often tries something unrelated before ``go mod tidy``."""
    out = []
    failed_cmd = ""
    for i, (role, text, ts, _, project) in enumerate(msgs):
        if role == "command":
            failed_cmd = command_text(text)[0]
            continue
        if role not in ("tool-output", "assistant"):
            continue
        err = fl.first_failure(text)
        if not err:
            continue
        sig = wanted.key(err)
        if sig is None:
            continue
        for j in _after(msgs, i + 1, FIX_LOOKAHEAD):
            r2, t2, ts2, code2, _ = msgs[j]
            if r2 != "command" or _looks(msgs[j]):
                continue
            cmd, mark = command_text(t2)
            if not cmd or len(cmd) > FIX_CMD_MAX:
                continue
            code = code2 if code2 is not None else mark
            if code is not None and code > 0:
                continue  # a command that failed did not settle anything
            if fl.destructive(cmd):
                break  # never offered, and what ran after it is not what settled the error
            back = any(
                msgs[k][0] in ("tool-output", "assistant") and any(wanted.key(f) == sig for f in fl.failure_lines(msgs[k][1]))
                for k in _after(msgs, j + 1, FIX_RECUR)
            )
            if back:
                break
            out.append({"sig": sig, "error": err, "command": cmd, "ts": ts2 or ts, "project": project,
                        "failed": failed_cmd})
            if _related(err, cmd, failed_cmd):
                break
    return out


# ================================================================== friction
@dataclass
class Friction:
    rows: list[dict]
    sessions_with_output: int


def friction(live: LiveStore, limit: int = 10, min_sessions: int = FRICTION_MIN_SESSIONS) -> Friction:
    if not live.has("records"):
        return Friction([], 0)
    pattern = fl.SCAN_PATTERN
    rows = live.con.execute(
        f"""SELECT r.session_key, s.harness, r.text, epoch_ms(r.ts) AS ts
            FROM records r JOIN sessions s USING (session_key)
            WHERE r.role = 'tool-output' AND {not_deleted()} AND regexp_matches(lower(r.text), $pat)
            ORDER BY r.session_key, r.seq""",
        {"pat": pattern},
    ).fetchall()
    per_session: dict[str, set[int]] = {}
    groups: dict[int, dict] = {}
    for key, harness, text, ts in rows:
        seen = per_session.setdefault(key, set())
        for line in fl.failure_lines(text):
            sig = fl.signature(line)
            if sig not in seen:
                if len(seen) >= fl.MAX_SIGNATURES:
                    continue
                seen.add(sig)
            g = groups.setdefault(sig, {"sessions": set(), "harnesses": set(), "last": 0, "line": line})
            g["sessions"].add(key)
            g["harnesses"].add(harness)
            if (ts or 0) >= g["last"]:
                g["last"], g["line"] = ts or 0, line
    out = [{"line": g["line"], "sessions": len(g["sessions"]), "harnesses": sorted(g["harnesses"]),
            "last": _short_day(g["last"]), "last_day": utc_day(g["last"]), "signature": f"{sig:016x}"}
           for sig, g in groups.items() if len(g["sessions"]) >= min_sessions]
    out.sort(key=lambda r: (-r["sessions"], r["line"]))
    n_out = 0
    if not out:
        n_out = live.con.execute(
            "SELECT count(DISTINCT session_key) FROM records r WHERE role = 'tool-output' AND " + not_deleted()
        ).fetchone()[0]
    return Friction(out[:limit], n_out)


def friction_line(row: dict) -> str:
    return (f"{row['sessions']} sessions  {_cut_bytes(row['line'], FRICTION_WIDTH)}  "
            f"· {', '.join(row['harnesses'])} · last {row['last']}")


__all__ = ["Blame", "Target", "resolve_target", "blame", "blame_line", "BLAME_LIMIT", "files", "how", "how_words", "fix", "friction",
           "friction_line", "command_text", "shared_span", "deleted_text"]


@dataclass
class Blame:
    """The answer of deja.pipeline.api.blame. ``rows``: what `deja blame --json`
    prints; ``line``: for PATH:LINE, the LineAnswer (its sentence says who
    changed the line)."""

    target: str
    rows: list[dict]
    line: object = None
    capped: bool = False
