"""Postings of a big run, held on disk by bucket until the run has read everything.

A big run flushes its records every few megabytes of text, but its postings
are worth writing only once: a part per bucket per flush made a cold index of
a year's history write hundreds of small sorted files and then merge every
bucket again (compaction), which cost as much as tokenising. Instead each
flush appends its postings, unsorted, to one Arrow IPC stream per bucket in
the store's ``.tmp`` (lz4, cheap to write and to read back), and at the end of
the run each bucket is read back alone, sorted and written as one part. Memory
stays one flush while reading and one bucket (a 64th of the run's postings)
while writing.

The files live under the writer lock; a killed run's are swept by the next
run that spills (or by ``Store.discard``).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Iterator


class BucketSpill:
    def __init__(self, root: Path, gen: int):
        self.dir = Path(root) / ".tmp" / f"spill-{gen:06d}"
        for old in self.dir.parent.glob("spill-*"):  # a killed run's (the caller holds the writer lock)
            shutil.rmtree(old, ignore_errors=True)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.writers: dict[int, object] = {}
        self.schema = None

    def add(self, table, bucket: str = "bucket") -> None:
        """Append ``table``'s rows to their buckets' streams (``bucket``: an int column, dropped)."""
        import numpy as np
        import pyarrow as pa

        if table.num_rows == 0:
            return
        b = table.column(bucket).to_numpy()
        order = np.argsort(b, kind="stable")
        b = b[order]
        table = table.drop_columns([bucket]).take(pa.array(order))
        self.schema = table.schema
        edges = [0, *(np.flatnonzero(np.diff(b)) + 1).tolist(), len(b)]
        for lo, hi in zip(edges, edges[1:]):
            key = int(b[lo])
            w = self.writers.get(key)
            if w is None:
                opts = pa.ipc.IpcWriteOptions(compression="lz4")
                w = self.writers[key] = pa.ipc.new_stream(str(self.dir / f"{key:03d}.arrows"), table.schema,
                                                          options=opts)
            w.write_table(table.slice(lo, hi - lo))

    def drain(self) -> Iterator[tuple[int, object]]:
        """Each bucket's rows as one table, bucket by bucket; its file goes once read."""
        import pyarrow as pa

        for w in self.writers.values():
            w.close()
        keys = sorted(self.writers)
        self.writers = {}
        for key in keys:
            path = self.dir / f"{key:03d}.arrows"
            with pa.memory_map(str(path)) as src:
                table = pa.ipc.open_stream(src).read_all()
            path.unlink(missing_ok=True)
            yield key, table

    def close(self) -> None:
        for w in self.writers.values():
            try:
                w.close()
            except Exception:
                pass
        self.writers = {}
        shutil.rmtree(self.dir, ignore_errors=True)
