"""One index run: discover → plan → read → normalize → redact → tokenize → write → commit.

The run owns order, incrementality and the commit; the stages it calls are
plain functions, and a batch (pipeline/batch.py) turns records into parts: a big
run streams Arrow through pyarrow and polars, bounded by the flush size; a
small one (an appended turn) keeps plain lists and writes through DuckDB's
core, so it never imports pyarrow or polars. Only file-level metadata is kept
until the commit.

The process holds one in-memory DuckDB (``con``): the catalog is attached to
it to load state and to commit, and small writes, purges and merges run on it.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Mapping

from deja.pipeline import manifest as mf
from deja.pipeline.batch import ArrowBatch, ListBatch
from deja.pipeline.heal import Repair
from deja.pipeline.ingest import FileOutput, process_file
from deja.pipeline.sessions import build_sessions, project_names
from deja.stages import normalize
from deja.stages.policy import drop_filter
from deja.stages.sources import READERS, locate, projects, reader
from deja.stages.sources.jsonl import line_end_after
from deja.stages.store import config, duck, history_map, index_state, write
from deja.stages.store.catalog import Store
from deja.stages.store.compact import MAX_PARTS, compact, needs_compaction
from deja.stages.store.config import CONTENT_VERSION
from deja.stages.store.limits import WORKERS, bound_memory, release
from deja.stages.store.purge import purge_records

# Reads bigger than this go to worker processes (both cores); smaller ones,
# like an appended turn, stay in-process where a pool would cost more than it saves.
POOL_MIN_BYTES = 8 << 20
# A transcript with more than this to read is read a slice at a time (read_sliced):
# whole, a 300 MB transcript took 1.46 GB. DEJA_SLICE_BYTES overrides it (tests).
SLICE_BYTES = 32 << 20
# Runs reading at most this much take the small path (ListBatch): the
# pure-Python tokenizer costs less than importing pyarrow and polars below
# it (bench/README.md, measured figures). DEJA_SMALL_RUN_BYTES overrides it (tests
# drive both paths through the same cases).
SMALL_RUN_BYTES = 2 << 20


@dataclass
class HarnessSummary:
    harness: str
    files: int = 0
    read: int = 0
    sessions: int = 0
    messages: int = 0
    records_added: int = 0
    redactions: int = 0
    malformed: int = 0
    failed: int = 0
    changed_while_read: int = 0  # vanished or replaced under the reader (counted apart from failed)
    gone: int = 0  # of ``sessions``: kept though the agent deleted their transcripts (doctor counts the same)


@dataclass
class Summary:
    up_to_date: bool = False
    sessions: int = 0
    seconds: float = 0.0
    harnesses: dict[str, HarnessSummary] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    repaired: list[str] = field(default_factory=list)  # damaged parts this run replaced (pipeline/heal.py)

    def as_json(self) -> dict:
        return {
            "schema_version": 2,
            "up_to_date": self.up_to_date,
            "sessions": self.sessions,
            "seconds": round(self.seconds, 3),
            "harnesses": [vars(h) for h in self.harnesses.values()],
            "errors": self.errors,
            "repaired": self.repaired,
        }


# ---------------------------------------------------------------------------
# the run



def _env_int(env: Mapping[str, str], name: str, default: int | None = None, least: int = 1) -> int | None:
    """A whole number from the environment (tuning knobs), ``default`` when unset;
    anything else is said in one line naming the variable, not a bare ValueError."""
    value = (env.get(name) or "").strip()
    if not value:
        return default
    try:
        n = int(value)
    except ValueError:
        n = least - 1
    if n < least:
        from deja.pipeline.errors import Fail

        raise Fail(f"{name} must be a whole number of at least {least}, not {value!r}")
    return n


class Run:
    def __init__(self, store: Store, env: Mapping[str, str], rebuild: bool, progress: Callable | None, con=None,
                 prune_gone: bool = False):
        # tuning knobs (tests: DEJA_*), read first: a bad one is said before anything starts
        self.small_run_bytes = _env_int(env, "DEJA_SMALL_RUN_BYTES", SMALL_RUN_BYTES, least=0)
        self.flush_bytes = _env_int(env, "DEJA_FLUSH_BYTES")  # (several flushes from a small corpus)
        self.vocab_at_once = _env_int(env, "DEJA_VOCAB_AT_ONCE")  # (a vocabulary merged from disk)
        self.slice_bytes = _env_int(env, "DEJA_SLICE_BYTES", SLICE_BYTES)
        self.store = store
        self.prune_gone = prune_gone  # take out the sessions whose transcripts are gone (else they are kept)
        self.env = env
        self.rebuild = rebuild
        self.progress = progress
        self.con = con if con is not None else duck.connect()
        self.merge_chunk = bound_memory(self.con, store.root, env)
        self.summary = Summary()
        self.new_parts: list[tuple[str, str, int]] = []  # (dataset, rel path, rows)
        self.history = None  # the history map sealed for the catalog this run started from (stages/store/history_map.py)
        self.history_added = False  # this run's keys are in it
        self.done: list[FileOutput] = []
        self.compact_due = False
        self.batch: ArrowBatch | ListBatch | None = None
        # the sessions this run changed, when that is all that did (see write_sessions)
        self.touched_sessions: set[str] | None = None
        self.repair: Repair | None = None
        self.sizes: dict[str, int] = {}  # sound live parts whose size the catalog learns now
        self.purged: list[str] = []  # live records parts the purge rewrote
        self.cleared = lambda: None  # forgets the suspect parts this run checked (find_damage)
        self.committed = False  # the catalog holds this run (a failure after it costs only cleanup)
        self.parts: dict[str, tuple] | None = None  # the live generation the run started from (load_state)
        self.rerooted: set[str] = set()  # transcripts whose rows name their root anew (load_state; kept at the commit)

    # -- state ------------------------------------------------------------
    def load_state(self) -> None:
        with self.store.catalog(self.con, retries=40) as con:
            state = index_state.load(con)
            # deja forget / project exclusions (pipeline/curate.py): tombstoned and excluded sessions are
            # never written, on every run including --rebuild; forgotten ones leave file_sessions too.
            self.drop = drop_filter(self.env, con)
        self.manifest, self.file_sessions = state.manifest, state.file_sessions
        self.ordinals = index_state.SessionOrdinals(state.ords)
        for rows in self.file_sessions.values():
            for key in [k for k in rows if k in self.drop.keys]:
                del rows[key]
        self.names_before = project_names(r for per_file in self.file_sessions.values() for r in per_file.values())
        self.rerooted = set()
        for path, rows in self.file_sessions.items():
            for r in rows.values():
                # (after names_before: a root named anew renames, so every session row is rewritten)
                root = projects.rerooted(r.get("project_root") or "")
                if root != (r.get("project_root") or ""):
                    r["project_root"] = root
                    self.rerooted.add(path)
        self.next_record_id = state.next_record_id
        self.gen = state.generation + 1
        self.parts = state.parts
        self.live = self.store.live_parts(self.parts.values())

    def find_damage(self) -> None:
        """The cheap check of every run: a stat per live part (pipeline/heal.py),
        and the parts a query could not read decoded whole."""
        from deja.stages.store.catalog import clear_suspects, suspects

        suspect = suspects(self.store.root)
        damaged, self.sizes = self.store.damaged_parts(self.con, [r[:4] for r in self.parts.values()],
                                                       suspects=suspect)
        if suspect:  # (checked: forgotten once this run commits its repair, or finds nothing to do)
            self.cleared = lambda: clear_suspects(self.store.root)
        if not damaged:
            return
        self.repair = Repair(damaged)
        for rel, (dataset, _) in damaged.items():
            self.live[dataset].remove(str(self.store.root / rel))

    # -- main -------------------------------------------------------------
    def execute(self) -> Summary:
        t0 = time.monotonic()
        projects.clear_cache()  # a repository may have moved or gone since the last run in this process
        self.load_state()
        if not self.rebuild and any(r.get("content_version") != CONTENT_VERSION for r in self.manifest.values()):
            # an older deja derived other columns: its parts cannot be read beside new ones
            self.rebuild = True
        if not self.rebuild:
            self.find_damage()
        sources = self.discover()
        actions = mf.plan(sources, self.manifest, self.rebuild, verify=True, prune_gone=self.prune_gone)
        if self.repair:
            actions = self.repair.plan(self, actions, {f: r[4:] for f, r in self.parts.items()})
        if self.prune_gone and not self.rebuild:
            actions = self.prune_gone_sessions(actions)
        work = [a for a in actions if a.kind != mf.SKIP]
        for a in actions:
            self._hs(a.harness).files += a.kind not in (mf.REMOVE, mf.GONE)
        if not work and not self.rebuild and not self.repair:
            # parts a killed run wrote but never committed, or committed but never
            # cleaned (a run with work cleans them at its commit)
            with self.store.catalog(self.con, retries=40) as con:
                index_state.record_sizes(con, self.sizes)
                self.store.collect_garbage(con)
            self.summary.up_to_date = True
            self.cleared()
            self.summary.sessions = len(self.ords_live())
            self.summary.seconds = time.monotonic() - t0
            return self.summary
        reads = [a for a in work if a.kind in (mf.NEW, mf.APPEND, mf.REPLACE)]
        volume = sum(max(0, a.size - a.start) for a in reads)
        self.batch = self.new_batch(volume)
        files = 0
        for out in self.read_all(reads, volume):
            files += out.continues is None  # (a file read in slices is one file)
            self.accept(out)
            if self.progress:
                self.progress(files, len(reads), out.action.path)
        if self.rebuild:
            for out in self.carry_gone(actions):
                self.accept(out)
        _fault("after-read")
        self.flush(last=True)
        _fault("after-write")
        purge = {a.path for a in work if a.kind in (mf.REPLACE, mf.REMOVE)}
        # a database read against its fingerprints: only its changed sessions go
        pairs = {(o.action.path, k) for o in self.done if o.kept is not None for k in self.replaced_sessions(o)}
        purge -= {o.action.path for o in self.done if o.kept is not None or o.held}
        if self.rebuild:
            purge, pairs = set(self.manifest), set()
        if not purge and not self.rebuild:
            self.touched_sessions = {key for out in self.done for key in out.meta}
            for out in self.done:  # a database's sessions replaced, marked gone, or back
                if out.kept is not None:
                    prior = self.file_sessions.get(out.action.path, {})
                    self.touched_sessions.update(k for k, r in prior.items() if k not in out.kept or r.get("gone_at"))
            for a in work:  # a vanished transcript's sessions are rewritten, marked gone
                if a.kind == mf.GONE:
                    self.touched_sessions.update(self.file_sessions.get(a.path, {}))
        self.commit(purge, [a for a in work if a.kind == mf.REMOVE], [a.path for a in work if a.kind == mf.GONE],
                    pairs)
        self.cleared()
        if self.compact_due:
            compact(self.store, self.gen, checked=True, con=self.con, vocab_parts=self.vocab_parts(),
                    chunk=self.merge_chunk)
        self.summary.seconds = time.monotonic() - t0
        return self.summary

    def new_batch(self, volume: int) -> ArrowBatch | ListBatch:
        if volume <= self.small_run_bytes and not self.rebuild:
            return ListBatch(self.con, self.store, self.gen, self.ordinals)
        return ArrowBatch(self.store, self.gen, self.ordinals, self.flush_bytes, con=self.con,
                          merge_chunk=self.merge_chunk, vocab_at_once=self.vocab_at_once)

    def read_all(self, reads: list[mf.Action], volume: int):
        """FileOutputs in plan order; a big run (``volume`` bytes to read) fans out
        to DEJA_WORKERS reader processes (default two; 1 reads in this process,
        slower but lighter: bench/README.md, measured figures)."""
        priors = [self.file_sessions.get(a.path, {}) if a.kind == mf.APPEND or self.by_session(a) else {}
                  for a in reads]
        try:
            workers = min(int(self.env.get("DEJA_WORKERS") or WORKERS), 2 * WORKERS)
        except ValueError:
            workers = WORKERS
        sliced = {i for i, a in enumerate(reads) if a.size - a.start > self.slice_bytes
                  and getattr(reader(a.harness), "HOLDS_PENDING", False)}
        pooled = [i for i in range(len(reads)) if i not in sliced]
        if workers < 2 or len(pooled) < 2 or volume < POOL_MIN_BYTES:
            # small reads (an appended turn) redact text by text: cheaper than loading polars
            light = volume < POOL_MIN_BYTES
            for i, (a, prior) in enumerate(zip(reads, priors)):
                if i in sliced:
                    yield from self.read_sliced(a, prior)
                else:
                    yield process_file(a, prior, light)
            return
        from deja.pipeline.readers import read_in_processes

        # the forkserver preloads the readers of this run's harnesses only: each
        # reader process holds what it preloaded (all 35: ~5 MB more apiece)
        outs = read_in_processes([(reads[i], priors[i]) for i in pooled], workers, workers * 2,
                                 ["deja.pipeline.ingest", *sorted({READERS[reads[i].harness] for i in pooled})],
                                 weight=_read_weight)
        for i, (a, prior) in enumerate(zip(reads, priors)):
            if i in sliced:  # (here, while the reader processes read ahead of it)
                yield from self.read_sliced(a, prior)
            else:
                yield next(outs)

    def read_sliced(self, a: mf.Action, prior: dict[str, dict]):
        """A transcript too big to read at once, a slice of about SLICE_BYTES at
        a time, in this process: each slice ends at a line's end, held back (as a
        live transcript is, jsonl.held_back) at a call whose result lies past it,
        and the next is read as an append of it. Reading a file costs about five
        times its size in memory (the bytes, the parsed lines, the columns, the
        redacted text, the Arrow table); so a slice's records go to the batch
        (and, as it fills, to disk) before the next is read. Only readers that
        hold back a pending call take a limit (Claude Code's, Codex's); the
        others' files are read whole."""
        first, start, rows = None, a.start, prior
        prefix = mf.PrefixHash(a.path)
        while True:
            limit = line_end_after(a.path, start + self.slice_bytes)
            act = a if first is None else mf.Action(mf.APPEND, a.path, a.harness, start, a.size, a.mtime_ns)
            out = process_file(act, rows, False, limit, prefix)
            if first is not None and out.safe_offset <= start and limit is not None and not out.error:
                out = process_file(act, rows, False, prefix=prefix)  # a slice all of one unfinished call: the rest whole
                limit = None
            out.continues = first
            yield out  # (accepted before this goes on: a continuation folds into first)
            if out.error or out.changed or limit is None or out.safe_offset <= start:
                return
            first = first or out
            start = out.safe_offset
            rows = {k: dict(r) for k, r in prior.items()}
            normalize.fold_meta(rows, first.meta)

    def by_session(self, a: mf.Action) -> bool:
        """A database read again whose unchanged sessions can stay as written:
        not a rebuild, and not a repair (which needs every record again)."""
        return (a.kind == mf.REPLACE and not self.rebuild and mf.is_database(a.path)
                and not (self.repair and a.path in self.repair.reread))

    def replaced_sessions(self, out: FileOutput) -> set[str]:
        """The sessions of a database read by session whose old records go: those
        read anew, and those no longer in it (kept, marked gone, unless pruned);
        a session still in the store is never marked gone."""
        prior = self.file_sessions.get(out.action.path, {})
        gone = set() if self.prune_gone else set(prior) - out.present
        return set(prior) - out.kept - gone

    def prune_gone_sessions(self, actions: list[mf.Action]) -> list[mf.Action]:
        """``--prune-gone``: a database that still holds sessions marked gone from
        it is read again, so they are taken out (its other sessions stay as written)."""
        out = []
        for a in actions:
            if a.kind == mf.SKIP and any(r.get("gone_at") for r in self.file_sessions.get(a.path, {}).values()):
                a = mf.Action(mf.REPLACE, a.path, a.harness, 0, a.size, a.mtime_ns)
            out.append(a)
        return out

    def carry_gone(self, actions: list[mf.Action]):
        """FileOutputs of the transcripts a rebuild does not read again: gone from
        disk (marked before, or found gone now), or in a store this environment
        cannot see. Their records come from the live parts, so a rebuild keeps
        what the agent deleted."""
        acted = {a.path: a.kind for a in actions}
        for path, row in sorted(self.manifest.items()):
            if acted.get(path) in (None, mf.GONE):
                yield self.carried(path, row)

    def carried(self, path: str, row: dict) -> FileOutput:
        """One file's records and sessions as the live parts hold them, to be written again as they are."""
        from deja.stages.store import derive

        cols = derive.kept_records(self.con, self.live["records"], self.live["deletes"], path, normalize.RECORD_COLUMNS)
        meta = {k: {c: v for c, v in r.items() if c != "path"} for k, r in self.file_sessions.get(path, {}).items()}
        out = FileOutput(mf.Action(mf.CARRY, path, row.get("harness", ""), 0, row.get("size") or 0,
                                   row.get("mtime_ns") or 0), cols, meta, row.get("safe_offset") or 0,
                         row.get("prefix_hash") or "", 0, 0, {}, "")
        out.rows = len(cols["text"])
        return out

    def carry_failed(self, out: FileOutput) -> FileOutput:
        """A file read before that cannot be read this run (a database over its
        time budget or damaged, a document caught mid-rewrite, a reader's bug)
        keeps what the index holds of it: history outlives a bad read. Outside a
        rebuild its records stay where they are; a rebuild carries them as a
        gone transcript's. Its manifest row keeps the error, and the next run
        reads it again."""
        row = self.manifest.get(out.action.path)
        if not row or not row.get("records"):
            return out
        if not self.rebuild:
            out.held = True
            return out
        carried = self.carried(out.action.path, row)
        carried.error = out.error
        return carried

    def carry_gone_sessions(self, out: FileOutput) -> None:
        """A rebuild keeps the sessions a database no longer holds (marked gone):
        their records come from the live parts, as a gone transcript's do."""
        from deja.stages.store import derive

        prior = self.file_sessions.get(out.action.path, {})
        missing = {k for k in prior if k not in out.present}
        if not missing:
            return
        cols = derive.kept_records(self.con, self.live["records"], self.live["deletes"], out.action.path,
                                   normalize.RECORD_COLUMNS)
        keep = [i for i, k in enumerate(cols["session_key"]) if k in missing]
        for name in normalize.RECORD_COLUMNS:
            out.cols[name].extend(cols[name][i] for i in keep)
        out.rows += len(keep)
        now = datetime.now(timezone.utc).replace(tzinfo=None)
        for k in missing:
            row = {c: v for c, v in prior[k].items() if c != "path"}
            out.meta[k] = dict(row, gone_at=row.get("gone_at") or now)

    def ords_live(self) -> set[str]:
        keys = set()
        for rows in self.file_sessions.values():
            keys.update(rows)
        return keys

    def discover(self) -> list[tuple[str, str]]:
        sources = []
        for h, files in locate.LOCATORS.items():  # paths only: a reader loads when its files are read
            skipped: list[str] = []
            try:
                found = files(self.env, skipped)
            except Exception as exc:
                self.summary.errors.append(f"{h}: cannot list its store: {exc}")
                continue
            finally:
                self.summary.errors.extend(f"{h}: {p}" for p in skipped)  # unreadable folders, dangling links
            for p in found:
                if _utf8(p):
                    sources.append((p, h))
                else:  # (the store's columns are UTF-8: such a name failed every run's commit)
                    self.summary.errors.append(f"{h}: {p.encode('utf-8', 'backslashreplace').decode()}: "
                                               "its name is not UTF-8; skipped (rename it to have it read)")
        return sources

    def _hs(self, harness: str) -> HarnessSummary:
        hs = self.summary.harnesses.get(harness)
        if hs is None:
            hs = self.summary.harnesses[harness] = HarnessSummary(harness)
        return hs

    # -- accumulate and flush --------------------------------------------
    def accept(self, out: FileOutput) -> None:
        hs = self._hs(out.action.harness)
        if out.continues is not None:
            self.accept_slice(out, hs)
            return
        if (not out.error and not out.changed and out.action.kind == mf.REPLACE and not out.meta and out.malformed
                and (self.manifest.get(out.action.path) or {}).get("records")):
            # a file that held sessions and now reads as nothing but damage (a
            # document caught mid-rewrite): a failed read, not an empty file
            out.error = f"nothing in it could be read ({out.malformed} malformed); kept what it held"
        hs.read += out.action.kind != mf.CARRY
        hs.malformed += out.malformed
        if out.changed:
            hs.changed_while_read += 1
        elif out.error:
            hs.failed += 1
        if out.error:
            self.summary.errors.append(f"{out.action.path}: {out.error}")
            if not out.changed and out.action.kind == mf.REPLACE:
                out = self.carry_failed(out)
        if self.rebuild and out.present is not None and not out.error and not self.prune_gone:
            self.carry_gone_sessions(out)
        self.add_records(out, hs)
        self.done.append(out)
        if self.batch.full():
            self.flush()

    def add_records(self, out: FileOutput, hs: HarnessSummary) -> None:
        """``out``'s records to the batch, numbered on, less tombstoned ones."""
        if out.rows and self.drop:  # tombstones and exclusions (see load_state)
            out.rows = self.drop.apply(out.cols, out.meta)
        if out.rows:
            self.batch.add(out, self.next_record_id)
            self.next_record_id += out.rows
        hs.records_added += out.rows
        hs.redactions += sum(out.redactions.values())

    def accept_slice(self, out: FileOutput, hs: HarnessSummary) -> None:
        """A later slice of a file read in slices (read_sliced): its records are
        added, and its sessions, counts and resume point fold into the first
        slice's output, so the file has one manifest row. A slice that fails
        leaves the file's row where the last good slice ended: the next run
        reads on from there."""
        first = out.continues
        out.continues = None
        if out.error or out.changed:
            self.summary.errors.append(f"{out.action.path}: {out.error}")
            hs.failed += not out.changed
            hs.changed_while_read += out.changed
            return
        self.add_records(out, hs)
        normalize.fold_meta(first.meta, out.meta)
        first.safe_offset, first.prefix_hash, first.edge_hash = out.safe_offset, out.prefix_hash, out.edge_hash
        first.rows += out.rows
        first.malformed += out.malformed
        first.clipped += out.clipped
        _add(first.redactions, out.redactions)
        first.faults = (first.faults or []) + (out.faults or [])
        hs.malformed += out.malformed
        if self.batch.full():
            self.flush()

    def flush(self, last: bool = False) -> None:
        if self.batch is not None:
            self.new_parts += self.batch.flush()
            if last:
                self.new_parts += self.batch.finish()

    # -- purge and commit ------------------------------------------------
    def purge_records(self, purge: set[str], column: str = "source_path",
                      pairs: set[tuple[str, str]] = frozenset()) -> tuple[list[str], list[str]]:
        """Rewrite live record parts without the records whose ``column`` is in
        ``purge`` or whose (source_path, session_key) is in ``pairs`` (see
        purge.purge_records); returns (parts dropped from the live set, the
        dead record ids part if any)."""
        result = purge_records(self.con, self.store, self.live["records"], purge, column, self.gen, self.merge_chunk,
                               pairs)
        self.new_parts += result.new_parts
        return result.dropped, result.deletes

    def drop_new(self, dataset: str) -> None:
        """Forget this run's new parts of ``dataset`` (a repair writes them whole)."""
        for _, rel, _ in [p for p in self.new_parts if p[0] == dataset]:
            (self.store.root / rel).unlink(missing_ok=True)
        self.new_parts = [p for p in self.new_parts if p[0] != dataset]

    def commit(self, purge: set[str], removed: list[mf.Action], gone: list[str] = (),
               pairs: set[tuple[str, str]] = frozenset()) -> None:
        dropped, _ = self.purge_records(purge, pairs=pairs) if not self.rebuild else (None, None)
        if self.repair:
            self.purged = dropped or []
            dropped = list(dropped or []) + list(self.repair.damaged) + self.repair.rebuild_derived(self)
            self.summary.repaired = self.repair.notes
        # file_sessions and manifest after this run
        for p in purge:
            self.file_sessions.pop(p, None)
        now = datetime.now(timezone.utc).replace(tzinfo=None)
        for p in gone:  # kept, marked (the sessions part below reads the mark)
            self.manifest[p] = dict(self.manifest[p], gone_at=now)
        marks = [(p, self.manifest[p]["gone_at"]) for p in gone]
        manifest_rows = []
        for out in self.done:
            a = out.action
            old = self.manifest.get(a.path, {})
            if a.kind == mf.CARRY:  # kept as it was: its row, its mark (and why it could not be read)
                self.file_sessions[a.path] = self.merge_file_sessions(a, out)
                manifest_rows.append([out.error if c == "error" and out.error else old.get(c)
                                      for c in index_state.MANIFEST_COLS])
                if old.get("gone_at"):  # (found gone now: marked just above)
                    marks.append((a.path, old["gone_at"]))
                continue
            if out.error and a.kind == mf.APPEND:
                continue  # keep the old row; retried next run
            if out.held:  # kept as it was, with why it could not be read; retried next run
                manifest_rows.append([out.error if c == "error" else old.get(c) for c in index_state.MANIFEST_COLS])
                continue
            records = (old.get("records") or 0) if a.kind == mf.APPEND else 0
            if out.kept is not None and not out.error:
                records = (old.get("records") or 0) - sum(
                    (r.get("max_seq") if r.get("max_seq") is not None else -1) + 1
                    for k, r in self.file_sessions.get(a.path, {}).items() if (a.path, k) in pairs)
            merged = self.merge_file_sessions(a, out, now)
            self.file_sessions[a.path] = merged
            red = dict(json.loads(old.get("redactions") or "{}")) if a.kind == mf.APPEND else {}
            _add(red, out.redactions)
            malformed = (old.get("malformed") or 0) if a.kind == mf.APPEND else 0
            manifest_rows.append(
                [a.path, a.harness, a.size, a.mtime_ns, out.prefix_hash, out.safe_offset, CONTENT_VERSION,
                 records + out.rows, malformed + out.malformed,
                 out.clipped, json.dumps(red, sort_keys=True), sum(red.values()), out.error or None, now,
                 kept_faults(old, out), out.edge_hash or None]
            )
        self.write_sessions()
        # what the tool hook may skip DuckDB for, with this run's keys, before the commit
        history_map.add(self.store.root, self.con, [str(self.store.root / r) for d, r, _ in self.new_parts if d == "records"],
                        [str(self.store.root / r) for d, r, _ in self.new_parts if d == "sessions"], self.history,
                        ([], []) if self.rebuild else (self.live["records"], self.live["sessions"]))
        self.history_added = True
        rewritten = {o.action.path for o in self.done} | (self.rerooted & self.file_sessions.keys())
        change = index_state.RunCommit(
            generation=self.gen, next_record_id=self.next_record_id, rebuild=self.rebuild, dropped=list(dropped or []),
            new_parts=self.new_parts, facts=self.store.part_facts(self.con, self.new_parts), sizes=self.sizes,
            removed=[a.path for a in removed], gone=marks,
            touched=set(purge) | rewritten,
            manifest_rows=manifest_rows,
            file_session_rows=[[r.get(c) for c in index_state.FILE_SESSION_COLS]
                               for p in sorted(rewritten) for r in self.file_sessions.get(p, {}).values()],
            new_ords=self.ordinals.new)
        with self.store.catalog(self.con, retries=100) as con:
            index_state.commit(con, self.store, change, before_commit=lambda: _fault("before-commit"))
            self.committed = True
            _fault("after-commit")
            self.store.collect_garbage(con)
            self.compact_due = needs_compaction(con, self.vocab_parts())

    def vocab_parts(self) -> int:
        """A big run leaves one vocabulary part (merging its flushes' parts costs
        a big run little and spares every search a read per part); small runs
        let them pile up to the usual limit, then merge size-tiered like any
        folder (stages/store/compact.py), never rewriting a big run's part."""
        return 1 if isinstance(self.batch, ArrowBatch) else MAX_PARTS

    def write_sessions(self) -> None:
        """The sessions part of this run, and the per-harness counts of the summary.

        When the run knows which sessions it changed (``touched_sessions``: no
        file was replaced or removed), only those are rebuilt and the rest are
        copied from the live part; otherwise every session is."""
        rel = f"sessions/{self.store.new_part_name(self.gen)}"
        old = self.live["sessions"]
        per = None
        self.names = project_names(r for per_file in self.file_sessions.values() for r in per_file.values())
        # a new project can lengthen the display names of others: then every row is rewritten
        same_names = all(self.names.get(root) == name for root, name in self.names_before.items())
        if self.touched_sessions is not None and len(old) == 1 and same_names:
            keys = self.touched_sessions | self.drop.keys
            try:
                per = write.write_sessions(self.con, self.session_columns(keys), self.store.root, rel, old[0], keys)
            except duck.Error:
                per = None  # a live part of an older layout: rebuild it whole
        if per is None:
            per = write.write_sessions(self.con, self.session_columns(None), self.store.root, rel)
        n = sum(row[1] for row in per)
        if n:
            self.new_parts.append(("sessions", rel, n))
        for hs in self.summary.harnesses.values():
            hs.sessions = hs.messages = hs.gone = 0
        for h, count, messages, gone in per:
            hs = self._hs(h)
            hs.sessions, hs.messages, hs.gone = count, messages or 0, gone
        self.summary.sessions = n

    def session_columns(self, keys: set[str] | None) -> dict[str, list]:
        """Sessions rows from what every file said about them: the ``keys`` sessions, or all."""
        rows = [r for per_file in self.file_sessions.values() for r in per_file.values()
                if keys is None or r["session_key"] in keys]
        for key in {r["session_key"] for r in rows}:
            self.ordinals.of(key)
        return build_sessions(rows, self.ordinals.known, self.names, self.gone_paths())

    def gone_paths(self) -> dict:
        """path → when it was found gone, for the transcripts kept after the agent
        deleted them (a file read this run is on disk again, whatever its old row says)."""
        read = {o.action.path for o in self.done if o.action.kind != mf.CARRY}
        return {p: r["gone_at"] for p, r in self.manifest.items() if r.get("gone_at") and p not in read}

    def merge_file_sessions(self, action: mf.Action, out: FileOutput, now=None) -> dict[str, dict]:
        """This file's session rows after the run: an append merges into the old
        ones; a database read by session keeps the rows of its unchanged
        sessions and marks those it no longer holds gone (unless pruned)."""
        meta = out.meta
        old = self.file_sessions.get(action.path, {}) if action.kind == mf.APPEND else {}
        merged = {k: dict(v) for k, v in old.items()}
        if out.kept is not None and not out.error:
            for k, r in self.file_sessions.get(action.path, {}).items():
                if k in out.kept:
                    merged[k] = dict(r, gone_at=None)
                elif k not in out.present and not self.prune_gone:
                    merged[k] = dict(r, gone_at=r.get("gone_at") or now)
        normalize.fold_meta(merged, meta, path=action.path)
        return merged


