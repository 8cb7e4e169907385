"""The work answers as text lines: what `deja how` and `deja fix` print and
what the MCP tools of the same names answer (pipeline/mcp_server.py)."""

from __future__ import annotations

FIX_NOT_ERROR = "that does not read like an error line (paste the line the tool printed)"
FIX_NONE = "No session on this machine ran a command after that error."


def safe(text: str) -> str:
    """Text of the store, fit for a terminal or an agent (control characters shown)."""
    from deja.stages.display import sanitize_display

    return sanitize_display(text or "")


def _n(count: int, word: str) -> str:
    return f"{count} {word}{'s' if count != 1 else ''}"


def how_lines(res: dict) -> list[str]:
    """Two lines per command of ``api.how``'s answer."""
    lines = []
    for r in res["commands"]:
        mark = f"  → exit {r['exit']}" if r["exit"] else ""
        lines.append(safe(r["command"]) + mark)
        lines.append(f"  ran {_n(r['runs'], 'time')} in {_n(r['sessions'], 'session')}, last {r['last']}")
    return lines


def echoed(text: str, room: int = 120) -> str:
    """What was asked, quoted back within ``room`` characters (a pasted page
    comes back as its beginning, not as a reply the size of the question)."""
    return repr(text if len(text) <= room else text[: room - 1] + "…")


def how_none(res: dict, project: str | None) -> str:
    return (f"No command on this machine mentions {echoed(' '.join(res['words']))}"
            + (f" in a project matching {echoed(project)}" if project else "") + ".")


def fix_lines(ans: dict) -> list[str]:
    """Two lines per answer of ``api.fix`` (none when it is not an error line)."""
    lines = []
    for r in ans["fixes"]:
        lines.append(f"{safe(r['error'])} ({r['date']})")
        lines.append(f"  ran next: {safe(r['command'])}")
    return lines
