"""Crash recovery for Hermes: the generic recovery of ``turns.py`` over the
sessions its reader parses. Resume: ``hermes --resume <id>`` (``-r``; NousResearch/hermes-agent's
CLI documentation)."""

from __future__ import annotations

from deja.stages.recover.turns import Recovery, export

HARNESS = "hermes"
export(Recovery(HARNESS, "Hermes"), globals())
