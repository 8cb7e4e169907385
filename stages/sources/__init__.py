"""Harness readers. Each module has the same signature (see base.py); the
registry maps a harness id to its module so nothing imports every reader."""

from __future__ import annotations

import importlib
from types import ModuleType

READERS = {
    "claude": "deja.stages.sources.claude",
    "codex": "deja.stages.sources.codex",
    "deja": "deja.stages.sources.notes",
    "cline": "deja.stages.sources.cline",
    "roo": "deja.stages.sources.roo",
    "kilo": "deja.stages.sources.kilo",
}


def reader(harness: str) -> ModuleType:
    return importlib.import_module(READERS[harness])


def harnesses() -> list[str]:
    return list(READERS)
