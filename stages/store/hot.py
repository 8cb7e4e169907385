"""Parts a warm process holds in memory, found by key without a query.

A warm process (``deja mcp``, ``deja serve``'s) answers request after request
from the same immutable Parquet parts. Each DuckDB query over them costs a
plan and a scan however little it returns (1 to 9 ms on a 2-core machine),
and a search asked three: its words' stems in the vocabulary, their postings,
the texts of the records it shows. Held here instead: a vocabulary part as
its rows in stem order and a postings part as its rows in token order, each
key's run found by a binary search over the keys' UTF-8 bytes, and a records
part's texts by record id: microseconds each.

A part is read on first use and held while it is live (``keep_only``, when a
warm process opens a new generation): parts are replaced whole, never
rewritten, so what is held stays true; a path that comes back with other
bytes (a store rebuilt in place) is read again. Held compactly (numbers in
narrow arrays, words as one UTF-8 buffer, long texts compressed), and within
a budget (``DEJA_HOLD_MB``, default 96; 0 holds nothing): a part past it is
not held, and its callers query Parquet for it as a cold process does. The
200 MB bench store is held whole in ~62 MB.
"""

from __future__ import annotations

import os
import threading

import numpy as np

from . import duck

HOLD_MB = 96  # DEJA_HOLD_MB's default
TEXT_SHARE = 0.3  # of the budget, at most this much for texts (the index's parts come first)
# The texts a search shows: its best records are what was said (user,
# assistant, summary, note) before what tools printed. Tool output is most of
# a history's text (the bench store: 57 of 62 MB): a long text is held
# compressed (zstd, record by record: one decompresses in microseconds).
HELD_ROLES = ("user", "assistant", "tool-output", "summary", "note", "title")
PACK_FROM = 512  # a text this long is held compressed

_lock = threading.Lock()
_held: dict[str, tuple[tuple, object]] = {}  # path → (its stat when read, its rows: Keyed, Texts or None)
_bytes = {"index": 0, "texts": 0}  # what the held parts take, by budget


def _budget(kind: str) -> int:
    try:
        mb = float(os.environ.get("DEJA_HOLD_MB", HOLD_MB))
    except ValueError:
        mb = HOLD_MB
    total = max(0.0, mb) * (1 << 20)
    return int(total * TEXT_SHARE if kind == "texts" else total * (1 - TEXT_SHARE))


class Strings:
    """Strings as one UTF-8 buffer and their offsets: a fraction of the memory
    of as many Python strings."""

    __slots__ = ("blob", "offs")

    def __init__(self, blob: bytes, lengths: np.ndarray) -> None:
        self.blob = blob
        offs = np.zeros(len(lengths) + 1, np.int64)
        np.cumsum(lengths, out=offs[1:])
        self.offs = offs.astype(np.int32) if len(blob) < 2**31 else offs  # (half the memory, nearly always)

    def __len__(self) -> int:
        return len(self.offs) - 1

    def __getitem__(self, i: int) -> str:
        return self.raw(i).decode("utf-8", "surrogatepass")

    def raw(self, i: int) -> bytes:
        return self.blob[self.offs[i]:self.offs[i + 1]]

    def between(self, lo: int, hi: int) -> list[str]:
        offs = self.offs[lo:hi + 1].tolist()
        blob = self.blob
        return [blob[a:b].decode("utf-8", "surrogatepass") for a, b in zip(offs, offs[1:])]

    @property
    def size(self) -> int:
        return len(self.blob) + self.offs.nbytes


