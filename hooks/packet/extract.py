"""What a compaction-recovery packet holds (seeds 000/001).

``extract`` turns the messages a reader returned for the live transcript's
bounded tail (plus its first 64 KiB) into a small JSON-serialisable dict:

    {"v": 1, "session": str, "harness": str,
     "objective": Item | None,        # newest user turn carrying an instruction
     "answer": Item | None,           # the newest reply after it that only answered a question ("b", "yes")
     "first_request": Item | None,    # only beside a step request ("Next: T13")
     "keep": [KeepItem],              # keep until closed (keep.py)
     "instructions": [Item],          # standing instructions (keep.py)
     "verifications": [VerifyItem],   # newest first
     "open": [Item], "conflicts": [Item], "conclusions": [Item],  # newest first
     "files": [Item],                 # most recent distinct paths
     "omitted": {category | "records" | "bytes": int}}   # only non-zero counts

    Item       = {"text", "session", "harness", "role", "ts"}   # ts: epoch ms or None
    KeepItem   = Item + {"kind": awaiting|open|verdict|recheck, "age": int}
    VerifyItem = Item + {"status": passed|failed|unknown, "exit": int | None}

Everything is found by shape, never by a model: a carry-on turn ("continue",
"продолжай") is not an objective, nor is a reply that only picks an option or
agrees ("b", "2", "ok, do it": stages.replies), which is kept beside it; an open item is a line that *opens* with its
label ("Gap: …", "Осталось: …"); a verification's status is the harness's exit
code, else the output recorded after it judged by ``stages.failures`` (the
rule `deja friction` uses), else unknown.

Limits: the newest 64 useful records feed the per-category lists (at most 8
items each); all item text shares 32 KiB; ``dumps(packet)`` stays within
MAX_STORED less STORED_RESERVE, the room capture.py's own fields need. What a
limit dropped is counted in ``omitted``.
"""

from __future__ import annotations

import json
import re

from deja.hooks.packet import keep as K
from deja.hooks.packet.keep import item, key, norm, prose_lines, role_of, text_of, tidy
from deja.stages.display import clip_bytes
from deja.stages.failures import failure_line
from deja.stages.outcome import decision_line, without_lead_in
from deja.stages.replies import ASK_TOOLS, is_answer

SCHEMA = 1
MAX_STORED = 24 * 1024
# capture.py adds workspace, capture time, repository fingerprint and transcript
# size after extract; the items leave them this much of MAX_STORED.
STORED_RESERVE = 2 * 1024
MAX_RECORDS = 64
MAX_TEXT = 32 * 1024
MAX_ITEMS = 8

OBJECTIVE_BYTES = 800
REQUEST_BYTES = 400
ANSWER_BYTES = 80
ITEM_BYTES = 300
COMMAND_BYTES = 200
PATH_BYTES = 200
OUTPUT_HEAD_LINES, OUTPUT_TAIL_LINES = 100, 400  # of one tool output; summaries sit at the end

CATEGORIES = ("verifications", "open", "conflicts", "conclusions", "files")
# The order packet text is spent in, and the reverse of the order MAX_STORED trims in.
PRIORITY = ("keep", "instructions", "objective", "answer", "first_request") + CATEGORIES


# --------------------------------------------------------------------------- public


def extract(messages, *, session_id: str, harness: str, head=None, previous: dict | None = None) -> dict:
    """The packet for one capture. Never raises: a failure yields an empty packet
    with ``omitted["error"] = 1``."""
    session = K.norm(str(session_id or ""))[:200]
    harness = K.norm(str(harness or ""))[:40]
    try:
        return _extract(messages, session, harness, head, previous if isinstance(previous, dict) else {})
    except Exception:  # the hook must not fail on a transcript it cannot read
        return _empty(session, harness, {"error": 1})


def dumps(packet: dict) -> str:
    """The packet as it is stored; MAX_STORED is measured on its UTF-8 bytes."""
    return json.dumps(packet, ensure_ascii=False, separators=(",", ":"))


