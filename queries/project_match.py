"""``--project``: one matching rule for every query that filters by project.

A value is a project's display name (``sessions.project``), a suffix of its
root at a segment boundary (``volcano``, ``github/volcano``), or an absolute
path (``~/src/volcano``, or a folder inside it: the project holding it). When
the value is some project's display name exactly, it names that project only,
though it is also a suffix of longer roots; otherwise every project whose root
ends with it matches. Sessions without a root (a note filed under a name, Codex's
history) match by their name; a session synced in from another machine by its
name there, without its ``imported:`` prefix. Case never matters.

The rule reads the sessions table (``alias``: how the query names it).
"""

from __future__ import annotations

import re

from deja.stages.sources.projects import match_terms


def _rule(a: str, e: str, s: str) -> str:
    # a session synced in from another machine (deja sync, deja team pull) has no root here,
    # only its name there behind "imported:", which is matched without the prefix: the same
    # name, a path here that ends with it, or a tail of it
    there = f"substr(lower({a}project), {len(IMPORTED) + 1})"
    return (f"({e} IS NULL OR CASE WHEN EXISTS (SELECT 1 FROM sessions WHERE lower(project) = {e}) "
            f"THEN lower({a}project) = {e} "
            f"ELSE lower(coalesce({a}project_root, '')) = {e} OR ends_with(lower({a}project_root), {s}) "
            f"OR (coalesce({a}project_root, '') = '' AND lower({a}project) = {e}) END "
            f"OR (starts_with(lower({a}project), '{IMPORTED}') AND ({there} = {e} OR ends_with({e}, '/' || {there}) "
            f"OR ends_with('/' || {there}, '/' || {e}))))")


IMPORTED = "imported:"


def named(alias: str = "") -> str:
    """The rule with ``$project_exact`` and ``$project_suffix`` (see ``named_params``)."""
    return _rule(f"{alias}." if alias else "", "$project_exact::VARCHAR", "$project_suffix::VARCHAR")


def named_params(project: str | None) -> dict:
    exact, suffix = match_terms(project)
    return {"project_exact": exact, "project_suffix": suffix}


def positional(project: str | None, alias: str = "") -> tuple[str, list]:
    """The rule with ``?`` placeholders, and its parameters in their order."""
    exact, suffix = match_terms(project)
    sql = _rule(f"{alias}." if alias else "", "\0e", "\0s")
    params = [exact if t == "e" else suffix for t in re.findall(r"\0([es])", sql)]
    return re.sub(r"\0[es]", "?::VARCHAR", sql), params


def in_sessions(column: str = "session_key") -> str:
    """For queries over records: ``column`` is the key of a matching session."""
    return f"{column} IN (SELECT session_key FROM sessions WHERE {named()})"
