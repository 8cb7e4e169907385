"""Taking records out of the live store: the records of replaced or removed
transcripts (by ``source_path``), or of sessions a person told deja to forget
(by ``session_key``).

Each live records part that holds such a record is rewritten without it, in
bounded memory (merge.copy_sorted). Postings of purged records stay until
compaction; a ``deletes`` part lists their ids so search ignores them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from . import layout, merge, write


_SEP = "\x1f"  # between a path and a session key: in neither


@dataclass
class Purged:
    new_parts: list[tuple[str, str, int]] = field(default_factory=list)  # (dataset, rel, rows) to commit
    dropped: list[str] = field(default_factory=list)  # live records parts they replace
    deletes: list[str] = field(default_factory=list)  # the dead record ids part, if any


def purge_records(con, store, live_records: list[str], purge: set[str], column: str, gen: int,
                  chunk: int, pairs: set[tuple[str, str]] = frozenset()) -> Purged:
    """Rewrite ``live_records`` (absolute paths) without the records whose
    ``column`` is in ``purge``, or whose (source_path, session_key) is in
    ``pairs`` (the changed sessions of a database); parts are named for
    generation ``gen``."""
    out = Purged()
    if (not purge and not pairs) or not live_records:
        return out
    root = store.root
    write.load_lists(con, "purge", (("p", "VARCHAR"),), {"p": sorted(purge)})
    write.load_lists(con, "purge_pairs", (("p", "VARCHAR"),), {"p": sorted(p + _SEP + k for p, k in pairs)})
    hit = (f"({column} IN (SELECT p FROM purge) OR "
           f"concat(source_path, chr({ord(_SEP)}), session_key) IN (SELECT p FROM purge_pairs))")
    try:
        rows = con.execute(
            "SELECT DISTINCT filename FROM read_parquet(?, filename=true, hive_partitioning=false) "
            f"WHERE {hit}",
            [live_records],
        ).fetchall()
        affected = sorted(r[0] for r in rows)
        if not affected:
            return out
        dead_rel = f"deletes/{store.new_part_name(gen)}"
        dead = write.copy_query(
            con, f"SELECT record_id FROM read_parquet(?, hive_partitioning=false) WHERE {hit}",
            [affected], root, dead_rel,
        )
        if dead:
            out.new_parts.append(("deletes", dead_rel, dead))
            out.deletes.append(dead_rel)
        for abs_path in affected:
            rel = Path(abs_path).relative_to(root).as_posix()
            new_rel = str(Path(rel).parent / store.new_part_name(gen))
            n = merge.copy_sorted(
                con, f"SELECT * FROM read_parquet($files, hive_partitioning=false) "
                f"WHERE $range AND NOT {hit}",
                [abs_path], layout.RECORDS_KEYS, root, new_rel, layout.RECORDS_ROW_GROUP, chunk, "role",
            )
            if n:
                out.new_parts.append(("records", new_rel, n))
        out.dropped = [Path(a).relative_to(root).as_posix() for a in affected]
        return out
    finally:
        con.execute("DROP TABLE purge")
        con.execute("DROP TABLE purge_pairs")
