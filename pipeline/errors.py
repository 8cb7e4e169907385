"""The error the front door (deja.pipeline.api) raises for anything a user can
cause: one line of text; the CLI prints it as ``deja: <line>`` and exits with
``status``."""

from __future__ import annotations


class Fail(Exception):
    """A user-facing error: printed as one line, exit ``status`` (1)."""

    status = 1


# The exit status of an index run whose commit landed but whose cleanup or
# compaction failed (a full disk): the index is updated and readable; 1 means nothing was.
COMMITTED_BUT_UNFINISHED = 3


class NotFound(Fail):
    """Nothing matched: not a failure of the command (the CLI says it and exits 0)."""

    status = 0
