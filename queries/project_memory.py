"""A project's sessions as the SessionStart and UserPromptSubmit hooks recall
them (hooks/context.py, hooks/prompt.py): its recent sessions, its promoted
notes, and the user turns of sessions a prompt recalled.

Each takes the live store (``stages/store/read.py``) and returns plain rows;
the hooks choose and word what they show. Light imports only, and those lazily.
"""

from __future__ import annotations


def recent_sessions(live, project: str, sid: str, any_project: bool, limit: int) -> list[tuple]:
    """(session_key, harness, session_id, title, decision, updated, touched,
    gave_up, project) of the newest agent sessions of the project whose root is
    ``project`` (of any project with ``any_project``) that hold messages, other
    than ``sid`` and its subagents."""
    return live.con.execute(
        "SELECT session_key, harness, session_id, title, decision, updated, touched, gave_up, project "
        "FROM sessions WHERE harness <> 'deja' AND session_id <> ? AND (? OR project_root = ?) "
        "AND coalesce(kind, '') NOT IN ('sidechain', 'subagent') AND messages > 0 "
        "ORDER BY updated DESC NULLS LAST LIMIT ?",
        [sid, any_project, project, limit],
    ).fetchall()


def promoted_notes(live, project: str) -> list[tuple[str, str, str, str]]:
    """(session_key, title, decision, text) of the 50 newest promoted notes
    (sessions of harness ``deja``) of the project whose root is ``project``, or of no project."""
    con = live.con
    rows = con.execute(
        "SELECT session_key, title, decision FROM sessions WHERE harness = 'deja' "
        "AND (project_root = ? OR (coalesce(project_root, '') = '' AND project = '')) "
        "ORDER BY updated DESC NULLS LAST LIMIT 50",
        [project],
    ).fetchall()
    if not rows or not live.has("records"):
        return []
    texts = dict(con.execute(
        "SELECT session_key, string_agg(text, chr(10) ORDER BY seq) FROM records WHERE harness = 'deja' "
        "AND session_key IN (SELECT unnest(?)) GROUP BY session_key",
        [[r[0] for r in rows]],
    ).fetchall())
    return [(key, title, decision, texts.get(key) or "") for key, title, decision in rows]


def project_display(live, root: str) -> str:
    """The display name of the project whose root is ``root`` (its last segments when unknown)."""
    from deja.stages.sources.projects import short_name

    row = live.con.execute("SELECT project FROM sessions WHERE project_root = ? LIMIT 1", [root]).fetchone()
    return (row[0] if row else "") or short_name(root)


def user_turns(live, keys: list[str], sid: str) -> list[tuple]:
    """(session_key, record_id, text, the session's updated in epoch ms) of the
    user turns of these sessions, other than session ``sid``'s. Only the parts
    that hold them are read (a scan of every record, or of the postings of
    every word, cost a third of the prompt hook)."""
    from deja.stages.store.duck import sql_list

    return live.con.execute(
        f"SELECT r.session_key, r.record_id, r.text, epoch_ms(s.updated) FROM {live.records_of(keys)} r "
        "JOIN sessions s ON s.session_key = r.session_key "
        f"WHERE r.role = 'user' AND r.session_key IN (SELECT unnest({sql_list(keys)})) AND s.session_id <> ? "
        "AND r.record_id NOT IN (SELECT record_id FROM deletes)",
        [sid],
    ).fetchall()
