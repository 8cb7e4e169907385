"""`deja doctor --deep`: does the store still say what its sources say?

Two checks a plain doctor does not make, because they read: a sample of the
transcripts is read again, through the same stages an index run uses, and
what comes out is compared with what the store holds of each (how many
records, and their roles and texts in order); and a sample of the
vocabulary's words is looked up in the postings, whose records must all be
in the store's documents. Any difference is drift: the report says which
file or word, and the command exits 1 (cli-contract §2.4). `deja index
--rebuild` mends what a drift shows.

Only what an index run would leave as it is gets compared: a transcript
unchanged on disk since it was read (same size and mtime, no read error),
not a database (read by session, not whole) and not gone.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

FILES = 12  # transcripts read again
WORDS = 48  # vocabulary words whose postings are resolved


def deep_report(env: Mapping[str, str]) -> dict:
    """``{files, drift: [{path, stored, read, why}], words, dangling}``, or
    ``{state: "no index"}`` when there is nothing to check."""
    from deja.pipeline import manifest as mf
    from deja.pipeline.access import open_store
    from deja.pipeline.errors import Fail

    try:
        live = open_store(env)
    except Fail as exc:
        return {"state": str(exc)}
    try:
        rows = _manifest_rows(live)
        picked = _sample(rows, mf)
        drift = [d for d in (_compare(live, env, row) for row in picked) if d is not None]
        words, dangling = _postings(live)
    finally:
        live.close()
    return {"state": "drift" if drift or dangling else "ok", "files": len(picked), "drift": drift,
            "words": words, "dangling": dangling}


def _manifest_rows(live) -> list[dict]:
    from deja.stages.store.read import attach_catalog
    from deja.stages.store.catalog import Store

    con = live.con
    attach_catalog(con, Store(live.root), retries=3)
    try:
        cols = ["path", "harness", "size", "mtime_ns", "error", "records", "gone_at"]
        got = con.execute(f"SELECT {', '.join(cols)} FROM cat.manifest ORDER BY path").fetchall()
    finally:
        con.execute("DETACH cat")
    return [dict(zip(cols, r)) for r in got]


def _sample(rows: list[dict], mf) -> list[dict]:
    """Up to FILES transcripts spread over the manifest (every k-th, so each
    harness with many files is represented), unchanged on disk since read."""
    import os

    fit = []
    for r in rows:
        if r["error"] or r["gone_at"] or not r["records"] or mf.is_database(r["path"]) \
                or r["path"].startswith(mf.REMOTE_PREFIX):
            continue
        try:
            st = os.stat(r["path"])
        except OSError:
            continue
        if st.st_size == r["size"] and st.st_mtime_ns == r["mtime_ns"]:
            fit.append(r)
    step = max(1, len(fit) // FILES)
    return fit[::step][:FILES]


def _digest(pairs) -> str:
    h = hashlib.blake2b(digest_size=8)
    for role, text in pairs:
        h.update(f"{role}\0{text}\1".encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def _compare(live, env: Mapping[str, str], row: dict) -> dict | None:
    """None when a new read of the file gives the records the store holds."""
    from deja.pipeline import manifest as mf
    from deja.pipeline.ingest import process_file
    from deja.stages.policy import drop_filter

    path = row["path"]
    out = process_file(mf.Action(mf.NEW, path, row["harness"], 0, row["size"], row["mtime_ns"]), {})
    if out.error or out.cols is None:
        return {"path": path, "stored": row["records"], "read": 0, "why": f"read again: {out.error or 'nothing'}"}
    cols = out.cols
    drop_filter(env, live.con).apply(cols, dict(out.meta))
    # both in the store's order: by session, then record number
    order = sorted(range(len(cols["seq"])), key=lambda i: (cols["session_key"][i], cols["seq"][i]))
    fresh = [(cols["role"][i], cols["text"][i]) for i in order]
    stored = live.con.execute(
        f"SELECT role, text FROM {live.records_source()} WHERE source_path = ? "
        "AND record_id NOT IN (SELECT record_id FROM deletes) ORDER BY session_key, seq", [path]).fetchall()
    if len(stored) != len(fresh):
        return {"path": path, "stored": len(stored), "read": len(fresh), "why": "another number of records"}
    if _digest(stored) != _digest(fresh):
        return {"path": path, "stored": len(stored), "read": len(fresh), "why": "records that differ"}
    return None


def _postings(live) -> tuple[int, list[str]]:
    """(words looked up, the words whose postings name a record the documents lack)."""
    from deja.stages.store.layout import bucket_of

    if not (live.has("vocab") and live.has("docs")):
        return 0, []
    con = live.con
    total = con.execute("SELECT count(*) FROM vocab").fetchone()[0]
    if not total:
        return 0, []
    step = max(1, total // WORDS)
    words = [w for (w,) in con.execute(
        f"SELECT token FROM (SELECT token, row_number() OVER (ORDER BY token) AS i FROM vocab) "
        f"WHERE i % {step} = 0 ORDER BY token LIMIT {WORDS}").fetchall()]
    dangling = []
    for w in words:
        files = live.postings_for_buckets({bucket_of(w)})
        if not files:
            dangling.append(w)
            continue
        missing = con.execute(
            "SELECT count(*) FROM read_parquet(?) p WHERE p.token = ? "
            "AND p.record_id NOT IN (SELECT record_id FROM docs)", [files, w]).fetchone()[0]
        if missing:
            dangling.append(w)
    return len(words), dangling
