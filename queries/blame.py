"""deja blame: the sessions that discussed a file (cli-contract §3.5, §5.8), and
for ``path:line`` the session whose edit made that line, found through git.

``blame`` reads the live store (``store.read.open_live``): records that
mention the file, and sessions whose touched list names it. ``blame_line``
asks git, in the file's own repository, which commit last changed the line,
and matches the text that commit deleted against the sessions' edits.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from dataclasses import dataclass, field
from datetime import datetime

from deja.stages.shown import shown
from deja.stages.store.read import LiveStore

from .session_obj import session_object, session_rows
from . import project_match
from .sqlfiles import load as load_sql
from deja.stages.display import utc_day
from deja.stages.sources.projects import normalize_cwd

from .work_common import not_deleted

DAY_MS = 86_400_000
BLAME_LIMIT = 10
BLAME_TOUCHED = 50  # sessions whose touched list names the file, beyond the mentions
BLAME_PER_SESSION = 400
PROJECT_BOOST = 1.35
SPAN_MIN = 24  # whitespace-collapsed characters an edit must share with the deleted text


def _collapse(text: str) -> str:
    return " ".join(text.split())


_LINE_SUFFIX = re.compile(r"^(.*?):(\d+)(?::(\d+))?$")


@dataclass
class Target:
    arg: str
    path: str  # absolute when known, else the bare name
    base: str
    line: int | None = None
    suffixes: list[tuple[str, int]] = field(default_factory=list)  # longest first: (suffix, segments)

    @property
    def as_path(self) -> bool:
        """A path whose name is no file name by itself (``/no/such/file``): it is
        matched by a suffix of two segments or more, never as the loose word."""
        return len(self.suffixes) > 1 and "." not in self.base.strip(".")

    @property
    def shown(self) -> str:
        """The file as the answer names it: the path when it is matched as one."""
        return self.path if self.as_path else self.base


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
    params = {"base": target.base, "harness": harness, **project_match.named_params(project), "since": since_ms,
              "per_session": BLAME_PER_SESSION}
    rows = con.execute(load_sql("blame_mentions").replace("$project_rule", project_match.named()), params).fetchall()
    pats = [_suffix_re(s, n) for s, n in target.suffixes]
    # a bare name matches as itself; a path whose name is a plain word, by its last two segments
    mention = pats[-2] if target.as_path else _mention_re(target.base)
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
        f"""SELECT ord, touched FROM sessions
           WHERE len(list_filter(touched, lambda x: x = $path OR x = $base OR ends_with(x, '/' || $base))) > 0
             AND ($harness IS NULL OR harness = $harness)
             AND {project_match.named()}
             AND ($since IS NULL OR epoch_ms(updated) >= $since)
           ORDER BY updated DESC LIMIT $lim""",
        {"path": target.path, "base": target.base, "harness": harness, **project_match.named_params(project),
         "since": since_ms, "lim": BLAME_TOUCHED},
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
    # the lift: the file lies in the session's project (its repository, wherever in it the session ran)
    roots = dict(con.execute("SELECT ord, coalesce(nullif(project_root, ''), cwd) FROM sessions "
                             "WHERE ord IN (SELECT unnest(?))", [list(per)]).fetchall())
    target_key = normalize_cwd(target.path)  # a relative one starts with no root
    full = len(target.suffixes)
    out = []
    for ord_, st in per.items():
        row = srows.get(ord_)
        if row is None or not st["mentions"]:
            continue
        segs = st["segs"] or 1
        spec = 1 + segs / 4
        score = st["mentions"] * (1 + spec)
        root = normalize_cwd(roots.get(ord_) or "")
        if root and target_key.startswith(root.rstrip("/") + "/"):
            score *= PROJECT_BOOST
        upd = _ms(row.get("updated"))
        age_days = max(0.0, (now_ms - upd) / DAY_MS) if upd else 365.0
        score /= 1 + age_days
        lines = sorted(st["lines"], key=lambda x: (-x[0], not x[1], -x[2]))
        snippets: list[str] = []
        for _, _, _, ln in lines:
            ln = shown(ln)  # before the cut (deja.stages.shown)
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


# ---- blame path:line -------------------------------------------------------
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
            WHERE r.role = 'edit' AND {not_deleted()}
              AND list_contains($bases, regexp_extract(split_part(r.text, chr(10), 1), '[^/\\\\]+$'))
              AND ($harness IS NULL OR s.harness = $harness)
              AND {project_match.named("s")}""",
        {"bases": sorted(bases), "harness": harness, **project_match.named_params(project)},
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
