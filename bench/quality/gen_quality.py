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
    fulltext: str = ""          # everything deja could index for it (searchable + commands, paths, edits, titles, …)


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


# Fixed text the harness writers (gen_corpus ClaudeWriter/CodexWriter) wrap tool calls in, by harness and step kind,
# and the canned reasoning lines Codex sessions get at random; part of a session's text for the paraphrase check.
WRAPPER_TEXT = {
    ("claude", "bash"): "Exit code Error:",
    ("claude", "edit"): "The file has been updated successfully. Error: <tool_use_error>File has not been read yet. "
                        "Read it first before writing to it.</tool_use_error>",
    ("claude", "write"): "File created successfully at:",
    ("claude", "todo"): "Todos have been modified successfully. Ensure that you continue to use the todo list to track "
                        "your progress. Please proceed with the current tasks if applicable",
    ("codex", "edit"): "*** Begin Patch *** Update File: *** End Patch Success. Updated the following files:",
    ("codex", "write"): "*** Begin Patch *** Add File: *** End Patch Success. Updated the following files:",
    ("codex", "*"): "Command: /bin/zsh -lc Chunk ID: Wall time: seconds Process exited with code Original token count: "
                    "Output: git status --short",
    ("codex", "reasoning"): "Let me check the output carefully. The failure is deterministic, good. I should run only the "
                            "affected package first. Need to confirm the fix doesn't break other callers.",
}


def full_text(turns: list[gc.Turn], title: str, p: gc.Project, s: gc.SessionInfo) -> str:
    """Everything deja might index for a session, and more: speech, thinking, titles, tool commands and output,
    paths, read/written file text, both sides of edits, todos, the harness's wrapper text, the project's name, org
    and path, the cwd and the branch. A paraphrase question must share no word with any of it."""
    out = [title, p.name, p.org, p.root, s.cwd, s.branch]
    kinds = set()
    for t in turns:
        out += [t.prompt, t.answer, t.title]
        for st in t.steps:
            kinds.add(st.kind)
            out += [st.remark, st.thinking, st.summary, st.cmd, st.desc, st.output, st.path, st.old, st.new,
                    st.content, st.ctx_before, st.ctx_after, *st.todos]
    if s.harness == "codex":
        kinds |= {"*", "reasoning"}
    out += [WRAPPER_TEXT.get((s.harness, k), "") for k in sorted(kinds)]
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
    _forms_cache.clear()
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
        plan.fulltext = full_text(turns, title, p, s)
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


# ----- the paraphrase check: a `paraphrase` question shares no content word (compared on Snowball stems) with
# anything its answer session holds (full_text). Words are runs of letters/digits, also split at `_`, `-`, camelCase
# and letter/digit boundaries (`client_max_body_size` -> client max body size, `parseJSON2Config` -> parse json 2
# config); words under 3 characters and function words are ignored; Han/kana runs count as overlapping bigrams.
# A session's words count in every form: as written, the English stem (deja stems ASCII words in English) and the
# stem in the session's own language.

