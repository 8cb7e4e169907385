"""Crash recovery for omp (Oh My Pi): the generic recovery of ``turns.py``
over the sessions its reader parses. Resume: ``omp --resume <id>``
(can1357/oh-my-pi ``cli/flag-tables.ts``: ``--resume``, ``-r``, ``--session``
take an id prefix), with ``--profile <name>`` first for a session of a
profile's store (``profiles/<name>/``), which the same parser reads."""

from __future__ import annotations

from deja.stages.recover.turns import Recovery, export, profile_of

HARNESS = "omp"


def _resume(session_id: str, path: str) -> str | None:
    profile = profile_of(path)
    if profile is None:
        return ""  # a profile name a shell would misread: no command rather than a wrong one
    return f"omp --profile {profile} --resume {session_id}" if profile else None


export(Recovery(HARNESS, "omp (Oh My Pi)", resume=_resume), globals())
