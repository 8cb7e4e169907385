"""Crash recovery for the Cursor CLI agent: the generic recovery of
``turns.py`` over the agent transcripts its reader parses. Only the CLI's
transcripts (``agent-transcripts/``) are offered: the IDE's chats cannot be
resumed from a terminal. Resume: ``cursor-agent --resume <chatId>`` in the
project folder (Cursor's CLI documentation; closed source)."""

from __future__ import annotations

from deja.stages.recover.turns import Recovery, export

HARNESS = "cursor"


def _cli(path: str) -> bool:
    return "agent-transcripts" in path.replace("\\", "/").split("/")


export(Recovery(HARNESS, "Cursor CLI agent", _cli), globals())
