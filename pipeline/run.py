"""One index run: discover → plan → read → normalize → redact → tokenize → write → commit.

The run owns order, incrementality and the commit; the stages it calls are
plain functions. Memory stays bounded by the flush size, not the corpus: parsed
files accumulate until about ``FLUSH_BYTES`` of text, then are tokenised and
written as parts, and only file-level metadata is kept until the commit.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Mapping

import pyarrow as pa
import pyarrow.compute as pc

from deja.stages import normalize, tokenize, write
from deja.stages.sources import harnesses, reader
from deja.stages.sources.base import ROLE_CODES, WORK_CODE_MIN
from deja.stages.sources.notes import drop_filter
from deja.stages.stems import stem_many

from . import config, manifest as mf
from .compact import compact, needs_compaction
from .config import CONTENT_VERSION
from .ingest import FileOutput, process_file
from .store import Store

FLUSH_BYTES = 8 << 20
TOKENIZE_SLICE = 2 << 20
# Reads bigger than this go to worker processes (both cores); smaller ones,
# like an appended turn, stay in-process where a pool would cost more than it saves.
POOL_MIN_BYTES = 8 << 20
WORKERS = max(1, min(2, os.cpu_count() or 1))


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


@dataclass
class Summary:
    up_to_date: bool = False
    sessions: int = 0
    seconds: float = 0.0
    harnesses: dict[str, HarnessSummary] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def as_json(self) -> dict:
        return {
            "up_to_date": self.up_to_date,
            "sessions": self.sessions,
            "seconds": round(self.seconds, 3),
            "harnesses": [vars(h) for h in self.harnesses.values()],
            "errors": self.errors,
        }


# ---------------------------------------------------------------------------
# the run


class Run:
    def __init__(self, store: Store, env: Mapping[str, str], rebuild: bool, progress: Callable | None):
        self.store = store
        self.env = env
        self.rebuild = rebuild
        self.progress = progress
        self.summary = Summary()
        self.new_parts: list[tuple[str, str, int]] = []  # (dataset, rel path, rows)
        self.pending: list[FileOutput] = []
        self.pending_bytes = 0
        self.done: list[FileOutput] = []
        self.new_ords: list[tuple[str, int]] = []
        self.compact_due = False
        self.pending_postings: list[pa.Table] = []
        # records waiting to be tokenised together: per-call overhead of the
        # tokenizer makes a batch of many small files far cheaper than one call each
        self.to_tokenize: list[pa.Table] = []
        self.to_tokenize_bytes = 0
        # Arrow's default pool (jemalloc/mimalloc) keeps freed memory; an index run
        # allocates and frees a flush's worth at a time, so the system allocator
        # (trimmed after each flush) keeps peak memory near the live data.
        pa.set_memory_pool(pa.system_memory_pool())

    # -- state ------------------------------------------------------------
    def load_state(self) -> None:
        con = self.store.connect(retries=40)
        try:
            cols = [d[0] for d in con.execute("SELECT * FROM manifest LIMIT 0").description]
            self.manifest = {r[0]: dict(zip(cols, r)) for r in con.execute("SELECT * FROM manifest").fetchall()}
            fcols = [d[0] for d in con.execute("SELECT * FROM file_sessions LIMIT 0").description]
            self.file_sessions: dict[str, dict[str, dict]] = {}
            for r in con.execute("SELECT * FROM file_sessions").fetchall():
                row = dict(zip(fcols, r))
                self.file_sessions.setdefault(row["path"], {})[row["session_key"]] = row
            self.ords = dict(con.execute("SELECT session_key, ord FROM session_ords").fetchall())
            # deja forget / project exclusions (cli_memory): tombstoned and excluded sessions are
            # never written, on every run including --rebuild; forgotten ones leave file_sessions too.
            self.drop = drop_filter(self.env, con)
            for rows in self.file_sessions.values():
                for key in [k for k in rows if k in self.drop.keys]:
                    del rows[key]
            meta = dict(con.execute("SELECT key, value FROM meta").fetchall())
            self.next_record_id = int(meta.get("next_record_id", 0))
            self.gen = int(meta.get("generation", 0)) + 1
            self.live = {d: self.store.live_files(con, d) for d in ("records", "postings", "sessions", "deletes", "vocab")}
        finally:
            con.close()

    # -- main -------------------------------------------------------------
    def execute(self) -> Summary:
        t0 = time.monotonic()
        self.load_state()
        sources = self.discover()
        actions = mf.plan(sources, self.manifest, self.rebuild)
        work = [a for a in actions if a.kind != mf.SKIP]
        for a in actions:
            self._hs(a.harness).files += a.kind != mf.REMOVE
        if not work and not self.rebuild:
            # parts a killed run wrote but never committed, or committed but never
            # cleaned (a run with work cleans them at its commit)
            con = self.store.connect(retries=40)
            try:
                self.store.collect_garbage(con)
            finally:
                con.close()
            self.summary.up_to_date = True
            self.summary.sessions = len(self.ords_live())
            self.summary.seconds = time.monotonic() - t0
            return self.summary
        reads = [a for a in work if a.kind in (mf.NEW, mf.APPEND, mf.REPLACE)]
        for i, out in enumerate(self.read_all(reads)):
            self.accept(out)
            if self.progress:
                self.progress(i + 1, len(reads), out.action.path)
        _fault("after-read")
        self.flush()
        _fault("after-write")
        purge = {a.path for a in work if a.kind in (mf.REPLACE, mf.REMOVE)}
        if self.rebuild:
            purge = set(self.manifest)
        self.commit(purge, [a for a in work if a.kind == mf.REMOVE])
        if self.compact_due:
            compact(self.store, self.gen, checked=True)
        self.summary.seconds = time.monotonic() - t0
        return self.summary

    def read_all(self, reads: list[mf.Action]):
        """FileOutputs in plan order; big runs fan out to reader processes."""
        priors = [self.file_sessions.get(a.path, {}) if a.kind == mf.APPEND else {} for a in reads]
        volume = sum(max(0, a.size - a.start) for a in reads)
        if WORKERS < 2 or len(reads) < 2 or volume < POOL_MIN_BYTES or self.env.get("DEJA_WORKERS") == "1":
            # small reads (an appended turn) redact text by text: cheaper than loading polars
            light = volume < POOL_MIN_BYTES
            for a, prior in zip(reads, priors):
                yield process_file(a, prior, light)
            return
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        # forkserver: workers start from a small process, not a copy of this one
        # (which holds pyarrow, polars and duckdb, and polars' threads)
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(["deja.ingest", *(f"deja.stages.sources.{h}" for h in harnesses())])
        with ProcessPoolExecutor(WORKERS, mp_context=ctx) as pool:
            window = WORKERS * 2  # bounded in flight: memory stays per-file, not per-corpus
            futures = []
            it = iter(zip(reads, priors))
            for a, prior in it:
                futures.append(pool.submit(process_file, a, prior, True))
                if len(futures) >= window:
                    break
            while futures:
                out = futures.pop(0).result()
                nxt = next(it, None)
                if nxt is not None:
                    futures.append(pool.submit(process_file, *nxt, True))
                yield out

    def ords_live(self) -> set[str]:
        keys = set()
        for rows in self.file_sessions.values():
            keys.update(rows)
        return keys

    def discover(self) -> list[tuple[str, str]]:
        sources = []
        for h in harnesses():
            try:
                found = reader(h).discover(self.env)
            except Exception as exc:
                self.summary.errors.append(f"{h}: cannot list its store: {exc}")
                continue
            sources.extend((f.path, h) for f in found)
        return sources

    def _hs(self, harness: str) -> HarnessSummary:
        hs = self.summary.harnesses.get(harness)
        if hs is None:
            hs = self.summary.harnesses[harness] = HarnessSummary(harness)
        return hs

    # -- accumulate and flush --------------------------------------------
    def accept(self, out: FileOutput) -> None:
        hs = self._hs(out.action.harness)
        hs.read += 1
        hs.malformed += out.malformed
        if out.error:
            hs.failed += 1
            self.summary.errors.append(f"{out.action.path}: {out.error}")
        if out.rows and self.drop:  # tombstones and exclusions (see load_state)
            out.rows = self.drop.apply(out.cols, out.meta)
        if out.rows:
            n = out.rows
            ids = pa.array(range(self.next_record_id, self.next_record_id + n), pa.int64())
            self.next_record_id += n
            out.table = normalize.to_table(out.cols).add_column(0, "record_id", ids)
            out.cols = None
            self.pending.append(out)
            self.to_tokenize.append(out.table)
            self.to_tokenize_bytes += out.table.column("text").nbytes
            if self.to_tokenize_bytes >= TOKENIZE_SLICE:
                self.tokenize_pending()
            self.pending_bytes += out.table.column("text").nbytes
        hs.records_added += out.rows
        hs.redactions += sum(out.redactions.values())
        self.done.append(out)
        if self.pending_bytes >= FLUSH_BYTES:
            self.flush()

    def ord_of(self, key: str) -> int:
        o = self.ords.get(key)
        if o is None:
            o = self.ords[key] = len(self.ords)
            self.new_ords.append((key, o))
        return o

    def tokenize_pending(self) -> None:
        if self.to_tokenize:
            self.pending_postings.append(self.postings_of(pa.concat_tables(self.to_tokenize)))
        self.to_tokenize, self.to_tokenize_bytes = [], 0

    def flush(self) -> None:
        if not self.pending:
            return
        self.tokenize_pending()
        by_harness: dict[str, list[pa.Table]] = {}
        for out in self.pending:
            by_harness.setdefault(out.action.harness, []).append(out.table)
            out.table = None  # the part holds it now; keep only file metadata
        name = self.store.new_part_name(self.gen)
        for harness, tables in by_harness.items():
            for rel, rows in write.write_records(pa.concat_tables(tables), harness, self.store.root, name):
                self.new_parts.append(("records", rel, rows))
        del tables
        self.pending = []
        postings = pa.concat_tables(self.pending_postings)
        self.pending_postings = []
        for rel, rows in write.write_postings(postings, self.store.root, name):
            self.new_parts.append(("postings", rel, rows))
        vocab = write.vocab_of(postings, stem_many)
        self.new_parts.append(("vocab",) + write.write_table(vocab, self.store.root, f"vocab/{name}", write.VOCAB_ROW_GROUP))
        del postings, vocab
        self.pending_bytes = 0
        _trim()

    def postings_of(self, table: pa.Table) -> pa.Table:
        """Postings of a batch of records, tokenised in slices of bounded text size
        so the tokenizer's working memory stays small whatever the file."""
        if table.column("text").nbytes <= TOKENIZE_SLICE:
            return self._postings(table)
        out, start = [], 0
        lengths = pc.binary_length(table.column("text")).to_numpy(zero_copy_only=False)
        acc = 0
        for i, n in enumerate(lengths):
            acc += n
            if acc >= TOKENIZE_SLICE:
                out.append(self._postings(table.slice(start, i + 1 - start)))
                start, acc = i + 1, 0
        if start < table.num_rows:
            out.append(self._postings(table.slice(start)))
        return pa.concat_tables(out)

    def _postings(self, table: pa.Table) -> pa.Table:
        roles = table.column("role")
        texts = table.column("text")
        # An edit record is searchable by its path only: nothing searches the removed body.
        is_edit = pc.equal(roles, "edit")
        if pc.any(is_edit).as_py():
            edits = pc.filter(texts, is_edit).to_pylist()
            texts = pc.replace_with_mask(
                texts.combine_chunks(), is_edit.combine_chunks(),
                pa.array([t.split("\n", 1)[0] for t in edits], texts.type),
            )
        counts = tokenize.token_counts_batch(table.column("record_id"), texts)
        # join back the session ordinal and role of each record
        keys = table.column("session_key").to_pylist()
        ords = pa.array([self.ord_of(k) for k in keys], pa.int32())
        role_codes = pa.array([ROLE_CODES.get(r, 2) for r in roles.to_pylist()], pa.int8())
        idx = pc.index_in(counts.column("record_id"), table.column("record_id"))
        sess = pc.take(ords, idx)
        role = pc.take(role_codes, idx)
        return pa.table(
            {
                "token": counts.column("token"),
                "record_id": counts.column("record_id"),
                "session": sess,
                "tf": counts.column("tf"),
                "rec_len": counts.column("rec_len"),
                "role": role,
                "is_work": pc.greater_equal(role, WORK_CODE_MIN),
                "bucket": tokenize.bucket_column(counts.column("token")),
            }
        )

    # -- purge and commit ------------------------------------------------
    def purge_records(self, purge: set[str], column: str = "source_path") -> tuple[list[str], list[str]]:
        """Rewrite live record parts without the records whose ``column`` is in
        ``purge``: replaced or removed files (source_path), or sessions a person
        told us to forget (session_key).

        Returns (parts dropped from the live set, dead record ids file if any).
        Postings of purged records stay until compaction; the ``deletes``
        dataset lists their ids so search ignores them.
        """
        live = self.live["records"]
        if not purge or not live:
            return [], []
        import duckdb  # the full package: relations to Arrow (not needed by appends)

        con = duckdb.connect()
        try:
            con.execute("CREATE TEMP TABLE purge(p VARCHAR)")
            con.executemany("INSERT INTO purge VALUES (?)", [[p] for p in purge])
            rows = con.execute(
                "SELECT DISTINCT filename FROM read_parquet(?, filename=true, hive_partitioning=false) "
                f"WHERE {column} IN (SELECT p FROM purge)",
                [live],
            ).fetchall()
            affected = [r[0] for r in rows]
            if not affected:
                return [], []
            dead_rel = ""
            dead = con.sql(
                f"SELECT record_id FROM read_parquet(?, hive_partitioning=false) WHERE {column} IN (SELECT p FROM purge)",
                params=[affected],
            ).to_arrow_table()
            if dead.num_rows:
                dead_rel = f"deletes/{self.store.new_part_name(self.gen)}"
                write.write_table(dead, self.store.root, dead_rel)
                self.new_parts.append(("deletes", dead_rel, dead.num_rows))
            for abs_path in affected:
                rel = Path(abs_path).relative_to(self.store.root).as_posix()
                kept = con.sql(
                    f"SELECT * FROM read_parquet(?, hive_partitioning=false) WHERE {column} NOT IN (SELECT p FROM purge)",
                    params=[abs_path],
                ).to_arrow_table()
                if kept.num_rows:
                    new_rel = str(Path(rel).parent / self.store.new_part_name(self.gen))
                    write.write_table(kept, self.store.root, new_rel, write.RECORDS_ROW_GROUP)
                    self.new_parts.append(("records", new_rel, kept.num_rows))
            return [Path(a).relative_to(self.store.root).as_posix() for a in affected], [dead_rel] if dead_rel else []
        finally:
            con.close()

    def commit(self, purge: set[str], removed: list[mf.Action]) -> None:
        dropped, _ = self.purge_records(purge) if not self.rebuild else (None, None)
        # file_sessions and manifest after this run
        for p in purge:
            self.file_sessions.pop(p, None)
        now = datetime.now(timezone.utc).replace(tzinfo=None)
        manifest_rows = []
        for out in self.done:
            a = out.action
            old = self.manifest.get(a.path, {})
            if out.error and a.kind == mf.APPEND:
                continue  # keep the old row; retried next run
            merged = self.merge_file_sessions(a, out.meta)
            self.file_sessions[a.path] = merged
            red = dict(json.loads(old.get("redactions") or "{}")) if a.kind == mf.APPEND else {}
            _add(red, out.redactions)
            records = (old.get("records") or 0) if a.kind == mf.APPEND else 0
            malformed = (old.get("malformed") or 0) if a.kind == mf.APPEND else 0
            manifest_rows.append(
                [a.path, a.harness, a.size, a.mtime_ns, out.prefix_hash, out.safe_offset, CONTENT_VERSION,
                 records + out.rows, malformed + out.malformed,
                 out.clipped, json.dumps(red, sort_keys=True), sum(red.values()), out.error or None, now]
            )
        sessions_table = self.sessions_table()
        sess_rel = f"sessions/{self.store.new_part_name(self.gen)}"
        write.write_table(sessions_table, self.store.root, sess_rel)
        self.new_parts.append(("sessions", sess_rel, sessions_table.num_rows))
        for hs in self.summary.harnesses.values():
            hs.sessions = hs.messages = 0
        per = sessions_table.group_by("harness").aggregate([("session_key", "count"), ("messages", "sum")])
        for h, n, m in zip(*(per.column(c).to_pylist() for c in ("harness", "session_key_count", "messages_sum"))):
            hs = self._hs(h)
            hs.sessions, hs.messages = n, m or 0
        self.summary.sessions = sessions_table.num_rows

        con = self.store.connect(retries=100)
        try:
            con.execute("BEGIN TRANSACTION")
            if self.rebuild:
                con.execute("DELETE FROM generation WHERE dataset IN ('records','postings','deletes','vocab')")
                con.execute("DELETE FROM manifest")
                con.execute("DELETE FROM file_sessions")
            elif dropped:
                con.execute("DELETE FROM generation WHERE file IN (SELECT unnest(?))", [dropped])
            con.execute("DELETE FROM generation WHERE dataset = 'sessions'")
            _many(con, "INSERT INTO generation VALUES (?, ?, ?, ?)",
                  [[d, rel, self.gen, rows] for d, rel, rows in self.new_parts])
            for a in removed:
                con.execute("DELETE FROM manifest WHERE path = ?", [a.path])
            touched_paths = set(purge) | {o.action.path for o in self.done}
            if touched_paths:
                con.execute("DELETE FROM file_sessions WHERE path IN (SELECT unnest(?))", [list(touched_paths)])
            if manifest_rows:
                con.execute("DELETE FROM manifest WHERE path IN (SELECT unnest(?))", [[r[0] for r in manifest_rows]])
            _many(con, "INSERT INTO manifest VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)", manifest_rows)
            fs_rows = [self._fs_row(r) for o in self.done for r in self.file_sessions.get(o.action.path, {}).values()]
            _many(con, f"INSERT INTO file_sessions VALUES ({','.join('?' * len(self.FS_COLS))})", fs_rows)
            _many(con, "INSERT OR IGNORE INTO session_ords VALUES (?, ?)", self.new_ords)
            con.execute("INSERT OR REPLACE INTO meta VALUES ('next_record_id', ?)", [str(self.next_record_id)])
            con.execute("INSERT OR REPLACE INTO meta VALUES ('generation', ?)", [str(self.gen)])
            _fault("before-commit")
            con.execute("COMMIT")
            _fault("after-commit")
            self.store.collect_garbage(con)
            self.compact_due = needs_compaction(con)
        finally:
            con.close()

    FS_COLS = [
        "path", "session_key", "harness", "session_id", "project", "cwd", "branch", "title", "title_rank",
        "last_prompt", "kind", "parent", "agent", "started", "updated", "n_user", "n_assistant", "n_tool_output",
        "n_command", "n_files", "n_edit", "n_summary", "words", "first_user", "first_assistant", "first_output",
        "touched", "touched_counts", "max_seq", "decision", "decision_ts", "gave_up",
    ]

    def _fs_row(self, r: dict) -> list:
        return [r.get(c) for c in self.FS_COLS]

    def merge_file_sessions(self, action: mf.Action, meta: dict[str, dict]) -> dict[str, dict]:
        """This file's session rows after the run: an append merges into the old ones."""
        old = self.file_sessions.get(action.path, {}) if action.kind == mf.APPEND else {}
        merged = {k: dict(v) for k, v in old.items()}
        for key, m in meta.items():
            m = dict(m, path=action.path)
            o = merged.get(key)
            if o is None:
                merged[key] = m
                continue
            normalize.merge_meta(o, m)
        return merged

    def sessions_table(self) -> pa.Table:
        from .sessions import build_sessions

        rows = [r for per_file in self.file_sessions.values() for r in per_file.values()]
        for key in {r["session_key"] for r in rows}:
            self.ord_of(key)
        return build_sessions(rows, self.ords)


