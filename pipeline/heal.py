"""A store that heals: the repair an index run makes of damaged parts.

A part torn by a crash or a full disk, deleted, or unreadable is found by the
run's cheap check (a stat per live part against the size written, the footer
read only when they differ; ``Store.damaged_parts``). It leaves the live set at
the run's commit, and what it held comes back without a rebuild:

* records: the transcripts of the sessions it held are read again (REPLACE in
  the plan), and those sessions' postings are listed dead;
* postings or docs: the transcripts of the records it covered (its
  record-id range) are read again, so their records, postings and docs are
  written anew;
* deletes: the dead record ids are found again (postings whose record is in no
  live records part);
* vocab: rebuilt whole from the live postings;
* sessions: rewritten from ``file_sessions``, as every run with work does.

A transcript gone since it was indexed cannot be read again: what the damaged
part held of it is lost, which the run says, and the rest is kept.
"""

from __future__ import annotations

from deja.pipeline import manifest as mf
from deja.stages.store import derive


class Repair:
    """What this run does about the damaged parts it found."""

    def __init__(self, damaged: dict[str, tuple[str, str]]):
        self.damaged = damaged  # file → (dataset, what is wrong)
        self.notes: list[str] = []
        self.dead_sessions: set[str] = set()  # sessions whose every posting is dead after the re-read
        self.reread: set[str] = set()  # transcripts read again whole (a database too: every session)
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
        self.reread = paths
        ranges = [rows[f][1:] for f in self.files("postings") + self.files("docs")]
        if ranges:
            paths.update(derive.sources_of(run.con, run.live["records"], ranges))
        self.reread = paths
        by_path = {a.path: a for a in actions}
        out = []
        for a in actions:
            if a.path in paths and a.kind in (mf.SKIP, mf.APPEND):
                a = mf.Action(mf.REPLACE, a.path, a.harness, 0, a.size, a.mtime_ns)
            out.append(a)
        gone = sorted(p for p in paths if p not in by_path or by_path[p].kind in (mf.REMOVE, mf.GONE))
        if gone:
            self.notes.append(f"{len(gone)} transcripts the damaged parts held are gone and could not be read "
                              f"again (their sessions keep what was readable): {', '.join(gone[:3])}"
                              + (" …" if len(gone) > 3 else ""))
        return out

    # -- after the run's own parts are written, before its commit -----------
    def rebuild_derived(self, run) -> list[str]:
        """Write what damaged postings, deletes and vocabulary parts leave to
        derive; returns the live files this replaces (dropped at the commit)."""
        dropped: list[str] = []
        store = run.store
        new = lambda d: [str(store.root / rel) for ds, rel, _ in run.new_parts if ds == d]  # noqa: E731
        args = (run.con, store, run.gen)
        add = lambda part: part and run.new_parts.append(part)  # noqa: E731
        postings = run.live["postings"] + new("postings")
        if self.dead_sessions and run.live["docs"]:
            known = run.ordinals.known
            ords = [known[k] for k in self.dead_sessions if k in known]
            add(derive.dead_of_sessions(*args, run.live["docs"], ords))
        if self.deletes:
            # dead: a posting whose record no live records part holds (found again whole)
            records = [f for f in run.live["records"] if _rel(store, f) not in set(run.purged)] + new("records")
            dropped += [_rel(store, f) for f in run.live["deletes"]]
            run.drop_new("deletes")
            if postings:
                add(derive.dead_without_records(*args, postings, records))
        if self.vocab:
            dropped += [_rel(store, f) for f in run.live["vocab"]]
            run.drop_new("vocab")
            deletes = (run.live["deletes"] if not self.deletes else []) + new("deletes")
            if postings:
                from deja.stages.stems import stem_many

                add(derive.vocab_from_postings(*args, postings, deletes, stem_many))
        return dropped


def _rel(store, path: str) -> str:
    return path[len(str(store.root)) + 1:]