def stored_size(packet: dict) -> int:
    return len(dumps(packet).encode("utf-8"))


_CARRY_WORDS = frozenset(
    "continue continuing proceed go on ahead keep going carry resume next ok okay k kk yes yep yeah y sure "
    "please pls plz thanks thank you ty thx great good fine cool nice perfect alright right do it lgtm sounds "
    "hi hello hey again now then and so well done "
    "продолжай продолжайте продолжи продолжить продолжим дальше далее давай давайте ок окей да ага угу го "
    "поехали вперёд вперед хорошо ладно отлично спасибо делай сделай жги привет ну так еще ещё "
    "お願いします 続けて 続けてください 進めて 進めてください はい 继续 好的 好 可以 是 谢谢 謝謝 感谢 感謝 感謝您 同意 行 嗯 对 是的 對".split()
)
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?")
_BARE_SLASH = re.compile(r"^/[\w:.-]+$")
# Notices Claude Code files as user turns.
_NOISE = re.compile(r"\[Request interrupted by user[^\]\n]{0,40}\]|^Unknown skill: \S+\s*$", re.M)


def carries_request(text: str) -> bool:
    """True when a user turn asks for something: not only "continue"/"ok"/"продолжай",
    not an answer to a question ("b", "option 2", "sounds good"), not bare numbers
    or punctuation, not only harness wrappers."""
    s = norm(_NOISE.sub(" ", K.strip_harness(text or "")))
    if _BARE_SLASH.match(s):
        return False  # "/usage", "/clear": the harness's own commands
    words = _WORD.findall(s.casefold())
    if not any(any(c.isalpha() for c in w) for w in words):
        return False
    return not all(w in _CARRY_WORDS for w in words) and not is_answer(s)


_STEP_WORDS = frozenset(
    "next step steps do go to now then the task phase stage item part please start move on let's lets let "
    "continue proceed with and ok okay run implement work begin "
    "следующий следующая следующее следующую шаг шага задача задачу задачи этап пункт переходи перейди к на "
    "давай теперь дальше делай сделай начни выполни".split()
)
_STEP_ID = re.compile(r"^#?[^\W\d_]{0,4}-?\d{1,4}(?:\.\d{1,3})*[a-z]?$", re.I)
_STEP_CUE = re.compile(r"\b(?:next|step|task|phase|stage|шаг\w*|задач\w*|этап\w*|следующ\w*|пункт\w*)\b", re.I)


def is_step(text: str) -> bool:
    """A request that names a step rather than saying what the work is: "Next: T13",
    "do step 4", "T13", "следующий шаг"."""
    words = _WORD.findall(norm(text or "").casefold().replace("#", " #"))
    if not words or len(words) > 6:
        return False
    ids = [w for w in words if _STEP_ID.match(w) and any(c.isdigit() for c in w)]
    rest = [w for w in words if w not in ids]
    if not all(w in _STEP_WORDS for w in rest):
        return False
    return bool(ids) or bool(_STEP_CUE.search(" ".join(words)))


# --------------------------------------------------------------------------- the packet


def _empty(session: str, harness: str, omitted: dict | None = None) -> dict:
    return {
        "v": SCHEMA, "session": session, "harness": harness,
        "objective": None, "answer": None, "first_request": None,
        "keep": [], "instructions": [],
        "verifications": [], "open": [], "conflicts": [], "conclusions": [], "files": [],
        "omitted": dict(omitted or {}),
    }


