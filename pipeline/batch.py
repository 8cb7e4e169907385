"""Records on their way to Parquet: the two ways an index run writes a batch.

A run hands every file's records (with their record ids) to a batch; its
flushes and its finish write records, postings, docs and vocabulary parts and
return them as ``(dataset, relative path, rows)`` for the commit.

* ``ArrowBatch``, for big runs: Arrow tables, the polars tokenizer and
  pyarrow's writer; every part is written once, at the run's end.
* ``ListBatch``, for small runs (an appended turn, a short new session): the
  records stay the plain lists the readers made, the pure-Python tokenizer
  counts tokens (identical by test), and DuckDB's core writes one records part
  per month, one postings part for every bucket (``bucket=all``) and one
  vocabulary part. Importing pyarrow and polars and writing a file per bucket
  would cost a small run most of its time.

Both write the same rows; the rules they share are the functions below.
"""

from __future__ import annotations

import threading
import time
from collections import Counter

from deja.stages import tokenize

from deja.stages.store import write
from deja.stages.store import layout
from deja.stages.store.limits import trim_heap
from deja.stages.sources.base import ROLE_CODES, ROLES
from deja.stages.stems import stem_many

from deja.pipeline.ingest import FileOutput
from deja.stages.store.catalog import Store
from deja.stages.store.spill import Spill
from deja.stages.store.index_state import SessionOrdinals

Part = tuple[str, str, int]  # (dataset, path relative to the store root, rows)


def searchable_text(role: str, text: str) -> str:
    """An edit record is searchable by its path only: nothing searches the removed body."""
    return text.split("\n", 1)[0] if role == "edit" else text


def role_code(role: str) -> int:
    return ROLE_CODES.get(role, 2)


# ---------------------------------------------------------------------------
# small runs


class ListBatch:
    """Plain column lists, tokenised in Python, written by DuckDB's core."""

    def __init__(self, con, store: Store, gen: int, ordinals: SessionOrdinals):
        self.con = con
        self.store, self.root, self.gen = store, store.root, gen
        self.ordinals = ordinals
        self.outs: list[tuple[FileOutput, int]] = []

    def add(self, out: FileOutput, first_id: int) -> None:
        self.outs.append((out, first_id))

    def full(self) -> bool:
        return False  # a small run is one flush by definition

    def finish(self) -> list[Part]:
        return []  # its one flush wrote everything

    def close(self) -> None:
        pass

    def flush(self) -> list[Part]:
        if not self.outs:
            return []
        name = self.store.new_part_name(self.gen)
        parts = []
        by_harness: dict[str, list[tuple[FileOutput, int]]] = {}
        for out, first in self.outs:
            by_harness.setdefault(out.action.harness, []).append((out, first))
        records = []
        for harness, outs in sorted(by_harness.items()):
            cols = _concat([out.cols for out, _ in outs])
            # (its own columns' length: a file read in slices counts every slice's rows in its first output's)
            cols["record_id"] = [i for out, first in outs for i in range(first, first + len(out.cols["text"]))]
            parts += self.write_records(harness, cols, name)
            records.append(cols)
        postings, docs = self.postings(_concat(records))
        rows = self.copy("run_postings", layout.POSTING_TYPES, postings, layout.POSTINGS_ORDER,
                         layout.postings_rel(layout.ALL_BUCKETS, name), layout.POSTINGS_ROW_GROUP)
        parts.append(("postings", layout.postings_rel(layout.ALL_BUCKETS, name), rows))
        rows = self.copy("run_docs", layout.DOC_TYPES, docs, layout.DOCS_ORDER, f"docs/{name}", layout.DOCS_ROW_GROUP)
        parts.append(("docs", f"docs/{name}", rows))
        vocab = _vocab(postings["token"])
        rows = self.copy("run_vocab", layout.VOCAB_TYPES, vocab, layout.VOCAB_ORDER, f"vocab/{name}", layout.VOCAB_ROW_GROUP)
        parts.append(("vocab", f"vocab/{name}", rows))
        for out, _ in self.outs:
            out.cols = None  # written: keep only file metadata
        self.outs = []
        return [p for p in parts if p[2]]

    def write_records(self, harness: str, cols: dict[str, list], name: str) -> list[Part]:
        months = [_month(ms) for ms in cols["ts"]]
        write.load_lists(self.con, "run_records", layout.RECORD_TYPES + (("_month", "VARCHAR"),), dict(cols, _month=months))
        parts = []
        try:
            for month in sorted(set(months)):
                rel = layout.records_rel(harness, month, name)
                rows = write.copy_query(
                    self.con, f"SELECT * EXCLUDE (_month) FROM run_records WHERE _month = ? ORDER BY {layout.RECORDS_ORDER}",
                    [month], self.root, rel, layout.RECORDS_ROW_GROUP, layout.RECORDS_GROUP_BYTES,
                )
                parts.append(("records", rel, rows))
        finally:
            self.con.execute("DROP TABLE run_records")
        return parts

    def postings(self, cols: dict[str, list]) -> tuple[dict[str, list], dict[str, list]]:
        """The postings of these records, and their docs rows (one per record with tokens)."""
        texts = [searchable_text(r, t) for r, t in zip(cols["role"], cols["text"])]
        counts = tokenize.token_counts_lists(cols["record_id"], texts)
        of = {rid: (self.ordinals.of(key), role_code(role))
              for rid, key, role in zip(cols["record_id"], cols["session_key"], cols["role"])}
        lengths = dict(zip(counts["record_id"], counts["rec_len"]))  # (rows come record by record)
        docs = {"record_id": list(lengths), "session": [of[r][0] for r in lengths], "role": [of[r][1] for r in lengths],
                "rec_len": list(lengths.values())}
        return {"token": counts["token"], "record_id": counts["record_id"], "tf": counts["tf"]}, docs

    def copy(self, table: str, types, cols: dict[str, list], order: str, rel: str, row_group: int) -> int:
        write.load_lists(self.con, table, types, cols)
        try:
            return write.copy_query(self.con, f"SELECT * FROM {table} ORDER BY {order}", None, self.root, rel, row_group)
        finally:
            self.con.execute(f"DROP TABLE {table}")


