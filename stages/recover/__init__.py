"""Crash recovery, one module per harness (the interface is in ``base.py``).

Every harness in ``deja.stages.sources.READERS`` whose recovery module provides
``recover_candidates`` and ``recover_state`` takes part: Claude Code and Codex
here, every harness with a module ``deja.stages.recover.<harness>`` (most
built on ``turns.py``), or a reader module that brings them itself, with no
change to the command or the queries. A module may add
``resume_command(session_id, path)`` where the resume command depends on the
store (a profile's).
"""

from __future__ import annotations

import importlib
from types import ModuleType

from deja.stages.recover.base import RecoverError
from deja.stages.sources import READERS


def recoverers(harness: str | None = None) -> list[tuple[str, ModuleType]]:
    """(harness, module) for every reader that brings its own recovery."""
    names = list(READERS)
    if harness:
        if harness not in READERS:
            raise RecoverError(f"unknown harness {harness!r} (known: {', '.join(READERS)})")
        names = [harness]
    found = []
    for name in names:
        mod = _recovery_module(name)
        if mod is not None:
            found.append((name, mod))
    if harness and not found:
        raise RecoverError(f"recovery is not available for {harness} yet")
    return found


def store_resume(harness: str, session_id: str, path: str) -> str | None:
    """The resume command a harness's recovery module gives for a session in
    the store file ``path`` (a profile's store needs the profile named), None
    when the harness's one command serves every store."""
    if not path or harness not in READERS:
        return None
    mod = _recovery_module(harness)
    fn = getattr(mod, "resume_command", None) if mod is not None else None
    return fn(session_id, path) if callable(fn) else None


def _recovery_module(harness: str) -> ModuleType | None:
    # Imported here, one harness at a time: a listing for one agent loads only its module.
    if harness == "claude":
        from deja.stages.recover import claude as mod
    elif harness == "codex":
        from deja.stages.recover import codex as mod
    else:
        mod = _added_later(harness)
    if callable(getattr(mod, "recover_candidates", None)) and callable(getattr(mod, "recover_state", None)):
        return mod
    return None


def _added_later(harness: str) -> ModuleType:
    """The recovery module of a harness this package does not ship, else its reader."""
    modname = f"{__name__}.{harness}"
    try:
        return importlib.import_module(modname)
    except ModuleNotFoundError as exc:
        if exc.name != modname:
            raise
        return importlib.import_module(READERS[harness])