def _extract(messages, session: str, harness: str, head, previous: dict) -> dict:
    msgs = _combine(head, messages)
    omitted: dict[str, int] = {}
    packet = _empty(session, harness)

    packet["keep"] = K.carry_keep(msgs, previous.get("keep"), session, harness, counts=omitted)
    packet["instructions"] = K.carry_instructions(msgs, previous.get("instructions"), session, harness, counts=omitted)

    obj_i = _newest_request(msgs)
    if obj_i is not None:
        packet["objective"] = _request_item(msgs[obj_i], session, harness, OBJECTIVE_BYTES)
        ans_i = _newest_answer(msgs, obj_i)
        if ans_i is not None:
            packet["answer"] = _request_item(msgs[ans_i], session, harness, ANSWER_BYTES)
        if is_step(_request_text(text_of(msgs[obj_i]))):
            packet["first_request"] = _first_request(msgs, obj_i, head is not None, previous, session, harness)

    cats, records_cut = _categories(msgs, session, harness, omitted)
    if records_cut:
        omitted["records"] = records_cut
    packet.update(cats)

    _spend_text(packet, omitted)
    packet["omitted"] = omitted
    _fit_stored(packet)
    return packet


def _combine(head, messages) -> list:
    """Head then tail, in file order, each record once (the two reads may overlap)."""
    out = []
    seen: set = set()
    for m in list(head or []) + list(messages or []):
        if not role_of(m):
            continue
        k = (getattr(m, "byte_offset", 0), role_of(m), text_of(m))
        if k in seen:
            continue
        seen.add(k)
        out.append(m)
    return out


# --------------------------------------------------------------------------- objective


def _request_text(text: str) -> str:
    return norm(_NOISE.sub(" ", K.strip_harness(text)))


def _is_request(m) -> bool:
    return (role_of(m) == "user" and getattr(m, "tool", None) not in ASK_TOOLS
            and carries_request(text_of(m)[: K.HARNESS_SCAN_CHARS]))


def _is_answer(m) -> bool:
    """A user turn that answered a question: picked in the agent's question tool,
    or typed as an option or a yes."""
    if role_of(m) != "user":
        return False
    return getattr(m, "tool", None) in ASK_TOOLS or is_answer(_request_text(text_of(m)[: K.HARNESS_SCAN_CHARS]))


def _newest_request(msgs: list) -> int | None:
    """The newest user turn that asks for something. A turn that only lays down
    rules ("never touch legacy/") is listed with the standing instructions, so
    the task before it stays the objective; if rules are all there is, they are."""
    rules_only = None
    for i in range(len(msgs) - 1, -1, -1):
        if _is_request(msgs[i]):
            if not _only_rules(text_of(msgs[i])):
                return i
            if rules_only is None:
                rules_only = i
    return rules_only


def _newest_answer(msgs: list, obj_i: int) -> int | None:
    """The newest user turn after the objective that only answered a question."""
    for i in range(len(msgs) - 1, obj_i, -1):
        if _is_answer(msgs[i]):
            return i
    return None


def _only_rules(text: str) -> bool:
    sentences = [x for line in K.prose_lines(K.strip_harness(text)) for x in K._SENTENCE.split(K.tidy(line)) if x.strip()]
    return bool(sentences) and all(K.is_instruction(x) for x in sentences)


def _request_item(m, session: str, harness: str, limit: int) -> dict:
    return item(_request_text(text_of(m)), m, session, harness, limit)


def _first_request(msgs: list, obj_i: int, had_head: bool, previous: dict, session: str, harness: str) -> dict | None:
    """The session's first request, shown beside a step request.

    With the head read it is the first request there; without it, a previous
    capture's (which may have had the head) beats the oldest turn of the tail.
    """
    prev = previous.get("first_request")
    if not had_head and isinstance(prev, dict) and isinstance(prev.get("text"), str) and prev["text"].strip():
        return {f: prev.get(f) for f in ("text", "session", "harness", "role", "ts")}
    for i, m in enumerate(msgs):
        if i >= obj_i:
            return None  # the step is the first request: nothing to add
        if _is_request(m):
            return _request_item(m, session, harness, REQUEST_BYTES)
    return None


# --------------------------------------------------------------------------- categories


