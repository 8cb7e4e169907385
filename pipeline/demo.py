"""`deja demo`: the whole pipeline on the bundled samples, in a throwaway store.

A newcomer with no agent history on the machine sees it index Claude Code and
Codex transcripts and answer a few searches. Nothing outside a temp folder is
read or written.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from importlib import resources
from pathlib import Path

SEARCHES = [
    "connection pool exhausted",
    "flaky test temp dir",
    "borrow checker",
    "OPENAI_API_KEY",
]


def samples_dir() -> Path:
    return Path(str(resources.files("deja.data_samples")))


def run_demo(run_index, print_summary, search) -> None:
    """``run_index(env)``: an index run's summary (as `deja index --json`);
    ``search``: the CLI's search command."""
    with tempfile.TemporaryDirectory(prefix="deja-demo-") as tmp:
        tmp_path = Path(tmp)
        shutil.copytree(samples_dir(), tmp_path / "samples", ignore=shutil.ignore_patterns("__init__.py", "__pycache__"))
        env = {
            "HOME": str(tmp_path / "home"),
            "DEJA_INDEX_DIR": str(tmp_path / "index.db"),
            "DEJA_CLAUDE_ROOT": str(tmp_path / "samples" / "claude" / "projects"),
            "DEJA_CODEX_ROOT": str(tmp_path / "samples" / "codex"),
            "DEJA_CLINE_ROOTS": str(tmp_path / "samples" / "cline"),
            "DEJA_CLINE_ROOT": str(tmp_path / "samples" / "cline" / "sessions"),
            "DEJA_ROO_ROOTS": str(tmp_path / "samples" / "roo"),
            "DEJA_KILO_ROOTS": str(tmp_path / "samples" / "kilo"),
            "PATH": os.environ.get("PATH", ""),
        }
        print(f"indexing the bundled samples into {env['DEJA_INDEX_DIR']}", file=sys.stderr)
        print_summary(run_index(env))
        # the searches must see the demo's stores and store, never this machine's:
        # a freshness check against the real stores would call every sample "removed"
        scoped = {k: v for k, v in env.items() if k.startswith("DEJA_") or k == "HOME"}
        scoped["DEJA_NO_REFRESH"] = "1"
        saved = {k: os.environ.get(k) for k in scoped}
        os.environ.update(scoped)
        try:
            for q in SEARCHES:
                print(f"\n$ deja {q}")
                sys.stdout.flush()
                search([q], False, None, None, None, None, 3, False)
                sys.stdout.flush()
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        print("\nthe secret in the sample transcript was stored as [redacted:…]; "
              "run `deja index` to index this machine's own agent history.", file=sys.stderr)
