"""What the store derives from its own parts, for the repair of damaged ones
(pipeline/heal.py): the transcripts behind a range of record ids, the dead
record ids of sessions or of postings whose record no part holds, and the
vocabulary counted from the live postings.

Each writer takes the live parts as absolute paths and writes one part named
for generation ``gen``, returning (dataset, rel, rows), or None when it holds
no rows.
"""

from __future__ import annotations

from . import layout, write

Part = tuple[str, str, int]
_NO_IDS = "SELECT NULL::BIGINT AS record_id WHERE false"


def sources_of(con, records: list[str], ranges: list[tuple]) -> set[str]:
    """The transcripts of the ``records`` rows whose ids fall in ``ranges``
    (a range with an unknown end: every record)."""
    if not records:
        return set()
    if any(lo is None or hi is None for lo, hi in ranges):
        where, params = "true", [records]
    else:
        where = " OR ".join("record_id BETWEEN ? AND ?" for _ in ranges)
        params = [records, *[v for r in ranges for v in r]]
    rows = con.execute(
        f"SELECT DISTINCT source_path FROM read_parquet(?, hive_partitioning=false) WHERE {where}", params
    ).fetchall()
    return {r[0] for r in rows}


def dead_of_sessions(con, store, gen: int, docs: list[str], ords: list[int]) -> Part | None:
    """A deletes part of every record (and so every posting) of the sessions numbered ``ords``."""
    return _write(con, store, gen, "deletes", "SELECT DISTINCT record_id FROM read_parquet(?, hive_partitioning=false) "
                  "WHERE session IN (SELECT unnest(?))", [docs, ords])


def dead_without_records(con, store, gen: int, postings: list[str], records: list[str]) -> Part | None:
    """A deletes part of every posting whose record no part of ``records`` holds."""
    held = "SELECT record_id FROM read_parquet(?, hive_partitioning=false)" if records else _NO_IDS
    return _write(con, store, gen, "deletes", "SELECT DISTINCT record_id FROM read_parquet(?, hive_partitioning=false) "
                  f"EXCEPT {held}", [postings] + ([records] if records else []))


def vocab_from_postings(con, store, gen: int, postings: list[str], deletes: list[str], stem_many) -> Part | None:
    """The vocabulary part of the live postings (those ``deletes`` do not list);
    ``stem_many`` stems a list of tokens (stages/stems.py)."""
    dead = "SELECT record_id FROM read_parquet(?)" if deletes else _NO_IDS
    counts = con.execute(
        "SELECT token, count(*) FROM read_parquet(?, hive_partitioning=false) "
        f"WHERE record_id NOT IN ({dead}) GROUP BY token", [postings] + ([deletes] if deletes else [])
    ).fetchall()
    if not counts:
        return None
    tokens = [t for t, _ in counts]
    write.load_lists(con, "heal_vocab", layout.VOCAB_TYPES,
                     {"token": tokens, "stem": stem_many(tokens), "n": [n for _, n in counts]})
    try:
        return _write(con, store, gen, "vocab", f"SELECT * FROM heal_vocab ORDER BY {layout.VOCAB_ORDER}", None,
                      layout.VOCAB_ROW_GROUP)
    finally:
        con.execute("DROP TABLE heal_vocab")


def _write(con, store, gen: int, dataset: str, sql: str, params, row_group: int = 65_536) -> Part | None:
    rel = f"{dataset}/{store.new_part_name(gen)}"
    n = write.copy_query(con, sql, params, store.root, rel, row_group)
    return (dataset, rel, n) if n else None


def kept_records(con, records: list[str], deletes: list[str], path: str, columns: tuple[str, ...]) -> dict[str, list]:
    """The live records of transcript ``path`` as column lists (``ts`` in epoch ms),
    in their order: what a rebuild carries over for a transcript no longer on disk.
    A column the parts predate comes back as None."""
    if not records:
        return {c: [] for c in columns}
    have = {d[0] for d in con.execute("SELECT * FROM read_parquet(?, hive_partitioning=false, union_by_name=true) "
                                      "LIMIT 0", [records]).description}
    pick = ", ".join(("epoch_ms(ts) AS ts" if c == "ts" else c) if c in have else f"NULL AS {c}" for c in columns)
    dead = "SELECT record_id FROM read_parquet(?)" if deletes else _NO_IDS
    rows = con.execute(
        f"SELECT {pick} FROM read_parquet(?, hive_partitioning=false, union_by_name=true) "
        f"WHERE source_path = ? AND record_id NOT IN ({dead}) ORDER BY session_key, seq, record_id",
        [records, path, *([deletes] if deletes else [])],
    ).fetchall()
    return {c: [r[i] for r in rows] for i, c in enumerate(columns)}