def _categories(msgs: list, session: str, harness: str, omitted: dict) -> tuple[dict, int]:
    """Per-category lists from the newest MAX_RECORDS useful records: records newest
    first, one record's items in reading order (its last lines win a full category)."""
    outputs = _command_outputs(msgs)
    lists: dict[str, list[dict]] = {c: [] for c in CATEGORIES}
    seen: dict[str, set] = {c: set() for c in CATEGORIES}
    useful = 0
    cut = 0
    for i in range(len(msgs) - 1, -1, -1):
        found = _record_items(msgs[i], i, outputs, session, harness)
        fresh: dict[str, list[dict]] = {}
        for c, it in found:
            k = _dedupe_key(c, it)
            if k not in seen[c]:
                seen[c].add(k)
                fresh.setdefault(c, []).append(it)
        if not fresh:
            continue
        if useful >= MAX_RECORDS:
            cut += 1
            continue
        useful += 1
        for c, items in fresh.items():
            room = MAX_ITEMS - len(lists[c])
            take = items[-room:] if room > 0 else []
            if len(take) < len(items):
                omitted[c] = omitted.get(c, 0) + len(items) - len(take)
            lists[c].extend(take)
    return lists, cut


def _dedupe_key(category: str, it: dict) -> str:
    return key(it["text"])


def _record_items(m, i: int, outputs: dict, session: str, harness: str) -> list[tuple[str, dict]]:
    """(category, item) pairs one record yields, in reading order."""
    role = role_of(m)
    text = text_of(m)
    if not text.strip():
        return []
    out: list[tuple[str, dict]] = []
    if role == "command":
        v = _verification(m, outputs.get(i), session, harness)
        if v:
            out.append(("verifications", v))
    elif role in ("files", "edit"):
        for p in _paths(role, text):
            out.append(("files", item(p, m, session, harness, PATH_BYTES)))
    elif role in ("user", "assistant", "summary"):
        lines = list(prose_lines(K.strip_harness(text, K.SCAN_CHARS) if role == "user" else text))
        for cat, t in _labelled(lines):
            out.append((cat, item(t, m, session, harness, ITEM_BYTES)))
        if role == "assistant":
            for t in _conclusions(lines):
                out.append(("conclusions", item(t, m, session, harness, ITEM_BYTES)))
    return out


# ---- open items and conflicts: a line that opens with its label

OPEN_LABELS = (
    r"gaps?", r"still\s+open", r"open", r"open\s+(?:items?|questions?|issues?|points?)", r"todo", r"to\s*do",
    r"remaining", r"remains", r"not\s+(?:yet\s+)?done", r"pending", r"unresolved", r"left\s+to\s+do", r"missing",
    r"осталось", r"остаётся", r"остается", r"не\s+сделано", r"не\s+готово", r"открыто", r"открытые\s+вопросы",
    r"открытый\s+вопрос", r"пробелы?", r"не\s+решено", r"недоделано", r"в\s+работе",
)
CONFLICT_LABELS = (
    r"conflicts?", r"contradictions?", r"blocked", r"blockers?", r"blocking", r"inconsisten(?:cy|cies)",
    r"конфликты?", r"противоречи[ея]", r"блокеры?", r"заблокировано", r"несоответстви[ея]",
)
# (category, "Label: text" line, a heading or bold line that is the label alone)
_LABELS = tuple((cat, K.label_re(labels), K.heading_re(labels))
                for cat, labels in (("open", OPEN_LABELS), ("conflicts", CONFLICT_LABELS)))


def _labelled(lines: list[str]) -> list[tuple[str, str]]:
    """Open/conflict items in line order. A label with nothing after it heads the
    bullet lines that follow ("Remaining:" then "- a", "- b")."""
    out: list[tuple[str, str]] = []
    under: str | None = None
    for ln in lines:
        hit = _label_of(ln)
        if hit:
            cat, rest = hit
            if rest:
                out.append((cat, tidy(ln)))
                under = None
            else:
                under = cat
            continue
        if under and K.is_bullet(ln):
            out.append((under, tidy(ln)))
        else:
            under = None
    return out


