"""Crash recovery for Senpi: the generic recovery of ``turns.py`` over the
sessions its reader parses. Resume: ``senpi --session <id>`` in the project
folder (code-yeongyu/senpi ``packages/coding-agent/src/cli/args.ts``:
``--session <path|id>``, a session file or a partial id, pi's flag kept; a
session of another project asks to be forked instead)."""

from __future__ import annotations

from deja.stages.recover.turns import Recovery, export

HARNESS = "senpi"
export(Recovery(HARNESS, "Senpi"), globals())
