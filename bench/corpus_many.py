"""The `many` corpus profile: a long history of short sessions.

    python bench/gen_corpus.py --profile many --out /tmp/deja-many --mb 100 --seed 1

The default corpus's projects and writers, with turns of at most three tool
calls and short outputs, about 60 sessions to the megabyte (some 12,000 files
at 200 MB, a median of 15 KB): most hold one turn (a quick question, a one-off
command), the shape of a store that subagents and scripted runs fill with
small files. It measures the cost of a file rather than of a byte: ten
thousand transcripts of a few lines once took longer to index than 200 MB of
the default profile (bench/README.md, "Many small files").
"""

from __future__ import annotations

from bench.gen_corpus import Planner, Shape, Turn
from bench.gen_corpus import generate as generate_shape


class ShortPlanner(Planner):
    """The default turns with at most three tool calls whose outputs and files are cut short."""

    def turn(self, first: bool, max_steps: int = 3) -> Turn:
        t = super().turn(first, max_steps)
        t.steps = t.steps[:max_steps]
        for s in t.steps:
            s.output, s.content = s.output[:400], s.content[:400]
        return t


SHAPE = Shape(planner=ShortPlanner, sessions_per_mb=60)


def generate(out: str, mb: float, seed: int = 1, sessions: int | None = None, progress: bool = True) -> dict:
    return generate_shape(out, mb, seed, sessions, progress, shape=SHAPE)
