"""Crash recovery for omp (Oh My Pi): the generic recovery of ``turns.py``
over the sessions its reader parses. Resume: ``omp --resume <id>``
(can1357/oh-my-pi ``cli/flag-tables.ts``: ``--resume``, ``-r``, ``--session``
take an id prefix), with ``--profile <name>`` first for a session of a
profile's store (``profiles/<name>/``), which the same parser reads."""

from __future__ import annotations

from deja.stages.recover.turns import Recovery, export, profile_resume

HARNESS = "omp"


export(Recovery(HARNESS, "omp (Oh My Pi)", resume=profile_resume("omp --profile {profile} --resume {id}")), globals())
