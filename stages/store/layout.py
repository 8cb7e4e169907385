"""The store's layout: where each dataset's parts live, their columns, their
sort orders and row-group sizes, and how tokens map to postings buckets.

Every writer (pyarrow for a big run's Arrow tables, DuckDB's COPY for
everything expressed as a query) and every reader takes these from here, so
one layout holds whichever path wrote a part. Imports nothing heavy: the
search and hook paths read it.
"""

from __future__ import annotations

import zlib

DATASETS = ("records", "postings", "docs", "sessions", "deletes", "vocab")

COMPRESSION = "zstd"
# pyarrow's zstd default is level 1, DuckDB's 3: at 3 the records' text takes
# a sixth less room, for a few hundredths of a second per 100 MB written.
COMPRESSION_LEVEL = 3
# Small row groups in postings: a query for one token reads one or two of them.
POSTINGS_ROW_GROUP = 16_384
# Records cluster by role, then id: the work roles the hooks look up (a
# command's past runs) sit in a few small row groups apart from the speech
# around them, and within a role an id lookup still skips row groups.
RECORDS_ROW_GROUP = 2_048
# ... and at most this much text: a snippet is read by decompressing its
# record's row group, and 2,048 tool outputs or long answers are megabytes
# (warm searches: text profile 58 -> 44 ms, the default's tool-heavy queries
# 13-16 -> 8 ms; records 2-9 % larger). A longer record is a row group alone;
# DuckDB's COPY (a small run, a small merge) closes a row group at the record
# that passes the size.
RECORDS_GROUP_BYTES = 512 * 1024
# Vocabulary lookups are by stem (a word's own stem finds it and its forms):
# sorted by stem in small row groups, a lookup reads a few of them.
VOCAB_ROW_GROUP = 4_096
# docs: a search reads every row once (the ranking's table of what each record
# is); large row groups compress the sorted ids best.
DOCS_ROW_GROUP = 131_072
NO_MONTH = "none"
ALL_BUCKETS = "all"  # the bucket folder of a part that holds every bucket's tokens

# Columns of free text: written without min/max statistics, which would put
# whole messages, uncompressed, in every part's footer and prune nothing
# (stages/store/footer.py).
FREE_TEXT = frozenset(("text", "title", "last_prompt", "decision"))


def stats_columns(names) -> list[str]:
    """The columns a part keeps statistics for: all but the free text."""
    return [n for n in names if n not in FREE_TEXT]


# Record ids climb within each run of a part's sort order (a token's postings,
# a role's records): stored as deltas they take half the bytes of a dictionary
# or plain page, and every Parquet reader decodes them.
DELTA_COLUMNS = frozenset(("record_id",))
# The vocabulary's words, each once and sorted by stem, share their
# neighbours' prefixes: stored as prefix lengths and suffixes they take a third
# less than a dictionary of all-distinct words (which spills to plain pages).
# A bucket's postings repeat each token once per record: there a dictionary
# is as small, and a search's filter on the token reads it three times
# faster (it is tested once per dictionary entry, not once per row).
DELTA_STRINGS = frozenset(("token", "stem"))


def writer_options(names) -> dict:
    """pyarrow ParquetWriter options shared by every pyarrow writer of parts."""
    words = "stem" in names  # the vocabulary: one row per word
    delta_strings = DELTA_STRINGS if words else frozenset()
    return {
        "compression": COMPRESSION,
        "compression_level": COMPRESSION_LEVEL,
        "use_dictionary": [n for n in names if n not in DELTA_COLUMNS and n not in delta_strings],
        "column_encoding": {**{n: "DELTA_BINARY_PACKED" for n in names if n in DELTA_COLUMNS},
                            **{n: "DELTA_BYTE_ARRAY" for n in names if n in delta_strings}},
        "write_statistics": stats_columns(names),
    }


# Sort orders, one per dataset, whichever writer runs.
POSTINGS_ORDER = "token, record_id"
RECORDS_ORDER = "role, record_id"
VOCAB_ORDER = "stem, token"
DOCS_ORDER = "record_id"
# The same orders as (column, type) pairs, for merges that cut by key (stages/store/merge.py).
POSTINGS_KEYS = (("token", "VARCHAR"), ("record_id", "BIGINT"))
RECORDS_KEYS = (("role", "VARCHAR"), ("record_id", "BIGINT"))
VOCAB_KEYS = (("stem", "VARCHAR"), ("token", "VARCHAR"))
DOCS_KEYS = (("record_id", "BIGINT"),)

