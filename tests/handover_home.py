"""A temp HOME for the handover commands (resume, handoff, restore, share):
Claude Code sessions whose folder exists on this machine, with real-shaped
Edit and Bash tool calls, a Codex rollout, and an aider history."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from conftest import Home, claude_assistant, claude_user, deja_cmd, write_jsonl

REPO = Path(__file__).resolve().parents[1]
S_OLD = "5e1f0a2b-1111-4c3d-8e9f-0a1b2c3d4e01"
S_NEW = "5e1f0a2b-2222-4c3d-8e9f-0a1b2c3d4e02"
CODEX = "019cadd4-6693-7a1c-84e2-b7f9d3c6e1a8"
OLD_TOTAL = "def total(items):\n    return sum(i.price for i in items)\n"
OLD_ROUND = "ROUNDING = 'half-up'\nSTRIPE_KEY = 'sk_live_51HxQmR2eZvKYlo2C8f3d9a7b6c5e4d3'\n"


def _tool_result(session, tool_id, content, ts, uuid, cwd):
    row = claude_user(session, "", ts, uuid, cwd=cwd)
    row["message"]["content"] = [{"type": "tool_result", "tool_use_id": tool_id, "content": content}]
    return row


def _edit_session(sid, cwd, day, ask, old, new, reply, extra=()):
    path = f"{cwd}/src/cart.py"
    rows = [
        claude_user(sid, ask, f"2026-03-{day}T10:00:00.000Z", f"{sid[:8]}-u1", cwd=cwd),
        claude_assistant(sid, [{"type": "tool_use", "id": f"toolu_{day}e", "name": "Edit",
                                "input": {"file_path": path, "old_string": old, "new_string": new}}],
                         f"2026-03-{day}T10:00:05.000Z", f"{sid[:8]}-a1", msg_id=f"msg_{day}a", cwd=cwd),
        _tool_result(sid, f"toolu_{day}e", f"The file {path} has been updated.", f"2026-03-{day}T10:00:06.000Z",
                     f"{sid[:8]}-r1", cwd),
        claude_assistant(sid, [{"type": "tool_use", "id": f"toolu_{day}b", "name": "Bash",
                                "input": {"command": "python -m pytest -q tests/test_cart.py"}}],
                         f"2026-03-{day}T10:00:10.000Z", f"{sid[:8]}-a2", msg_id=f"msg_{day}b", cwd=cwd),
        _tool_result(sid, f"toolu_{day}b", "4 passed in 0.12s", f"2026-03-{day}T10:00:20.000Z", f"{sid[:8]}-r2", cwd),
        claude_assistant(sid, [{"type": "text", "text": reply}], f"2026-03-{day}T10:00:30.000Z", f"{sid[:8]}-a3",
                         msg_id=f"msg_{day}c", cwd=cwd),
        *extra,
    ]
    return rows


def build(home: Home) -> Path:
    """Write the stores and index them; returns the project folder (it exists)."""
    project = home.home / "work" / "shop"
    (project / "src").mkdir(parents=True)
    (project / "src" / "cart.py").write_text("def total(items):\n    return round(sum(i.price for i in items), 2)\n")
    cwd = str(project)
    write_jsonl(home.claude_file(S_OLD, cwd), _edit_session(
        S_OLD, cwd, "01", "make cart totals round to cents", OLD_TOTAL,
        "def total(items):\n    return round(sum(i.price for i in items), 2)\n",
        "The fix: totals are rounded to cents in total(); the tests pass."))
    write_jsonl(home.claude_file(S_NEW, cwd), _edit_session(
        S_NEW, cwd, "03", "drop the hard-coded stripe key from cart.py", OLD_ROUND,
        "ROUNDING = 'half-even'\n",
        f"Root cause: the key was committed in {cwd}/src/cart.py; we switched to the environment. "
        "The old value was api_key=sk_live_51HxQmR2eZvKYlo2C8f3d9a7b6c5e4d3 and must be rotated."))
    # a Codex rollout of the same folder (the bundled sample, moved here)
    sample = next((REPO / "data_samples" / "codex" / "sessions").rglob(f"*{CODEX}.jsonl"))
    dest = home.codex_file(CODEX, stamp="2026-03-02T10-15-04")
    dest.write_text(sample.read_text().replace("/home/dev/src/ledger-service", cwd))
    # an aider history: aider cannot resume
    aider = home.home / "src" / "payments-cli"
    aider.mkdir(parents=True)
    shutil.copy(REPO / "data_samples" / "aider" / "src" / "payments-cli" / ".aider.chat.history.md", aider)
    home.env["DEJA_AIDER_ROOTS"] = str(home.home / "src")
    # stored as written: share and restore must redact on the way out
    home.run("index", extra_env={"DEJA_NO_REDACT": "1"})
    return project


def run_in(home: Home, cwd, *args, env=None, check=True):
    proc = subprocess.run(deja_cmd() + list(args), env=dict(home.env, **(env or {})), cwd=str(cwd),
                          capture_output=True, text=True, timeout=120)
    if check and proc.returncode != 0:
        raise AssertionError(f"deja {' '.join(args)} exited {proc.returncode}: {proc.stderr}")
    return proc
