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
    "refill drift",
    "cart total NaN",
    "OPENAI_API_KEY",
    "retry backoff jitter",
]


def samples_dir() -> Path:
    return Path(str(resources.files("deja.data_samples")))


def build_sqlite_samples(root: Path) -> None:
    """Each ``<name>.json`` SQLite spec under ``root`` whose name ends in a store's
    suffix (``opencode.db.json``, ``state.vscdb.json``, ``db.sqlite.json``) becomes that database:
    the samples ship as text (readable, diffable), the stores are binary."""
    import json
    import sqlite3

    for spec in sorted(root.rglob("*.json")):
        db = spec.with_suffix("")
        if db.suffix not in (".db", ".vscdb", ".sqlite", ".sqlite3"):
            continue
        doc = json.loads(spec.read_text())
        con = sqlite3.connect(db)
        try:
            for stmt in doc["schema"]:
                con.execute(stmt)
            for table, rows in doc["rows"].items():
                for row in rows:
                    vals = [json.dumps(v) if isinstance(v, (dict, list)) else v for v in row]
                    con.execute(f"INSERT INTO {table} VALUES ({', '.join('?' * len(vals))})", vals)
            con.commit()
        finally:
            con.close()
        spec.unlink()


def run_demo(run_index, print_summary, search) -> None:
    """``run_index(env)``: an index run's summary (as `deja index --json`);
    ``search``: the CLI's search command."""
    with tempfile.TemporaryDirectory(prefix="deja-demo-") as tmp:
        tmp_path = Path(tmp)
        shutil.copytree(samples_dir(), tmp_path / "samples", ignore=shutil.ignore_patterns("__init__.py", "__pycache__"))
        build_sqlite_samples(tmp_path / "samples")
        samples = tmp_path / "samples"
        env = {
            "HOME": str(tmp_path / "home"),
            "DEJA_INDEX_DIR": str(tmp_path / "index.db"),
            "DEJA_CLAUDE_ROOT": str(tmp_path / "samples" / "claude" / "projects"),
            "DEJA_CODEX_ROOT": str(tmp_path / "samples" / "codex"),
            "DEJA_CURSOR_ROOT": str(samples / "cursor" / "User"),
            "DEJA_CURSOR_CLI_ROOT": str(samples / "cursor" / "dot_cursor"),
            "DEJA_OPENCODE_DB": str(samples / "opencode" / "opencode.db"),
            "DEJA_OPENCODE_STORAGE": str(samples / "opencode" / "storage"),
            "DEJA_VSCODE_ROOT": str(samples / "copilot-vscode" / "User"),
            "DEJA_COPILOT_ROOT": str(samples / "copilot"),
            "DEJA_GEMINI_ROOT": str(samples / "gemini"),
            "DEJA_QWEN_ROOT": str(samples / "qwen"),
            "DEJA_PI_ROOT": str(samples / "pi" / "sessions"),
            "DEJA_OMP_ROOT": str(samples / "omp" / "agent" / "sessions"),
            "DEJA_OPENCLAW_ROOT": str(samples / "openclaw" / "agents"),
            "DEJA_KIMI_ROOT": str(samples / "kimi"),
            "DEJA_DEEPSEEK_ROOT": str(samples / "deepseek"),
            "DEJA_CONTINUE_ROOT": str(samples / "continue"),
            "DEJA_AMP_ROOT": str(samples / "amp"),
            "DEJA_KIRO_ROOT": str(samples / "kiro" / "User"),
            "DEJA_KIRO_CLI_ROOT": str(samples / "kiro" / "dot_kiro"),
            "DEJA_KIRO_CLI_DB": str(samples / "kiro" / "kiro-cli" / "data.sqlite3"),
            "DEJA_COMMANDCODE_ROOT": str(samples / "commandcode"),
            "DEJA_AIDER_ROOTS": str(samples / "aider"),
            "DEJA_GOOSE_ROOT": str(samples / "goose"),
            "DEJA_ZED_ROOT": str(samples / "zed"),
            "DEJA_CRUSH_ROOT": str(samples / "crush" / "global"),
            "DEJA_HERMES_HOME": str(samples / "hermes"),
            "DEJA_ANTIGRAVITY_ROOT": str(samples / "antigravity"),
            "DEJA_GROK_ROOT": str(samples / "grok"),
            "DEJA_CLINE_ROOTS": str(samples / "cline"),
            "DEJA_CLINE_ROOT": str(samples / "cline" / "sessions"),
            "DEJA_ROO_ROOTS": str(samples / "roo"),
            "DEJA_KILO_ROOTS": str(samples / "kilo"),
            "DEJA_KILO_DB": str(samples / "kilo" / "kilo.db"),
            "DEJA_SENPI_ROOT": str(samples / "senpi" / "agent" / "sessions"),
            "DEJA_GJC_ROOT": str(samples / "gjc" / "agent" / "sessions"),
            "DEJA_KIMCHI_ROOT": str(samples / "kimchi" / "harness" / "sessions"),
            "DEJA_PRIME_ROOT": str(samples / "prime" / "agent" / "sessions"),
            "DEJA_CHERRYSTUDIO_ROOTS": str(samples / "cherrystudio" / "projects"),
            "DEJA_ZCODE_ROOT": str(samples / "zcode" / "projects"),
            "DEJA_ZCODE_DB": str(samples / "zcode" / "cli" / "db" / "db.sqlite"),
            "DEJA_ZCODE_LEGACY_ROOT": str(samples / "zcode" / "v2" / "sessions"),
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