def _label_of(line: str) -> tuple[str, str] | None:
    for cat, labelled, heading in _LABELS:
        m = labelled.match(line)
        if m:
            return cat, m.group("rest").strip(" *_")
        if heading.match(line):
            return cat, ""
    return None


# ---- conclusions: reported claims

_CLAIM_LABEL = K.label_re([
    r"results?", r"conclusions?", r"findings?", r"root\s+cause", r"cause", r"fix", r"fixed", r"outcome", r"answer",
    r"summary", r"status", r"confirmed", r"verified", r"diagnosis",
    r"итоги?", r"выводы?", r"результаты?", r"причина", r"исправлено", r"подтверждено", r"готово", r"диагноз",
])
_CLAIM = re.compile(
    r"^(?:(?:i|we)(?:'ve|\s+have)?\s+|(?:this|that|it)\s+(?:now\s+)?|now\s+|and\s+)?"
    r"(?:fixed|implemented|added|updated|changed|removed|confirmed|verified|found|identified|traced|resolved|switched|"
    r"replaced|refactored|migrated|created|moved|rewrote|wrote|merged|pushed|deployed|reverted|narrowed)\b"
    r"|^(?:all\s+)?(?:\d+\s+)?(?:the\s+)?(?:unit\s+|integration\s+|e2e\s+)?tests?\s+(?:now\s+)?(?:pass|passed|are\s+passing|succeed)"
    r"|^(?:the\s+)?(?:build|lint|linter|type\s*check)\s+(?:now\s+)?(?:passes|passed|succeeds|is\s+green|is\s+clean)"
    r"|^(?:the\s+)?(?:root\s+cause|cause|problem|issue|bug)\s+(?:is|was)\b"
    r"|^(?:done|fixed|confirmed|verified)\s*[.:!—–-]"
    r"|^✅"
    r"|^(?:я\s+|мы\s+)?(?:исправил|добавил|обновил|нашёл|нашел|нашли|подтвердил|проверил|реализовал|заменил|убрал|"
    r"удалил|перенёс|перенес|переписал)\w*"
    r"|^(?:все\s+)?тесты\s+(?:теперь\s+)?проход\w*|^причина\s+(?:в|была)\b",
    re.I,
)
_CLAIMS_PER_TURN = 2
_MIN_CLAIM = 12


def _conclusions(lines: list[str]) -> list[str]:
    """Up to two claim lines of one assistant turn, the last ones (a turn ends with
    what it concluded), in line order."""
    found: list[str] = []
    for ln in lines:
        if ln.endswith(("?", "？")) or _label_of(ln) or K.VERDICT.match(ln):
            continue  # questions, open items and verdicts are listed elsewhere
        t = without_lead_in(tidy(ln))  # "Done. New format:" promises what a code block shows
        if len(t) < _MIN_CLAIM:
            continue
        m = _CLAIM_LABEL.match(ln)
        if (m and m.group("rest").strip(" *_")) or _CLAIM.match(t):
            found.append(t)
    d = decision_line("\n".join(lines))
    if d and "?" not in d and not any(key(d) in key(f) or key(f) in key(d) for f in found):
        found.append(d)
    return list(dict.fromkeys(found))[-_CLAIMS_PER_TURN:]


# ---- files

_SCRATCH = ("/tmp/", "/var/folders/", "/private/tmp/", "/private/var/folders/", "/dev/")


def _paths(role: str, text: str) -> list[str]:
    lines = text.splitlines()
    if role == "edit":
        lines = lines[:1]  # path, then the replaced text
    out = []
    for p in lines[:64]:
        p = p.strip()
        if p and len(p) <= 1024 and not p.startswith(_SCRATCH):
            out.append(p)
    return list(dict.fromkeys(out))


