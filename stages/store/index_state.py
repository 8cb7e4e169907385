"""What the catalog knows about the index, read at the start of a run and
written back in its one commit transaction.

The tables (catalog.sql): ``manifest`` (one row per transcript read: size,
mtime, prefix hash, where reading stopped, counts), ``file_sessions`` (what
each transcript said about each of its sessions, from which the sessions
dataset is rebuilt), ``session_ords`` (the small integer postings carry for a
session), ``meta`` (the next record id, the generation) and ``generation``
(the live parts). An index run holds these in memory while it reads and hands
them back here; no other module writes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

MANIFEST_COLS = ("path", "harness", "size", "mtime_ns", "prefix_hash", "safe_offset", "content_version", "records",
                 "malformed", "clipped", "redactions", "redaction_total", "error", "indexed_at", "faults", "edge_hash")
FILE_SESSION_COLS = (
    "path", "session_key", "harness", "session_id", "project", "cwd", "branch", "title", "title_rank",
    "last_prompt", "kind", "parent", "agent", "started", "updated", "n_user", "n_assistant", "n_tool_output",
    "n_command", "n_files", "n_edit", "n_summary", "words", "first_user", "first_assistant", "first_output",
    "touched", "touched_counts", "max_seq", "decision", "decision_ts", "gave_up", "project_root",
    "fingerprint", "gone_at", "from_machine", "orig_id", "named",
)
INDEX_DATASETS = ("records", "postings", "docs", "deletes", "vocab")  # what a rebuild replaces (sessions: every run)


@dataclass
class IndexState:
    manifest: dict[str, dict]  # path → manifest row
    file_sessions: dict[str, dict[str, dict]]  # path → session_key → row
    ords: dict[str, int]  # session_key → ordinal
    next_record_id: int
    generation: int  # the live one
    parts: dict[str, tuple]  # file → (dataset, file, rows, bytes, session_keys, min_record_id, max_record_id)


def load(con) -> IndexState:
    """The index's state; ``con`` has the catalog as its default database."""
    cols = [d[0] for d in con.execute("SELECT * FROM manifest LIMIT 0").description]
    manifest = {r[0]: dict(zip(cols, r)) for r in con.execute("SELECT * FROM manifest").fetchall()}
    fcols = [d[0] for d in con.execute("SELECT * FROM file_sessions LIMIT 0").description]
    file_sessions: dict[str, dict[str, dict]] = {}
    for r in con.execute("SELECT * FROM file_sessions").fetchall():
        row = dict(zip(fcols, r))
        file_sessions.setdefault(row["path"], {})[row["session_key"]] = row
    ords = dict(con.execute("SELECT session_key, ord FROM session_ords").fetchall())
    meta = dict(con.execute("SELECT key, value FROM meta").fetchall())
    parts = {r[1]: r for r in con.execute(
        "SELECT dataset, file, rows, bytes, session_keys, min_record_id, max_record_id FROM generation").fetchall()}
    return IndexState(manifest, file_sessions, ords, int(meta.get("next_record_id", 0)),
                      int(meta.get("generation", 0)), parts)


class SessionOrdinals:
    """The small integer postings carry for each session: known ones from the
    catalog, new ones numbered on first sight and committed with the run."""

    def __init__(self, known: dict[str, int]):
        self.known = known
        self.new: list[tuple[str, int]] = []

    def of(self, key: str) -> int:
        o = self.known.get(key)
        if o is None:
            o = self.known[key] = len(self.known)
            self.new.append((key, o))
        return o


