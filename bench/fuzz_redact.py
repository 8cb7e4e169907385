#!/usr/bin/env python3
"""The redactor's property tests (tests/test_redact_fuzz.py), run long.

    python bench/fuzz_redact.py --examples 20000

CI runs them derandomized with a few hundred examples; this runs as many as
asked, still derandomized (the same examples for the same N), and exits
non-zero with hypothesis's smallest failing example if a secret leaks or a
look-alike is touched.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=10000, help="examples per property (default 10000)")
    args = ap.parse_args()
    env = dict(os.environ, DEJA_FUZZ_EXAMPLES=str(args.examples))
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(ROOT / "tests" / "test_redact_fuzz.py")]
    return subprocess.run(cmd, env=env, cwd=ROOT).returncode


if __name__ == "__main__":
    sys.exit(main())
