"""Handing a captured packet back: once, to the next session-start, prompt or
tool hook of the same session and workspace, at most 4 KiB with its frame.

The repository is fingerprinted again here and compared with the capture, so
the packet states a verdict (unchanged, or changed since the commit it was
captured at) instead of presenting old conclusions as current. Rendering
happens before the delivery is claimed: a failure leaves the packet pending
rather than lost, and two hooks racing for it deliver it once.
"""

from __future__ import annotations

from pathlib import Path

BUDGET = 4096


def pending_text(root: Path, sid: str, cwd: str, budget: int = BUDGET) -> str:
    """The framed packet to print now, or "" (none waiting, busy, or already taken)."""
    from . import store

    if not store.is_pending(root, sid, cwd):  # one stat: the common case costs nothing
        return ""
    from . import metric, render, repo

    try:
        packet = store.peek(root, sid, cwd)
        if not packet:
            return ""
        verdict = repo.verdict(packet.get("repo"), repo.fingerprint(cwd))
        text = render.render(packet, verdict, budget)
        if not text or len(text.encode("utf-8")) > budget or not store.mark_delivered(root, sid, cwd):
            return ""
    except store.Busy:
        return ""
    metric.log(root, "deliver", session=sid, bytes=len(text.encode("utf-8")), verdict=verdict.get("state", ""))
    return text
