"""Work records: what agents did, in the words every harness shares.

Readers know each harness's tool vocabulary (harness-formats 1.2); the rules for
what becomes a ``command``, ``files`` or ``edit`` record are the same for all
of them and live here.
"""

from __future__ import annotations

import os
import re

EDIT_SPAN_CAP = 32 << 10
COMMAND_CAP = 1000  # characters of a command record, its ` → exit N` mark aside
LINE_MARK = " ⏎ "  # where a multi-line command's lines meet in its one-line record

# The allow-list (harness-formats 1.2): commands worth ranking first (builds, tests,
# package and VCS tools). It ranks and filters answers; it never decides what is
# stored. Each alternative is anchored at a word start; bun/cargo/deja need a
# following space and make a word end, so `makefile` or `cargoship` do not qualify.
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
# Programs that only look: their runs settle nothing (``fix``) and recall nothing (the hooks).
INSPECT = frozenset(
    "ls cat pwd echo which env find tree ps head tail less more wc stat file du df whoami id date uname "
    "printenv type hostname realpath dirname basename true false grep rg sleep printf".split()
)
GIT_INSPECT = frozenset(
    "status diff log show branch remote blame reflog describe rev-parse ls-files".split()
)
# ``go version``, ``node --version``, ``cargo --help``: a program asked about itself.
_SELF_QUERY = frozenset("version --version -V help --help -h env".split())
_REDIRECT = re.compile(r"^\d*[<>]")
# Words that run the program named after them: ``sudo make``, ``env FOO=1 make``.
_WRAPPERS = frozenset("sudo env time nohup exec command nice doas".split())
# Runners whose next word is the program a person would ask ``how`` about.
_RUNNERS = {"npx": 1, "bunx": 1, "uvx": 1, "pipx": 1, "uv": 2, "poetry": 2, "pdm": 2, "bundle": 2,
            "pnpm": 2, "yarn": 2, "python": 2, "python3": 2}
_RUNNER_VERBS = {"run", "exec", "dlx", "-m"}
_ENV_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_HEREDOC = re.compile(r"<<-?\s*['\"]?([A-Za-z_][A-Za-z0-9_]*)")


def one_line(command: str) -> str:
    """A command as one line: continued lines joined, other lines meeting at ``⏎``."""
    lines: list[str] = []
    cont = False
    for raw in command.splitlines():
        ln = raw.strip()
        if not ln:
            continue
        if cont and lines:
            lines[-1] = lines[-1] + " " + ln
        else:
            lines.append(ln)
        cont = lines[-1].endswith("\\")
        if cont:
            lines[-1] = lines[-1][:-1].rstrip()
    return LINE_MARK.join(" ".join(ln.split()) for ln in lines)


def command_record(command: str, exit_code: int | None = None) -> str | None:
    """``$ <command>`` for every shell command an agent ran, else None (no text).

    The record is one line (``one_line``) of at most ``COMMAND_CAP`` characters;
    secrets are redacted downstream like every record's text. Whether a command
    is worth ranking first is ``notable``'s question, asked by the answers.
    """
    if not isinstance(command, str):
        return None
    text = one_line(command)
    if not text:
        return None
    if len(text) > COMMAND_CAP:
        text = text[: COMMAND_CAP - 1].rstrip() + "…"
    text = "$ " + text
    if exit_code is not None and exit_code > 0:
        text += f"  → exit {exit_code}"
    return text


_EXIT = re.compile(r"\s+→ exit (-?\d+)\s*$")


def command_of(record: str) -> tuple[str, int | None]:
    """A command record read back (``command_record`` wrote it): its command
    line, and the exit code its `` → exit N`` mark gives (None: none)."""
    line = (record or "").split("\n", 1)[0].strip()
    m = _EXIT.search(line)
    if m:
        line = line[: m.start()]
    return line.removeprefix("$ "), (int(m.group(1)) if m else None)


def notable(command: str) -> bool:
    """The allow-list (harness-formats 1.2): a segment matches it and does not
    start with a trivial verb. ``cd repo && go test ./...`` is notable,
    ``grep "go test" x`` is not."""
    for seg in segments(command):
        first = seg.split(None, 1)[0]
        if first not in _TRIVIAL and _MEANINGFUL.search(seg):
            return True
    return False


