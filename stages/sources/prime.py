"""prime-agent (PrimeIntellect-ai/prime-agent, a pi fork): pi's session format,
one ``<uuid7>.jsonl`` per session directly under ``~/.prime/agent/sessions``
(``packages/coding-agent/src/config.ts``: ``piConfig.configDir`` ``.prime/agent``,
``PRIME_AGENT_CODING_AGENT_DIR``, ``PRIME_AGENT_SESSION_DIR`` and the older
``PRIME_AGENT_CODING_AGENT_SESSION_DIR``; ``migrations.ts`` moves the older
``--<cwd>--/`` folders into the flat root, and those are read too). The header
may carry ``parentSession`` and ``rlmDepth``; its ``ipython`` tool's cells are
not work records here."""

from __future__ import annotations

from typing import Mapping

from deja.stages.sources.base import ReadResult, SourceFile
from deja.stages.sources.locate import prime_files, prime_root
from deja.stages.sources.pi import encoded_folder_project
from deja.stages.sources.pi_format import read_file

HARNESS = "prime"


def roots(env: Mapping[str, str]) -> list[str]:
    return [prime_root(env)]


def discover(env: Mapping[str, str]) -> list[SourceFile]:
    return [SourceFile(p, HARNESS) for p in prime_files(env)]


def read(path: str, start: int = 0) -> ReadResult:
    return read_file(path, start, HARNESS, encoded_folder_project(path))
