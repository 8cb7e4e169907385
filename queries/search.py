"""Search: the sessions whose records hold every query term, ranked by BM25.

This is the exact rung of the ladder in cli-contract.md §5.2. Postings are
read only from the buckets of the query's tokens; scoring happens at session
level from postings alone (tf, record length, role), and records are read only
for the snippets of the hits that are served.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone

from deja.stages.tokenize import bucket_of, query_terms

from .sqlfiles import load as load_sql
from .store_read import LiveStore

STOP_WORDS = frozenset(
    "a an and are as at be before but by did do does for from dealt have how in is it of on or that the this "
    "to was we what when where which who with и в во не что он на я с со как а то все она так его но да ты к у "
    "же вы за бы по только ее мне было вот от меня еще нет о из ему".split()
)
ROLE_WEIGHTS = {0: 1.3, 1: 1.0, 2: 0.6, 3: 0.5, 4: 1.3}
SPEECH_ROLE_CODES = (0, 1, 2, 3, 4)
ROLE_ALIASES = {"tool": "tool-output"}
ROLE_CODE = {"user": 0, "assistant": 1, "tool-output": 2, "summary": 3, "note": 4, "command": 5, "files": 6, "edit": 7}
K1, B = 1.2, 0.75


@dataclass
class Query:
    text: str
    limit: int = 15
    all: bool = False
    harness: str | None = None
    project: str | None = None
    since_ms: int | None = None
    role: str | None = None


@dataclass
class Hit:
    session: dict
    count: int
    score: float
    snippets: list[str] = field(default_factory=list)
    tier: str = "exact"


def parse_query(text: str) -> tuple[list[str], list[str]]:
    """(terms for postings, phrases that must appear contiguously)."""
    phrases = [p.strip() for p in re.findall(r'"([^"]+)"', text) if p.strip()]
    terms = query_terms(text)
    content = [t for t in terms if t not in STOP_WORDS]
    return (content or terms), phrases


def search(store: LiveStore, q: Query) -> dict:
    terms, phrases = parse_query(q.text)
    envelope = {"schema_version": 2, "tier": "exact", "total": 0, "hits": []}
    if not terms or not store.has("postings"):
        return envelope
    drive = terms[:8]  # the first 8 content terms drive the intersection (§5.1)
    files = store.postings_for_buckets({bucket_of(t) for t in drive})
    if not files:
        return envelope
    role_codes = _role_codes(q.role)
    rows = store.con.execute(
        load_sql("search_exact"),
        {
            "files": files,
            "terms": drive,
            "nterms": len(drive),
            "roles": list(role_codes),
            "harness": q.harness,
            "project": q.project,
            "since": q.since_ms,
        },
    ).fetchall()
    if not rows:
        return envelope
    n_sessions = store.con.execute("SELECT count(*) FROM sessions").fetchone()[0] or 1
    avg_words = float(store.con.execute("SELECT avg(greatest(words, 1)) FROM sessions").fetchone()[0] or 1.0)
    now_ms = time.time() * 1000
    scored = []
    # rows: session ord, token, weighted tf, df, words, updated ms, matching records (AND)
    by_session: dict[int, dict] = {}
    for ord_, token, wtf, df, words, updated, nrec in rows:
        s = by_session.setdefault(ord_, {"score": 0.0, "words": words or 1, "updated": updated, "count": nrec})
        idf = math.log(1 + (n_sessions - df + 0.5) / (df + 0.5))
        dl = s["words"]
        s["score"] += idf * (wtf * (K1 + 1)) / (wtf + K1 * (1 - B + B * dl / avg_words))
    for ord_, s in by_session.items():
        age_days = max(0.0, (now_ms - (s["updated"] or 0)) / 86_400_000) if s["updated"] else 3650
        # gentle freshness: time is a hint, never a filter
        fresh = 1.0 + 0.25 / (1.0 + age_days / 30.0)
        scored.append((s["score"] * fresh, s["updated"] or 0, ord_, s["count"]))
    scored.sort(key=lambda x: (-x[0], -x[1], x[2]))
    if phrases:
        scored = _filter_phrases(store, scored, drive, phrases, role_codes)
    total = len(scored)
    cap = total if q.all else q.limit
    served = scored[:cap]
    sessions = _sessions(store, [o for _, _, o, _ in served])
    snippets = _snippets(store, [o for _, _, o, _ in served], drive, phrases, role_codes)
    hits = []
    for score, _, ord_, count in served:
        sess = sessions.get(ord_)
        if sess is None:
            continue
        hits.append(
            {
                "session": sess,
                "count": int(count),
                "snippets": snippets.get(ord_, []),
                "score": round(score, 4),
                "tier": "exact",
            }
        )
    envelope["total"] = total
    if total > len(served):
        envelope["capped"] = True
    envelope["hits"] = hits
    return envelope


def _role_codes(role: str | None) -> tuple[int, ...]:
    if not role:
        return SPEECH_ROLE_CODES
    role = ROLE_ALIASES.get(role, role)
    return (ROLE_CODE[role],)


def _filter_phrases(store, scored, terms, phrases, role_codes):
    ords = [o for _, _, o, _ in scored]
    rows = store.con.execute(
        load_sql("phrase_sessions"),
        {"ords": ords, "files": store.postings_for_buckets({bucket_of(terms[0])}), "term": terms[0],
         "roles": list(role_codes), "phrases": [p.lower() for p in phrases]},
    ).fetchall() if store.has("records") else []
    keep = {r[0] for r in rows}
    return [s for s in scored if s[2] in keep]


def _sessions(store: LiveStore, ords: list[int]) -> dict[int, dict]:
    if not ords:
        return {}
    cur = store.con.execute(
        "SELECT ord, harness, session_id, project, path, started, updated, title, agent_title, touched, kind, "
        "parent, agent, origin, messages FROM sessions WHERE ord IN (SELECT unnest(?))",
        [ords],
    )
    out = {}
    for r in cur.fetchall():
        (ord_, harness, sid, project, path, started, updated, title, agent_title, touched, kind, parent, agent,
         origin, messages) = r
        s = {"harness": harness, "id": sid, "project": project or "", "source": {"origin": origin or "local"}}
        if started:
            s["started"] = _iso(started)
        if updated:
            s["updated"] = _iso(updated)
        if path:
            s["path"] = path
        if title:
            s["title"] = title
            if agent_title:
                s["agent_title"] = True
        if touched:
            s["touched"] = list(touched)[:5]
        for k, v in (("kind", kind), ("parent", parent), ("agent", agent)):
            if v:
                s[k] = v
        out[ord_] = s
    return out


def _iso(dt) -> str:
    if isinstance(dt, datetime):
        return dt.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return str(dt)


def _snippets(store, ords, terms, phrases, role_codes, per_session: int = 3) -> dict[int, list[str]]:
    if not ords or not store.has("records"):
        return {}
    rows = store.con.execute(
        load_sql("snippet_records"),
        {"files": store.postings_for_buckets({bucket_of(t) for t in terms}), "terms": terms, "nterms": len(terms),
         "ords": ords, "roles": list(role_codes)},
    ).fetchall()
    out: dict[int, list[str]] = {}
    needles = [p.lower() for p in phrases] or terms
    for ord_, text in rows:
        lines = out.setdefault(ord_, [])
        if len(lines) >= per_session:
            continue
        line = _best_line(text, needles)
        if line and line not in lines:
            lines.append(line)
    return out


def _best_line(text: str, needles: list[str], width: int = 200) -> str:
    best, best_hits = "", -1
    for line in text.splitlines():
        low = line.lower()
        hits = sum(1 for n in needles if n in low)
        if hits > best_hits:
            best, best_hits = line, hits
            if hits == len(needles):
                break
    best = " ".join(best.split())
    if len(best) > width:
        low = best.lower()
        pos = min((low.find(n) for n in needles if n in low), default=0)
        start = max(0, pos - width // 3)
        best = ("…" if start else "") + best[start : start + width] + "…"
    return best
