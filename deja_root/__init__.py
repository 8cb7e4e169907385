"""deja: a local memory for AI coding agents.

The package root is a thin namespace: the version, and the front door
(deja.pipeline.api) under its own names: ``deja.search(...)``, ``deja.index()``.
They load on first use, so ``import deja`` stays free.
"""

__version__ = "0.1.0"

# the front door's public names (pipeline/api.py)
_FRONT_DOOR = frozenset({
    "index", "search", "last", "show", "session", "ctx", "blame", "files", "how", "fix", "friction",
    "remember", "promote", "forget", "tombstones", "unforget", "stats", "view_sessions", "doctor",
    "Fail", "NotFound",
})


def __getattr__(name: str):
    if name in _FRONT_DOOR:
        from deja.pipeline import api

        return getattr(api, name)
    raise AttributeError(f"module 'deja' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | _FRONT_DOOR)
