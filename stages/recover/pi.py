"""Crash recovery for pi: the generic recovery of ``turns.py`` over the
sessions its reader parses. Resume: ``pi --session <id>`` in the project folder (badlogic/pi-mono
``cli/args.ts``: a session file or a partial id)."""

from __future__ import annotations

from deja.stages.recover.turns import Recovery, export

HARNESS = "pi"
export(Recovery(HARNESS, "pi"), globals())
