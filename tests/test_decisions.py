"""A decision line carries its content (issue 13, "junk decisions").

A lead-in that ends in a colon ("Instead of the current:") or a bare heading
("### **Root Cause**") promises what follows: it is joined with the sentence
after it, or dropped when code, a table or nothing follows. One rule
(``stages.outcome``) feeds sessions.decision (search snippets, blame,
hook-context, hook-tool), the ctx digest and the packet's conclusions.
"""

from __future__ import annotations

import json
import subprocess

from conftest import Home, claude_assistant, claude_user, deja_cmd, write_jsonl

from deja.stages import outcome
from deja.stages.outcome import decision_line

CWD = "/home/dev/src/shop"
SID = "dec1dec1-0000-4000-8000-000000000001"

# The shape of a real Claude Code turn (crsmithdev/dotfiles, corpus/real): the
# lead-in is followed by a code block, so alone it says nothing.
LEAD_IN_THEN_CODE = (
    "Yes, I can combine the `*10` with the `+45 -12` into the git/branch section. The result would look like:\n\n"
    "```\nmain *10 +45 -12 │ $0.10\n```\n\nInstead of the current:\n```\nmain *10 │ $0.10 │ +45 -12\n```\n\n"
    "Want me to make that change?"
)


def test_colon_lead_in_is_joined_with_the_line_after_it():
    assert decision_line("Root cause identified:\nThe pool was capped at 5 connections.") == \
        "Root cause identified: The pool was capped at 5 connections."
    assert decision_line("Instead of the current:\n- retry the export in a loop") == \
        "Instead of the current: retry the export in a loop"


def test_colon_lead_in_before_code_is_dropped():
    assert decision_line(LEAD_IN_THEN_CODE) == ""
    # an earlier real decision of the same turn stands instead
    assert decision_line("We switched the pool to transaction mode. It holds 40.\n\n" + LEAD_IN_THEN_CODE) == \
        "We switched the pool to transaction mode. It holds 40."


def test_bare_heading_is_joined_or_dropped():
    assert decision_line("### **Root Cause**") == ""
    assert decision_line("### **Root Cause**\n\n```\nTraceback …\n```") == ""
    assert decision_line("## Root Cause\n\nThe cache key ignored the locale.") == \
        "Root Cause: The cache key ignored the locale."
    assert decision_line("**3. Technical Root Cause**\nSync copies the whole .obsidian folder.") == \
        "Technical Root Cause: Sync copies the whole .obsidian folder."
    # a heading whose next line is itself a lead-in carries nothing yet
    assert decision_line("**Step 2: Implement the fix**\nNow I'll fix `parse_walk` to handle these lines:") == ""


def test_a_lead_in_is_not_the_sentence_added_after_a_decision():
    text = ("The root cause is structural: CLAUDE.md lives at root by necessity.\n\n**The clean fix:**\n\n"
            "| File | Move? |\n|---|---|\n| GEMINI.md | yes |")
    assert decision_line(text) == "The root cause is structural: CLAUDE.md lives at root by necessity."
    assert outcome.decision_lines("The fix is to restart the terminal. If you want to reload now, run:\n```\nexec bash\n```") \
        == ["The fix is to restart the terminal."]


def _index_session(h: Home) -> None:
    rows = [
        claude_user(SID, "the checkout pool runs dry under load, fix it", "2026-03-19T10:00:00Z", "u0"),
        claude_assistant(SID, [{"type": "text", "text":
                                "We switched the pool to pgbouncer transaction mode. It now holds 40 connections."}],
                         "2026-03-19T10:01:00Z", "a1", msg_id="m1"),
        claude_user(SID, "can the status line show the diff size too?", "2026-03-19T10:02:00Z", "u2"),
        claude_assistant(SID, [{"type": "text", "text": "### **Root Cause**\n\n```\nQueuePool limit reached\n```"}],
                         "2026-03-19T10:03:00Z", "a3", msg_id="m3"),
        claude_assistant(SID, [{"type": "text", "text": LEAD_IN_THEN_CODE}], "2026-03-19T10:04:00Z", "a4",
                         msg_id="m4"),
    ]
    write_jsonl(h.claude_file(SID, CWD), rows)
    h.run("index")


def test_search_and_session_start_show_the_decision_not_its_lead_in(tmp_path):
    h = Home(tmp_path)
    _index_session(h)
    hits = h.search("pool")["hits"]
    assert hits and hits[0]["snippets"][0].startswith("We switched the pool to pgbouncer transaction mode.")
    assert not any("Instead of the current" in s or "Root Cause" in s for s in hits[0]["snippets"])

    payload = {"session_id": "11111111-aaaa-4000-8000-000000000000", "cwd": CWD,
               "transcript_path": None, "hook_event_name": "SessionStart", "source": "startup"}
    proc = subprocess.run(deja_cmd() + ["hook-context", "--plain"], input=json.dumps(payload), text=True,
                          env=h.env, capture_output=True, timeout=60)
    assert proc.returncode == 0
    assert "decided: We switched the pool to pgbouncer transaction mode." in proc.stdout
    assert "Instead of the current" not in proc.stdout


def test_the_index_runs_one_pass_that_answers_as_decision_line_and_backed_out_do():
    """``outcome.outcome`` (one Aho-Corasick pass, backing out looked for on its
    hint lines only) gives what the two rules give apart, on real-shaped turns,
    case-blind look-alikes (İ ı ſ K), code, questions, negations and random mixes."""
    import random

    texts = [
        LEAD_IN_THEN_CODE, "", "We reverted it.\nok", "we did not revert", "ROLLED BACK the change",
        "İnstead of x we pinned y. Then more.", "gave up?\nthen we gave up", "```\nrevert\n```\nwe reverted",
        "ſo we rolled back", "\ud800 we reverted", "The root cause was X. We switched to Y.",
        "the \u212aelvin fix: we undid the change", "- reverted the migration\n+ kept it", "roll back\nroll back",
        "### Root Cause\nThe pool was too small.\nWe rolled back the deploy.",
    ]
    rng = random.Random(11)
    words = ["we", "reverted", "not", "the fix", "root cause", "gave up", "?", "\n", "İ", "ı", "ſ", "K", "x", ".",
             "undid the change", "instead of", "backing out", "-", "```", "Decision:", "abandoned the approach"]
    texts += ["".join(rng.choice(words) + rng.choice(["", " ", "\n"]) for _ in range(rng.randint(1, 40)))
              for _ in range(3000)]
    for text in texts:
        assert outcome.outcome(text) == (decision_line(text), outcome.backed_out(text)), repr(text)