def _concat(parts: list[dict[str, list]]) -> dict[str, list]:
    if len(parts) == 1:
        return dict(parts[0])
    return {k: [v for p in parts for v in p[k]] for k in parts[0]}


def _vocab(tokens: list[str]) -> dict[str, list]:
    """Distinct tokens with their stem and posting count (write.vocab_of's rows)."""
    counts = Counter(tokens)
    words = list(counts)
    return {"token": words, "stem": stem_many(words), "n": [counts[w] for w in words]}


def _month(ms: int | None) -> str:
    """The records partition of a timestamp, in UTC (write.month_column's rule)."""
    if ms is None:
        return layout.NO_MONTH
    try:
        return time.strftime("%Y-%m", time.gmtime(ms // 1000))
    except (OverflowError, OSError, ValueError):
        return layout.NO_MONTH


# ---------------------------------------------------------------------------
# big runs

FLUSH_BYTES = 4 << 20  # (8 held 10-15 MB more at a text-heavy run's peak, for no time saved)
# A records partition whose spilled files (lz4) are at most this is sorted
# in memory; a bigger one is written a role at a time.
RECORDS_AT_ONCE = 12 << 20
# A flush's rows of one partition with this much text or more wait on disk in a
# batch per role (a slice of a huge transcript): a partition too big to sort in
# memory is written a role at a time, and reading a 20 MB batch once per role
# decompressed it eight times and left glibc ~150 MB of freed buffers. Smaller
# ones stay one batch (filtered per role then): a batch per role cost the
# default profile's run ~0.5 s more CPU in its spills.
ROLE_BATCH_BYTES = 2 << 20
TOKENIZE_SLICE = 2 << 20
PENDING_ROWS, PENDING_CHARS = 512, 256 << 10  # what waits to become one table (ArrowBatch.add)
# Slices tokenised at a time. A second thread took the text profile from 16.2
# to 15.5 s but its peak from 355 to 374 MB (bench/README.md).
TOKENIZERS = 1


class ArrowBatch:
    """Arrow tables, tokenised by polars in slices, written by pyarrow.

    Parsed files accumulate until about ``FLUSH_BYTES`` of text, then their
    records go to disk by partition; tokenising in ``TOKENIZE_SLICE`` pieces
    keeps the tokenizer's working memory small whatever the file, and the
    postings go to disk by bucket. ``finish`` writes each partition and each
    bucket once.
    """

    def __init__(self, store: Store, gen: int, ordinals: SessionOrdinals,
                 flush_bytes: int | None = None, con=None, merge_chunk: int | None = None,
                 vocab_at_once: int | None = None):
        import pyarrow as pa

        self.con, self.merge_chunk = con, merge_chunk  # the run's DuckDB, for a vocabulary too big to sort here
        self.vocab_at_once = vocab_at_once or VOCAB_AT_ONCE
        self.flush_bytes = flush_bytes or FLUSH_BYTES
        self.store, self.root, self.gen = store, store.root, gen
        self.ordinals = ordinals
        self.tables: list[tuple[str, object]] = []  # (harness, records table)
        self.pending: dict[str, list] | None = None  # columns of files not yet made a table (add)
        self.pending_harness, self.pending_ids = "", [0, 0]  # their harness, their record ids [lo, hi)
        self.pending_chars = 0
        self.bytes = 0
        self.postings = Spill(self.root, gen, "postings")  # by bucket
        self.records = Spill(self.root, gen, "records")  # by (harness, month)
        self.docs: list = []  # docs rows of every slice: one small row per record, written at finish
        # records waiting to be tokenised together: per-call overhead of the
        # tokenizer makes a batch of many small files far cheaper than one call each
        self.to_tokenize: list = []
        self.to_tokenize_bytes = 0
        # Slices are tokenised on threads of their own while this one takes the
        # readers' next files: the run's main thread was its critical path (the
        # reader processes waited on it), and polars and the spill's writes let
        # go of the GIL. At most TOKENIZERS slices at a time, so memory stays
        # that many slices ahead.
        self.tokenizer = None
        self.tokenizing: list = []  # futures, oldest first
        self.spill_lock = threading.Lock()
        # Arrow's default pool (jemalloc/mimalloc) keeps freed memory; an index run
        # allocates and frees a flush's worth at a time, so the system allocator
        # (trimmed after each flush) keeps peak memory near the live data.
        pa.set_memory_pool(pa.system_memory_pool())

    def add(self, out: FileOutput, first_id: int) -> None:
        for key in dict.fromkeys(out.cols["session_key"]):
            # numbered here, in the order files come, not by whichever tokenizer thread gets there first
            self.ordinals.of(key)
        # Small files wait as plain columns and become one table together:
        # making a table costs ~0.1 ms whatever its size, which for 50,000
        # tiny transcripts was the run's main thread's largest cost (and a
        # table per file was a chunk per file through the spills).
        if self.pending and (self.pending_harness != out.action.harness
                             or self.pending_ids[1] != first_id):
            self._take_pending()
        if not self.pending:
            self.pending = {c: [] for c in out.cols}
            self.pending_harness, self.pending_ids = out.action.harness, [first_id, first_id]
        for c, values in out.cols.items():
            self.pending[c].extend(values)
        self.pending_ids[1] += out.rows
        self.pending_chars += sum(map(len, out.cols["text"]))
        out.cols = None
        if self.pending_ids[1] - self.pending_ids[0] >= PENDING_ROWS or self.pending_chars >= PENDING_CHARS:
            self._take_pending()

    def _take_pending(self) -> None:
        """The waiting files' columns as one records table, queued for the tokenizer and the flush."""
        import pyarrow as pa

        from deja.stages import normalize

        if not self.pending:
            return
        lo, hi = self.pending_ids
        table = normalize.to_table(self.pending).add_column(0, "record_id", pa.array(range(lo, hi), pa.int64()))
        self.pending, self.pending_chars = None, 0
        self.tables.append((self.pending_harness, table))
        n = table.column("text").nbytes
        self.to_tokenize.append(table)
        self.to_tokenize_bytes += n
        if self.to_tokenize_bytes >= TOKENIZE_SLICE:
            self.tokenize_pending()
        self.bytes += n

    def full(self) -> bool:
        return self.bytes >= self.flush_bytes

    def tokenize_pending(self) -> None:
        self._take_pending()
        if self.to_tokenize:
            while len(self.tokenizing) >= TOKENIZERS:
                self.tokenizing.pop(0).result()
            if self.tokenizer is None:
                from concurrent.futures import ThreadPoolExecutor

                self.tokenizer = ThreadPoolExecutor(TOKENIZERS, thread_name_prefix="deja-tokenize")
            self.tokenizing.append(self.tokenizer.submit(self._tokenize, self.to_tokenize))
        self.to_tokenize, self.to_tokenize_bytes = [], 0

    def _tokenize(self, tables: list) -> None:
        """(on a tokenizer thread) Postings wait on disk for the run's end (finish),
        in whichever order slices finish: each bucket is sorted when written.
        Each piece's postings go to disk before the next piece is tokenised: a
        32 MB slice of a huge transcript makes 1.5M postings, which as one
        table and its copy ordered by bucket held ~150 MB while the run read
        the next slice."""
        import pyarrow as pa

        for postings, docs in self.postings_of(pa.concat_tables(tables)):
            with self.spill_lock:
                self.postings.append_by(postings, "bucket")
                self.docs.append(docs)

    def wait_tokenizer(self) -> None:
        """Every slice given to the tokenizer is done (the first error raised here)."""
        while self.tokenizing:
            self.tokenizing.pop(0).result()

    def close(self) -> None:
        """A run that failed: the tokenizer thread stops before the run's files go."""
        if self.tokenizer is not None:
            self.tokenizer.shutdown(wait=True, cancel_futures=True)
            self.tokenizer = None

    def flush(self) -> list[Part]:
        """Records wait on disk by partition for the run's end (finish), like postings."""
        import pyarrow as pa

        self._take_pending()
        if not self.tables:
            return []
        self.tokenize_pending()
        by_harness: dict[str, list] = {}
        for harness, table in self.tables:
            by_harness.setdefault(harness, []).append(table)
        self.tables = []
        for harness, tables in by_harness.items():
            for key, rows in write.partitions(pa.concat_tables(tables), harness):
                if rows.column("text").nbytes < ROLE_BATCH_BYTES:
                    self.records.append(key, rows)  # (every role: see write.of_role)
                    continue
                for (role,), run in write.runs_of(rows, {"role": rows.column("role")}):
                    self.records.append(key, run, role)
        del tables, by_harness
        self.bytes = 0
        trim_heap()
        return []

    def finish(self) -> list[Part]:
        """The run's parts, each written once from what waited on disk
        (stages/store/spill.py): a records part per partition, a postings
        part per bucket, one docs and one vocabulary part."""
        import pyarrow as pa

        self.flush()
        self.wait_tokenizer()
        self.close()
        parts: list[Part] = []
        vocab = VocabParts(self.root / ".tmp" / f"vocab-{self.gen:06d}", self.con, self.merge_chunk,
                           self.vocab_at_once)
        name = self.store.new_part_name(self.gen)
        # The reader processes are done: the records partitions (one at a
        # time: each is the largest thing a finish holds) and the postings
        # buckets are sorted and written (which releases the GIL) on two
        # threads, while this one stems each bucket's words for the vocabulary
        # (Python, holding it) as they come. A thread holds one partition or
        # one bucket at a time.
        from concurrent.futures import ThreadPoolExecutor

        pool = ThreadPoolExecutor(2, thread_name_prefix="deja-finish")
        try:
            records = pool.submit(self._write_records, name)
            for part, counts in pool.map(lambda b: self._write_bucket(b, name), self.postings.keys()):
                parts.append(("postings", *part))
                vocab.add(write.vocab_of(counts, stem_many))
            parts = records.result() + parts
            # the heap the buckets freed goes back before the vocabulary's merge
            # adds DuckDB's memory to it (a 1 GB transcript: that phase 362 → 250 MB)
            trim_heap()
            part = vocab.write(self.root, f"vocab/{name}")
            if part:
                parts.append(("vocab",) + part)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            self.records.close()
            self.postings.close()
            vocab.close()
        if self.docs:
            table = pa.concat_tables(self.docs).sort_by("record_id")
            self.docs = []
            parts.append(("docs",) + write.write_table(table, self.root, f"docs/{name}", layout.DOCS_ROW_GROUP))
        trim_heap()
        return parts

    def _write_records(self, name: str) -> list[Part]:
        """A records part per partition."""
        parts: list[Part] = []
        for key in self.records.keys():
            rel = layout.records_rel(*key, name)
            if self.records.size(key) <= RECORDS_AT_ONCE:
                rows = write.write_records_part(self.records.read(key), self.root, rel)
            else:  # a partition too big to sort in memory: a role at a time
                rows = write.write_records_streamed(lambda role: write.of_role(self.records.tagged(key, role), role),
                                                    ROLES, self.root, rel)
            self.records.drop(key)
            parts.append(("records", rel, rows))
            trim_heap()
        return parts

    def _write_bucket(self, bucket: int, name: str):
        """A bucket's postings part, and its words' posting counts (on a finish thread)."""
        table = self.postings.read(bucket)
        self.postings.drop(bucket)
        return write.write_bucket(table, bucket, self.root, name)

    def postings_of(self, table):
        """Postings and docs rows of a batch of records, a piece of bounded
        text size at a time. A piece takes in a short rest of the batch: the
        tokenizer's batches are a little over TOKENIZE_SLICE, and a piece of
        their last few records spilled as many batches again (see _tokenize)."""
        import numpy as np
        import pyarrow.compute as pc

        if table.column("text").nbytes < TOKENIZE_SLICE * 3 // 2:
            yield self._postings(table)
            return
        lengths = pc.binary_length(table.column("text")).to_numpy(zero_copy_only=False)
        rest = int(np.sum(lengths))
        start, acc = 0, 0
        for i, n in enumerate(lengths):
            acc += n
            if acc >= TOKENIZE_SLICE and rest - acc >= TOKENIZE_SLICE // 2:
                yield self._postings(table.slice(start, i + 1 - start))
                rest -= acc
                start, acc = i + 1, 0
        if start < table.num_rows:
            yield self._postings(table.slice(start))

    def _postings(self, table):
        import pyarrow as pa
        import pyarrow.compute as pc

        roles = table.column("role")
        texts = table.column("text")
        is_edit = pc.equal(roles, "edit")
        if pc.any(is_edit).as_py():
            edits = pc.filter(texts, is_edit).to_pylist()
            texts = pc.replace_with_mask(
                texts.combine_chunks(), is_edit.combine_chunks(),
                pa.array([searchable_text("edit", t) for t in edits], texts.type),
            )
        counts = tokenize.token_counts_batch(table.column("record_id"), texts, buckets=True)
        postings = counts.select(["token", "record_id", "tf", "bucket"])
        # a record's docs row: its session ordinal and role, and its length in tokens
        lengths = counts.group_by("record_id").aggregate([("rec_len", "max")])
        at = pc.index_in(lengths.column("record_id"), table.column("record_id"))
        known = self.ordinals.known  # (numbered by add: tokenizer threads only read it)
        ords = pa.array([known[k] for k in table.column("session_key").to_pylist()], pa.int32())
        codes = pa.array([role_code(r) for r in roles.to_pylist()], pa.int8())
        docs = pa.table({
            "record_id": lengths.column("record_id"),
            "session": pc.take(ords, at),
            "role": pc.take(codes, at),
            "rec_len": lengths.column("rec_len_max"),
        })
        return postings, docs


VOCAB_AT_ONCE = 500_000  # words: a run's vocabulary up to this is sorted in memory (bench/README.md)


class VocabParts:
    """A big run's vocabulary, bucket by bucket, written as one part sorted by
    stem. Each bucket's words are distinct from the others' (a word has one
    bucket), so the part is their union in order. Up to ``VOCAB_AT_ONCE``
    words that is one sort in memory; past it (text-heavy history has a
    million one-off ids and hashes per 200 MB), each bucket's words wait sorted
    in a temporary Parquet file and DuckDB merges them under the run's memory
    limit (stages/store/merge.py), so the vocabulary never holds memory in
    proportion to the corpus."""

    def __init__(self, folder, con, chunk: int | None, at_once: int = VOCAB_AT_ONCE):
        import shutil

        self.folder, self.con, self.chunk, self.at_once = folder, con, chunk, at_once
        for old in folder.parent.glob("vocab-*"):  # a killed run's (the caller holds the writer lock)
            shutil.rmtree(old, ignore_errors=True)
        self.held: list = []
        self.rows = 0
        self.files: list[str] = []

    def add(self, table) -> None:
        self.held.append(table)
        self.rows += table.num_rows
        if self.con is not None and self.rows > self.at_once:
            self._spill()

    def _spill(self) -> None:
        import pyarrow.parquet as pq

        self.folder.mkdir(parents=True, exist_ok=True)
        for table in self.held:  # (vocab_of sorts each bucket's words by stem, token)
            path = self.folder / f"{len(self.files):03d}.parquet"
            pq.write_table(table, path, row_group_size=layout.VOCAB_ROW_GROUP, compression="lz4")
            self.files.append(str(path))
        self.held = []

    def write(self, root, rel: str) -> tuple[str, int] | None:
        import pyarrow as pa

        from deja.stages.store import merge

        if not self.files:
            if not self.held:
                return None
            table = pa.concat_tables(self.held).sort_by([("stem", "ascending"), ("token", "ascending")])
            self.held = []
            return write.write_table(table, root, rel, layout.VOCAB_ROW_GROUP)
        self._spill()
        rows = merge.copy_sorted(self.con, "SELECT token, stem, n FROM read_parquet($files) WHERE $range",
                                 self.files, layout.VOCAB_KEYS, root, rel, layout.VOCAB_ROW_GROUP, self.chunk)
        return rel, rows

    def close(self) -> None:
        import shutil

        self.held = []
        shutil.rmtree(self.folder, ignore_errors=True)
