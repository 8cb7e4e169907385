"""Every corpus profile of bench/gen_corpus.py writes a store `deja index` reads: sessions
of both harnesses, and a word a user typed is found by `deja search`."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import CORPUS, REPO, deja_cmd

GEN = REPO / "bench" / "gen_corpus.py"


def generate(profile: str, out: Path, mb: float = 2, seed: int = 1) -> None:
    cmd = [sys.executable, str(GEN), "--profile", profile, "--out", str(out), "--mb", str(mb), "--seed", str(seed)]
    if profile == "real":
        cmd += ["--real-dir", str(CORPUS)]
    subprocess.run(cmd, check=True, capture_output=True, text=True)


def env_for(out: Path, tmp: Path) -> dict:
    return {"PATH": os.environ.get("PATH", ""), "DEJA_SERVE": "off", "LANG": "C.UTF-8", "HOME": str(tmp / "home"),
            "DEJA_INDEX_DIR": str(tmp / "index.db"), "DEJA_NO_REFRESH": "1",
            "DEJA_CLAUDE_ROOT": str(out / "claude" / "projects"), "DEJA_CODEX_ROOT": str(out / "codex")}


def typed_word(out: Path) -> str:
    """A long lowercase word from a prompt a user typed into a Claude session."""
    for path in sorted((out / "claude" / "projects").rglob("*.jsonl")):
        if "subagents" in path.parts or path.name.startswith("agent-"):
            continue
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                d = json.loads(line)
            except ValueError:
                continue
            if d.get("type") != "user" or d.get("isMeta"):
                continue
            content = (d.get("message") or {}).get("content")
            texts = [content] if isinstance(content, str) else \
                [b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"]
            for text in texts:
                if text.startswith("<"):
                    continue
                words = re.findall(r"(?<![\w/.`-])[a-z]{8,20}(?![\w/.`-])", text)
                if words:
                    return words[0]
    raise AssertionError(f"no typed prompt in {out}")


@pytest.mark.parametrize("profile", ["default", "text", "tool", "real"])
def test_each_corpus_profile_is_indexed_for_both_harnesses_and_searchable(profile, tmp_path):
    if profile == "real" and not (CORPUS / "MANIFEST.tsv").is_file():
        pytest.skip("../shared/corpus/real is not here")
    out = tmp_path / "corpus"
    generate(profile, out)
    (tmp_path / "home").mkdir()
    env = env_for(out, tmp_path)

    proc = subprocess.run(deja_cmd() + ["index", "--json"], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    by_harness = {h["harness"]: h for h in json.loads(proc.stdout)["harnesses"]}
    for harness in ("claude", "codex"):
        assert by_harness[harness]["sessions"] > 0, by_harness
        assert by_harness[harness]["failed"] == 0, by_harness

    word = typed_word(out)
    proc = subprocess.run(deja_cmd() + ["search", "--json", word], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["hits"], f"{word!r} not found"


def test_a_profile_corpus_is_the_same_bytes_for_the_same_seed(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    generate("text", a, mb=0.5, seed=3)
    generate("text", b, mb=0.5, seed=3)
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files and files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    assert all((a / f).read_bytes() == (b / f).read_bytes() for f in files)
