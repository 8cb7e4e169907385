#!/usr/bin/env python3
"""Labelled retrieval-quality corpus for deja: planted sessions, decoys, filler, and questions.

    python bench/quality/gen_quality.py --out /tmp/deja-quality --seed 1

writes, laid out exactly like the real stores (see bench/gen_corpus.py, whose line writers it reuses):

    OUT/claude/projects/<encoded-cwd>/<session-uuid>.jsonl
    OUT/codex/sessions/YYYY/MM/DD/rollout-YYYY-MM-DDThh-mm-ss-<uuid>.jsonl
    OUT/codex/history.jsonl
    OUT/questions.jsonl     one labelled question per line: {id, query, kind, answer_sessions, scenario, lang}
    OUT/sessions.jsonl      manifest: every session with its role (answer / decoy / filler), title, project, path

The facts live in hand-written scenarios (scenarios_*.py): each tells one piece of engineering
history in an answer session, worded differently from the questions that should find it, next to
decoy sessions in the same project that share its vocabulary but tell another story. Filler
sessions (bench/gen_corpus.py's planner) add the ordinary noise of a real store. Same --seed,
same bytes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from dataclasses import dataclass, field

sys.dont_write_bytecode = True  # importing bench/gen_corpus.py must not leave files outside bench/quality
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))  # bench/, for gen_corpus

import gen_corpus as gc  # noqa: E402
import qdsl  # noqa: E402
from scenarios_en1 import SCENARIOS as EN1  # noqa: E402
from scenarios_en2 import SCENARIOS as EN2  # noqa: E402
from scenarios_en3 import SCENARIOS as EN3  # noqa: E402
from scenarios_en4 import SCENARIOS as EN4  # noqa: E402
from scenarios_intl import SCENARIOS as INTL  # noqa: E402

ALL_SCENARIOS: list[qdsl.Scenario] = EN1 + EN2 + EN3 + EN4 + INTL
MIN_PER_KIND = 30
MIN_QUESTIONS = 250
MIN_MESSAGES, MAX_MESSAGES = 10, 60
DAY_MS = 86_400_000

# Short follow-ups for sessions held in another language (filler turns are English).
FOLLOWUPS = {
    "ru": [("ок, закоммить", "Закоммитил."), ("запусти все тесты перед коммитом", "Все тесты проходят, закоммитил.")],
    "zh": [("好的，提交吧", "已提交。"), ("提交前跑一下全部测试", "全部测试通过，已提交。")],
    "es": [("vale, haz el commit", "Hecho, cambios confirmados."), ("ejecuta todos los tests antes del commit", "Todos los tests pasan; commit hecho.")],
    "de": [("ok, committe das", "Erledigt, ist committet."), ("lass vor dem Commit alle Tests laufen", "Alle Tests grün, committet.")],
}


@dataclass
class Planned:
    """A session to write: its project, turns (qdsl.Turn or 'filler'), role and metadata."""
    role: str                   # answer | decoy | filler
    project: str
    turns: list                 # qdsl.Turn
    scenario: str = ""
    lang: str = "en"
    when: tuple | None = None
    qs: list = field(default_factory=list)     # (kind, query, scope)
    sid: str = ""
    title: str = ""
    searchable: str = ""        # text deja indexes by default (speech + tool output), for self-checks


# --------------------------------------------------------------------------- projects

def build_projects(g: gc.Gen, n_extra: int) -> dict[str, gc.Project]:
    projects = {}
    for name, (kind, root, org) in qdsl.PROJECTS.items():
        projects[name] = gc.Project(g, kind, name, root, org)
    for p in gc.make_projects(g, n_extra):
        if p.name in projects or any(p.root == q.root for q in projects.values()):
            continue
        projects[p.name] = p
    return projects


# --------------------------------------------------------------------------- turns

class QPlanner(gc.Planner):
    """gen_corpus's planner without the canned root causes and decisions that tell a scenario's story.

    Filler answers end with a stock cause ("money was carried as a float … off by a cent", "iterated over a
    map while another goroutine wrote to it …") or decision. Several of those would make a filler session in
    the same project a genuine answer to a scenario's question, so a labelled "miss" would really be a hit.
    The remaining ones share vocabulary with scenarios without answering them, which is the noise we want.
    """

    def cause(self) -> str:
        g, p = self.g, self.p
        fn, a, b = p.fn(g), p.noun(g), p.noun(g)
        return g.choice([
            f"`{fn}` read `{b}_id` before the migration had backfilled it, so every {a} created before the backfill came back as None",
            f"the retry loop reused the same `{a}` context after it had been cancelled, so every retry failed immediately with `context canceled`",
            f"the cache key for `{fn}` didn't include the tenant id, so {a}s from one tenant leaked into another tenant's response",
            f"`{fn}` swallowed the error from `{p.fn(g)}` and returned an empty {a} list, which the caller treated as 'nothing to do'",
            f"two workers could claim the same {a} because the `SELECT` wasn't `FOR UPDATE SKIP LOCKED`",
            f"the {a} fixture was module-scoped, so state from the previous test leaked into `{p.test_name(g)}`",
            f"the Dockerfile copied the source before installing dependencies, so every {b} change busted the layer cache",
        ])

    def decision(self) -> str:
        g, p = self.g, self.p
        a = p.noun(g)
        return g.choice([
            f"We switched from polling the {a} table to `LISTEN/NOTIFY`, which removes the 5s lag.",
            f"We switched the {a} job to incremental partitions keyed by `event_date` instead of full reloads.",
            f"Decided to keep the old `{p.fn(g)}` signature and add an optional parameter, so existing callers don't change.",
            f"We moved {a} validation into the pydantic model so the API and the worker share one definition.",
            "I pinned the provider to `~> 5.40` instead of upgrading the whole module; the 6.x migration deserves its own PR.",
            f"We switched from `requests` to `httpx` with an explicit 10s timeout for the {a} client.",
        ])


def _sub(p: gc.Project, s: str | None) -> str:
    return (s or "").replace("{root}", p.root)


def beat_step(g: gc.Gen, pl: QPlanner, p: gc.Project, b: qdsl.Beat, english: bool) -> gc.Step:
    say = _sub(p, b.say)
    if b.kind == "run":
        st = pl.bash(_sub(p, b.a), _sub(p, b.b), b.code)
        st.remark = say or (st.remark if english else "")
        return st
    if b.kind == "read":
        if b.b is None:
            st = pl.read_step(b.a)
        else:
            text = _sub(p, b.b).rstrip("\n")
            start = 1 if g.random() < 0.4 else g.randrange(2, 160)
            n = text.count("\n") + 1
            st = gc.Step("read", path=b.a, content=text, start=start, total=start + n - 1 + g.randrange(0, 200))
        st.remark = say or (pl.remark("read", b.a) if english else "")
        return st
    if b.kind == "edit":
        st = gc.Step("edit", path=b.a, old=_sub(p, b.b), new=_sub(p, b.c), start=g.randrange(5, 240),
                     ctx_before="", ctx_after="")
        st.remark = say or (pl.remark("edit", b.a) if english else "")
        return st
    if b.kind == "write":
        st = gc.Step("write", path=b.a, content=_sub(p, b.b))
        st.remark = say or (g.choice(["", f"Creating `{b.a}`."]) if english else "")
        return st
    if b.kind == "grep":
        where = g.choice(p.dirs + ["."])
        st = gc.Step("grep", cmd=f'rg -n "{b.a}" {where}', output=_sub(p, b.b), content=b.a)
        st.remark = say or (pl.remark("grep", b.a) if english else "")
        return st
    raise ValueError(f"unknown beat kind {b.kind!r}")


def planted_turn(g: gc.Gen, pl: gc.Planner, p: gc.Project, t: qdsl.Turn, english: bool) -> gc.Turn:
    steps = [beat_step(g, pl, p, b, english) for b in t.beats]
    # ordinary look-around calls an agent makes between the interesting ones
    for _ in range(g.choice([0, 1, 1, 2, 2, 3])):
        noise = pl.quick_step() if g.random() < 0.75 else pl.read_step()
        if not english:
            noise.remark = ""
        steps.insert(g.randrange(0, len(steps) + 1), noise)
    for st in steps:
        if g.random() < 0.25:
            st.thinking = pl.thinking() if (english and st.kind != "bash") else gc.self_thought(g)
    return gc.Turn(_sub(p, t.user), steps, _sub(p, t.answer), t.title)


def filler_turn(g: gc.Gen, pl: gc.Planner, first: bool) -> gc.Turn:
    return pl.turn(first=first, max_steps=g.randrange(3, 9))


def followup_turn(g: gc.Gen, pl: gc.Planner, lang: str) -> gc.Turn:
    prompt, answer = g.choice(FOLLOWUPS[lang])
    steps = pl.git_steps()
    for st in steps:
        st.remark = ""
    return gc.Turn(prompt, steps, answer, "")


def est_messages(harness: str, t: gc.Turn) -> int:
    """Upper bound of the message lines a turn renders to (gen_corpus.is_message_line)."""
    n = 2
    for st in t.steps:
        n += 2 + bool(st.remark) + (bool(st.thinking) if harness == "claude" else 0)
    return n


def searchable_text(turns: list[gc.Turn]) -> str:
    out = []
    for t in turns:
        out += [t.prompt, t.answer]
        for st in t.steps:
            out += [st.remark, st.output if st.kind in ("bash", "grep") else "", st.content if st.kind == "read" else ""]
    return "\n".join(x for x in out if x)


# --------------------------------------------------------------------------- sessions

def start_ms(g: gc.Gen, when: tuple | None) -> int:
    if when:
        lo, hi = when
        day = g.randrange(lo, hi + 1) if hi > lo else lo
    else:
        day = g.randrange(1, 365)
    midnight = (gc.WINDOW_END_MS // DAY_MS - day) * DAY_MS
    return midnight + g.randrange(7 * 3600, 21 * 3600) * 1000 + g.randrange(1000)


def new_info(g: gc.Gen, harness: str, p: gc.Project, t: int) -> gc.SessionInfo:
    cwd = p.root
    if harness == "claude" and g.random() < 0.08:
        cwd = f"{p.root}/{g.choice(p.dirs)}"
    branch = g.choice(p.branches) if g.random() < 0.6 else "main"
    if harness == "claude":
        return gc.SessionInfo("claude", p, g.uuid4(), cwd, branch, gc.version_at(gc.CLAUDE_VERSIONS, t),
                              g.choice(gc.CLAUDE_MODELS), t)
    return gc.SessionInfo("codex", p, g.uuid7(t), cwd, branch, gc.version_at(gc.CODEX_VERSIONS, t),
                          g.choice(gc.CODEX_MODELS), t)


def compose(g: gc.Gen, harness: str, pl: gc.Planner, p: gc.Project, plan: Planned) -> list[gc.Turn]:
    """The gc.Turns of a session: planted turns plus filler up to a realistic message count."""
    english = plan.lang == "en"
    target = g.randrange(14, 52)
    budget = MAX_MESSAGES - 3
    if plan.role == "filler":
        turns = [filler_turn(g, pl, first=True)]
        while sum(est_messages(harness, t) for t in turns) > budget and turns[0].steps:
            turns[0].steps.pop()
    else:
        turns = [planted_turn(g, pl, p, t, english) for t in plan.turns]
        # keep the planted part inside the budget: drop noise calls first (never planted ones)
        while sum(est_messages(harness, t) for t in turns) > budget:
            for t in turns:
                noisy = [i for i, st in enumerate(t.steps) if st.kind in ("bash", "read") and not st.remark and st.thinking]
                if noisy:
                    t.steps.pop(noisy[-1])
                    break
            else:
                for t in turns:
                    for st in t.steps:
                        st.thinking = ""
                        if len(st.remark) < 40:
                            st.remark = ""
                break
        if english and g.random() < 0.3:
            pre = filler_turn(g, pl, first=True)
            if sum(est_messages(harness, t) for t in turns) + est_messages(harness, pre) <= budget:
                turns.insert(0, pre)
        if not english:
            # no English filler in a Russian/Chinese/... session: pad with a follow-up and quiet tool calls
            planted = list(turns)
            if g.random() < 0.6:
                fu = followup_turn(g, pl, plan.lang)
                if sum(est_messages(harness, t) for t in turns) + est_messages(harness, fu) <= budget:
                    turns.append(fu)
            goal = g.randrange(13, 24)
            while sum(est_messages(harness, t) for t in turns) + 2 <= min(goal, budget):
                noise = pl.quick_step() if g.random() < 0.6 else pl.read_step()
                noise.remark = ""
                t = g.choice(planted)
                t.steps.insert(g.randrange(0, len(t.steps) + 1), noise)
    if english:
        for _ in range(6):
            total = sum(est_messages(harness, t) for t in turns)
            if total >= target:
                break
            more = filler_turn(g, pl, first=False)
            if total + est_messages(harness, more) <= budget:
                turns.append(more)
    return turns


def render(g: gc.Gen, s: gc.SessionInfo, turns: list[gc.Turn]) -> tuple[bytes, int, str]:
    """-> (file bytes, message count, title deja is expected to show)."""
    w = gc.WRITERS[s.harness](g, s)
    lines = w.preamble()
    title = ""
    for i, t in enumerate(turns):
        lines += w.turn(t)
        if i == 0 and s.harness == "claude" and t.title and g.random() < 0.85:
            title = t.title
            lines.append({"type": "ai-title", "sessionId": s.sid, "aiTitle": title})
    lines += w.trailer(title, turns[-1].prompt)
    msgs = sum(gc.is_message_line(s.harness, d) for d in lines)
    if s.harness == "codex":
        msgs -= 1  # the AGENTS.md/environment preamble turn, which deja strips
    data = b"\n".join(gc.dumps(d) for d in lines) + b"\n"
    return data, msgs, title or first_line(turns[0].prompt)


def first_line(text: str) -> str:
    line = next((ln for ln in text.splitlines() if ln.strip()), "")
    return line[:100]


# --------------------------------------------------------------------------- plan

def plan_sessions(g: gc.Gen, projects: dict[str, gc.Project], total: int) -> list[Planned]:
    plans: list[Planned] = []
    for sc in ALL_SCENARIOS:
        main = Planned("answer", sc.project, sc.turns, sc.key, sc.lang, sc.when, [])
        plans.append(main)
        extra = [Planned("answer", sc.project, turns, sc.key, sc.lang, sc.when, []) for turns in sc.also]
        plans += extra
        for q in sc.qs:
            kind, query = q[0], q[1]
            scope = q[2] if len(q) > 2 else ""
            main.qs.append((kind, query, [main] + (extra if scope == "all" else [])))
        for d in sc.decoys:
            dp = Planned("decoy", d.project or sc.project, d.turns, sc.key + "~decoy",
                         sc.lang, d.when, [])
            dp.qs = [(q[0], q[1], [dp]) for q in d.qs]
            plans.append(dp)
    names = list(projects)
    weights = [3.0 if n in qdsl.PROJECTS else 1.0 for n in names]
    while len(plans) < total:
        plans.append(Planned("filler", g.choices(names, weights=weights)[0], []))
    order = list(range(len(plans)))
    g.shuffle(order)  # write order (and ids) must not follow scenario order
    return [plans[i] for i in order]


def generate(out: str, seed: int = 1, total: int = 300, progress: bool = True) -> dict:
    g = gc.Gen(seed)
    projects = build_projects(g, 10)
    plans = plan_sessions(g, projects, total)
    history: list[bytes] = []
    manifest = []
    msg_counts = []
    for plan in plans:
        p = projects[plan.project]
        harness = "claude" if g.random() < gc.CLAUDE_SHARE else "codex"
        t0 = start_ms(g, plan.when)
        s = new_info(g, harness, p, t0)
        pl = QPlanner(g, p, s.branch)
        turns = compose(g, harness, pl, p, plan)
        data, msgs, title = render(g, s, turns)
        path = gc.session_path(out, harness, s, t0)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
        os.utime(path, (s.t / 1000, s.t / 1000))
        if harness == "codex":
            history += [gc.dumps({"session_id": s.sid, "ts": t0 // 1000 + k * 60, "text": t.prompt})
                        for k, t in enumerate(turns)]
        plan.sid, plan.title = s.sid, title
        plan.searchable = searchable_text(turns)
        msg_counts.append(msgs)
        manifest.append({"id": s.sid, "harness": harness, "project": plan.project, "cwd": s.cwd,
                         "path": os.path.relpath(path, out), "title": title, "role": plan.role,
                         "scenario": plan.scenario, "lang": plan.lang, "started": gc.iso(t0), "messages": msgs})
    if history:
        with open(os.path.join(out, "codex", "history.jsonl"), "wb") as f:
            f.write(b"\n".join(history) + b"\n")

    questions = []
    seen_ids: dict[str, int] = {}
    # questions in scenario order (stable, readable), ids from scenario key + kind
    by_scenario: dict[str, list[Planned]] = {}
    for plan in plans:
        by_scenario.setdefault(plan.scenario.split("~")[0], []).append(plan)
    for sc in ALL_SCENARIOS:
        group = by_scenario.get(sc.key, [])
        ordered = [x for x in group if x.role == "answer" and x.scenario == sc.key and x.qs] + \
                  [x for x in group if x.scenario != sc.key and x.qs]
        for plan in ordered:
            for kind, query, answers in plan.qs:
                base = f"{sc.key}{'~decoy' if plan.scenario != sc.key else ''}.{kind}"
                seen_ids[base] = seen_ids.get(base, 0) + 1
                qid = base if seen_ids[base] == 1 else f"{base}{seen_ids[base]}"
                questions.append({"id": qid, "query": query, "kind": kind,
                                  "answer_sessions": [a.sid for a in answers],
                                  "scenario": sc.key, "lang": plan.lang})
    with open(os.path.join(out, "questions.jsonl"), "w", encoding="utf-8") as f:
        for q in questions:
            f.write(json.dumps(q, ensure_ascii=False) + "\n")
    with open(os.path.join(out, "sessions.jsonl"), "w", encoding="utf-8") as f:
        for m in manifest:
            f.write(json.dumps(m, ensure_ascii=False) + "\n")

    problems = self_check(plans, questions, msg_counts)
    kinds = {k: sum(q["kind"] == k for q in questions) for k in qdsl.KINDS}
    return {"sessions": len(plans), "claude": sum(m["harness"] == "claude" for m in manifest),
            "codex": sum(m["harness"] == "codex" for m in manifest),
            "roles": {r: sum(m["role"] == r for m in manifest) for r in ("answer", "decoy", "filler")},
            "questions": len(questions), "kinds": kinds,
            "messages": (min(msg_counts), sorted(msg_counts)[len(msg_counts) // 2], max(msg_counts)),
            "overlap": overlap_stats(plans, questions), "problems": problems}


# --------------------------------------------------------------------------- checks

WORD = re.compile(r"[\w]+", re.UNICODE)
EN_STOP = set("""a an and are as at be been but by can did do does for from had has have how i if in into is it its
of on or our so that the their them then there these they this to up was we were what when where which who why will
with you your us me my about after again all also any back before did do get got just last month week year ago
couple few other some there spring summer early this""".split())


def _words(text: str) -> list[str]:
    return [w.lower() for w in WORD.findall(text)]


def self_check(plans: list[Planned], questions: list[dict], msg_counts: list[int]) -> list[str]:
    problems = []
    by_sid = {p.sid: p for p in plans}
    kinds = {k: sum(q["kind"] == k for q in questions) for k in qdsl.KINDS}
    for k, n in kinds.items():
        if n < MIN_PER_KIND:
            problems.append(f"only {n} questions of kind {k} (want >= {MIN_PER_KIND})")
    if len(questions) < MIN_QUESTIONS:
        problems.append(f"only {len(questions)} questions (want >= {MIN_QUESTIONS})")
    if len({q["id"] for q in questions}) != len(questions):
        problems.append("duplicate question ids")
    bad_msgs = [n for n in msg_counts if not MIN_MESSAGES <= n <= MAX_MESSAGES]
    if bad_msgs:
        problems.append(f"{len(bad_msgs)} sessions outside {MIN_MESSAGES}-{MAX_MESSAGES} messages: {sorted(bad_msgs)[:5]}…")
    others = [p for p in plans]
    for q in questions:
        answers = [by_sid[s] for s in q["answer_sessions"]]
        if q["kind"] == "phrase":
            phrase = q["query"].strip().strip('"').lower()
            for a in answers:
                if phrase not in a.searchable.lower():
                    problems.append(f"{q['id']}: phrase not in answer session text: {phrase!r}")
            leaks = [p.sid for p in others if p.sid not in q["answer_sessions"] and phrase in p.searchable.lower()]
            if leaks:
                problems.append(f"{q['id']}: phrase also appears in {len(leaks)} non-answer session(s)")
        if q["kind"] == "identifier":
            for a in answers:
                text = set(_words(a.searchable))
                missing = [w for w in _words(q["query"]) if w not in text]
                if missing:
                    problems.append(f"{q['id']}: identifier parts {missing} not in answer session text")
    return problems


def overlap_stats(plans: list[Planned], questions: list[dict]) -> dict:
    """How much of each question's wording appears verbatim in its answer (lower = more paraphrase), and how
    many other sessions hold every one of its words somewhere ("rivals": bag-of-words can't separate them)."""
    by_sid = {p.sid: p for p in plans}
    vocab = {p.sid: set(_words(p.searchable)) for p in plans}
    out = {}
    for kind in qdsl.KINDS:
        fr, all_in, rivals = [], 0, 0
        for q in questions:
            if q["kind"] != kind:
                continue
            words = [w for w in _words(q["query"]) if w not in EN_STOP and len(w) > 1]
            if not words:
                continue
            text = set(_words(by_sid[q["answer_sessions"][0]].searchable))
            hit = sum(w in text for w in words)
            fr.append(hit / len(words))
            all_in += hit == len(words)
            rivals += sum(1 for p in plans if p.sid not in q["answer_sessions"] and all(w in vocab[p.sid] for w in words))
        if fr:
            out[kind] = {"mean_word_overlap": round(sum(fr) / len(fr), 2), "all_words_present": all_in, "n": len(fr),
                         "rivals": round(rivals / len(fr), 1)}
    return out


# --------------------------------------------------------------------------- CLI

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="output directory (gets claude/, codex/, questions.jsonl, sessions.jsonl)")
    ap.add_argument("--seed", type=int, default=1, help="random seed (default 1); same seed = same bytes")
    ap.add_argument("--sessions", type=int, default=300, help="total sessions incl. filler (default 300)")
    ap.add_argument("--force", action="store_true", help="write even if OUT already holds a corpus")
    args = ap.parse_args(argv)
    for sub in ("claude", "codex"):
        d = os.path.join(args.out, sub)
        if os.path.isdir(d) and os.listdir(d) and not args.force:
            ap.error(f"{d} is not empty (use --force, or pick a fresh --out)")
    os.makedirs(args.out, exist_ok=True)
    st = generate(args.out, args.seed, args.sessions)
    lo, med, hi = st["messages"]
    print(f"wrote {st['sessions']} sessions ({st['claude']} claude, {st['codex']} codex; "
          f"{st['roles']['answer']} answer, {st['roles']['decoy']} decoy, {st['roles']['filler']} filler), "
          f"messages/session min {lo} median {med} max {hi}")
    print(f"wrote {st['questions']} questions: " + ", ".join(f"{k} {n}" for k, n in st["kinds"].items()))
    print("question words found verbatim in the answer session (lower = more paraphrase), and rivals "
          "(other sessions holding every question word, mean):")
    for k, v in st["overlap"].items():
        print(f"  {k:<13} overlap {v['mean_word_overlap']:.2f}, every word present in {v['all_words_present']:>2}/{v['n']:<3}"
              f" rivals {v['rivals']}")
    for p in st["problems"]:
        print(f"problem: {p}", file=sys.stderr)
    return 1 if st["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
