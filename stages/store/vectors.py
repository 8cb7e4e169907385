"""The vectors dataset: one embedding per passage of the speech records,
beside the store (``<index>/vectors/``), for semantic recall.

    vectors/meta.json            the commit point: model, dim, store, parts, unread
    vectors/part-<id>.parquet    record_id, passage, role, session_key, vec FLOAT[dim], digest

``digest`` (UBIGINT, xxh64 of the passage's text; absent from parts written
before it) lets `deja embed` take a vector over for a passage it has embedded
before: a transcript read again (moved, rewritten, the store rebuilt) gets
new record ids for the same words.

``vec`` is a fixed-size float32 list (Arrow's type; DuckDB reads the Parquet
column as a list, and ``vec::FLOAT[256]`` makes it the ARRAY its
``array_cosine_similarity`` takes). Every part also carries the model and
dimension in its footer (``deja.model``, ``deja.dim``).

Writes are atomic like the store's: a part is written under a temporary name
and renamed, then ``meta.json`` is replaced (``os.replace``) to list it. A
part not listed is a leftover of an interrupted run, removed by the next.
``load`` treats anything that does not add up (a missing or resized part, a
footer of another model, a column of another shape, unreadable JSON) as no
vectors at all: the next ``deja embed`` rebuilds them. The stamp ``store``
ties them to one store's record ids (catalog meta ``store_id``): a store made
anew numbers its records from zero again.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

FORMAT = 1
DIR = "vectors"
META = "meta.json"
# what is embedded: what people and agents said, and the names they gave a session
SPEECH_ROLES = ("user", "assistant", "summary", "note", "title")


def folder(root) -> Path:
    return Path(root) / DIR


def stamp(root) -> tuple | None:
    """A cheap identity of the committed vectors (meta.json's inode, size and
    time): a warm process reloads when it changes."""
    try:
        st = os.stat(folder(root) / META)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def read_meta(root) -> dict | None:
    try:
        meta = json.loads((folder(root) / META).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or not isinstance(meta.get("parts"), list):
        return None
    if not isinstance(meta.get("model"), str) or not isinstance(meta.get("dim"), int) or meta["dim"] <= 0:
        return None
    return meta


def unread(meta: dict) -> frozenset[str]:
    """The writing systems a dataset's model does not read, from its meta."""
    got = meta.get("unread")
    return frozenset(x for x in got if isinstance(x, str)) if isinstance(got, list) else frozenset()


class Vectors:
    """The committed vectors in memory: ``ids`` (record id per row), ``roles``
    (role codes), ``sessions`` (session keys), ``matrix`` (rows × dim, unit
    length)."""

    def __init__(self, meta: dict, ids, passages, roles, sessions, matrix, digests=None):
        self.meta, self.ids, self.passages, self.roles, self.sessions, self.matrix = (
            meta, ids, passages, roles, sessions, matrix)
        self.digests = digests  # each row's passage digest, 0 where its part has none (None: not read)

    @property
    def model(self) -> str:
        return self.meta["model"]

    @property
    def dim(self) -> int:
        return self.meta["dim"]

    @property
    def unread(self) -> frozenset[str]:
        """The writing systems the model does not read (stages/writing_systems;
        none known: vectors made before it was asked)."""
        return unread(self.meta)

    def __len__(self) -> int:
        return len(self.ids)


def load(root, columns_only: bool = False, sessions: bool = True, digests: bool = False,
         meta: dict | None = None) -> Vectors | None:
    """The committed vectors, or None when there are none or they are not
    sound (see the module's doc). ``columns_only``: ids, roles and sessions
    without the matrix (what `deja embed` needs to plan); ``sessions``: False
    leaves the session keys out (a search finds each record's session in the
    store's docs: tens of thousands of strings a warm process need not keep);
    ``digests``: each passage's digest too; ``meta``: the parts an earlier
    ``load`` found (those of a commit this process has added to since)."""
    import numpy as np

    meta = read_meta(root) if meta is None else meta
    if meta is None:
        return None
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq

        ids, passages, roles, keys, mats, digs = [], [], [], [], [], []
        for part in meta["parts"]:
            path = folder(root) / part["file"]
            if os.path.basename(part["file"]) != part["file"] or os.path.getsize(path) != part["bytes"]:
                return None
            pf = pq.ParquetFile(path, pre_buffer=False)
            kv = pf.schema_arrow.metadata or {}
            if kv.get(b"deja.model", b"").decode() != meta["model"] or kv.get(b"deja.dim") != str(meta["dim"]).encode():
                return None
            n = pf.metadata.num_rows
            if n != part["rows"]:
                return None
            has_digest = digests and "digest" in pf.schema_arrow.names
            cols = ["record_id", "passage", "role"] + (["session_key"] if sessions else []) + \
                (["digest"] if has_digest else []) + ([] if columns_only else ["vec"])
            # batch by batch into arrays made once: reading the part whole
            # holds Arrow's copy and ours at once, and a warm process keeps the peak
            mat = None if columns_only else np.empty((n, meta["dim"]), np.float32)
            at = 0
            for b in pf.iter_batches(batch_size=8192, columns=cols, use_threads=False):
                ids.append(b.column(0).to_numpy())
                passages.append(b.column(1).to_numpy())
                roles.append(b.column(2).to_numpy())
                if sessions:
                    keys.extend(b.column(3).to_pylist())
                if digests:
                    digs.append(b.column("digest").to_numpy() if has_digest else np.zeros(b.num_rows, np.uint64))
                if mat is not None:
                    vec = b.column(b.num_columns - 1)
                    if vec.type.list_size != meta["dim"] or vec.null_count:
                        return None
                    mat[at:at + b.num_rows] = vec.values.to_numpy(zero_copy_only=False).reshape(b.num_rows, meta["dim"])
                at += b.num_rows
            if at != n:
                return None
            if mat is not None:
                mats.append(mat)
        pa.default_memory_pool().release_unused()
    except Exception:  # noqa: BLE001  (a torn or foreign file of any kind: absent)
        return None
    cat = (lambda xs, dt: np.concatenate(xs) if xs else np.zeros(0, dt))
    matrix = None if columns_only else (np.concatenate(mats) if mats else np.zeros((0, meta["dim"]), np.float32))
    return Vectors(meta, cat(ids, np.int64), cat(passages, np.int16), cat(roles, np.int8), keys, matrix,
                   cat(digs, np.uint64) if digests else None)


