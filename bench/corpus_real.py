"""The `real` corpus profile: the published transcripts of ../shared/corpus/real, repeated.

    python bench/gen_corpus.py --profile real --out /tmp/deja-real --mb 200 --seed 1

Takes the Claude Code and Codex files listed in MANIFEST.tsv (the harnesses deja reads;
stages/sources/locate.py) and writes copies of them into the store layout until --mb is
reached. Content is kept byte for byte except for what makes a session a session: each
copy gets fresh UUIDs (a UUIDv7 stays a v7 of its shifted time), fresh tool, message and
request ids, fresh subagent ids, and every ISO timestamp moved back by one offset per copy,
so the Codex rollout name, its directory and its thread id agree. Ids are mapped
consistently within a copy, so a subagent file still names its session. Same seed and
size = same bytes.
"""

from __future__ import annotations

import csv
import datetime as dt
import os
import re
import sys
import time
from pathlib import Path

from bench.gen_corpus import Gen

HARNESSES = ("claude", "codex")      # the ones deja reads
DEFAULT_SOURCE = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "real"

TOKEN = re.compile(
    rb"(?P<uuid>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"
    rb"|(?P<id>\b(?:toolu|srvtoolu|call|msg|req)_[0-9A-Za-z]{16,})"
    rb"|(?P<ts>(?<![0-9])[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2})(?=(?:\.[0-9]+)?Z)")
ROLLOUT = re.compile(r"rollout-(\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2})-(.+)\.jsonl$")
AGENT_FILE = re.compile(r"agent-([0-9a-f]{6,})\.jsonl$")
EPOCH = dt.datetime(1970, 1, 1)


def source_dir(source: str | os.PathLike | None = None) -> Path:
    return Path(source or os.environ.get("DEJA_REAL_CORPUS") or DEFAULT_SOURCE)


def manifest(source: Path) -> list[dict]:
    """The MANIFEST rows of the harnesses deja reads, in file order."""
    with open(source / "MANIFEST.tsv", newline="") as f:
        rows = [r for r in csv.DictReader(f, delimiter="\t") if r["harness"] in HARNESSES]
    return sorted(rows, key=lambda r: (r["harness"], r["file"]))


class Copy:
    """One pass over the corpus: an id map and a time offset shared by all its files."""

    def __init__(self, g: Gen, shift_s: int):
        self.g, self.shift_s = g, shift_s
        self.ids: dict[bytes, bytes] = {}
        self.latest = 0

    def _uuid(self, old: bytes) -> bytes:
        if old[14:15] == b"7":  # time-ordered: keep it so, at the shifted time
            ms = int(old[:8] + old[9:13], 16) + self.shift_s * 1000
            return self.g.uuid7(max(0, ms)).encode()
        return self.g.uuid4().encode()

    def _sub(self, m: re.Match) -> bytes:
        kind, old = m.lastgroup, m.group(0)
        if kind == "ts":
            t = dt.datetime.strptime(old.decode(), "%Y-%m-%dT%H:%M:%S") + dt.timedelta(seconds=self.shift_s)
            self.latest = max(self.latest, int((t - EPOCH).total_seconds()))
            return t.strftime("%Y-%m-%dT%H:%M:%S").encode()
        new = self.ids.get(old)
        if new is None:
            if kind == "uuid":
                new = self._uuid(old)
            else:
                pre, _, rest = old.partition(b"_")
                new = pre + b"_" + self.g.alnum(len(rest)).encode()
            self.ids[old] = new
        return new

    def rewrite(self, data: bytes) -> bytes:
        self.latest = 0
        return TOKEN.sub(self._sub, data)

    def agent(self, old: str) -> str:
        key = f"agent:{old}".encode()
        if key not in self.ids:
            self.ids[key] = self.g.hexs(len(old)).encode()
        return self.ids[key].decode()

    def uuid_str(self, old: str) -> str:
        return self.rewrite(old.encode()).decode()

    def claude_path(self, out: str, source_path: str) -> tuple[str, str | None]:
        """(new path, agent id to rename in the content) for a Claude source path."""
        rel = source_path.split("projects/", 1)[1]
        parts = [self.uuid_str(p) for p in rel.split("/")]
        agent = None
        m = AGENT_FILE.search(parts[-1])
        if m:
            agent = m.group(1)
            parts[-1] = parts[-1].replace(agent, self.agent(agent))
        return os.path.join(out, "claude", "projects", *parts), agent

    def codex_path(self, out: str, source_path: str) -> str:
        m = ROLLOUT.search(source_path)
        t = dt.datetime.strptime(m.group(1), "%Y-%m-%dT%H-%M-%S") + dt.timedelta(seconds=self.shift_s)
        name = f"rollout-{t.strftime('%Y-%m-%dT%H-%M-%S')}-{self.uuid_str(m.group(2))}.jsonl"
        return os.path.join(out, "codex", "sessions", t.strftime("%Y/%m/%d"), name)


