#!/usr/bin/env python3
"""Published real transcripts and questions about them, as a corpus score.py can run:

    python bench/quality/real_set.py --out /tmp/deja-real
    python bench/quality/score.py --corpus /tmp/deja-real [--embed]

The generated set (gen_quality.py) is written for the benchmark; this one is not. Its
sessions are the Claude Code and Codex transcripts people published (../shared/corpus/real,
listed in its MANIFEST.tsv: several projects, many sessions of the same project, English,
Chinese and Spanish, subagents' transcripts beside their sessions), laid out as the agents
write them: `claude/projects/<encoded-cwd>/...` and `codex/sessions/YYYY/MM/DD/rollout-*`.
Its questions (real_questions.jsonl, beside this file) were written by reading those
sessions: `natural`, as a person would ask who remembers the work; `paraphrase`, the same
memory in other words, sharing no content word with what was said in the session (the
user's and the agent's turns; `--check` indexes the layout and lists any shared word and
any answer session deja does not have). A question's answer
session is the session as deja names it.

The transcripts are linked, not copied (they are read only). Same input, same layout.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
DEFAULT_CORPUS = os.path.normpath(os.path.join(HERE, "..", "..", "..", "shared", "corpus", "real"))
QUESTIONS = os.path.join(HERE, "real_questions.jsonl")
QUESTIONS_MORE = os.path.join(HERE, "real_questions_more.jsonl")
# Where each harness's files go under ``out``: the part of the published path from the
# marker on is kept, below the folder score.py points the harness's DEJA_*_ROOT at.
# (a chezmoi dotfiles repo keeps ~/.claude as dot_claude: the markers skip the dot)
PLACES = {
    "claude": (("claude/projects/", ("claude", "projects")),),
    "codex": (("codex/sessions/", ("codex", "sessions")),),
    # --set more: the other harnesses' stores, each as its home folder
    "gemini": (("gemini/tmp/", ("gemini", "tmp")),),
    "qwen": (("qwen/projects/", ("qwen", "projects")), ("qwen/tmp/", ("qwen", "tmp"))),
    "copilot": (("copilot/session-state/", ("copilot", "session-state")),
                ("copilot/history-session-state/", ("copilot", "history-session-state"))),
    "cursor": (("cursor/projects/", ("cursor", "projects")),),
}
SETS = {"claude-codex": ("claude", "codex"), "more": tuple(PLACES)}


def layout(corpus: str, out: str, harnesses: tuple[str, ...] = SETS["claude-codex"]) -> int:
    """Link every transcript of the corpus by one of ``harnesses`` (default Claude Code and
    Codex) into ``out`` as the agents lay them out; the number linked."""
    with open(os.path.join(corpus, "MANIFEST.tsv"), newline="", encoding="utf-8") as fh:
        rows = [r for r in csv.DictReader(fh, delimiter="\t") if r["harness"] in harnesses]
    n = 0
    for r in rows:
        src = os.path.join(corpus, r["harness"], r["file"])
        if not os.path.isfile(src):
            continue
        path = r["source_path"]
        for marker, base in PLACES[r["harness"]]:
            at = path.find(marker)
            if at >= 0:
                dest = os.path.join(out, *base, path[at + len(marker):])
                break
        else:
            continue
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        if not os.path.lexists(dest):
            os.symlink(os.path.abspath(src), dest)
        n += 1
    return n


def check(out: str, questions: list[dict], deja: str) -> list[str]:
    """Index the layout as score.py does and return what is wrong with the questions: an
    answer session deja does not have, a paraphrase sharing a content word with what was
    said in its session (gen_quality's check, on the user's and the agent's turns)."""
    import duckdb

    from gen_quality import session_forms, shared_words
    from score import make_env, run_index

    with tempfile.TemporaryDirectory(prefix="deja-real-check-") as work:
        env = make_env(out, work, ["DEJA_SERVE=off"])
        ix = run_index(deja, env, 1800)
        if not ix["ok"]:
            return [f"deja index failed: {ix.get('error')}"]
        records = os.path.join(work, "index", "records", "**", "*.parquet")
        said: dict[str, list[str]] = {}
        for sid, text in duckdb.connect().execute(
                "SELECT session_id, text FROM read_parquet(?, hive_partitioning=false) "
                "WHERE role IN ('user', 'assistant', 'summary') ORDER BY record_id", [records]).fetchall():
            said.setdefault(sid, []).append(text or "")
    problems, forms = [], {}
    for q in questions:
        for sid in q["answer_sessions"]:
            if sid not in said:
                problems.append(f"{q['id']}: no session {sid} in the store")
            elif q["kind"] == "paraphrase":
                key = (sid, q.get("lang", "en"))
                if key not in forms:
                    forms[key] = session_forms("\n".join(said[sid]), key[1])
                shared = shared_words(q["query"], key[1], forms[key])
                if shared:
                    problems.append(f"{q['id']}: shares {shared} with session {sid}")
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default=DEFAULT_CORPUS, help="the real transcripts (default ../shared/corpus/real)")
    ap.add_argument("--out", required=True, help="directory to write (score.py --corpus)")
    ap.add_argument("--set", default="claude-codex", choices=sorted(SETS),
                    help="claude-codex (default): the Claude Code and Codex transcripts and real_questions.jsonl; "
                         "more: also Gemini CLI, Qwen Code, Copilot CLI and Cursor CLI, with real_questions_more.jsonl")
    ap.add_argument("--questions", default=None,
                    help="questions file (default real_questions.jsonl beside this, or real_questions_more.jsonl with --set more)")
    ap.add_argument("--check", action="store_true",
                    help="index the layout and list questions whose session is missing or paraphrase shares a word")
    ap.add_argument("--deja", default=None, help="deja executable for --check (default as score.py)")
    a = ap.parse_args(argv)
    if a.questions is None:
        a.questions = QUESTIONS_MORE if a.set == "more" else QUESTIONS
    if not os.path.isfile(os.path.join(a.corpus, "MANIFEST.tsv")):
        print(f"real_set: no MANIFEST.tsv in {a.corpus}", file=sys.stderr)
        return 2
    try:
        with open(a.questions, encoding="utf-8") as f:
            questions = [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError) as e:
        print(f"real_set: cannot read questions: {e}", file=sys.stderr)
        return 2
    need = {"id", "query", "kind", "answer_sessions"}
    bad = next((q for q in questions if not isinstance(q, dict) or not need <= set(q)), None)
    if bad is not None:
        print(f"real_set: a question needs id, query, kind and answer_sessions: {str(bad)[:120]}", file=sys.stderr)
        return 2
    os.makedirs(a.out, exist_ok=True)
    try:
        n = layout(a.corpus, a.out, SETS[a.set])
    except (OSError, KeyError, csv.Error) as e:
        print(f"real_set: cannot lay out {a.corpus}: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    with open(os.path.join(a.out, "questions.jsonl"), "w", encoding="utf-8") as f:
        for q in questions:
            f.write(json.dumps(q, ensure_ascii=False) + "\n")
    print(f"{n} transcripts, {len(questions)} questions → {a.out}")
    if a.check:
        from score import default_deja

        problems = check(a.out, questions, a.deja or default_deja())
        for line in problems:
            print(line)
        print(f"check: {len(problems)} problem(s)")
        return 1 if problems else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