def segments(command: str) -> list[str]:
    """The simple commands of a command line, split on ``&&``, ``||``, ``;``, ``|``
    and line breaks outside quotes; here-document bodies are not commands."""
    if not isinstance(command, str):
        return []
    text = one_line(command).replace(LINE_MARK, "\n")
    parts: list[str] = []
    cur: list[str] = []
    quote, i, n = "", 0, len(text)
    line_start = 0
    while i < n:
        ch = text[i]
        if ch == "\\" and i + 1 < n and quote != "'":
            cur.append(text[i:i + 2])
            i += 2
            continue
        if quote:
            quote = "" if ch == quote else quote
            cur.append(ch)
            i += 1
            continue
        if ch in "'\"":
            quote = ch
        elif ch == "\n":
            parts.append("".join(cur))
            cur = []
            m = _HEREDOC.search(text, line_start, i)
            i += 1
            if m:  # skip the body, through the line that ends it
                while i < n:
                    end = text.find("\n", i)
                    end = n if end < 0 else end
                    body, i = text[i:end].strip(), end + 1
                    if body == m.group(1):
                        break
            line_start = i
            continue
        elif ch == ";" or text.startswith(("&&", "||"), i) or (ch == "|" and text[i - 1:i] != ">"):
            parts.append("".join(cur))
            cur = []
            i += 2 if text.startswith(("&&", "||"), i) else 1
            continue
        cur.append(ch)
        i += 1
    parts.append("".join(cur))
    return [p for p in (x.strip() for x in parts) if p and any(c.isalnum() for c in p)]


def _words(segment: str) -> list[str]:
    """A segment's words from its program on: wrappers, their flags and env
    assignments before it are dropped."""
    words = [w.strip("'\"") for w in segment.lstrip("({!").split()]
    i, wrapped = 0, False
    while i < len(words):
        w = words[i]
        if _ENV_ASSIGN.match(w) or w in _WRAPPERS:
            wrapped = wrapped or w in _WRAPPERS
            i += 1
        elif wrapped and w.startswith("-"):
            i += 2 if w in ("-u", "-g", "-n", "-C") else 1  # sudo -u user, nice -n 10
        else:
            break
    return words[i:]


def program_of(segment: str) -> str:
    """The program a simple command runs (after ``sudo``, ``env``, ``FOO=1``), by its
    file name, lower-cased: ``sudo FOO=1 /usr/bin/make -j4`` → ``make``."""
    words = _words(segment)
    return os.path.basename(words[0]).lower() if words else ""


def programs(command: str) -> list[str]:
    """Every program a command line runs, in order: each segment's program, and the
    one a runner starts (``uv run pytest`` → uv, pytest; ``python -m pip`` → python, pip)."""
    out: list[str] = []
    for seg in segments(command):
        words = _words(seg)
        if not words:
            continue
        prog = os.path.basename(words[0]).lower()
        out.append(prog)
        stem, dot, ext = prog.rpartition(".")
        if dot and stem and ext in ("sh", "py", "js", "ts", "rb", "pl", "exe", "bat", "ps1"):
            out.append(stem)  # ./deploy.sh runs "deploy"
        n = _RUNNERS.get(prog)
        if n == 1 and len(words) > 1:
            out.append(os.path.basename(words[1]).lower())
        elif n == 2 and len(words) > 2 and words[1] in _RUNNER_VERBS:
            out.append(os.path.basename(words[2]).lower())
    return out


def inspects(command: str) -> bool:
    """Whether a command only looks (``ls``, ``cat x | grep y``, ``cd x``, ``git log``,
    ``sed -n``, ``go version``): every segment runs a looking program."""
    segs = segments(command)
    if not segs:
        return True
    for seg in segs:
        words = _words(seg)
        prog = os.path.basename(words[0]).lower() if words else ""
        if not prog or prog in INSPECT or prog == "cd":
            continue
        if prog in ("sed", "awk") and not any(w == "-i" or w.startswith(("-i", "--in-place")) for w in words[1:]):
            continue
        if prog == "git":
            verb = [w for w in words[1:] if not w.startswith("-")][:2]
            if verb and (verb[0] in GIT_INSPECT or verb[:2] in (["stash", "list"], ["stash", "show"])):
                continue
        args = [w for w in words[1:] if not _REDIRECT.match(w)]
        if len(args) == 1 and args[0] in _SELF_QUERY:
            continue
        return False
    return True


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
