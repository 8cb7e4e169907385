"""Crash recovery for the Cline CLI: the generic recovery of ``turns.py``
over the sessions its reader parses. Only the newer CLI's sessions
(``sessions/<id>/<id>.messages.json``) are offered: the extension's tasks are
reopened in the editor. Resume: ``cline --id <id>`` (cline/cline
``apps/cli/src/commands/program.ts``: "Resume an existing session by ID")."""

from __future__ import annotations

from deja.stages.recover.turns import Recovery, export

HARNESS = "cline"


def _cli(path: str) -> bool:
    return path.endswith(".messages.json")


export(Recovery(HARNESS, "Cline CLI", _cli), globals())