# --------------------------------------------------------------------------- verifications

# Wrappers that run the real tool: env assignments, runners, `python -m`.
_WRAPPER = re.compile(
    r"^(?:(?:[A-Za-z_][A-Za-z0-9_]*=\S*|sudo|time|nice|env|command|exec|timeout\s+\S+|xvfb-run|"
    r"uv\s+run|poetry\s+run|pdm\s+run|pipenv\s+run|hatch\s+run|rye\s+run|bundle\s+exec|npx|bunx|"
    r"pnpm\s+exec|pnpm\s+dlx|yarn\s+dlx|python[\d.]*\s+-m|py\s+-m)\s+(?:--?[\w-]+(?:=\S+)?\s+)*)*"
)
_VERIFY = re.compile(
    r"^(?:pytest|py\.test|unittest|mypy|ruff|pyright|flake8|pylint|tox|nox|jest|vitest|mocha|tsc|eslint|rspec|"
    r"phpunit|ctest|shellcheck|golangci-lint|staticcheck|make|gmake|ninja|mvn|mvnw|gradle|gradlew|"
    r"go\s+(?:test|build|vet)|cargo\s+(?:\+\S+\s+)?(?:test|build|check|clippy|nextest)|"
    r"(?:npm|pnpm|yarn|bun)\s+(?:run\s+)?(?:test|tests|build|lint|typecheck|type-check|check|e2e|ci|t)(?::\S+)?|"
    r"black\s+--check|isort\s+--check|prettier\s+--check|cmake\s+--build|bazel\s+(?:test|build)|"
    r"dotnet\s+(?:test|build)|swift\s+(?:build|test)|deno\s+(?:test|check|lint)|rake\s+test|playwright\s+test|"
    r"cypress\s+run|python[\d.]*\s+\S*manage\.py\s+test)(?![\w-])",
    re.I,
)
_SEGMENTS = re.compile(r"&&|\|\||;|\|")
_EXIT_SUFFIX = re.compile(r"\s+→ exit -?\d+$")

_FAIL_SUMMARY = re.compile(
    r"\b[1-9]\d* (?:failed|failing|failures?|errors?)\b|\bFAILED\b|^FAIL\b|--- FAIL|\bFAILURES\b|"
    r"\bBUILD FAILED\b|npm ERR!|^error(?:\[\w+\])?: |: error(?: TS\d+)?:|\berror TS\d+\b|^ERROR\b|"
    r"Traceback \(most recent call last\)|\bAssertionError\b|^make(?:\[\d+\])?: \*\*\*|^Exit code [1-9]|"
    r"\bpanicked at\b|^Found [1-9]\d* errors?"
)


def verification_command(command: str) -> str | None:
    """The command line without its record decoration when it is a test, build,
    lint or type check; else None."""
    cmd = command.strip()
    if cmd.startswith("$ "):
        cmd = cmd[2:]
    cmd = _EXIT_SUFFIX.sub("", cmd).strip()
    for seg in _SEGMENTS.split(cmd):
        s = _WRAPPER.sub("", seg.strip())
        if not s:
            continue
        first, _, tail = s.partition(" ")
        s = (first.rsplit("/", 1)[-1] + " " + tail).strip()  # .venv/bin/pytest, ./gradlew
        if _VERIFY.match(s):
            return cmd
    return None


def _verification(m, outs, session: str, harness: str) -> dict | None:
    cmd = verification_command(text_of(m))
    if not cmd:
        return None
    code = getattr(m, "exit_code", None)
    code = code if isinstance(code, int) and not isinstance(code, bool) else None
    if code is not None:
        status = "passed" if code == 0 else "failed"
    else:
        status = output_status(outs)
    it = item(cmd, m, session, harness, COMMAND_BYTES)
    it["status"] = status
    it["exit"] = code
    return it