# Column types as DuckDB reads them back, for parts written from Python lists.
# The pyarrow side: normalize.record_schema and run's postings/vocab tables.
RECORD_TYPES = (
    ("record_id", "BIGINT"), ("session_key", "VARCHAR"), ("session_id", "VARCHAR"), ("project", "VARCHAR"),
    ("seq", "INTEGER"), ("role", "VARCHAR"), ("text", "VARCHAR"), ("ts", "TIMESTAMPTZ"), ("tool", "VARCHAR"),
    ("exit_code", "SMALLINT"), ("is_error", "BOOLEAN"), ("source_path", "VARCHAR"), ("byte_offset", "BIGINT"),
    ("project_root", "VARCHAR"),
)
# A posting is a token's count in one record; what the ranking needs of the
# record (its session, role and length in tokens) is said once per record in
# docs, not repeated on each of its tokens' postings, where it took half of
# the postings' bytes.
POSTING_TYPES = (("token", "VARCHAR"), ("record_id", "BIGINT"), ("tf", "INTEGER"))
DOC_TYPES = (("record_id", "BIGINT"), ("session", "INTEGER"), ("role", "TINYINT"), ("rec_len", "INTEGER"))
VOCAB_TYPES = (("token", "VARCHAR"), ("stem", "VARCHAR"), ("n", "BIGINT"))


def records_rel(harness: str, month: str, name: str) -> str:
    return f"records/harness={harness}/month={month}/{name}"


def postings_rel(bucket: int | str, name: str) -> str:
    folder = bucket if isinstance(bucket, str) else f"{bucket:02d}"
    return f"postings/bucket={folder}/{name}"


# what a session's rows are counted by (normalize.COUNTS)
SESSION_COUNTS = ("n_user", "n_assistant", "n_tool_output", "n_command", "n_files", "n_edit", "n_summary", "words")
# The dataset's columns as DuckDB writes them (write.load_lists): one
# small file rewritten by every run, big or small, so one writer serves both.
# started/updated arrive as epoch milliseconds.
SESSION_TYPES = (
    ("session_key", "VARCHAR"),
    ("ord", "INTEGER"),
    ("harness", "VARCHAR"),
    ("session_id", "VARCHAR"),
    ("project", "VARCHAR"),
    ("cwd", "VARCHAR"),
    ("path", "VARCHAR"),
    ("branch", "VARCHAR"),
    ("started", "TIMESTAMPTZ"),
    ("updated", "TIMESTAMPTZ"),
    ("title", "VARCHAR"),
    ("agent_title", "BOOLEAN"),
    ("last_prompt", "VARCHAR"),
    ("messages", "BIGINT"),
    *[(c, "BIGINT") for c in SESSION_COUNTS],
    ("touched", "VARCHAR[]"),
    ("kind", "VARCHAR"),
    ("parent", "VARCHAR"),
    ("agent", "VARCHAR"),
    ("origin", "VARCHAR"),
    ("from_machine", "VARCHAR"),
    ("decision", "VARCHAR"),
    ("gave_up", "BOOLEAN"),
    ("project_root", "VARCHAR"),  # the project's identity; ``project`` is its unique short name
    # when deja found every transcript of the session gone from disk (the agent deleted
    # it); NULL while one is there. The session is kept until `deja index --prune-gone`.
    ("gone_at", "TIMESTAMPTZ"),
    ("orig_id", "VARCHAR"),  # a synced-in session's id on the machine it came from (from_machine)
)
# Sessions columns added after parts were written without them: NULL in those parts'
# rows until a run rewrites the part (read.py's view supplies them).
LATE_SESSION_COLUMNS = (("gone_at", "TIMESTAMPTZ"), ("orig_id", "VARCHAR"))


# ---------------------------------------------------------------------------
# postings buckets: a query reads only the buckets of its tokens

N_BUCKETS = 64


def bucket_of(token: str, n_buckets: int = N_BUCKETS) -> int:
    """The postings bucket of a token; ``bucket_column`` computes the same."""
    return zlib.crc32(token.encode("utf-8")) % n_buckets


def bucket_column(tokens, n_buckets: int = N_BUCKETS):
    """``bucket_of`` of every value of an Arrow string array, as int32 (null stays null).

    The hash runs once per distinct token (a batch repeats its vocabulary many
    times over) and is spread back by a vectorised take.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(tokens, pa.ChunkedArray):
        tokens = tokens.combine_chunks()
    if not (pa.types.is_string(tokens.type) or pa.types.is_large_string(tokens.type)):
        tokens = tokens.cast(pa.string())
    encoded = pc.dictionary_encode(tokens)
    buckets = pa.array(
        [zlib.crc32(t.encode("utf-8")) % n_buckets for t in encoded.dictionary.to_pylist()],
        type=pa.int32(),
    )
    return pc.take(buckets, encoded.indices)
