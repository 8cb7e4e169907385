"""Harness readers. Each module has the same signature (see base.py); the
registry maps a harness id to its module so nothing imports every reader."""

from __future__ import annotations

import importlib
from types import ModuleType

READERS = {
    "claude": "deja.stages.sources.claude",
    "codex": "deja.stages.sources.codex",
    "copilot": "deja.stages.sources.copilot",
    "copilot-vscode": "deja.stages.sources.copilot_vscode",
    "deja": "deja.stages.sources.notes",
    "imported": "deja.stages.sources.imported",
    "cursor": "deja.stages.sources.cursor",
    "opencode": "deja.stages.sources.opencode",
    "gemini": "deja.stages.sources.gemini",
    "qwen": "deja.stages.sources.qwen",
    "pi": "deja.stages.sources.pi",
    "omp": "deja.stages.sources.omp",
    "openclaw": "deja.stages.sources.openclaw",
    "kimi": "deja.stages.sources.kimi",
    "deepseek": "deja.stages.sources.deepseek",
    "continue": "deja.stages.sources.continue_dev",
    "amp": "deja.stages.sources.amp",
    "kiro": "deja.stages.sources.kiro",
    "commandcode": "deja.stages.sources.commandcode",
    "aider": "deja.stages.sources.aider",
    "goose": "deja.stages.sources.goose",
    "zed": "deja.stages.sources.zed",
    "crush": "deja.stages.sources.crush",
    "hermes": "deja.stages.sources.hermes",
    "antigravity": "deja.stages.sources.antigravity",
    "grok": "deja.stages.sources.grok",
    "cline": "deja.stages.sources.cline",
    "roo": "deja.stages.sources.roo",
    "kilo": "deja.stages.sources.kilo",
    "senpi": "deja.stages.sources.senpi",
    "gjc": "deja.stages.sources.gjc",
    "kimchi": "deja.stages.sources.kimchi",
    "prime": "deja.stages.sources.prime",
    "cherrystudio": "deja.stages.sources.cherrystudio",
    "zcode": "deja.stages.sources.zcode",
}

# the long names agents go by (a person types them to `deja install`, another
# tool writes them in a sync batch) → deja's harness ids
LONG_NAMES = {"claude-code": "claude", "codex-cli": "codex", "gemini-cli": "gemini", "qwen-code": "qwen",
              "kimi-code": "kimi", "cursor-agent": "cursor", "grok-build": "grok", "copilot-cli": "copilot"}


def reader(harness: str) -> ModuleType:
    return importlib.import_module(READERS[harness])


def harnesses() -> list[str]:
    return list(READERS)
