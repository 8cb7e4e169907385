"""What a non-editable install ships: every bundled sample, so `deja demo` on a
fresh machine shows every harness that has one (setuptools' package-data globs
skip hidden folders unless a pattern names them: `.crush/`, `.system_generated/`)."""

from __future__ import annotations

import glob
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_data_sample_is_named_by_a_package_data_pattern():
    text = (ROOT / "pyproject.toml").read_text()
    line = next(ln for ln in text.splitlines() if ln.startswith('"deja.data_samples" = ['))
    patterns = re.findall(r'"([^"]+)"', line.split("=", 1)[1])
    samples = ROOT / "data_samples"
    shipped = {p for pat in patterns for p in glob.glob(pat, root_dir=samples, recursive=True)}
    every = {p.relative_to(samples).as_posix() for p in samples.rglob("*")
             if p.is_file() and "__pycache__" not in p.parts and p.name != "__init__.py"}
    assert every - shipped == set()
