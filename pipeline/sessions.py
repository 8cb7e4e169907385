"""The sessions dataset: one row per session, derived from what each file said.

A session can span files (a resumed run continuing its id in a new file); the
project of the first file in sorted path order wins (harness-formats 1.8).
Its ``project`` is the display name of its ``project_root``, unique among the
store's projects, so it is decided here, over every session, not per file.
"""

from __future__ import annotations

from deja.stages.normalize import COUNTS, derive_title
from deja.stages.sources.projects import display_names, match_terms, normalize_cwd, spelled
from deja.stages.store.layout import SESSION_TYPES


def project_names(rows) -> dict[str, str]:
    """root → display name over file_sessions rows (every session of the store).

    A name keeps the case the cwd was written in, though the root is folded
    where the file system ignores case."""
    spell: dict[str, str] = {}
    for r in sorted(rows, key=lambda r: (r.get("path") or "", r.get("session_key") or "")):
        root = r.get("project_root") or ""
        if not root or spell.get(root):
            continue
        cwd = spelled(r.get("cwd") or "")
        inside = normalize_cwd(cwd)[: len(root) + 1] in (root, root + "/")
        spell[root] = cwd[: len(root)] if inside else ""
    return display_names({r: s or r for r, s in spell.items()})


def named_root(project: str, names: dict[str, str]) -> str:
    """The root a project given by name alone (a note's ``--project``) stands
    for: the one root it is the display name or a path suffix of, else ""."""
    exact, suffix = match_terms(project)
    if not exact:
        return ""
    hits = [r for r, name in names.items()
            if name.lower() == exact or r.lower() == exact or (suffix and r.lower().endswith(suffix))]
    return hits[0] if len(hits) == 1 else ""


def build_sessions(rows: list[dict], ords: dict[str, int], names: dict[str, str] | None = None,
                   gone: dict | None = None) -> dict[str, list]:
    """Column lists of the sessions dataset, one row per session key, sorted by key.

    ``names``: every root's display name (``project_names`` of the whole
    store); by default those of ``rows``. ``gone``: path → when the file was
    found gone (naive UTC datetime); a session is gone when all its files are,
    or when the database holding it no longer does (its row's ``gone_at``)."""
    names = project_names(rows) if names is None else names
    groups: dict[str, list[dict]] = {}
    for r in rows:
        groups.setdefault(r["session_key"], []).append(r)
    out: dict[str, list] = {name: [] for name, _ in SESSION_TYPES}
    for key in sorted(groups):
        parts = sorted(groups[key], key=lambda r: r["path"])
        first = parts[0]
        merged = _merge(parts)
        root = merged["project_root"] or (named_root(merged["project"], names) if merged["project"] else "")
        if root in names:
            merged["project_root"], merged["project"] = root, names[root]
        if not merged["messages"] and not merged["n_summary"] and not merged["n_command"]:
            continue  # a file with no message at all (titles only, a zero-byte file) is not a session
        for name, value in merged.items():
            out[name].append(value)
        out["session_key"].append(key)
        out["ord"].append(ords[key])
        out["harness"].append(first["harness"])
        out["session_id"].append(first["session_id"])
        out["path"].append(first["path"])
        # (merged holds a synced-in session's from_machine and orig_id; None for a local one)
        out["origin"].append("imported" if merged.get("from_machine") else "local")
        # (a file's mark, or the session's own: gone from a database still on disk)
        out["gone_at"].append(_gone_ms([(gone or {}).get(p["path"]) or p.get("gone_at") for p in parts]))
    return out


def _gone_ms(marks: list) -> int | None:
    """Epoch ms of the latest mark when every file of the session is gone, else None."""
    if not marks or not all(marks):
        return None
    from datetime import timezone

    return int(max(marks).replace(tzinfo=timezone.utc).timestamp() * 1000)


def _merge(parts: list[dict]) -> dict:
    def first_nonempty(field):
        return next((p.get(field) for p in parts if p.get(field)), "") or ""

    started = [p["started"] for p in parts if p.get("started") is not None]
    updated = [p["updated"] for p in parts if p.get("updated") is not None]
    counts = {c: sum(p.get(c) or 0 for p in parts) for c in COUNTS}
    titled = [p for p in parts if p.get("title")]
    agent_title = False
    if titled:
        best = max(titled, key=lambda p: (p.get("title_rank") or 0, p.get("updated") or 0))
        title = best["title"]
    else:
        by_time = sorted(parts, key=lambda p: p.get("started") or 0)
        users = [u for p in by_time for u in (p.get("first_user") or [])]
        title, agent_title = derive_title(
            users,
            next((p["first_assistant"] for p in by_time if p.get("first_assistant")), ""),
            next((p["first_output"] for p in by_time if p.get("first_output")), ""),
        )
    touched: dict[str, int] = {}
    for p in parts:
        for path, c in zip(p.get("touched") or [], p.get("touched_counts") or []):
            touched[path] = touched.get(path, 0) + c
    last_prompt = ""
    for p in sorted(parts, key=lambda p: p.get("updated") or 0):
        last_prompt = p.get("last_prompt") or last_prompt
    return {
        "project": first_nonempty("project"),
        "project_root": first_nonempty("project_root"),
        "cwd": first_nonempty("cwd"),
        "branch": first_nonempty("branch"),
        "started": min(started) if started else None,
        "updated": max(updated) if updated else None,
        "title": title,
        "agent_title": agent_title,
        "last_prompt": last_prompt,
        "messages": counts["n_user"] + counts["n_assistant"],
        **counts,
        "touched": [p for p, _ in sorted(touched.items(), key=lambda kv: (-kv[1], kv[0]))[:20]],
        "kind": first_nonempty("kind"),
        "parent": first_nonempty("parent"),
        "agent": first_nonempty("agent"),
        "from_machine": first_nonempty("from_machine") or None,
        "orig_id": first_nonempty("orig_id") or None,
        "decision": max(((p.get("decision_ts") or 0, p["decision"]) for p in parts if p.get("decision")), default=(0, ""))[1],
        # backed out and settled nothing: a decision reached afterwards keeps the lift
        "gave_up": any(p.get("gave_up") for p in parts) and not any(p.get("decision") for p in parts),
    }
