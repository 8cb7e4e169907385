"""Crash recovery for prime-agent: the generic recovery of ``turns.py`` over
the sessions its reader parses. Resume: ``prime-agent --resume <id>``
(PrimeIntellect-ai/prime-agent ``packages/coding-agent/src/cli/args.ts``:
``--resume``/``-r`` take a path or id, as its sessions documentation says; the installer names
the command ``prime-agent``). pi's ``--session`` is gone from this fork."""

from __future__ import annotations

from deja.stages.recover.turns import Recovery, export

HARNESS = "prime"
export(Recovery(HARNESS, "prime-agent"), globals())
