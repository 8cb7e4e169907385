"""Crash recovery for Crush: the generic recovery of ``turns.py`` over the
sessions its reader parses. Each project's ``.crush/crush.db`` holds its sessions.
Resume: ``crush --session <id>`` (``-s``; charmbracelet/crush ``internal/cmd/root.go``)
in the project folder."""

from __future__ import annotations

from deja.stages.recover.turns import Recovery, export

HARNESS = "crush"
export(Recovery(HARNESS, "Crush"), globals())
