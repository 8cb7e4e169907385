"""A store that heals: the repair an index run makes of damaged parts.

A part torn by a crash or a full disk, deleted, or unreadable is found by the
run's cheap check (a stat per live part against the size written, the footer
read only when they differ; ``Store.damaged_parts``). It leaves the live set at
the run's commit, and what it held comes back without a rebuild:

* records: the transcripts of the sessions it held are read again (REPLACE in
  the plan), and those sessions' postings are listed dead;
* postings: the transcripts of the records it covered (its record-id range)
  are read again, so their records and postings are written anew;
* deletes: the dead record ids are found again (postings whose record is in no
  live records part);
* vocab: rebuilt whole from the live postings;
* sessions: rewritten from ``file_sessions``, as every run with work does.

A transcript gone since it was indexed cannot be read again: what the damaged
part held of it is lost, which the run says, and the rest is kept.
"""

from __future__ import annotations

from deja.stages.store import write
from deja.stages.store import layout

from deja.pipeline import manifest as mf


class Repair:
    """What this run does about the damaged parts it found."""

    def __init__(self, damaged: dict[str, tuple[str, str]]):
        self.damaged = damaged  # file → (dataset, what is wrong)
        self.notes: list[str] = []
        self.dead_sessions: set[str] = set()  # sessions whose every posting is dead after the re-read
        kinds = {d for d, _ in damaged.values()}
        self.vocab = "vocab" in kinds
        self.deletes = "deletes" in kinds

    def files(self, dataset: str) -> list[str]:
        return sorted(f for f, (d, _) in self.damaged.items() if d == dataset)

    def plan(self, run, actions: list[mf.Action], rows: dict[str, tuple]) -> list[mf.Action]:
        """``actions`` with the transcripts to read again turned to REPLACE.
        ``rows``: generation's (session_keys, min_record_id, max_record_id) per file."""
        for f, (dataset, problem) in sorted(self.damaged.items()):
            self.notes.append(f"{f} was {problem}: repaired")
        paths: set[str] = set()
        keys: set[str] = set()
        for f in self.files("records"):
            held = rows[f][0]
            if held is None:  # a part from before the catalog named its sessions: any of them
                held = [k for per in run.file_sessions.values() for k in per]
            keys.update(held)
        paths.update(p for p, per in run.file_sessions.items() if not keys.isdisjoint(per))
        self.dead_sessions = keys
        ranges = [rows[f][1:] for f in self.files("postings")]
        if ranges:
            paths.update(self._covering(run, ranges))
        by_path = {a.path: a for a in actions}
        out = []
        for a in actions:
            if a.path in paths and a.kind in (mf.SKIP, mf.APPEND):
                a = mf.Action(mf.REPLACE, a.path, a.harness, 0, a.size, a.mtime_ns)
            out.append(a)
        gone = sorted(p for p in paths if p not in by_path or by_path[p].kind == mf.REMOVE)
        if gone:
            self.notes.append(f"{len(gone)} transcripts the damaged parts held are gone and could not be read "
                              f"again (their sessions keep what was readable): {', '.join(gone[:3])}"
                              + (" …" if len(gone) > 3 else ""))
        return out

    def _covering(self, run, ranges) -> set[str]:
        """The transcripts of the live records whose ids fall in ``ranges``
        (a range unknown: every record)."""
        live = run.live["records"]
        if not live:
            return set()
        if any(lo is None or hi is None for lo, hi in ranges):
            where, params = "true", [live]
        else:
            where = " OR ".join("record_id BETWEEN ? AND ?" for _ in ranges)
            params = [live, *[v for r in ranges for v in r]]
        rows = run.con.execute(
            f"SELECT DISTINCT source_path FROM read_parquet(?, hive_partitioning=false) WHERE {where}", params
        ).fetchall()
        return {r[0] for r in rows}

    # -- after the run's own parts are written, before its commit -----------
    def rebuild_derived(self, run) -> list[str]:
        """Write what damaged postings, deletes and vocabulary parts leave to
        derive; returns the live files this replaces (dropped at the commit)."""
        dropped: list[str] = []
        con, store = run.con, run.store
        new = lambda d: [str(store.root / rel) for ds, rel, _ in run.new_parts if ds == d]  # noqa: E731
        postings = run.live["postings"] + new("postings")
        if self.dead_sessions and run.live["postings"]:
            ords = [run.ords[k] for k in self.dead_sessions if k in run.ords]
            self._write(run, "deletes", "SELECT DISTINCT record_id FROM read_parquet(?, hive_partitioning=false) "
                        "WHERE session IN (SELECT unnest(?))", [run.live["postings"], ords])
        if self.deletes:
            # dead: a posting whose record no live records part holds
            records = [f for f in run.live["records"] if _rel(store, f) not in set(run.purged)] + new("records")
            dropped += [_rel(store, f) for f in run.live["deletes"]]
            run.drop_new("deletes")
            if postings:
                held = ("SELECT record_id FROM read_parquet(?, hive_partitioning=false)" if records
                        else "SELECT NULL::BIGINT WHERE false")
                self._write(run, "deletes", "SELECT DISTINCT record_id FROM read_parquet(?, hive_partitioning=false) "
                            f"EXCEPT {held}", [postings] + ([records] if records else []))
        if self.vocab:
            dropped += [_rel(store, f) for f in run.live["vocab"]]
            run.drop_new("vocab")
            deletes = run.live["deletes"] if not self.deletes else []
            deletes = deletes + new("deletes")
            dead = "SELECT record_id FROM read_parquet(?)" if deletes else "SELECT NULL::BIGINT AS record_id WHERE false"
            if postings:
                counts = con.execute(
                    "SELECT token, count(*) FROM read_parquet(?, hive_partitioning=false) "
                    f"WHERE record_id NOT IN ({dead}) GROUP BY token", [postings] + ([deletes] if deletes else [])
                ).fetchall()
                if counts:
                    from deja.stages.stems import stem_many

                    tokens = [t for t, _ in counts]
                    write.load_lists(con, "heal_vocab", layout.VOCAB_TYPES,
                                     {"token": tokens, "stem": stem_many(tokens), "n": [n for _, n in counts]})
                    try:
                        self._write(run, "vocab", f"SELECT * FROM heal_vocab ORDER BY {layout.VOCAB_ORDER}", None,
                                    layout.VOCAB_ROW_GROUP)
                    finally:
                        con.execute("DROP TABLE heal_vocab")
        return dropped

    @staticmethod
    def _write(run, dataset: str, sql: str, params, row_group: int = 65_536) -> None:
        rel = f"{dataset}/{run.store.new_part_name(run.gen)}"
        n = write.copy_query(run.con, sql, params, run.store.root, rel, row_group)
        if n:
            run.new_parts.append((dataset, rel, n))


def _rel(store, path: str) -> str:
    return path[len(str(store.root)) + 1:]
