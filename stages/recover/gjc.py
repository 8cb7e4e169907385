"""Crash recovery for gajae-code: the generic recovery of ``turns.py`` over
the sessions its reader parses. Resume: ``gjc --resume <id>`` (twoimo/gajae-code
``packages/coding-agent/src/cli/args.ts``: ``--resume``, ``-r`` and ``--session``
take an id; its own relaunch command is ``gjc --resume <id>`` in the session's folder)."""

from __future__ import annotations

from deja.stages.recover.turns import Recovery, export

HARNESS = "gjc"
export(Recovery(HARNESS, "gajae-code"), globals())
