"""The recovery packet as the agent reads it (seeds 000/001).

``render(packet, verdict, budget)`` returns the framed text (hooks.common.frame)
whose UTF-8 length, frame included, never exceeds ``budget``. The order:

    heading — the context was just compacted; what the transcript recorded before it
    Keep until closed   (first; at most 40% of the budget)
    Standing instructions
    Objective, with the latest answer beside it ("(latest answer: b)"), and,
    beside a step request, the first request, labelled
    Repository verdict  (anything but "unchanged": the claims below need re-validation)
    Reported conclusions, verification commands [passed]/[failed]/[unknown],
    open items, conflicts, files touched
    Omitted: … (what the extractor's limits and this budget left out)

Lines that do not fit go lowest priority first and are counted in the omitted
line. All recalled text passes hooks.common.clean / recall_line, so it cannot
close the frame.
"""

from __future__ import annotations

from datetime import datetime, timezone

from deja.hooks.common import frame, recall_line

KEEP_SHARE = 0.40

HEADING = ("The context was just compacted. This is what the session's transcript recorded before it; "
           "what the assistant said there is a reported claim, not a verified fact.")
REVALIDATE = ("The conclusions below were recorded before that and must be re-validated against the "
              "repository, not presented as current.")
_VERDICT_DEFAULT = {
    "unchanged": "Repository unchanged since the capture (HEAD, branch and working tree match).",
    "changed": "Repository changed since the capture.",
    "partial": "Repository only partly compared with the capture.",
    "unavailable": "Repository state could not be compared with the capture.",
}

# Display order of the sections, and per section: header, item prefix, text bytes.
_SECTIONS = {
    "keep": ("Keep until closed:", None, 240),
    "instructions": ("Standing instructions (the user's):", "- ", 240),
    "objective": (None, "Objective: ", 600),
    "first_request": (None, "First request of the session (the objective is a step of it): ", 300),
    "verdict": (None, "", 400),
    "conclusions": ("The assistant reported (claims, not verified):", "- reported: ", 300),
    "verifications": ("Verification commands:", None, 160),
    "open": ("Still open:", "- ", 240),
    "conflicts": ("Conflicts / blockers:", "- ", 240),
    "files": ("Files touched:", "- ", 160),
}
ORDER = ("heading",) + tuple(_SECTIONS)
# What survives a tight budget, most important first.
PRIORITY = ("heading", "verdict", "objective", "first_request", "keep", "instructions", "open", "conflicts",
            "verifications", "conclusions", "files")

_NOUNS = {
    "keep": "keep-until-closed lines", "instructions": "standing instructions", "objective": "objective",
    "first_request": "first request", "verifications": "verification commands", "open": "open items",
    "conflicts": "conflicts", "conclusions": "conclusions", "files": "files", "records": "older records",
    "bytes": "bytes of item text", "error": "extraction errors",
}


def render(packet: dict, verdict: dict | None, budget: int = 4096) -> str:
    """The framed packet, at most ``budget`` UTF-8 bytes; "" when nothing fits."""
    packet = packet if isinstance(packet, dict) else {}
    lines = _candidates(packet, verdict)  # [(section, text)] in PRIORITY order
    base = _base_omitted(packet)
    pending = _counts(lines)  # still to be decided, per section
    chosen: list[tuple[str, str]] = []
    dropped: dict[str, int] = {}
    keep_cap = int(budget * KEEP_SHARE)
    for sec, text in lines:
        pending[sec] -= 1
        trial = chosen + [(sec, text)]
        worst = _merge(base, dropped, pending)  # the omitted line can only get shorter than this
        fits = _size(_assemble(trial, worst)) <= budget
        if fits and sec == "keep":
            fits = _section_bytes(trial, "keep") <= keep_cap
        if fits:
            chosen = trial
        elif sec != "heading":
            dropped[sec] = dropped.get(sec, 0) + 1  # sections share the packet's category names
    if not any(sec == "heading" for sec, _ in chosen):
        return ""
    out = _assemble(chosen, _merge(base, dropped, {}))
    while _size(out) > budget and len(chosen) > 1:  # belt and braces: never over
        chosen.pop()
        out = _assemble(chosen, _merge(base, dropped, {}))
    return out if _size(out) <= budget else ""


# --------------------------------------------------------------------------- lines


