"""Crash recovery for Hermes: the generic recovery of ``turns.py`` over the
sessions its reader parses (the root store and every profile's). Resume:
``hermes --resume <id>`` (``-r``; hermes-agent's CLI documentation), with the
profile named first for a profile's session: ``hermes -p <profile> --resume
<id>`` (each profile is its own Hermes home)."""

from __future__ import annotations

from deja.stages.recover.turns import Recovery, export, profile_resume

HARNESS = "hermes"


export(Recovery(HARNESS, "Hermes", resume=profile_resume("hermes -p {profile} --resume {id}")), globals())
