"""Running a hook: `deja hook-*` → the hook's function, failing open.

Whatever goes wrong (no payload, no index, a busy store, a bug) the hook
prints nothing and exits 0: an agent is never blocked by its memory
(hooks-contract §1, §5.1). Before the hook runs, a recovery packet waiting for
this session is claimed so it is printed ahead of (or instead of) the hook's
own output, and an editing tool settles the recovery metric of a capture.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from . import common as c

HOOKS = {
    "hook-context": ("deja.hooks.context", "run"),
    "hook-prompt": ("deja.hooks.prompt", "run"),
    "hook-tool": ("deja.hooks.tool", "run"),
    "hook-tool-after": ("deja.hooks.tool", "run_after"),
    "hook-precompact": ("deja.hooks.context", "run_precompact"),
}
# Hooks that hand back a pending compaction-recovery packet, and their event.
DELIVERS = {"hook-context": "SessionStart", "hook-prompt": "UserPromptSubmit", "hook-tool": "PreToolUse"}


def run_hook(name: str, args: list[str], stream=None) -> int:
    """Run one hook; always returns 0. Output only if the hook completes."""
    out = c.Output(plain="--plain" in args)
    once = "--once" in args
    try:
        if c.recall_mode() == "off" and name != "hook-precompact":
            return 0
        import importlib

        mod_name, fn = HOOKS[name]
        payload = c.read_payload(stream)
        from deja.hooks import harness

        out.harness = harness.named(args, payload)
        out.sent = payload.get("hook_event_name")
        out.plain = out.plain or out.harness in harness.PLAIN
        payload = harness.canonical(out.harness, payload)
        if name in DELIVERS:
            out.packet = claim_packet(payload)
        if name in ("hook-tool", "hook-tool-after") and payload.get("tool_name") in c.EDIT_TOOLS:
            settle_recovery(payload)
        try:
            getattr(importlib.import_module(mod_name), fn)(payload, out, once=once)
        finally:
            if out.packet:  # claimed, so it must be printed even if the hook had nothing
                event = payload.get("hook_event_name")
                out.emit(event if event in DELIVERS.values() else DELIVERS[name], "")
    except c.Silent:
        pass
    except BaseException as exc:  # fail open, whatever it was
        if isinstance(exc, KeyboardInterrupt):
            return 0
        if os.environ.get("DEJA_DEBUG"):
            import traceback

            traceback.print_exc()
    return 0


def settle_recovery(payload: Mapping) -> None:
    """An editing tool: the recovery metric of a capture in this session can be
    measured now (the transcript holds the first-edit boundary)."""
    sid = c.session_id(payload)
    try:
        from deja.hooks.packet import store

        root = c.index_root()
        if not store.watching(root, sid):
            return
        from deja.hooks.packet import metric

        results = metric.settle_pending(root, sid)
        if not any(r.get("state") == "pending" for r in results):
            store.unwatch(root, sid)
    except Exception:
        pass


def claim_packet(payload: Mapping) -> str:
    """The framed recovery packet waiting for this session and workspace, claimed
    for this run (no other hook will deliver it), or ""."""
    sid = c.session_id(payload)
    if not sid:
        return ""
    try:
        from deja.hooks.packet.deliver import pending_text

        return pending_text(c.index_root(), sid, c.project_cwd(payload))
    except Exception:
        if os.environ.get("DEJA_DEBUG"):
            import traceback

            traceback.print_exc()
        return ""
