"""Crash recovery for Kimi Code: the generic recovery of ``turns.py`` over the
sessions its reader parses (the folder is ``state.json``'s ``workDir``).
Resume: ``kimi --session <id>`` in that folder (MoonshotAI/kimi-code's
``kimi`` reference: ``--session``, ``-S``; ``--resume`` is its hidden alias)."""

from __future__ import annotations

from deja.stages.recover.turns import Recovery, export

HARNESS = "kimi"
export(Recovery(HARNESS, "Kimi Code"), globals())