MIN_CONTENT_LEN = 3
CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
ALNUM_RUN = re.compile(r"[^\W_]+")  # letters and digits; `_` and everything else separate
STEMMER_LANG = {"en": "english", "ru": "russian", "es": "spanish", "de": "german"}
STOPWORDS = {
    "en": set("""a about above after again against all also am an and any are aren around as at be because been before
        being below between both but by can cannot could couldn did didn do does doesn doing don done down during each
        either even ever every few for from further had hadn has hasn have haven having he her here hers herself him
        himself his how however i if in into is isn it its itself just me more most much my myself neither no
        nor not now of off on once only onto or other others our ours ourselves out over own per quite rather same
        she should shouldn since so some such than that the their theirs them themselves then there these they this
        those though through thus to too under until up upon us very via was wasn we were weren what whatever when
        whenever where whether which while who whom whose why will with within without won would wouldn yet you your
        yours yourself yourselves again still back anyway somehow something someone anything everything
        happen happened happens happening thing things stuff get gets got getting make makes made making""".split()),
    "ru": set("""и в во не что он на я с со как а то все всё она так его но да ты к у же вы за бы по только ее её мне было
        вот от меня еще ещё нет о об из ему теперь когда даже ну ли если уже или ни быть был была были будет него до вас
        там потом себя ничего ей может они тут где есть надо ней для мы тебя их чем сам без чего раз тоже себе под ж
        тогда кто этот того потому этого какой какая какие каким ним здесь этом один почти мой тем чтобы чтоб нее сейчас
        куда зачем всех никогда можно при два другой хоть после над больше тот через эти нас про всего них много три эту
        свою этой перед иногда том такой им более всегда между почему это наш наша наше наши нашего нашей нашу нашим
        вообще случилось произошло""".split()),
    "es": set("""de la que el en y a los las del se por un una unos unas para con no su sus al lo le les como más mas pero
        ya o u este esta estos estas ese esa esos esas eso esto sí si porque entre cuando muy sin sobre también me hasta
        hay donde quien quién desde todo todos toda todas nos durante uno ni contra otro otra otros otras ante ellos
        ellas e antes algunos algunas qué que yo él ella tanto mucho muchos poco nada cual cuál cómo como dónde cuándo
        fue fueron era eran es son ha han hemos había habían hizo hicimos hace estar estaba estaban está están nuestro
        nuestra nuestros nuestras pasó paso cosa""".split()),
    "de": set("""der die das den dem des und oder aber in im ins von vom zu zum zur mit sich auf für ist sind war waren
        wurde wurden werden wird nicht kein keine ein eine einer einem einen eines als auch es an am aus er sie hat
        haben hatte hatten dass daß nach bei um noch wie über so nur vor bis mehr durch man sein seine sei ihr ihre
        wir uns unser unsere unserem unseren unserer warum wieso weshalb was wer wo wann welche welcher welches gibt
        ob denn dann doch schon jetzt da dieser diese dieses immer mal ganz alle alles allen aller statt anstatt
        passiert""".split()),
}
ZH_STOP_BIGRAMS = {"为什", "什么", "怎么", "我们", "如何", "这个", "那个", "哪个", "是不", "不是", "时候", "的时"}


def _split_run(run: str) -> list[str]:
    """A letter/digit run's parts: split at camelCase (lower->Upper, end of an ACRONYM before a Capitalised word) and
    at letter/digit boundaries."""
    parts, cur = [], ""
    for i, ch in enumerate(run):
        if cur:
            prev = cur[-1]
            nxt = run[i + 1] if i + 1 < len(run) else ""
            boundary = (
                (prev.isdigit() != ch.isdigit())
                or (ch.isupper() and (prev.islower()))
                or (ch.isupper() and prev.isupper() and nxt.islower())
            )
            if boundary:
                parts.append(cur)
                cur = ""
        cur += ch
    if cur:
        parts.append(cur)
    return parts


def content_words(text: str, whole: bool = False) -> list[str]:
    """Lower-cased words of `text` (see above); `whole` also keeps each unsplit run (for session text)."""
    text = CJK_RUN.sub(" ", text)
    out = []
    for run in ALNUM_RUN.findall(text):
        parts = _split_run(run)
        if whole and len(parts) > 1:
            out.append(run.lower())
        out += [x.lower() for x in parts]
    return out


def cjk_bigrams(text: str) -> set[str]:
    out = set()
    for run in CJK_RUN.findall(text):
        out.update(run[i:i + 2] for i in range(len(run) - 1))
    return out


_stemmers: dict[str, object] = {}


def _stem(lang: str, words: list[str]) -> list[str]:
    algo = STEMMER_LANG.get(lang)
    if algo is None:
        return list(words)
    if algo not in _stemmers:
        import Stemmer  # PyStemmer, as deja itself uses
        _stemmers[algo] = Stemmer.Stemmer(algo)
    return _stemmers[algo].stemWords(words)


def session_forms(text: str, lang: str) -> set[str]:
    """Every form a session's words can match in: as written, English stem, own-language stem, CJK bigrams."""
    words = sorted(set(content_words(text, whole=True)))
    forms = set(words) | set(_stem("en", words))
    if lang != "en":
        forms |= set(_stem(lang, words))
    return forms | cjk_bigrams(text)


