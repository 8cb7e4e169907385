"""What deja shows passes the redaction rules again, on its way out.

The store holds text as it was redacted when it was indexed, under the rules
of that day: a store built with older rules still holds secrets today's rules
catch. So every way out applies the current rules (stages/redact.py) to the
text it shows: the front door's answers (``shown_data``, which the CLI, its
``--json`` and any server over the front door print), the hooks' text, and the
files deja writes. Text is redacted before it is cut to fit, never after: a
cut can leave the head of a secret that the rules, seeing only the head, no
longer recognise.

Light on purpose: the rules are imported when the first text is shown (or
while DuckDB warms up: ``preload``), and each compiles its pattern on first use.
"""

from __future__ import annotations

# Keys whose values are identifiers, never secrets: a rule has no business
# rewriting them (an id the rules touched would no longer open its session).
IDENTIFIERS = frozenset({
    "id", "session_id", "session_key", "parent", "path", "project_root", "cwd", "signature",
    "uuid", "parentUuid", "sessionId", "timestamp",
})

# How far past a cut text is still redacted: the longest secret a rule takes
# whole is a PEM private key block (an RSA 4096-bit key is about 3.3 KB).
REACH = 8192


# Texts already shown, and how: an answer repeats its names and titles, and
# a warm server (pipeline/serve.py) shows the same sessions request after
# request. The rules are code, so a text is always shown the same way.
_SEEN: dict[str, str] = {}
SEEN_MAX, SEEN_LEN = 8192, 2048  # entries kept (then forgotten at once), and the longest text kept


def shown(text: str) -> str:
    """``text`` under the current redaction rules."""
    if not text:
        return text
    got = _SEEN.get(text)
    if got is not None:
        return got
    from .redact import redact

    out = redact(text)[0]
    if len(text) <= SEEN_LEN:
        if len(_SEEN) >= SEEN_MAX:
            _SEEN.clear()
        _SEEN[text] = out
    return out


def shown_head(text: str, limit: int) -> str:
    """The start of ``text`` under the current rules, for a caller that keeps
    about ``limit`` characters: redacted ``REACH`` past the limit, so the cut
    falls outside any secret the rules saw whole."""
    return shown(text[: limit + REACH] if len(text) > limit + REACH else text)


def shown_data(value):
    """Every string in an answer (dicts, lists, tuples, dataclasses: what the
    front door returns) under the current rules; a string under an
    ``IDENTIFIERS`` key is left as it is. Containers come back new; a dataclass is updated
    in place and returned."""
    if isinstance(value, str):
        return shown(value)
    if isinstance(value, dict):
        return {k: v if k in IDENTIFIERS and isinstance(v, str) else shown_data(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shown_data(v) for v in value]
    if isinstance(value, tuple):
        items = [shown_data(v) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    if hasattr(value, "__dataclass_fields__"):
        for name in value.__dataclass_fields__:
            got = getattr(value, name)
            if not (name in IDENTIFIERS and isinstance(got, str)):
                setattr(value, name, shown_data(got))
    return value


def preload() -> None:
    """Import the rules now: for time a caller would otherwise spend waiting
    (on DuckDB's warm-up thread, which releases the GIL)."""
    from . import redact  # noqa: F401