class Keyed:
    """One part's rows grouped by a key, in key order: the distinct keys in
    byte order (DuckDB's ORDER BY of a string), each with its run of rows,
    found by a binary search over the keys' bytes."""

    __slots__ = ("keys", "ends", "columns")

    def __init__(self, keys: Strings, counts: np.ndarray, columns: dict) -> None:
        self.keys, self.columns = keys, columns
        self.ends = np.cumsum(np.asarray(counts, np.int64))

    def run(self, key: str) -> tuple[int, int]:
        """The rows of this key: (first, past the last); (0, 0) when the part has none."""
        want = key.encode("utf-8", "surrogatepass")
        blob, offs = self.keys.blob, self.keys.offs
        lo, hi = 0, len(self.ends)
        while lo < hi:  # (bisect over the buffer: no list of the keys is ever made)
            mid = (lo + hi) // 2
            if blob[offs[mid]:offs[mid + 1]] < want:
                lo = mid + 1
            else:
                hi = mid
        if lo < len(self.ends) and blob[offs[lo]:offs[lo + 1]] == want:
            return (int(self.ends[lo - 1]) if lo else 0), int(self.ends[lo])
        return 0, 0

    @property
    def size(self) -> int:
        return (self.ends.nbytes + self.keys.size
                + sum(c.size if isinstance(c, Strings) else c.nbytes for c in self.columns.values()))


class Texts:
    """A records part's texts of ``HELD_ROLES`` by record id."""

    __slots__ = ("record_id", "texts", "packed")

    def __init__(self, record_id: np.ndarray, encoded: list[bytes], packed: np.ndarray) -> None:
        self.record_id, self.packed = record_id, packed
        self.texts = Strings(b"".join(encoded), np.fromiter(map(len, encoded), np.int64, len(encoded)))

    @classmethod
    def of(cls, rows, room: float = float("inf")) -> "Texts | None":
        """From (record id, text) rows in id order, a batch at a time: None as
        soon as they take more than ``room`` bytes (a month of a heavy
        history's tool output is never all in memory at once)."""
        import zstandard

        pack = zstandard.ZstdCompressor(level=1).compress
        ids, encoded, packed, size = [], [], [], 0
        for batch in rows:
            for rid, text in batch:
                raw = (text or "").encode("utf-8", "surrogatepass")
                big = len(raw) >= PACK_FROM
                if big:
                    raw = pack(raw)
                ids.append(rid)
                encoded.append(raw)
                packed.append(big)
                size += len(raw) + 17  # (and its id, offset and flag)
            if size > room:
                return None
        return cls(np.array(ids, np.int64), encoded, np.array(packed, bool))

    def get(self, record_id: int) -> str | None:
        i = int(np.searchsorted(self.record_id, record_id))
        if i >= len(self.record_id) or self.record_id[i] != record_id:
            return None
        raw = self.texts.raw(i)
        if self.packed[i]:
            import zstandard

            raw = zstandard.ZstdDecompressor().decompress(raw)
        return raw.decode("utf-8", "surrogatepass")

    @property
    def size(self) -> int:
        return self.texts.size + self.record_id.nbytes + self.packed.nbytes


SLICE_ROWS = 1 << 16  # a part is read this many rows at a time


class _Unsorted(Exception):
    pass


def _read_keyed(con, path: str, key: str, numbers: list[str], words: str | None, room: int) -> Keyed | None:
    """A part's rows by ``key``: its ``numbers`` columns as arrays and its
    ``words`` column (if any) as ``Strings``. The index writes postings and
    vocabulary parts in key order: they are read a slice of rows at a time
    (DuckDB skips the other row groups by their row numbers), so that what
    Python makes of one slice is all that is ever in memory beside what is
    held (a text-heavy history's 880,000 words read at once left ~20 MB more
    behind). None past ``room`` bytes; a part in another order is sorted whole."""
    columns = ", ".join([f"{key} AS key", f"strlen({key}) AS key_bytes", *numbers]
                        + ([f"{words} AS words", f"strlen({words}) AS word_bytes"] if words else []))
    source = f"read_parquet({_quoted(path)}, file_row_number=true) WHERE {key} IS NOT NULL"
    try:
        return _keyed(_slices(con, f"SELECT {columns} FROM {source}", path), numbers, words, room)
    except _Unsorted:
        # (Python orders strings by code point, as their UTF-8 bytes: Keyed.run's order)
        got = con.execute(f"SELECT {columns} FROM {source}").fetchnumpy()
        rows = {name: np.asarray(col) for name, col in got.items()}
        order = np.argsort(rows["key"], kind="stable")
        return _keyed([{name: col[order] for name, col in rows.items()}], numbers, words, room)


