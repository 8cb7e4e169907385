"""Answers from the work itself: blame, files, how, fix, friction (cli-contract §5.4–5.9).

Each reads the live store (``store.read.open_live``): the ``command``,
``files``, ``edit`` and ``tool-output`` records agents left behind, and the
sessions they belong to. ``blame_line`` also asks git, in the file's own
repository, which commit last changed a line. Light imports only: re, os,
subprocess, DuckDB through the live store.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone

from deja.stages import failures as fl
from deja.stages.display import utc_day

from .session_obj import session_object, session_rows
from .sqlfiles import load as load_sql
from deja.stages.store.read import LiveStore

DAY_MS = 86_400_000
BLAME_LIMIT = 10
BLAME_TOUCHED = 50  # sessions whose touched list names the file, beyond the mentions
BLAME_PER_SESSION = 400
PROJECT_BOOST = 1.35
SPAN_MIN = 24  # whitespace-collapsed characters an edit must share with the deleted text
FILES_NEAR_MS = 20 * 60 * 1000
FILES_SESSIONS = 250
HOW_MAX = 200
FIX_LOOKAHEAD, FIX_RECUR, FIX_CMD_MAX = 10, 6, 200
FRICTION_MIN_SESSIONS = 3
FRICTION_WIDTH = 79


def _not_deleted(alias: str = "r") -> str:
    return f"{alias}.record_id NOT IN (SELECT record_id FROM deletes)"


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


def _collapse(text: str) -> str:
    return " ".join(text.split())


# ================================================================== blame
_LINE_SUFFIX = re.compile(r"^(.*?):(\d+)(?::(\d+))?$")


@dataclass
class Target:
    arg: str
    path: str  # absolute when known, else the bare name
    base: str
    line: int | None = None
    suffixes: list[tuple[str, int]] = field(default_factory=list)  # longest first: (suffix, segments)


def resolve_target(arg: str, cwd: str) -> Target:
    """The file a blame argument names; a trailing ``:<line>`` or ``:<line>:<col>`` is
    the line when the literal path does not exist (cli-contract §5.8)."""
    raw = arg.strip().strip("'\"`")
    line = None
    if not os.path.exists(os.path.join(cwd, os.path.expanduser(raw))):
        m = _LINE_SUFFIX.match(raw)
        if m and m.group(1):
            raw, line = m.group(1), int(m.group(2))
    expanded = os.path.expanduser(raw)
    bare = "/" not in raw and "\\" not in raw
    if bare and not os.path.exists(os.path.join(cwd, expanded)):
        path = raw  # a bare name that is not here: only the name can be matched
    else:
        path = os.path.normpath(os.path.join(cwd, expanded))
    base = os.path.basename(path.rstrip("/")) or path
    parts = [p for p in path.split("/") if p]
    suffixes = []
    for i in range(len(parts)):
        seg = parts[i:]
        s = "/".join(seg)
        if i == 0 and path.startswith("/"):
            s = "/" + s
        suffixes.append((s, len(seg)))
    return Target(arg, path, base, line, suffixes)


def _mention_re(base: str) -> re.Pattern:
    # the basename as a path component or a standalone word: not inside a longer name
    return re.compile(r"(?<![\w.\-])" + re.escape(base) + r"(?![\w\-]|\.\w)")


def _suffix_re(suffix: str, segs: int) -> re.Pattern:
    lead = "" if suffix.startswith("/") else r"(?<![\w.\-])"
    if segs > 1 and not suffix.startswith("/"):
        lead = r"(?<![\w.\-])"
    return re.compile(lead + re.escape(suffix) + r"(?![\w\-]|\.\w)")


def _specificity(text: str, target: Target, pats: list[re.Pattern]) -> int:
    """Segments of the longest suffix of the path that appears in the text (0 = none)."""
    for (_, segs), pat in zip(target.suffixes, pats):
        if pat.search(text):
            return segs
    return 0


def blame(live: LiveStore, target: Target, harness: str | None = None, project: str | None = None,
          since_ms: int | None = None, limit: int | None = BLAME_LIMIT, now_ms: float | None = None) -> list[dict]:
    """Sessions that discussed the file, most specific first (cli-contract §3.5, §5.8)."""
    now_ms = time.time() * 1000 if now_ms is None else now_ms
    con = live.con
    if not live.has("records"):
        return []
    params = {"base": target.base, "harness": harness, "project": project, "since": since_ms,
              "per_session": BLAME_PER_SESSION}
    rows = con.execute(load_sql("blame_mentions"), params).fetchall()
    mention = _mention_re(target.base)
    pats = [_suffix_re(s, n) for s, n in target.suffixes]
    per: dict[int, dict] = {}
    for ord_, role, text, ts in rows:
        if role == "edit":
            text = text.split("\n", 1)[0]  # the path; the body is code, not a mention
        n = len(mention.findall(text))
        if not n:
            continue
        st = per.setdefault(ord_, {"mentions": 0, "segs": 0, "lines": []})
        st["mentions"] += n
        for ln in text.splitlines():
            if mention.search(ln):
                segs = _specificity(ln, target, pats)
                st["segs"] = max(st["segs"], segs)
                st["lines"].append((segs, role in ("user", "assistant"), ts or 0, ln.strip()))
    # sessions whose touched files name it, even when no record text survived
    touched = con.execute(
        """SELECT ord, touched FROM sessions
           WHERE len(list_filter(touched, lambda x: x = $path OR x = $base OR ends_with(x, '/' || $base))) > 0
             AND ($harness IS NULL OR harness = $harness)
             AND ($project IS NULL OR contains(lower(project), lower($project)))
             AND ($since IS NULL OR epoch_ms(updated) >= $since)
           ORDER BY updated DESC LIMIT $lim""",
        {"path": target.path, "base": target.base, "harness": harness, "project": project, "since": since_ms,
         "lim": BLAME_TOUCHED},
    ).fetchall()
    for ord_, paths in touched:
        st = per.setdefault(ord_, {"mentions": 0, "segs": 0, "lines": []})
        for p in paths or []:
            if mention.search(p):
                segs = _specificity(p, target, pats)
                st["segs"] = max(st["segs"], segs)
                if st["mentions"] == 0:
                    st["mentions"] = 1
                    st["lines"].append((segs, False, 0, p))
    if not per:
        return []
    srows = session_rows(con, list(per))
    cwds = dict(con.execute("SELECT ord, cwd FROM sessions WHERE ord IN (SELECT unnest(?))", [list(per)]).fetchall())
    full = len(target.suffixes)
    out = []
    for ord_, st in per.items():
        row = srows.get(ord_)
        if row is None or not st["mentions"]:
            continue
        segs = st["segs"] or 1
        spec = 1 + segs / 4
        score = st["mentions"] * (1 + spec)
        cwd = (cwds.get(ord_) or "").rstrip("/")
        if cwd and target.path.startswith("/") and target.path.startswith(cwd + "/"):
            score *= PROJECT_BOOST
        upd = _ms(row.get("updated"))
        age_days = max(0.0, (now_ms - upd) / DAY_MS) if upd else 365.0
        score /= 1 + age_days
        lines = sorted(st["lines"], key=lambda x: (-x[0], not x[1], -x[2]))
        snippets: list[str] = []
        for _, _, _, ln in lines:
            ln = ln if len(ln) <= 220 else ln[:219] + "…"
            if ln not in snippets:
                snippets.append(ln)
            if len(snippets) == 2:
                break
        tier = "exact" if segs == full and full > 1 else "suffix" if segs > 1 else "basename"
        item = {"session": session_object(row), "title": row.get("title") or "", "count": st["mentions"],
                "snippets": snippets, "score": round(score, 6), "tier": tier}
        if row.get("decision"):
            item["decision"] = row["decision"]
        item["_updated"] = upd
        out.append(item)
    out.sort(key=lambda r: (-r["score"], -r["_updated"], r["session"]["id"]))
    for r in out:
        del r["_updated"]
    return out if limit is None else out[:limit]


def _ms(dt) -> int:
    if dt is None:
        return 0
    if isinstance(dt, datetime):
        return int(dt.timestamp() * 1000)
    return int(dt)


# ------------------------------------------------------------- blame path:line
@dataclass
class LineAnswer:
    attributed: bool
    sentence: str
    commit: str | None = None
    session: dict | None = None  # session row (dict) when attributed
    span: int = 0


def _git(args: list[str], cwd: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=30,
                          env={**os.environ, "GIT_PAGER": "cat", "LC_ALL": "C"})


def deleted_text(repo: str, commit: str, relpath: str | None = None) -> str:
    """The lines a commit removed (from one file when ``relpath`` is given)."""
    args = ["show", "--no-color", "--format=", "--unified=0", "--no-ext-diff", commit]
    if relpath:
        args += ["--", relpath]
    proc = _git(args, repo)
    if proc.returncode != 0:
        return ""
    out = []
    for ln in proc.stdout.splitlines():
        if ln.startswith("-") and not ln.startswith("--- "):
            out.append(ln[1:])
    return "\n".join(out)


def _shingles(text: str, k: int = SPAN_MIN) -> set[str]:
    return {text[i:i + k] for i in range(len(text) - k + 1)}


def shared_span(a: str, b: str, k: int = SPAN_MIN) -> int:
    """Length of the longest whitespace-collapsed run two texts share (a chain of
    overlapping k-character windows of ``a`` that all occur in ``b``); 0 when < k."""
    a, b = _collapse(a), _collapse(b)
    if len(a) < k or len(b) < k:
        return 0
    if len(a) > len(b):
        a, b = b, a
    grams = _shingles(b, k)
    best = run = 0
    for i in range(len(a) - k + 1):
        if a[i:i + k] in grams:
            run = run + 1 if run else k
            best = max(best, run)
        else:
            run = 0
    return best


def blame_line(live: LiveStore, target: Target, harness: str | None = None,
               project: str | None = None) -> LineAnswer:
    """Which session changed one line: git names the commit, the session is the one whose
    edit replaced the text that commit deleted. Otherwise one sentence naming the silence."""
    n = target.line
    path = target.path
    shown = target.arg.rsplit(":", 1)[0] if target.arg.count(":") else target.arg
    if not path.startswith("/"):
        return LineAnswer(False, f"{shown} is not a file here, so git cannot name the commit behind line {n}.")
    if not os.path.isfile(path):
        return LineAnswer(False, f"{shown} does not exist here, so git cannot name the commit behind line {n}.")
    folder = os.path.dirname(path)
    try:
        top = _git(["rev-parse", "--show-toplevel"], folder)
    except (OSError, subprocess.SubprocessError):
        return LineAnswer(False, f"git is not available here, so nothing can name the commit behind line {n} of {shown}.")
    if top.returncode != 0:
        return LineAnswer(False, f"{shown} is not in a git repository, so git cannot name the commit behind line {n}.")
    repo = top.stdout.strip()
    try:
        with open(path, "rb") as fh:
            data = fh.read()
        count = data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
    except OSError as exc:
        return LineAnswer(False, f"{shown} cannot be read ({exc.strerror}), so line {n} cannot be blamed.")
    if n < 1 or n > count:
        return LineAnswer(False, f"line {n} is past the end of {shown} (it has {count} line{'s' if count != 1 else ''}).")
    rel = os.path.relpath(os.path.realpath(path), os.path.realpath(repo))
    tracked = _git(["ls-files", "--error-unmatch", "--", rel], repo)
    if tracked.returncode != 0:
        return LineAnswer(False, f"{shown} is not tracked by git, so git cannot name the commit behind line {n}.")
    bl = _git(["blame", "--porcelain", "-L", f"{n},{n}", "--", rel], repo)
    if bl.returncode != 0 or not bl.stdout:
        msg = (bl.stderr or "").strip().splitlines()
        return LineAnswer(False, f"git cannot blame line {n} of {shown}" + (f" ({msg[-1]})." if msg else "."))
    head = bl.stdout.split("\n", 1)[0].split()
    commit = head[0] if head else ""
    if not commit or set(commit) == {"0"}:
        return LineAnswer(False, f"line {n} of {shown} is not committed yet, so git names no commit for it.")
    fields = dict(ln.split(" ", 1) for ln in bl.stdout.splitlines() if " " in ln and not ln.startswith("\t"))
    old_name = fields.get("filename", rel)
    when = utc_day(int(fields["committer-time"]) * 1000) if fields.get("committer-time", "").isdigit() else ""
    short = commit[:7]
    at = f"commit {short}" + (f" ({when})" if when else "")
    removed = deleted_text(repo, commit, old_name)
    if len(_collapse(removed)) < SPAN_MIN:
        return LineAnswer(False, f"line {n} of {shown} comes from {at}, which replaced no text an edit could match; "
                                 f"no session's edit on this machine is tied to it.", commit)
    bases = {os.path.basename(rel), os.path.basename(old_name)}
    cands = live.con.execute(
        f"""SELECT s.ord, r.text, epoch_ms(r.ts) AS ts
            FROM records r JOIN sessions s USING (session_key)
            WHERE r.role = 'edit' AND {_not_deleted()}
              AND list_contains($bases, regexp_extract(split_part(r.text, chr(10), 1), '[^/\\\\]+$'))
              AND ($harness IS NULL OR s.harness = $harness)
              AND ($project IS NULL OR contains(lower(s.project), lower($project)))""",
        {"bases": sorted(bases), "harness": harness, "project": project},
    ).fetchall() if live.has("records") else []
    best: tuple[int, int, int] | None = None  # (span, ts, ord)
    for ord_, text, ts in cands:
        body = text.split("\n", 1)[1] if "\n" in text else ""
        span = shared_span(body, removed)
        if span >= SPAN_MIN and (best is None or (span, ts or 0) > best[:2]):
            best = (span, ts or 0, ord_)
    if best is None:
        return LineAnswer(False, f"line {n} of {shown} comes from {at}; no session's edit on this machine "
                                 f"replaced the text that commit deleted.", commit)
    row = session_rows(live.con, [best[2]]).get(best[2])
    return LineAnswer(True, f"line {n} of {shown} comes from {at}; this session made that change:", commit, row, best[0])


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
            WHERE session_key IN (SELECT unnest($keys)) AND {_not_deleted()}
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
                WHERE role = 'files' AND {_not_deleted()})
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
                WHERE role = 'files' AND session_key IN (SELECT unnest($keys)) AND {_not_deleted()})
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


def how(live: LiveStore, words: list[str], project: str | None = None, limit: int = 8) -> list[dict]:
    """Real invocations: every word a case-insensitive substring of the command."""
    words = [w.lower() for w in words]
    if not words or not live.has("records"):
        return []
    conds = " AND ".join(f"contains(lower(r.text), $w{i})" for i in range(len(words)))
    params = {f"w{i}": w for i, w in enumerate(words)}
    params["project"] = project
    rows = live.con.execute(
        f"""SELECT r.text, r.exit_code, epoch_ms(r.ts) AS ts, r.session_key
            FROM records r
            WHERE r.role = 'command' AND {_not_deleted()} AND {conds}
              AND ($project IS NULL OR contains(lower(r.project), lower($project)))""",
        params,
    ).fetchall()
    groups: dict[str, dict] = {}
    for text, exit_code, ts, key in rows:
        cmd, mark = command_text(text)
        if not cmd or len(cmd) > HOW_MAX:
            continue
        low = cmd.lower()
        if not all(w in low for w in words):
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


def _related(error: str, command: str) -> bool:
    et, ct = _tokens(error), _tokens(command)
    if et & ct:
        return True
    if "install" in command.lower():  # pip install pyyaml after "No module named 'yaml'"
        return any(e in c for e in et for c in ct)
    return False


@dataclass
class FixAnswer:
    status: str  # "ok", "not-error", "none"
    rows: list[dict]


def fix(live: LiveStore, error_text: str, limit: int = 3) -> FixAnswer:
    wanted: dict[int, str] = {}
    for ln in error_text.splitlines():
        f = fl.failure_line(ln)
        if f:
            wanted.setdefault(fl.signature(f), f)
    if not wanted:
        return FixAnswer("not-error", [])
    if not live.has("records"):
        return FixAnswer("none", [])
    needles = sorted({m.group(0) for f in wanted.values() for m in fl._NEEDLE_RE.finditer(f.lower())})
    rows = live.con.execute(
        f"""WITH cand AS (
                SELECT DISTINCT session_key FROM records r
                WHERE role IN ('tool-output', 'assistant') AND {_not_deleted()}
                  AND list_has_any(list_transform($needles, lambda n: contains(lower(r.text), n)), [true]))
            SELECT r.session_key, r.project, r.role, r.text, epoch_ms(r.ts) AS ts, r.exit_code
            FROM records r JOIN cand USING (session_key)
            WHERE {_not_deleted()} ORDER BY r.session_key, r.seq""",
        {"needles": needles},
    ).fetchall()
    sessions: dict[str, list[tuple]] = {}
    for key, project, role, text, ts, code in rows:
        sessions.setdefault(key, []).append((role, text or "", ts or 0, code, project))
    pairs: dict[tuple[int, str], dict] = {}
    for key, msgs in sessions.items():
        for p in _mine(msgs, set(wanted)):
            p["session"] = key
            k = (p["sig"], p["command"].lower())
            g = pairs.setdefault(k, {**p, "sessions": set()})
            g["sessions"].add(key)
            if p["ts"] > g["ts"]:
                g.update({kk: v for kk, v in p.items() if kk != "sessions"})
    served = [g for g in pairs.values() if _related(g["error"], g["command"]) or len(g["sessions"]) >= 2]
    served.sort(key=lambda g: (-g["ts"], g["command"]))
    out = [{"error": g["error"], "date": utc_day(g["ts"]), "command": g["command"], "session": g["session"],
            "project": g["project"], "sessions": len(g["sessions"])} for g in served[:limit]]
    return FixAnswer("ok" if out else "none", out)


def _mine(msgs: list[tuple], wanted: set[int]) -> list[dict]:
    """§5.6 over one session's records in order: the command that followed an error
    which did not come back within the next 6 messages."""
    out = []
    for i, (role, text, ts, _, project) in enumerate(msgs):
        if role not in ("tool-output", "assistant"):
            continue
        err = fl.first_failure(text)
        if not err:
            continue
        sig = fl.signature(err)
        if sig not in wanted:
            continue
        for j in range(i + 1, min(len(msgs), i + 1 + FIX_LOOKAHEAD)):
            r2, t2, ts2, code2, _ = msgs[j]
            if r2 != "command":
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
                msgs[k][0] in ("tool-output", "assistant") and sig in {fl.signature(f) for f in fl.failure_lines(msgs[k][1])}
                for k in range(j + 1, min(len(msgs), j + 1 + FIX_RECUR))
            )
            if not back:
                out.append({"sig": sig, "error": err, "command": cmd, "ts": ts2 or ts, "project": project})
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
    pattern = "|".join(re.escape(n) for n in fl.NEEDLES + fl.LOCALE_NEEDLES)
    rows = live.con.execute(
        f"""SELECT r.session_key, s.harness, r.text, epoch_ms(r.ts) AS ts
            FROM records r JOIN sessions s USING (session_key)
            WHERE r.role = 'tool-output' AND {_not_deleted()} AND regexp_matches(lower(r.text), $pat)
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
            "SELECT count(DISTINCT session_key) FROM records r WHERE role = 'tool-output' AND " + _not_deleted()
        ).fetchone()[0]
    return Friction(out[:limit], n_out)


def friction_line(row: dict) -> str:
    return (f"{row['sessions']} sessions  {_cut_bytes(row['line'], FRICTION_WIDTH)}  "
            f"· {', '.join(row['harnesses'])} · last {row['last']}")


__all__ = ["Target", "resolve_target", "blame", "blame_line", "files", "how", "how_words", "fix", "friction",
           "friction_line", "command_text", "shared_span", "deleted_text"]
