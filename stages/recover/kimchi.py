"""Crash recovery for Kimchi Coding: the generic recovery of ``turns.py`` over
the sessions its reader parses. Resume: ``kimchi --session <id>`` in the project
folder (castai/kimchi-dev ``src/cli.ts`` prints exactly that on exit; the flag
is pi's, ``--session <path|partial id>``)."""

from __future__ import annotations

from deja.stages.recover.turns import Recovery, export

HARNESS = "kimchi"
export(Recovery(HARNESS, "Kimchi Coding"), globals())