def digest(text: str) -> int:
    """A passage's digest: xxh64 of its text (0 is never one)."""
    import xxhash

    return xxhash.xxh64_intdigest(text.encode("utf-8", "surrogatepass")) or 1


def speech_ids(live):
    """The record ids of a live store (stages/store/read.LiveStore) that should
    have vectors: what was said, not deleted. Sorted."""
    import numpy as np

    if not live.has("records"):
        return np.zeros(0, np.int64)
    rows = live.con.execute(
        f"SELECT record_id FROM {live.records_source()} WHERE role IN (SELECT unnest(?)) "
        "AND record_id NOT IN (SELECT record_id FROM deletes) ORDER BY record_id", [list(SPEECH_ROLES)]).fetchall()
    return np.fromiter((r[0] for r in rows), np.int64, len(rows))


def write_part(root, model: str, dim: int, ids, passages, roles, sessions, matrix, digests=None) -> dict:
    """A new part of these rows, written under a temporary name and renamed;
    its entry for meta.json. (Not yet live: ``commit`` makes it so.)
    ``digests``: each passage's (``digest``), 0 for none."""
    import uuid

    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from .private import private_dir, private_file

    private_dir(folder(root))
    values = pa.array(np.ascontiguousarray(matrix, dtype=np.float32).reshape(-1), pa.float32())
    table = pa.table({
        "record_id": pa.array(np.asarray(ids, np.int64)),
        "passage": pa.array(np.asarray(passages, np.int16)),
        "role": pa.array(np.asarray(roles, np.int8)),
        "session_key": pa.array(list(sessions), pa.string()),
        "vec": pa.FixedSizeListArray.from_arrays(values, dim),
        "digest": pa.array(np.asarray(digests if digests is not None else np.zeros(len(ids)), np.uint64)),
    }).replace_schema_metadata({"deja.model": model, "deja.dim": str(dim), "deja.format": str(FORMAT)})
    name = f"part-{uuid.uuid4().hex[:16]}.parquet"
    tmp = folder(root) / (name + ".tmp")
    # (vectors do not compress: zstd would spend time for a few per cent)
    pq.write_table(table, tmp, compression="none", row_group_size=16_384, use_dictionary=["session_key"])
    private_file(tmp)
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, folder(root) / name)
    return {"file": name, "rows": table.num_rows, "bytes": os.path.getsize(folder(root) / name)}


def commit(root, meta: dict) -> None:
    """Make ``meta`` (and the parts it lists) the committed vectors, then
    remove what it no longer lists."""
    from .private import private_dir, private_file

    private_dir(folder(root))
    meta = dict(meta, format=FORMAT)
    tmp = folder(root) / (META + ".tmp")
    tmp.write_text(json.dumps(meta, indent=1))
    private_file(tmp)
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, folder(root) / META)
    clean(root, meta)


def clean(root, meta: dict | None) -> None:
    """Remove the parts ``meta`` does not list (an interrupted run's, a
    replaced model's); with no meta, every part."""
    listed = {p["file"] for p in (meta or {}).get("parts", [])}
    try:
        names = os.listdir(folder(root))
    except OSError:
        return
    for name in names:
        if name.startswith("part-") and name not in listed:
            try:
                os.unlink(folder(root) / name)
            except OSError:
                pass


def drop(root) -> None:
    """No vectors: the meta first (so nothing half-removed is ever loaded), then the parts."""
    try:
        os.unlink(folder(root) / META)
    except OSError:
        pass
    clean(root, None)