def _candidates(packet: dict, verdict) -> list[tuple[str, str]]:
    by_sec: dict[str, list[str]] = {"heading": [HEADING], "verdict": [_verdict_line(verdict)]}
    by_sec["keep"] = [_keep_line(e) for e in _list(packet, "keep")]
    by_sec["verifications"] = [_verify_line(e) for e in _list(packet, "verifications")]
    for sec in ("instructions", "objective", "first_request", "conclusions", "open", "conflicts", "files"):
        _, prefix, limit = _SECTIONS[sec]
        by_sec[sec] = [f"{prefix}{packet_line(e['text'], limit)}{_answer(packet) if sec == 'objective' else ''}"
                       f"{_prov(e)}" for e in _list(packet, sec)]
    return [(sec, t) for sec in PRIORITY for t in by_sec.get(sec, []) if t]


def _answer(packet: dict) -> str:
    """  (latest answer: b) — what the user chose after the request, if anything."""
    answer = _list(packet, "answer")
    return f"  (latest answer: {packet_line(answer[0]['text'], 80)})" if answer else ""


def _list(packet: dict, sec: str) -> list[dict]:
    v = packet.get(sec)
    if isinstance(v, dict):
        v = [v]
    if not isinstance(v, list):
        return []
    return [e for e in v if isinstance(e, dict) and isinstance(e.get("text"), str) and e["text"].strip()]


def _keep_line(e: dict) -> str:
    kind = packet_line(str(e.get("kind") or "open"), 20)
    label = {"awaiting": "awaiting the user"}.get(kind, kind)
    return f"- [{label}] {packet_line(e['text'], _SECTIONS['keep'][2])}{_prov(e)}"


def _verify_line(e: dict) -> str:
    status = e.get("status") if e.get("status") in ("passed", "failed", "unknown") else "unknown"
    return f"- [{status}] {packet_line(e['text'], _SECTIONS['verifications'][2])}{_prov(e)}"


def _verdict_line(verdict) -> str:
    v = verdict if isinstance(verdict, dict) else {}
    state = v.get("state") if v.get("state") in _VERDICT_DEFAULT else "unavailable"
    line = v.get("line") if isinstance(v.get("line"), str) and v.get("line").strip() else _VERDICT_DEFAULT[state]
    text = packet_line(line, _SECTIONS["verdict"][2])
    if state != "unchanged":
        text = f"{text.rstrip('.')}. {REVALIDATE}"
    return text


def _prov(e: dict) -> str:
    """ (harness role, 2026-03-02 10:00 UTC) — where a line came from, briefly."""
    who = " ".join(packet_line(str(e.get(f) or ""), 24) for f in ("harness", "role") if e.get(f))
    when = _when(e.get("ts"))
    inner = ", ".join(p for p in (who, when) if p)
    return f" ({inner})" if inner else ""


def _when(ts) -> str:
    if not isinstance(ts, int) or isinstance(ts, bool):
        return ""
    try:
        return datetime.fromtimestamp(ts / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    except (OverflowError, OSError, ValueError):
        return ""


# --------------------------------------------------------------------------- assembling


def _assemble(chosen: list[tuple[str, str]], omitted: dict[str, int]) -> str:
    out: list[str] = []
    for sec in ORDER:
        texts = [t for s, t in chosen if s == sec]
        if not texts:
            continue
        header = _SECTIONS.get(sec, (None,))[0]
        if header:
            out.append(header)
        out.extend(texts)
    note = _omitted_line(omitted)
    if note:
        out.append(note)
    return frame("\n".join(out))


def _section_bytes(chosen: list[tuple[str, str]], sec: str) -> int:
    texts = [t for s, t in chosen if s == sec]
    header = _SECTIONS[sec][0]
    return sum(len(t.encode("utf-8")) + 1 for t in texts) + (len(header.encode("utf-8")) + 1 if header else 0)


def _omitted_line(counts: dict[str, int]) -> str:
    parts = [f"{n} {_NOUNS.get(k, packet_line(k, 30))}" for k, n in counts.items() if n > 0]
    return ("Omitted: " + ", ".join(parts) + ".") if parts else ""


def _base_omitted(packet: dict) -> dict[str, int]:
    om = packet.get("omitted")
    if not isinstance(om, dict):
        return {}
    return {str(k): v for k, v in om.items() if isinstance(v, int) and not isinstance(v, bool) and v > 0}


def _counts(lines: list[tuple[str, str]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for sec, _ in lines:
        out[sec] = out.get(sec, 0) + 1
    return out


def _merge(*counts: dict[str, int]) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in counts:
        for k, n in c.items():
            if n > 0 and k not in ("heading", "verdict"):
                out[k] = out.get(k, 0) + n
    return out


def packet_line(text: str, limit: int) -> str:
    """hooks.common.recall_line over text that is sure to encode (a stored packet
    may carry a lone surrogate)."""
    return recall_line(str(text).encode("utf-8", "replace").decode("utf-8"), limit)


def _size(text: str) -> int:
    return len(text.encode("utf-8"))