def question_stems(query: str, lang: str) -> dict[str, set[str]]:
    """A question's content words -> the forms they would match in: {word: {stems}} (CJK bigrams map to themselves)."""
    stop = STOPWORDS.get(lang, set()) | STOPWORDS["en"]
    out: dict[str, set[str]] = {}
    for w in content_words(query):
        if len(w) < MIN_CONTENT_LEN or w in stop:
            continue
        forms = set(_stem("en", [w]))
        if lang != "en":
            forms |= set(_stem(lang, [w]))
        out.setdefault(w, set()).update(forms)
    for bg in cjk_bigrams(query) - ZH_STOP_BIGRAMS:
        out[bg] = {bg}
    return out


def shared_words(query: str, lang: str, forms: set[str]) -> list[str]:
    """The question's content words whose stem appears among a session's forms."""
    return sorted(w for w, st in question_stems(query, lang).items() if st & forms)


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
        if q["kind"] == "paraphrase":
            problems += paraphrase_problems(q, answers)
    return problems


_forms_cache: dict[str, set[str]] = {}


def _forms(plan: Planned) -> set[str]:
    if plan.sid not in _forms_cache:
        _forms_cache[plan.sid] = session_forms(plan.fulltext, plan.lang)
    return _forms_cache[plan.sid]


PARAPHRASE_WORDS = (6, 16)


def paraphrase_problems(q: dict, answers: list[Planned]) -> list[str]:
    """A paraphrase question must share no content word (on stems) with any of its answer sessions' full text."""
    out = []
    if not question_stems(q["query"], q["lang"]):
        out.append(f"{q['id']}: paraphrase question has no content word")
    if q["lang"] != "zh":
        n = len(q["query"].split())
        if not PARAPHRASE_WORDS[0] <= n <= PARAPHRASE_WORDS[1]:
            out.append(f"{q['id']}: paraphrase question has {n} words (want {PARAPHRASE_WORDS[0]}-{PARAPHRASE_WORDS[1]})")
    for a in answers:
        shared = shared_words(q["query"], q["lang"], _forms(a))
        if shared:
            out.append(f"{q['id']}: paraphrase shares {shared} with answer session {a.sid}")
    return out


def overlap_stats(plans: list[Planned], questions: list[dict]) -> dict:
    """How much of each question's wording appears verbatim in its answer (lower = more paraphrase), and how
    many other sessions hold every one of its words somewhere ("rivals": bag-of-words can't separate them)."""
    by_sid = {p.sid: p for p in plans}
    vocab = {p.sid: set(_words(p.searchable)) for p in plans}
    out = {}
    for kind in qdsl.KINDS:
        fr, all_in, rivals, stem_fr = [], 0, 0, []
        for q in questions:
            if q["kind"] != kind:
                continue
            words = [w for w in _words(q["query"]) if w not in EN_STOP and len(w) > 1]
            if not words:
                continue
            answer = by_sid[q["answer_sessions"][0]]
            text = set(_words(answer.searchable))
            hit = sum(w in text for w in words)
            fr.append(hit / len(words))
            all_in += hit == len(words)
            rivals += sum(1 for p in plans if p.sid not in q["answer_sessions"] and all(w in vocab[p.sid] for w in words))
            qs = question_stems(q["query"], q["lang"])
            if qs:
                stem_fr.append(len(shared_words(q["query"], q["lang"], _forms(answer))) / len(qs))
        if fr:
            out[kind] = {"mean_word_overlap": round(sum(fr) / len(fr), 2), "all_words_present": all_in, "n": len(fr),
                         "rivals": round(rivals / len(fr), 1),
                         "mean_stem_overlap": round(sum(stem_fr) / len(stem_fr), 2) if stem_fr else 0.0}
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
              f" rivals {v['rivals']:<4} stem overlap with all the session holds {v['mean_stem_overlap']:.2f}")
    for p in st["problems"]:
        print(f"problem: {p}", file=sys.stderr)
    return 1 if st["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
