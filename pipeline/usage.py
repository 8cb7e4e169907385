"""What `deja` says before it runs anything: the short usage bare `deja`
prints, and the "did you mean" for a mistyped command. Imported by the fast
entry point, so it stays free of typer and of the store."""

from __future__ import annotations

USAGE = """\
usage: deja <words…>              search every agent session on this machine
       deja <command> [options]   run a command (deja <command> --help for its options)

examples:
  deja connection pool exhausted           sessions where all these words appear
  deja search --since 7d "flaky test"      a phrase, in the last seven days
  deja last                                the ten most recent sessions
  deja show 7f1c                           one session, by the start of its id
  deja how docker compose                  commands that ran here before
  deja fix "EADDRINUSE: address already in use :::3000"
  deja blame cart.py                       sessions that discussed a file
  deja index                               read new transcripts now
  deja doctor                              what was found and what the index holds

commands: search last show ctx blame files how fix friction recover resume
          handoff restore share remember promote forget stats view index doctor
          install uninstall mcp demo completion version
every command: --help; everywhere: --color auto|always|never (NO_COLOR is honoured)
"""

def version() -> str:
    """deja's version, as installed: pyproject.toml takes it from
    deja_root/__init__.py, which this floor may not import."""
    from importlib.metadata import PackageNotFoundError, version as installed

    try:
        return installed("deja")
    except PackageNotFoundError:
        return "unknown (not installed)"


# Endings that make a command name into an ordinary word ("indexes",
# "installs", "fixed", "searching"): such a word is a query, not a typo.
_ENDINGS = ("s", "es", "ed", "ing", "er")
# The common English words one slip away from a command (checked against an
# English word list): people search for these, so they are never corrected.
_WORDS = frozenset({"aversion", "blast", "chow", "demon", "fiction", "file", "forge", "hare", "howl", "lame", "least",
                    "presume", "recovery", "restored", "resumed", "shared", "shown", "showy", "sow", "status"})


def _distance(a: str, b: str) -> int:
    """Edits (insert, delete, substitute, swap two neighbours) from a to b."""
    prev2, prev = None, list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[-1]


def _typo_of(word: str, command: str) -> bool:
    """Is ``word`` a slip of the fingers on ``command``: one letter missing,
    one extra, or two neighbours swapped (``stat``, ``indx``, ``serach``)?

    A changed letter does not count: it mostly makes another real word
    (``shop``/show, ``fox``/fix, ``state``/stats, ``session``/version), and so
    does a second edit (``research``/search, ``function``/friction). A command
    plus an ordinary ending, and the English words in ``_WORDS``, are words."""
    if len(word) < 3 or word == command or word in _WORDS:
        return False
    if any(word == command + e for e in _ENDINGS):
        return False
    if len(word) == len(command) and sum(x != y for x, y in zip(word, command)) == 1:
        return False
    return _distance(word, command) == 1


def did_you_mean(argv: list[str], commands) -> str | None:
    """The command a single bare word most likely meant, else None (the
    words are a search). Only ``deja <word> [--options]`` qualifies: two or
    more words, a quoted phrase (it holds a space) or a word with anything
    but letters and hyphens is always a search."""
    words = [a for a in argv if not a.startswith("-")]
    if len(words) != 1 or words[0] != argv[0]:
        return None
    word = argv[0].lower()
    if not word.replace("-", "").isalpha() or not word.isascii():
        return None
    close = sorted(c for c in commands if _typo_of(word, c))
    return close[0] if close else None
