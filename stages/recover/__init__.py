"""Crash recovery, one module per harness (the interface is in ``base.py``).

Every harness in ``deja.stages.sources.READERS`` whose recovery module provides
``recover_candidates`` and ``recover_state`` takes part: Claude Code and Codex
here, and a harness added later through ``deja.stages.recover.<harness>`` (or
its reader module itself), with no change to the command or the queries.
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
