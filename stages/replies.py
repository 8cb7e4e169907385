"""A reply that only answers the question before it: one rule for the
compaction packet's objective and the crash-recovery digest's last instruction.

An answer picks an option or agrees: "a", "2", "B, A", "Q1: B, Q2: A",
"option B", "the second one", "yes", "ok, do it", "sounds good", "go ahead",
"はい", "好的", "да". Every word must be an option (a letter, a number up to
three digits, q1, 2b) or one of the few words of agreeing and choosing below;
one other word makes it a request: "fix it", "run the tests", "use uv", "T13",
"option B but keep the CSV order" all ask for something. A question ("ok?")
is not an answer. "continue" or "thanks" neither ask for anything nor answer
anything: callers treat such carry-on turns apart.
"""

from __future__ import annotations

import re
import unicodedata

_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?")
_OPTION = re.compile(r"^(?:[a-z]|\d{1,3}|q\d{1,2}|\d{1,3}[a-z])$")  # not "t13": a step, not an option
# Agreeing, refusing and choosing; no verb that names work ("fix", "run", "add").
_AGREE = frozenset(
    "yes yep yeah yup ya y sure ok okay k kk alright agreed agree fine good great perfect cool nice correct right "
    "exactly lgtm recommended recommendation suggested default please pls plz no nope nah "
    "sounds looks go ahead do it that this one ones both all none neither either "
    "option options choice answer pick choose take use let's lets with the a an and first second third fourth "
    "last former latter your my as is are "
    "да ага угу ок окей хорошо ладно давай согласен верно нет вариант первый второй третий "
    "はい いいえ お願いします お願い "
    "好 好的 可以 是 是的 行 对 對 同意 认同 認同 没问题 沒問題 嗯 不 不用 先不用".split()
)
# Words that cannot make an answer on their own ("the", "with").
_FILLER = frozenset("that this the a an and with your my as is are let's lets please pls plz".split())
MAX_WORDS = 8


def is_answer(text: str) -> bool:
    """``text`` only picks an option or agrees (see the module's rule)."""
    s = unicodedata.normalize("NFKC", text or "").strip()
    if not s or len(s) > 80 or s.rstrip().endswith("?"):
        return False
    words = _WORD.findall(s.casefold())
    if not words or len(words) > MAX_WORDS:
        return False
    if not all(_OPTION.match(w) or w in _AGREE for w in words):
        return False
    return any(_OPTION.match(w) or w not in _FILLER for w in words)


# Questions an agent asks through a tool, with options to pick from: Claude
# Code's AskUserQuestion ({"questions": [{"question", "header", "options":
# [{"label", "description"}], "multiSelect"}]}) and Codex's request_user_input
# ({"questions": [{"id", "header", "question", "options"}]}). Readers store the
# questions as the agent's turn and what came back as the user's answer, both
# with the tool's name, so the packet can tell a question still waiting from
# one answered.
ASK_TOOLS = frozenset(("AskUserQuestion", "request_user_input"))
_PAIR = re.compile(r'"((?:[^"\\]|\\.)*)"="((?:[^"\\]|\\.)*)"')


def questions_text(tool_input) -> str:
    """One line per question: "Which database? — Postgres | SQLite"."""
    qs = tool_input.get("questions") if isinstance(tool_input, dict) else None
    lines = []
    for q in qs if isinstance(qs, list) else ():
        text = q.get("question") if isinstance(q, dict) else None
        if not isinstance(text, str) or not text.strip():
            continue
        opts = q.get("options")
        labels = [o.get("label").strip() for o in opts if isinstance(o, dict) and isinstance(o.get("label"), str)
                  and o.get("label").strip()] if isinstance(opts, list) else []
        line = " ".join(text.split())
        lines.append(line + (" — " + " | ".join(labels) if labels else ""))
    return "\n".join(lines)


def answers_text(result: str) -> str:
    """The answers a question tool returned: Claude Code's ``"question"="answer"``
    pairs, or Codex's {"answers": {id: {"answers": [...]}}}; else the text itself."""
    s = (result or "").strip()
    pairs = _PAIR.findall(s)
    if pairs:
        return "; ".join(" ".join(a.split()) for _, a in pairs)
    if s.startswith("{"):
        import json

        try:
            obj = json.loads(s)
        except ValueError:
            return s
        got = obj.get("answers") if isinstance(obj, dict) else None
        if isinstance(got, dict):
            out = []
            for v in got.values():
                a = v.get("answers") if isinstance(v, dict) else v
                out.extend(str(x) for x in (a if isinstance(a, list) else [a]) if x)
            if out:
                return "; ".join(out)
    return s