def interleave(g: Gen, rows: list[dict]) -> list[dict]:
    """The rows shuffled within each harness, then merged so every prefix holds both
    harnesses in proportion (a small corpus is never all Claude)."""
    lists = {h: [r for r in rows if r["harness"] == h] for h in HARNESSES}
    for rs in lists.values():
        g.shuffle(rs)
    taken = dict.fromkeys(HARNESSES, 0)
    order = []
    while len(order) < len(rows):
        h = min((h for h in HARNESSES if taken[h] < len(lists[h])),
                key=lambda h: (taken[h] / len(lists[h]), h != "codex"))
        order.append(lists[h][taken[h]])
        taken[h] += 1
    return order


def generate(out: str, mb: float, seed: int = 1, sessions: int | None = None, progress: bool = True,
             source: str | os.PathLike | None = None) -> dict:
    """Copies of the real transcripts until `mb` MB (`sessions`: stop after that many files)."""
    src = source_dir(source)
    if not (src / "MANIFEST.tsv").is_file():
        raise SystemExit(f"gen_corpus: no real corpus at {src} (set DEJA_REAL_CORPUS or --real-dir)")
    rows = manifest(src)
    g = Gen(seed)
    target = int(mb * 1_000_000)
    stats = {"sessions": 0, "claude_sessions": 0, "codex_sessions": 0, "lines": 0, "messages": 0, "bytes": 0,
             "files": [], "copies": 0}
    written, shift, t0 = 0, 0, time.perf_counter()
    while written < target and (sessions is None or stats["sessions"] < sessions):
        # every copy a few days to weeks further back, at a different time of day
        shift -= g.randrange(3 * 86_400, 40 * 86_400)
        copy = Copy(g, shift)
        order = interleave(g, rows)
        stats["copies"] += 1
        for row in order:
            if written >= target or (sessions is not None and stats["sessions"] >= sessions):
                break
            harness = row["harness"]
            data = (src / harness / row["file"]).read_bytes()
            if harness == "claude":
                path, agent = copy.claude_path(out, row["source_path"])
                if agent:
                    data = data.replace(agent.encode(), copy.agent(agent).encode())
            else:
                path = copy.codex_path(out, row["source_path"])
            data = copy.rewrite(data)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)
            if copy.latest:
                os.utime(path, (copy.latest, copy.latest))
            written += len(data)
            stats["sessions"] += 1
            stats[f"{harness}_sessions"] += 1
            stats["lines"] += data.count(b"\n")
            stats["messages"] += int(row["user_msgs"] or 0) + int(row["assistant_msgs"] or 0)
            stats["files"].append(path)
        if progress:
            print(f"  copy {stats['copies']}: {written / 1e6:.0f} MB, {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    stats["bytes"] = written
    stats["seconds"] = round(time.perf_counter() - t0, 2)
    return stats
