"""A tiny vocabulary for writing planted sessions by hand.

A *scenario* is one piece of engineering history (a decision, a bug and its cause, a
config change) told in one answer session, plus *decoys*: sessions in the same project
that share its vocabulary but tell a different story. Questions point at the answer
session; a decoy may carry questions of its own (then it is an answer session too, and
the scenario's main session is a decoy for it).

Beats are the tool calls of a turn, written harness-neutrally; gen_quality.py renders
them as Claude Code or Codex lines through bench/gen_corpus.py's writers and mixes in
ordinary look-around calls (git status, ls, reads of unrelated files) as noise.

`{root}` in any text is replaced by the project's absolute root path.
"""

from __future__ import annotations

from dataclasses import dataclass, field

KINDS = ("natural", "keyword", "error", "identifier", "phrase", "multilingual", "temporal-ish", "paraphrase")


@dataclass
class Beat:
    kind: str            # run | read | edit | write | grep
    a: str = ""          # command / path / pattern
    b: str | None = None  # output / file text / old text
    c: str = ""          # new text (edit)
    code: int = 0        # exit code (run)
    say: str = ""        # what the agent says before the call


def run(cmd: str, out: str = "", code: int = 0, say: str = "") -> Beat:
    return Beat("run", cmd, out, "", code, say)


def read(path: str, text: str | None = None, say: str = "") -> Beat:
    return Beat("read", path, text, "", 0, say)


def edit(path: str, old: str, new: str, say: str = "") -> Beat:
    return Beat("edit", path, old, new, 0, say)


def write(path: str, text: str, say: str = "") -> Beat:
    return Beat("write", path, text, "", 0, say)


def grep(pattern: str, out: str, say: str = "") -> Beat:
    return Beat("grep", pattern, out, "", 0, say)


@dataclass
class Turn:
    user: str
    beats: list
    answer: str
    title: str = ""


def T(user: str, *beats: Beat, answer: str, title: str = "") -> Turn:
    return Turn(user, list(beats), answer, title)


@dataclass
class Decoy:
    turns: list
    project: str | None = None        # default: the scenario's project
    qs: list = field(default_factory=list)   # questions this decoy answers
    when: tuple | None = None


def D(*turns: Turn, project: str | None = None, qs: list | None = None, when: tuple | None = None) -> Decoy:
    return Decoy(list(turns), project, list(qs or []), when)


@dataclass
class Scenario:
    key: str
    project: str
    turns: list                      # the answer session
    qs: list                         # (kind, query) or (kind, query, "all") -> also the `also` sessions
    decoys: list = field(default_factory=list)
    when: tuple | None = None        # (min, max) days before the corpus "now" (2026-11-01)
    lang: str = "en"
    also: list = field(default_factory=list)   # more answer sessions: lists of Turns


def S(key: str, project: str, turns: list, qs: list, decoys: list | None = None, when: tuple | None = None,
      lang: str = "en", also: list | None = None) -> Scenario:
    return Scenario(key, project, turns, qs, list(decoys or []), when, lang, list(also or []))


# Projects the scenarios live in: name -> (gen_corpus kind, root, org).
PROJECTS = {
    "auth-server": ("py-web", "/home/dev/work/acme/auth-server", "acme"),
    "orders-service": ("py-web", "/home/dev/src/orders-service", "northwind"),
    "billing-api": ("py-web", "/home/dev/code/globex.io/billing-api", "globex"),
    "ledger": ("go-svc", "/home/dev/go/src/github.com/initech/ledger", "initech"),
    "gateway": ("go-svc", "/home/dev/work/hooli/gateway", "hooli"),
    "scheduler": ("go-svc", "/home/dev/src/scheduler", "umbrella"),
    "shop-web": ("ts-web", "/home/dev/src/shop-web", "northwind"),
    "admin-dashboard": ("ts-web", "/home/dev/work/acme/admin-dashboard", "acme"),
    "logfmt": ("rust-cli", "/home/dev/src/logfmt", "tyrell"),
    "pkgsync": ("rust-cli", "/home/dev/code/vandelay.io/pkgsync", "vandelay"),
    "ingest-pipeline": ("py-data", "/home/dev/work/umbrella/ingest-pipeline", "umbrella"),
    "feature-store": ("py-data", "/home/dev/src/feature-store", "hooli"),
    "infra-live": ("infra", "/home/dev/work/acme/infra-live", "acme"),
    "k8s-manifests": ("infra", "/home/dev/src/k8s-manifests", "acme"),
}
