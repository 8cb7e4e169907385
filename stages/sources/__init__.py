"""Harness readers. Each module has the same signature (see base.py); the
registry maps a harness id to its module so nothing imports every reader."""

from __future__ import annotations

import importlib
from types import ModuleType

READERS = {
    "claude": "deja.stages.sources.claude",
    "codex": "deja.stages.sources.codex",
    "deja": "deja.stages.sources.notes",
    "cursor": "deja.stages.sources.cursor",
    "opencode": "deja.stages.sources.opencode",
    "hermes": "deja.stages.sources.hermes",
    "antigravity": "deja.stages.sources.antigravity",
    "grok": "deja.stages.sources.grok",
}


def reader(harness: str) -> ModuleType:
    return importlib.import_module(READERS[harness])


def harnesses() -> list[str]:
    return list(READERS)
