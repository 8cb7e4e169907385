"""Crash recovery for Hermes: the generic recovery of ``turns.py`` over the
sessions its reader parses (the root store and every profile's). Resume:
``hermes --resume <id>`` (``-r``; hermes-agent's CLI documentation), with the
profile named first for a profile's session: ``hermes -p <profile> --resume
<id>`` (each profile is its own Hermes home)."""

from __future__ import annotations

from deja.stages.recover.turns import Recovery, export, profile_of

HARNESS = "hermes"


def _resume(session_id: str, path: str) -> str | None:
    profile = profile_of(path)
    if profile is None:
        return ""  # a profile name a shell would misread: no command rather than a wrong one
    return f"hermes -p {profile} --resume {session_id}" if profile else None


export(Recovery(HARNESS, "Hermes", resume=_resume), globals())
