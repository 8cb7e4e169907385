"""Cherry Studio (CherryHQ/cherry-studio): its agents run Claude Code through
the Claude Agent SDK with ``CLAUDE_CONFIG_DIR`` set inside the app profile
(``src/main/services/agents/services/claudecode/index.ts``:
``path.join(app.getPath('userData'), '.claude')``; 2.x moved it to
``<userData>/Data/Agents/.claude``, the path registry's ``feature.agents.claude.root``,
keeping ``v1.agents.claude`` for cleanup). So the transcripts are Claude Code's
own JSONL, read by Claude's reader and filed as ``cherrystudio``.

The app streams with ``includePartialMessages``; deja-vu's registry reports
that its transcripts then hold each reply several times as it grows. Within
one read, an assistant message that the next assistant message extends is
dropped, so the reply is kept once, whole.

Cherry Studio's plain chats (not agents) live in the profile's IndexedDB
(Dexie ``CherryStudio``: ``topics``, ``message_blocks``), later its SQLite
``Data/cherrystudio.sqlite``; they are not coding sessions and are not read."""

from __future__ import annotations

from typing import Mapping

from deja.stages.sources import claude
from deja.stages.sources.base import Message, ReadResult, SourceFile
from deja.stages.sources.locate import cherrystudio_files, cherrystudio_roots

HARNESS = "cherrystudio"


def roots(env: Mapping[str, str]) -> list[str]:
    return cherrystudio_roots(env)


def discover(env: Mapping[str, str]) -> list[SourceFile]:
    return [SourceFile(p, HARNESS) for p in cherrystudio_files(env)]


def read(path: str, start: int = 0) -> ReadResult:
    res = claude.read(path, start)
    for part in res.sessions:
        part.harness = HARNESS
        part.messages = collapse_snapshots(part.messages)
    return res


def collapse_snapshots(messages: list[Message]) -> list[Message]:
    """Drop an assistant reply that the next assistant reply only extends."""
    out: list[Message] = []
    for m in messages:
        prev = out[-1] if out else None
        if (prev is not None and m.role == prev.role == "assistant"
                and len(m.text) > len(prev.text) and m.text.startswith(prev.text)):
            out[-1] = m
        else:
            out.append(m)
    return out
