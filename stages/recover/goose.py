"""Crash recovery for Goose: the generic recovery of ``turns.py`` over the
sessions its reader parses. Resume: ``goose session --resume --session-id <id>`` (block/goose
``goose-cli/src/cli.rs``: ``--session-id``, alias ``--id``; a legacy JSONL session's id is its
file name, which the same flag takes)."""

from __future__ import annotations

from deja.stages.recover.turns import Recovery, export

HARNESS = "goose"
export(Recovery(HARNESS, "Goose"), globals())