def _read_weight(job: tuple) -> int:
    """The bytes a reader process reads for ``job`` (readers.read_in_processes
    sends small ones together); a source of no known size (a remote store's)
    is read alone."""
    a = job[0]
    return a.size - a.start if a.size > 0 else 1 << 40


def _utf8(path: str) -> bool:
    try:
        path.encode("utf-8")
        return True
    except UnicodeEncodeError:  # a name the file system gave as bytes (surrogate escapes)
        return False


def kept_faults(old: dict, out: FileOutput) -> list[str] | None:
    """The file's first few faults: an append keeps those of the bytes read before."""
    from deja.stages.sources.values import FAULTS_KEPT

    kept = list(old.get("faults") or []) if out.action.kind == mf.APPEND else []
    kept = (kept + (out.faults or []))[:FAULTS_KEPT]
    return kept or None


def _add(total: dict[str, int], more: dict[str, int]) -> None:
    for k, v in more.items():
        total[k] = total.get(k, 0) + v


def _fault(point: str) -> None:
    """Crash tests kill the run at a named point, as kill -9 would, or fill
    the disk there (``<point>:enospc``)."""
    fault = os.environ.get("DEJA_FAULT")
    if fault == point:
        import signal

        os.kill(os.getpid(), signal.SIGKILL)
    if fault == point + ":enospc":
        import errno

        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def run_index(env: Mapping[str, str] | None = None, rebuild: bool = False, progress: Callable | None = None,
              notice: Callable | None = None, store: Store | None = None, lock_wait: float | None = None,
              con=None, prune_gone: bool = False) -> Summary:
    """``con``: the caller's in-memory DuckDB (core), reused rather than a second instance started.
    ``prune_gone``: drop the sessions whose transcripts are gone from disk (kept otherwise)."""
    env = os.environ if env is None else env
    store = store or Store(config.index_dir(env))
    wait = config.lock_wait_seconds(env) if lock_wait is None else lock_wait
    lent = con is not None  # the caller's connection: it gets its settings back (limits.release)
    con = con if con is not None else duck.connect()
    with store.writer_lock(wait, notice=notice):
        run = None
        try:
            history = None if rebuild else history_map.load(store.root)  # (before the run opens the catalog)
            store.init(con)
            run = Run(store, env, rebuild, progress, con, prune_gone)
            run.history = history
            summary = run.execute()
            if history is not None or run.history_added:  # (a map this run did not vouch for stays unsealed)
                history_map.seal(store.root)  # the catalog as this run left it (committed, compacted, detached)
            return summary
        except Exception as exc:
            if run is not None and run.batch is not None:
                run.batch.close()  # (its tokenizer thread may still be writing spill files)
            if not disk_full(exc):
                raise
            committed = run is not None and run.committed
            if not committed and getattr(run, "parts", None) is not None:
                store.discard(set(run.parts))  # the live parts the run started from
            raise DiskFull(store.root, committed) from exc
        finally:
            if lent:
                release(con)


class DiskFull(Exception):
    """The disk filled during a run. ``committed``: the catalog already holds
    the run (what failed was the cleanup or compaction after it)."""

    def __init__(self, root: Path, committed: bool):
        self.committed = committed
        if committed:
            super().__init__(f"no space left on the device of {root} after the index was updated: the new "
                             "sessions are searchable, the cleanup after them is not done (free some space and "
                             "run `deja index` to finish it)")
        else:
            super().__init__(f"no space left on the device of {root}: nothing was indexed and the previous "
                             "index is intact (free some space and run `deja index` again)")


def disk_full(exc: BaseException | None) -> bool:
    """ENOSPC anywhere in the chain: pyarrow's OSError, DuckDB's IOException
    (which may surface as the catalog's failed checkpoint, with the cause in its text)."""
    import errno

    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if "No space left on device" in str(exc) or "Disk quota exceeded" in str(exc):
            return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False
