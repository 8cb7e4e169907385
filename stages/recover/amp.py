"""Crash recovery for Amp: the generic recovery of ``turns.py`` over the
sessions its reader parses. Resume: ``amp threads continue <id>`` (Amp's manual; closed source)."""

from __future__ import annotations

from deja.stages.recover.turns import Recovery, export

HARNESS = "amp"
export(Recovery(HARNESS, "Amp"), globals())