def output_status(outputs) -> str:
    """passed/failed from the output recorded after a command; unknown without one
    (``None`` = the output could not be told apart from a neighbour's)."""
    if not outputs:
        return "unknown"
    for o in outputs:
        if getattr(o, "is_error", None) is True:
            return "failed"
        if _output_fails(text_of(o)):
            return "failed"
    return "passed"


def _output_fails(text: str) -> bool:
    lines = text.splitlines()
    if len(lines) > OUTPUT_HEAD_LINES + OUTPUT_TAIL_LINES:
        lines = lines[:OUTPUT_HEAD_LINES] + lines[-OUTPUT_TAIL_LINES:]
    for ln in lines:
        ln = ln[:500]
        if failure_line(ln) or _FAIL_SUMMARY.search(ln.strip()):
            return True
    return False


def _command_outputs(msgs: list) -> dict[int, list | None]:
    """For each command record, the tool output recorded after it.

    A run of commands (parallel calls) followed by as many outputs is paired in
    order; when the counts differ the outputs cannot be attributed and every
    command of the run maps to None (its status stays unknown).
    """
    out: dict[int, list | None] = {}
    i, n = 0, len(msgs)
    while i < n:
        if role_of(msgs[i]) != "command":
            i += 1
            continue
        run = [i]
        j = i + 1
        while j < n and role_of(msgs[j]) == "command":
            run.append(j)
            j += 1
        outs = []
        while j < n and role_of(msgs[j]) in ("tool-output", "files", "edit"):
            if role_of(msgs[j]) == "tool-output":
                outs.append(msgs[j])
            j += 1
        if len(run) == 1:
            out[i] = outs
        elif len(outs) == len(run):
            for c, o in zip(run, outs):
                out[c] = [o]
        else:
            for c in run:
                out[c] = [] if not outs else None
        i = j
    return out


# --------------------------------------------------------------------------- limits


def _items_of(packet: dict, cat: str) -> list[dict]:
    v = packet.get(cat)
    if isinstance(v, dict):
        return [v]
    return v if isinstance(v, list) else []


def _drop(packet: dict, cat: str, it: dict) -> None:
    if isinstance(packet.get(cat), dict):
        packet[cat] = None
    else:
        packet[cat].remove(it)


def _spend_text(packet: dict, omitted: dict) -> None:
    """At most MAX_TEXT bytes of item text, spent in PRIORITY order; cross-category
    duplicates are kept once, where they rank highest."""
    used = 0
    seen: set[str] = set()
    for cat in PRIORITY:
        for it in list(_items_of(packet, cat)):
            k = key(it["text"])
            if cat not in ("objective", "answer", "first_request") and k in seen:
                _drop(packet, cat, it)
                continue
            n = len(it["text"].encode("utf-8"))
            if used + n > MAX_TEXT:
                _drop(packet, cat, it)
                omitted["bytes"] = omitted.get("bytes", 0) + n
                omitted[cat] = omitted.get(cat, 0) + 1
                continue
            used += n
            if cat not in ("objective", "answer", "first_request"):
                seen.add(k)  # an open item may repeat the objective's words: both stay


_SHRINK = (160, 96)


def _fit_stored(packet: dict) -> None:
    """Guarantee stored_size(packet) <= MAX_STORED - STORED_RESERVE: shorten item
    text, then drop the lowest-priority items, counting what went."""
    limit = MAX_STORED - STORED_RESERVE
    if stored_size(packet) <= limit:
        return
    for cut in _SHRINK:
        for cat in PRIORITY:
            for it in _items_of(packet, cat):
                it["text"] = clip_bytes(it["text"], cut)
        if stored_size(packet) <= limit:
            return
    omitted = packet["omitted"]
    for cat in reversed(PRIORITY):
        while _items_of(packet, cat) and stored_size(packet) > limit:
            _drop(packet, cat, _items_of(packet, cat)[-1])
            omitted[cat] = omitted.get(cat, 0) + 1
        if stored_size(packet) <= limit:
            return
