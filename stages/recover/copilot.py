"""Crash recovery for Copilot CLI: the generic recovery of ``turns.py`` over the
sessions its reader parses. Resume: ``copilot --resume=<id>`` (github/copilot-cli's changelog:
``--resume=<id>``, ``-r``; a 2025 session is migrated to the new store when resumed).
The 2025 documents and the command history record no folder, so they are never offered."""

from __future__ import annotations

from deja.stages.recover.turns import Recovery, export

HARNESS = "copilot"
export(Recovery(HARNESS, "Copilot CLI"), globals())