def _slices(con, select: str, path: str):
    """The part's rows in file order, SLICE_ROWS at a time."""
    (total,) = con.execute(f"SELECT count(*) FROM read_parquet({_quoted(path)})").fetchone()
    for lo in range(0, total, SLICE_ROWS):
        yield con.execute(f"{select} AND file_row_number >= $lo AND file_row_number < $hi ORDER BY file_row_number",
                          {"lo": lo, "hi": lo + SLICE_ROWS}).fetchnumpy()


def _keyed(batches, numbers: list[str], words: str | None, room: int) -> Keyed | None:
    """A Keyed of batches of rows in key order (``_Unsorted`` when they are
    not); None as soon as it takes more than ``room`` bytes."""
    keys_blob, key_bytes, starts = bytearray(), [], []
    words_blob, word_bytes = bytearray(), []
    got: dict[str, list] = {c: [] for c in numbers}
    prev, at = None, 0
    for rows in batches:
        keys = np.asarray(rows["key"])
        if not len(keys):
            continue
        if (prev is not None and keys[0] < prev) or not np.all(keys[:-1] <= keys[1:]):
            raise _Unsorted
        first = np.flatnonzero(np.concatenate([[prev is None or keys[0] != prev], keys[1:] != keys[:-1]]))
        keys_blob += "".join(keys[first].tolist()).encode("utf-8", "surrogatepass")
        key_bytes.append(np.asarray(rows["key_bytes"])[first])
        starts.append(first + at)
        for c in numbers:
            got[c].append(np.asarray(rows[c]))
        if words:
            words_blob += "".join(np.asarray(rows["words"]).tolist()).encode("utf-8", "surrogatepass")
            word_bytes.append(np.asarray(rows["word_bytes"]))
        prev, at = keys[-1], at + len(keys)
        if len(keys_blob) + len(words_blob) + at * (4 * len(numbers) + 8 * (1 + bool(words))) > room:
            return None

    def joined(arrays: list) -> np.ndarray:
        return np.concatenate(arrays) if arrays else np.zeros(0, np.int64)

    cols = {c: joined(v) for c, v in got.items()}
    if words:
        cols["words"] = Strings(bytes(words_blob), joined(word_bytes))
    part = Keyed(Strings(bytes(keys_blob), joined(key_bytes)), np.diff(np.append(joined(starts), at)), cols)
    return part if part.size <= room else None


def postings(con, path: str) -> Keyed | None:
    """A postings part's rows by token (``record_id`` and ``tf``); None when not held."""

    def read(room: int) -> Keyed | None:
        part = _read_keyed(con, path, "token", ["record_id", "tf"], None, room)
        if part is not None:
            rid = part.columns["record_id"].astype(np.int64)
            # record ids count up from 0: 32 bits hold any store's, halving the largest array
            if len(rid) and 0 <= rid.min() and rid.max() < 2**31:
                rid = rid.astype(np.int32)
            part.columns.update(record_id=rid, tf=part.columns["tf"].astype(np.float32))
        return part

    return _held_or_read(path, "index", read)


def vocab(con, path: str) -> Keyed | None:
    """A vocabulary part's rows by stem (its ``words``, ``Strings``, and their
    counts ``n``); None when not held."""

    def read(room: int) -> Keyed | None:
        part = _read_keyed(con, path, "stem", ["n"], "token", room)
        if part is not None:
            part.columns["n"] = part.columns["n"].astype(np.int64)
        return part

    return _held_or_read(path, "index", read)


def texts(con, path: str) -> Texts | None:
    """A records part's texts of ``HELD_ROLES``; None when not held."""

    def read(room: int) -> Texts | None:
        roles = ", ".join(f"'{r}'" for r in HELD_ROLES)
        cur = con.execute(f"SELECT record_id, text FROM read_parquet({_quoted(path)}, hive_partitioning=false) "
                          f"WHERE role IN ({roles}) ORDER BY record_id")
        return Texts.of(iter(lambda: cur.fetchmany(1024), []), room)

    return _held_or_read(path, "texts", read)


