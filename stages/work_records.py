"""Work records: what agents did, in the words every harness shares.

Readers know each harness's tool vocabulary (harness-formats 1.2); the rules for
what becomes a ``command``, ``files`` or ``edit`` record are the same for all
of them and live here.
"""

from __future__ import annotations

import os
import re

EDIT_SPAN_CAP = 32 << 10

# Each alternative is anchored at a word start; bun/cargo/deja need a following
# space and make a word end, so `makefile` or `cargoship` do not qualify.
_MEANINGFUL = re.compile(
    r"(?:^|(?<=[\s(/]))(?:"
    r"go (?:test|build|vet|run)\b|golangci-lint\b|gofmt\b|pytest\b|python3? -m\b|"
    r"uv (?:run|pip)\b|pip3? install\b|ruff\b|mypy\b|npm\b|npx\b|pnpm\b|yarn\b|bun |"
    r"cargo |make\b|cmake\b|ctest\b|ninja\b|meson\b|bazel\b|buck2\b|"
    r"gh (?:pr|run|release|issue|workflow|api)\b|git [a-z][a-z-]*|docker\b|kubectl\b|"
    r"helm\b|terraform\b|psql\b|mysql\b|latexmk\b|mvn\b|gradle\b|dotnet\b|"
    r"swift (?:build|test)\b|bundle exec\b|rails\b|rake\b|rspec\b|phpunit\b|"
    r"composer (?:install|update|require)\b|tox\b|nox\b|jest\b|vitest\b|playwright\b|"
    r"cypress\b|deno\b|tsc\b|sbt\b|stack (?:build|test|run|exec)\b|cabal\b|ghc\b|"
    r"dune\b|zig\b|nix\b|rustc\b|clang\+\+|clang\b|g\+\+|gcc\b|pdm run\b|"
    r"poetry run\b|deja "
    r")"
)
_TRIVIAL = frozenset(
    "ls cd pwd cat head tail echo grep rg find which wc sed awk sleep mkdir rm cp mv "
    "chmod export source touch open printf".split()
)
_SEGMENTS = re.compile(r"&&|\|\||;|\|")


def command_record(command: str, exit_code: int | None = None) -> str | None:
    """``$ <command>`` for an allow-listed single-line command, else None.

    A segment qualifies when it matches the allow-list and does not start with
    a trivial verb: ``cd repo && go test ./...`` is kept, ``grep "go test" x``
    is not.
    """
    if not isinstance(command, str):
        return None
    command = command.strip()
    if not command or "\n" in command or "\r" in command:
        return None
    keep = False
    for seg in _SEGMENTS.split(command):
        seg = seg.strip()
        if not seg:
            continue
        first = seg.split(None, 1)[0]
        if first in _TRIVIAL:
            continue
        if _MEANINGFUL.search(seg):
            keep = True
            break
    if not keep:
        return None
    text = "$ " + command
    if exit_code is not None and exit_code > 0:
        text += f"  → exit {exit_code}"
    return text


def files_record(paths: list[str]) -> str | None:
    """One record per turn: the distinct paths it opened or edited, in order."""
    seen: dict[str, None] = {}
    for p in paths:
        if isinstance(p, str) and p.strip():
            seen.setdefault(p.strip(), None)
    return "\n".join(seen) if seen else None


def edit_record(path: str, old_text: str) -> str | None:
    """``path\\nold_text`` for one replaced span; empty spans are skipped."""
    if not isinstance(path, str) or not path or not isinstance(old_text, str) or not old_text:
        return None
    return path + "\n" + old_text[:EDIT_SPAN_CAP]


_PATCH_HEADER = re.compile(r"^\*\*\* (Update|Add|Delete) File: (.+?)\s*$")


def parse_patch(patch: str, cwd: str = "") -> list[tuple[str, str]]:
    """Files of an apply_patch-style patch and the lines it removed from each.

    Returns ``[(path, removed_text)]`` in header order; removed_text is "" for
    files with no removed lines (added files). Relative paths are joined to the
    session cwd when it is known.
    """
    if not isinstance(patch, str):
        return []
    out: list[tuple[str, list[str]]] = []
    current: list[str] | None = None
    for line in patch.splitlines():
        m = _PATCH_HEADER.match(line)
        if m:
            path = m.group(2)
            if cwd and not is_absolute(path):
                path = os.path.join(cwd, path)
            current = []
            out.append((path, current))
            continue
        if line.startswith("*** "):
            if not line.startswith("*** Move to:"):
                current = None if line.startswith("*** End") else current
            continue
        if current is not None and line.startswith("-"):
            current.append(line[1:])
    return [(p, "\n".join(removed)) for p, removed in out]


def is_absolute(path: str) -> bool:
    return path.startswith(("/", "\\", "~")) or (len(path) > 2 and path[1] == ":" and path[2] in "\\/")


def patch_records(patch: str, cwd: str = "") -> tuple[str | None, list[str]]:
    """(files record, edit records) for a patch."""
    parsed = parse_patch(patch, cwd)
    files = files_record([p for p, _ in parsed])
    edits = [e for p, removed in parsed if (e := edit_record(p, removed))]
    return files, edits


def enabled(family: str, env: dict | None = None) -> bool:
    """DEJA_INDEX_PATHS/COMMANDS/EDITS/TOOL_OUTPUT=0 turn one record family off."""
    env = os.environ if env is None else env
    return env.get(f"DEJA_INDEX_{family}", "1") != "0"