def _trim() -> None:
    """Hand freed heap back to the OS (glibc keeps it otherwise)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _add(total: dict[str, int], more: dict[str, int]) -> None:
    for k, v in more.items():
        total[k] = total.get(k, 0) + v


def _fault(point: str) -> None:
    """Crash tests kill the run at a named point, as kill -9 would."""
    if os.environ.get("DEJA_FAULT") == point:
        import signal

        os.kill(os.getpid(), signal.SIGKILL)


def _many(con, sql: str, rows: list) -> None:
    """executemany, but in multi-row statements: DuckDB's executemany runs one
    statement per row, and Arrow registration would need the full duckdb package."""
    if not rows:
        return
    import re

    m = re.match(r"\s*(INSERT(?: OR \w+)? INTO \w+) VALUES \(([?, ]+)\)", sql)
    if m is None:
        con.executemany(sql, rows)
        return
    one = "(" + m.group(2) + ")"
    for i in range(0, len(rows), 200):
        chunk = rows[i : i + 200]
        con.execute(f"{m.group(1)} VALUES " + ", ".join([one] * len(chunk)), [v for r in chunk for v in r])


def run_index(env: Mapping[str, str] | None = None, rebuild: bool = False, progress: Callable | None = None,
              notice: Callable | None = None, store: Store | None = None, lock_wait: float | None = None) -> Summary:
    env = os.environ if env is None else env
    store = store or Store(config.index_dir(env))
    wait = config.lock_wait_seconds(env) if lock_wait is None else lock_wait
    with store.writer_lock(wait, notice=notice):
        store.init()
        return Run(store, env, rebuild, progress).execute()