def _held_or_read(path: str, kind: str, read):
    """The part as held, else read now; None (remembered) when it would pass its budget."""
    got = _held.get(path)
    if got is not None:
        return got[1]
    with _lock:
        got = _held.get(path)
        if got is None:
            stat = _stat(path)
            part = None
            room = _budget(kind) - _bytes[kind]
            if room > 0:
                try:
                    part = read(room)
                except duck.Error:
                    raise  # (a damaged part: the store leaves it out and asks again, LiveStore.tolerant)
                except Exception:  # a part of a shape this cannot hold: its callers query it
                    part = None
            if part is not None and _bytes[kind] + part.size > _budget(kind):
                part = None  # (remembered: read again only when the live parts change)
            if part is not None:
                _bytes[kind] += part.size
            got = _held[path] = (stat, part)
    return got[1]


_live: set[str] = set()  # the live generation's parts (keep_only)
_preload: dict = {}  # "thread": the background read of the rest (preload), "stop"


def preload(con, files: dict[str, list[str]], calls) -> None:
    """Read the live parts not held yet on a background thread, a part at a
    time and each only once ``calls`` has been quiet a while
    (``calls.wait_quiet(stop)``: ``deja mcp`` between an agent's calls,
    pipeline/mcp_server.Calls): the calls that follow find what they read
    held, instead of each reading a part or two of its own (~20 ms each; the
    200 MB bench store's ~2 s in all). Stops at a new generation (its own
    preload follows), at the budget, and at exit; a part that fails here is
    met by the call that reads it."""
    t = _preload.get("thread")
    if t is not None and t.is_alive():
        return
    cur = con.cursor()  # (a connection of its own to the same database: calls go on beside it)
    stop = _preload["stop"] = threading.Event()

    def run() -> None:
        try:
            for read, dataset in ((vocab, "vocab"), (postings, "postings"), (texts, "records")):
                for path in files.get(dataset, []):
                    if path in _held:
                        continue
                    calls.wait_quiet(stop)
                    if stop.is_set() or path not in _live:
                        return
                    if read(cur, path) is None:
                        break  # (past the budget: the rest of this kind would be too)
        except Exception:
            pass
        finally:
            cur.close()

    t = _preload["thread"] = threading.Thread(target=run, name="deja-hold", daemon=True)
    t.start()
    if not _preload.get("atexit"):
        import atexit

        atexit.register(_stop_preload)  # never exit while the thread is inside DuckDB's C++
        _preload["atexit"] = True


def _stop_preload() -> None:
    stop, t = _preload.get("stop"), _preload.get("thread")
    if stop is not None:
        stop.set()
    if t is not None:
        t.join(timeout=10)


def keep_only(paths) -> None:
    """Let go of every part not in ``paths`` (the live generation's), of any
    whose file changed since it was read, and of the parts left unheld by the
    budget (the room freed may hold them now)."""
    live = set(paths)
    _live.clear()
    _live.update(live)
    with _lock:
        for path in list(_held):
            stat, part = _held[path]
            if part is None or path not in live:
                del _held[path]
                continue
            try:
                same = _stat(path) == stat
            except OSError:
                same = False
            if not same:
                del _held[path]
        _bytes["index"] = sum(p.size for _, p in _held.values() if isinstance(p, Keyed))
        _bytes["texts"] = sum(p.size for _, p in _held.values() if isinstance(p, Texts))


def held_bytes() -> dict[str, int]:
    """What the held parts take, by budget."""
    return dict(_bytes)


def _stat(path: str) -> tuple:
    st = os.stat(path)
    return st.st_ino, st.st_size, st.st_mtime_ns


def _quoted(path: str) -> str:
    return "'" + path.replace("'", "''") + "'"
