"""A big run's rows held on disk by destination until the run has read everything.

A big run reads its transcripts a flush (a few megabytes of text) at a time,
but a part is worth writing only once per destination:

* postings: a part per bucket per flush made a cold index of a year's history
  write hundreds of small sorted files and then merge every bucket again
  (compaction), which cost as much as tokenising;
* records: a part per month per flush cut each month's text into pieces of a
  few hundred kilobytes per role, and zstd compresses a small page a fifth
  worse than a large one.

So each flush appends its rows, unsorted, to one Arrow IPC file per
destination in the store's ``.tmp`` (lz4: cheap to write and to read back),
and at the end of the run each destination is read back alone and written as
one part. Memory stays one flush while reading, and one destination (or one
batch of it, see ``Spill.batches``) while writing. A batch may carry a tag
(a big flush of a records partition goes in a batch per role): the IPC file
format lets ``tagged`` read only the batches of one tag (and the untagged).

A run with many destinations keeps at most ``MAX_OPEN`` files open: a
destination whose file was closed continues in a new segment file.

The files live under the writer lock; a killed run's are swept by the next
run that spills (or by ``Store.discard``).
"""

from __future__ import annotations

import os
import shutil
from collections import OrderedDict
from pathlib import Path
from typing import Hashable, Iterator

MAX_OPEN = 128


class Spill:
    def __init__(self, root: Path, gen: int, name: str):
        self.name = name
        self.dir = Path(root) / ".tmp" / f"spill-{gen:06d}-{name}"
        for old in self.dir.parent.glob(f"spill-*-{name}"):  # a killed run's (the caller holds the writer lock)
            shutil.rmtree(old, ignore_errors=True)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.open: OrderedDict[Hashable, object] = OrderedDict()  # key → its open file writer
        self.segments: dict[Hashable, list[Path]] = {}  # key → its files, in order
        self.tags: dict[Hashable, list[list]] = {}  # key → each of its files' batches' tags, in order
        self.ids: dict[Hashable, int] = {}  # key → the number its files are named by

    def append(self, key: Hashable, table, tag: Hashable = None) -> None:
        """Append ``table``'s rows to ``key``'s file, tagged ``tag`` (see ``batches``)."""
        import pyarrow as pa

        if table.num_rows == 0:
            return
        if table.column(0).num_chunks > 1:
            # a flush of many small transcripts is one chunk per file: written
            # as they are, a partition read back was ten thousand tiny batches,
            # each decompressed and filtered once per role (10,000 files: 60 s)
            table = table.combine_chunks()
        w = self.open.get(key)
        if w is None:
            if len(self.open) >= MAX_OPEN:
                _, oldest = self.open.popitem(last=False)
                oldest.close()
            segs = self.segments.setdefault(key, [])
            path = self.dir / f"{self.ids.setdefault(key, len(self.ids)):05d}-{len(segs):03d}.arrow"
            _disk_fault(self.name)
            segs.append(path)
            self.tags.setdefault(key, []).append([])
            w = self.open[key] = pa.ipc.new_file(str(path), table.schema,
                                                 options=pa.ipc.IpcWriteOptions(compression="lz4"))
        else:
            self.open.move_to_end(key)
        for batch in table.to_batches():
            w.write_batch(batch)
            self.tags[key][-1].append(tag)

    def append_by(self, table, column: str) -> None:
        """Append each row of ``table`` to the file its int ``column`` names (the column is dropped)."""
        import numpy as np
        import pyarrow as pa

        if table.num_rows == 0:
            return
        b = table.column(column).to_numpy()
        if len(b) and 0 <= b.min() and b.max() < 256:
            b = b.astype(np.uint8)  # (numpy sorts 8-bit keys by radix: a ninth of the time of int32's)
        order = np.argsort(b, kind="stable")
        b = b[order]
        table = table.drop_columns([column]).take(pa.array(order))
        edges = [0, *(np.flatnonzero(np.diff(b)) + 1).tolist(), len(b)]
        for lo, hi in zip(edges, edges[1:]):
            self.append(int(b[lo]), table.slice(lo, hi - lo))

    def keys(self) -> list:
        self._close_writers()
        return sorted(self.segments)

    def size(self, key: Hashable) -> int:
        """Bytes on disk of ``key``'s files (lz4-compressed)."""
        return sum(p.stat().st_size for p in self.segments.get(key, []))

    def batches(self, key: Hashable) -> Iterator:
        """``key``'s rows as record batches, in the order they were appended."""
        for _, batch in self._batches(key, lambda t: True):
            yield batch

    def tagged(self, key: Hashable, tag: Hashable) -> Iterator:
        """(tag, batch) of ``key``'s batches appended with ``tag`` or with
        none, in order, reading no other batch: a records partition too big to
        hold is written a role at a time."""
        return self._batches(key, lambda t: t is None or t == tag)

    def _batches(self, key: Hashable, wanted) -> Iterator:
        import pyarrow as pa

        self._close_writers()
        for path, tags in zip(self.segments.get(key, []), self.tags.get(key, [])):
            if not any(map(wanted, tags)):
                continue
            # read, not mapped: a mapped file's pages stay resident until it is
            # closed (hundreds of MB for one huge transcript's month); read,
            # each compressed batch is freed once decoded
            with pa.OSFile(str(path)) as src:
                file = pa.ipc.open_file(src)
                for i, t in enumerate(tags):
                    if wanted(t):
                        yield t, file.get_batch(i)

    def read(self, key: Hashable):
        """``key``'s rows as one table."""
        import pyarrow as pa

        batches = list(self.batches(key))
        return pa.Table.from_batches(batches)

    def drop(self, key: Hashable) -> None:
        """Delete ``key``'s files (written out)."""
        self.tags.pop(key, None)
        for path in self.segments.pop(key, []):
            path.unlink(missing_ok=True)

    def _close_writers(self) -> None:
        for w in self.open.values():
            w.close()
        self.open.clear()

    def close(self) -> None:
        for w in self.open.values():
            try:
                w.close()
            except Exception:
                pass
        self.open.clear()
        self.segments, self.tags = {}, {}
        shutil.rmtree(self.dir, ignore_errors=True)


def _disk_fault(name: str) -> None:
    """Tests fill the disk when a spill of ``name`` opens a file
    (DEJA_FAULT_SPILL=name): the postings spill is written by the tokenizer
    thread, whose error must reach the run as any other."""
    if os.environ.get("DEJA_FAULT_SPILL") == name:
        import errno

        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
