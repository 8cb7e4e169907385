"""Crash recovery for opencode: the generic recovery of ``turns.py`` over the
sessions its reader parses. The database records each session's ``directory``.
Resume: ``opencode -s <id>`` (``--session``) in that folder."""

from __future__ import annotations

from deja.stages.recover.turns import Recovery, export

HARNESS = "opencode"
export(Recovery(HARNESS, "opencode"), globals())
