"""The `tool` corpus profile: sessions dominated by big tool calls.

    python bench/gen_corpus.py --profile tool --out /tmp/deja-tool --mb 200 --seed 1

Agents that build, test and read whole files all day: turns of 10–40 tool calls, outputs
of 20–200 KB (build logs, verbose test runs, whole-file reads; about one in fifty of 1–2
MB), and long shell commands (heredocs that write a script, pipelines of 1–4 KB). What it
stresses is the size of one line and of one message, not the vocabulary. Sessions,
projects, prompts, answers and the Claude/Codex rendering are gen_corpus's own.
"""

from __future__ import annotations

from bench.gen_corpus import (CHUNKS, EXT, NOUNS, VERBS, CodexWriter, Gen, Planner, Shape, Step, Turn, WRITERS,
                              file_header, generate as generate_shape, out_build, out_compose_logs, out_tests,
                              py_traceback)


class ToolPlanner(Planner):
    """The default scenarios' prompt and answer around many big tool calls."""

    budget = 1 << 62   # set per session by render_session
    spent = 0.0

    def output_size(self) -> int:
        g = self.g
        size = g.randrange(1_000_000, 2_000_000) if g.random() < 0.02 else g.size(45_000, 0.7, 20_000, 200_000)
        return min(size, max(20_000, int((self.budget - self.spent) / 1.6)))

    def repeat(self, make, target: int) -> str:
        """Concatenate outputs of `make()` until `target` bytes: one long log of many runs."""
        parts, n = [], 0
        while n < target:
            part = make()
            parts.append(part)
            n += len(part) + 1
        return "\n".join(parts)

    def big_read(self) -> Step:
        g, p = self.g, self.p
        target = self.output_size()
        rel = g.choice(p.src_files + p.test_files)
        parts, n = [file_header(g, p, rel)], 0
        while n < target:
            c = CHUNKS[p.lang](g, p)
            parts.append(c)
            n += len(c) + 1
        content = "\n".join(parts).rstrip("\n")
        return Step("read", remark=self.remark("read", rel), path=rel, content=content, start=1,
                    total=content.count("\n") + 1)

    def big_build(self) -> Step:
        g, p = self.g, self.p
        step = self.build_step(fail=False)
        fail = g.random() < 0.3
        step.output = self.repeat(lambda: out_build(g, p, g.random() < 0.1)[0] + "\n" + out_compose_logs(g, p, 40),
                                  self.output_size())
        if fail:
            out, step.summary = out_build(g, p, True)
            step.output += "\n" + out
            step.code = 1
        return step

    def big_tests(self) -> Step:
        g, p = self.g, self.p
        step = self.test_step(fail=g.random() < 0.35)
        more = self.repeat(lambda: out_tests(g, p, g.random() < 0.1, True)[0], self.output_size())
        step.output = more + "\n" + step.output
        return step

    def heredoc(self) -> Step:
        g, p = self.g, self.p
        body, n = [], 0
        target = g.randrange(1000, 4000)
        while n < target:
            c = CHUNKS[p.lang](g, p)
            body.append(c)
            n += len(c)
        script = f"scripts/{g.choice(VERBS)}_{p.noun(g)}{EXT[p.lang] if p.lang == 'python' else '.py'}"
        code = "\n".join(body).rstrip()
        cmd = f"mkdir -p scripts && cat > {script} <<'EOF'\n{code}\nEOF\npython {script} --{p.noun(g)} {g.hexs(8)}"
        out = py_traceback(g, p)[0] if g.random() < 0.3 else f"wrote {g.randrange(1, 9000)} rows to {p.noun(g)}.csv"
        return self.bash(cmd, out, 1 if out.startswith("Traceback") else 0, "Write and run a script")

    def pipeline(self) -> Step:
        g, p = self.g, self.p
        stages = [f"find {' '.join(g.sample(p.dirs, k=min(len(p.dirs), 3)))} -type f "
                  + " -o ".join(f"-name '*{x}'" for x in g.sample(list(EXT.values()), k=3))]
        target = g.randrange(1000, 4000)
        while sum(map(len, stages)) < target:
            r = g.randrange(6)
            noun = p.noun(g)
            if r == 0:
                stages.append(f"xargs -P4 -n50 grep -nE '({'|'.join(p.fn(g) for _ in range(g.randrange(3, 12)))})'")
            elif r == 1:
                stages.append("awk -F: '{ " + " ".join(f'if ($3 ~ /{g.choice(NOUNS)}/) c["{noun}_{i}"]++;'
                                                       for i in range(g.randrange(2, 8))) + " } END { for (k in c) print c[k], k }'")
            elif r == 2:
                stages.append(f"sed -E 's#{p.root}/##; s/[0-9a-f]{{{g.randrange(7, 41)}}}/<sha>/g; s/{noun}_[0-9]+/{noun}_N/g'")
            elif r == 3:
                stages.append(f"sort | uniq -c | sort -rn | head -{g.randrange(20, 500)}")
            elif r == 4:
                stages.append(f"jq -r '.[] | select(.{noun} != null) | [.id, .{p.noun(g)}, .{g.choice(NOUNS)}] | @tsv'")
            else:
                stages.append(f"tee /tmp/{noun}-{g.hexs(6)}.txt")
        cmd = " \\\n  | ".join(stages)
        out = "\n".join(f"{g.randrange(1, 900):7d} {g.choice(p.src_files)}:{g.randrange(1, 600)}:{p.fn(g)}"
                        for _ in range(g.randrange(5, 200)))
        return self.bash(cmd, out, 0, "Count call sites")

    def turn(self, first: bool, max_steps: int = 40) -> Turn:
        g = self.g
        base = super().turn(first, max_steps)
        big = [self.big_read, self.big_build, self.big_tests, self.heredoc, self.pipeline]
        small = [self.quick_step, self.grep_step, self.edit_step]
        steps = list(base.steps)
        for _ in range(g.randrange(6, 30)):
            # Big outputs only while the session's budget lasts: one turn of them would
            # otherwise overshoot a small session several times over.
            if g.random() < 0.55 and self.spent < self.budget:
                st = g.choices(big, weights=[18, 10, 10, 10, 12])[0]()
            else:
                st = g.choice(small)()
            steps.append(st)
            # Claude stores a result twice (tool_result and toolUseResult), Codex once
            self.spent += 1.6 * len(st.output or st.content) + len(st.cmd)
        g.shuffle(steps)
        return Turn(base.prompt, steps[:max_steps], base.answer, base.title)


class ToolCodexWriter(CodexWriter):
    """Codex reading a whole file with one `sed -n`, so its reads are as big as Claude's."""

    def _shell(self, st: Step) -> tuple[str, str, int]:
        if st.kind == "read":
            return f"sed -n '{st.start},{st.start + st.total - 1}p' {st.path}", st.content, 0
        return super()._shell(st)


SHAPE = Shape(planner=ToolPlanner, writers={**WRITERS, "codex": ToolCodexWriter}, sessions_per_mb=1.5)


def generate(out: str, mb: float, seed: int = 1, sessions: int | None = None, progress: bool = True) -> dict:
    return generate_shape(out, mb, seed, sessions, progress, shape=SHAPE)
