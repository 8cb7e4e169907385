"""A snippet's line: the first line holding the most query words. The search
finds needles in the whole record at once; it must pick the line that reading
the record line by line picks."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from deja.queries.snippets import _best_line_by_line, _elide_around, best_line

BREAKS = ["\n", "\r\n", "\r", "\v", "\f", "\x1c", "\x85", "\u2028", "\u2029"]
WORDS = ["pool", "Pool", "POOL", "exhausted", "timeout", "retry", "İstanbul", "ΣΑΣ", "straße", "x", " ", "-", "pool_size=5"]


def _by_line(text: str, needles: list[str]) -> str:
    return _elide_around(" ".join(_best_line_by_line(text, needles).split()), needles, 220)


@settings(max_examples=600, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(WORDS), st.sampled_from(BREAKS), st.text(max_size=6)), max_size=40),
       st.lists(st.sampled_from(["pool", "exhausted", "timeout", "retry", "", "pool exhausted", "x", "pool\nx",
                                 "straße", "σας"]), min_size=1, max_size=4))
def test_the_best_line_is_the_one_reading_line_by_line_picks(pieces: list[str], needles: list[str]) -> None:
    text = "".join(pieces)
    assert best_line(text, needles) == _by_line(text, needles)


def test_the_best_line_of_a_long_log() -> None:
    lines = [f"line {i} retry after timeout" for i in range(2000)]
    lines[1500] = "the connection pool was exhausted after retry and timeout"
    assert best_line("\n".join(lines), ["pool", "exhausted", "retry", "timeout"]).startswith("the connection pool")
    assert best_line("\r\n".join(lines), ["retry"]) == "line 0 retry after timeout"
    assert best_line("", ["pool"]) == "" and best_line("\n\n", ["pool"]) == ""