@dataclass
class RunCommit:
    """One index run's changes to the catalog, applied in one transaction."""

    generation: int
    next_record_id: int
    rebuild: bool = False
    dropped: list[str] = field(default_factory=list)  # live parts this run replaces
    new_parts: list[tuple[str, str, int]] = field(default_factory=list)  # (dataset, rel, rows)
    facts: dict[str, tuple] = field(default_factory=dict)  # Store.part_facts of new_parts
    sizes: dict[str, int] = field(default_factory=dict)  # sound live parts whose size the catalog learns now
    removed: list[str] = field(default_factory=list)  # transcripts taken out (pruned: gone from disk)
    # (path, when: naive UTC) of transcripts gone from disk: marked, their sessions kept
    gone: list[tuple] = field(default_factory=list)
    touched: set[str] = field(default_factory=set)  # transcripts whose file_sessions rows are replaced
    manifest_rows: list[list] = field(default_factory=list)  # in MANIFEST_COLS order
    file_session_rows: list[list] = field(default_factory=list)  # in FILE_SESSION_COLS order
    new_ords: list[tuple[str, int]] = field(default_factory=list)


def commit(con, store, change: RunCommit, before_commit=None) -> None:
    """Apply ``change``; ``con`` has the catalog as its default database.
    ``before_commit``: called inside the transaction just before COMMIT (crash tests)."""
    con.execute("BEGIN TRANSACTION")
    if change.rebuild:
        con.execute(f"DELETE FROM generation WHERE dataset IN {INDEX_DATASETS}")
        con.execute("DELETE FROM manifest")
        con.execute("DELETE FROM file_sessions")
    elif change.dropped:
        con.execute("DELETE FROM generation WHERE file IN (SELECT unnest(?))", [change.dropped])
    con.execute("DELETE FROM generation WHERE dataset = 'sessions'")  # every run writes the sessions part whole
    store.add_parts(con, change.new_parts, change.generation, change.facts)
    record_sizes(con, change.sizes)
    for path in change.removed:
        con.execute("DELETE FROM manifest WHERE path = ?", [path])
    if change.touched:
        con.execute("DELETE FROM file_sessions WHERE path IN (SELECT unnest(?))", [sorted(change.touched)])
    if change.manifest_rows:
        con.execute("DELETE FROM manifest WHERE path IN (SELECT unnest(?))", [[r[0] for r in change.manifest_rows]])
    insert_rows(con, "manifest", MANIFEST_COLS, change.manifest_rows)
    insert_rows(con, "file_sessions", FILE_SESSION_COLS, change.file_session_rows)
    insert_rows(con, "session_ords", ("session_key", "ord"), change.new_ords, "INSERT OR IGNORE")
    for path, when in change.gone:  # after the rows: a rebuild re-inserts a gone transcript's row unmarked
        con.execute("UPDATE manifest SET gone_at = ? WHERE path = ?", [when, path])
    con.execute("INSERT OR REPLACE INTO meta VALUES ('next_record_id', ?), ('generation', ?)",
                [str(change.next_record_id), str(change.generation)])
    # which store this is: record ids are its own (a store made anew numbers from
    # zero again), so what is keyed by them beside it (the vectors) is stamped with it
    import uuid

    con.execute("INSERT OR IGNORE INTO meta VALUES ('store_id', ?)", [uuid.uuid4().hex])
    if before_commit is not None:
        before_commit()
    con.execute("COMMIT")


def record_sizes(con, sizes: dict[str, int]) -> None:
    """The sizes of sound live parts a catalog from before sizes were kept did not record."""
    for rel, size in sizes.items():
        con.execute("UPDATE generation SET bytes = ? WHERE file = ?", [size, rel])


def insert_rows(con, table: str, columns: tuple[str, ...], rows: list, verb: str = "INSERT") -> None:
    """Rows into ``table``, one statement per ``write.LOAD_ROWS`` rows with each
    column bound as one list and unnested side by side: DuckDB's executemany
    runs a statement per row, and registering Arrow would need the full duckdb package."""
    from deja.stages.store.write import LOAD_ROWS

    if not rows:
        return
    sql = f"{verb} INTO {table} ({', '.join(columns)}) SELECT " + ", ".join(["unnest(?)"] * len(columns))
    for i in range(0, len(rows), LOAD_ROWS):
        con.execute(sql, [list(c) for c in zip(*rows[i : i + LOAD_ROWS])])
