"""Which agent a hook answers, in that agent's words: its stdin payload read
into the one Claude-shaped payload every hook works on, and the hook's answer
put in the shape that agent reads (hooks-contract §2, §3, §4.4).

One hook code path serves every agent; only the way in and the way out
differ. The agent is named by ``--harness NAME`` on the command deja install
wrote; a payload without it is known by its own event names (Gemini's
BeforeAgent, Cursor's camelCase events) and is otherwise Claude-shaped
(Claude Code, Codex, Qwen Code, Grok Build and Kimi Code send the same
field names).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

HARNESSES = ("claude", "codex", "gemini", "qwen", "kimi", "cursor", "opencode", "grok")
# an agent's own event name → the Claude event the hooks answer
EVENTS = {
    "gemini": {"SessionStart": "SessionStart", "BeforeAgent": "UserPromptSubmit", "PreCompress": "PreCompact",
               "BeforeTool": "PreToolUse", "AfterTool": "PostToolUse"},
    "cursor": {"sessionStart": "SessionStart", "beforeSubmitPrompt": "UserPromptSubmit", "preCompact": "PreCompact"},
}
# agents that read raw stdout, not a JSON envelope (Kimi adds it to the
# context as it is; deja's opencode plugin folds the text in itself)
PLAIN = frozenset({"kimi", "opencode"})


def named(args: Sequence[str], payload: Mapping) -> str:
    """The agent this run answers: ``--harness NAME``, else what the payload's event names say."""
    for i, a in enumerate(args):
        name = a.partition("=")[2] if a.startswith("--harness=") else (
            args[i + 1] if a == "--harness" and i + 1 < len(args) else None)
        if name is not None:
            return name if name in HARNESSES else "claude"
    event = payload.get("hook_event_name")
    if event == "BeforeAgent" or event == "PreCompress":
        return "gemini"
    if event in EVENTS["cursor"] or ("conversation_id" in payload and "workspace_roots" in payload):
        return "cursor"
    return "claude"


def canonical(harness: str, payload: Mapping) -> dict:
    """The payload with the fields every hook reads under their Claude names:
    ``hook_event_name`` (Claude's event), ``session_id`` and ``cwd``."""
    p = dict(payload)
    event = p.get("hook_event_name")
    table = EVENTS.get(harness)
    if table and event in table:
        p["hook_event_name"] = table[event]
    if not p.get("session_id"):
        # Cursor names the chat conversation_id (its sessionStart also sends session_id)
        sid = p.get("sessionId") or p.get("conversation_id")
        if sid:
            p["session_id"] = sid
    if not (isinstance(p.get("cwd"), str) and p["cwd"]):
        roots = p.get("workspace_roots")  # Cursor: the open folders, no cwd
        if isinstance(roots, list) and roots and isinstance(roots[0], str):
            p["cwd"] = roots[0]
    return p


def native_event(harness: str, event: str, sent: object) -> str:
    """The agent's own name for ``event``: the name it sent when that maps to
    ``event`` (Qwen ignores context whose name does not match), else its usual one."""
    table = EVENTS.get(harness)
    if not table:
        return event
    if isinstance(sent, str) and table.get(sent) == event:
        return sent
    return next((own for own, ev in table.items() if ev == event), event)


def render(harness: str, event: str, sent: object, context: str, system_message: str | None = None) -> str:
    """The one stdout line ``harness`` reads for ``event``, or "" when that agent
    takes no context from it."""
    if harness == "cursor":
        # Cursor reads model context only from sessionStart (`additional_context`);
        # beforeSubmitPrompt answers just continue/user_message
        return json.dumps({"additional_context": context}, ensure_ascii=False) if event == "SessionStart" else ""
    out: dict = {}
    if system_message:
        out["systemMessage"] = system_message
    out["hookSpecificOutput"] = {"hookEventName": native_event(harness, event, sent), "additionalContext": context}
    return json.dumps(out, ensure_ascii=False)
