-- The catalog: small state beside the Parquet datasets. Public for analysts;
-- bump meta.schema_version when a column changes meaning.

CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR);

-- Which Parquet files form the live store. A run commits by rewriting rows
-- here in one transaction; anything on disk not listed is not part of the store.
CREATE TABLE IF NOT EXISTS generation (
    dataset VARCHAR NOT NULL,      -- records | postings | sessions
    file    VARCHAR PRIMARY KEY,   -- path relative to the store root
    gen     BIGINT NOT NULL,       -- the run that wrote it
    rows    BIGINT,
    session_keys VARCHAR[]         -- records parts: the sessions whose records it holds
);
-- Catalogs from before session_keys: NULL there means "any session".
ALTER TABLE generation ADD COLUMN IF NOT EXISTS session_keys VARCHAR[];
-- The file's size when written: a part that no longer has it is damaged (torn by a
-- crash, a full disk), and every index run notices it with a stat. NULL: not recorded yet.
ALTER TABLE generation ADD COLUMN IF NOT EXISTS bytes BIGINT;
-- postings parts: the record ids they cover, so a damaged one names the records to re-read
ALTER TABLE generation ADD COLUMN IF NOT EXISTS min_record_id BIGINT;
ALTER TABLE generation ADD COLUMN IF NOT EXISTS max_record_id BIGINT;

-- One row per source file: what was read and where the next run resumes.
CREATE TABLE IF NOT EXISTS manifest (
    path            VARCHAR PRIMARY KEY,
    harness         VARCHAR NOT NULL,
    size            BIGINT,
    mtime_ns        BIGINT,
    prefix_hash     VARCHAR,       -- xxh64 of bytes [0, safe_offset): proves an append is an append
    safe_offset     BIGINT,        -- end of the last complete line read
    content_version INTEGER,
    records         BIGINT,
    malformed       BIGINT,
    clipped         BIGINT,
    redactions      VARCHAR,       -- JSON {kind: count} over everything read from this file
    redaction_total BIGINT,
    error           VARCHAR,
    indexed_at      TIMESTAMP
);
-- The first few malformed lines and out-of-range values of each file ("line N: what"),
-- for `deja doctor`; malformed counts them all.
ALTER TABLE manifest ADD COLUMN IF NOT EXISTS faults VARCHAR[];
-- xxh64 of the size and the first and last 16 KiB: a rewrite that keeps size and mtime is read again.
ALTER TABLE manifest ADD COLUMN IF NOT EXISTS edge_hash VARCHAR;
-- When an index run found the file gone from disk (the agent's own cleanup, a
-- deleted folder): its sessions are kept, marked, until `deja index --prune-gone`.
ALTER TABLE manifest ADD COLUMN IF NOT EXISTS gone_at TIMESTAMP;

-- What each file says about each session; the sessions dataset is derived from it.
CREATE TABLE IF NOT EXISTS file_sessions (
    path            VARCHAR NOT NULL,
    session_key     VARCHAR NOT NULL,
    harness         VARCHAR, session_id VARCHAR, project VARCHAR, cwd VARCHAR, branch VARCHAR,
    title           VARCHAR, title_rank INTEGER, last_prompt VARCHAR,
    kind            VARCHAR, parent VARCHAR, agent VARCHAR,
    started         BIGINT, updated BIGINT,          -- epoch ms
    n_user BIGINT, n_assistant BIGINT, n_tool_output BIGINT, n_command BIGINT,
    n_files BIGINT, n_edit BIGINT, n_summary BIGINT, words BIGINT,
    first_user      VARCHAR[],     -- first title-worthy user turns (title derivation)
    first_assistant VARCHAR, first_output VARCHAR,
    touched         VARCHAR[],     -- paths, most worked-on first
    touched_counts  INTEGER[],
    max_seq         INTEGER,
    decision        VARCHAR,       -- the latest decision line of the agent's turns
    decision_ts     BIGINT,
    gave_up         BOOLEAN,       -- the agent reported reverting/abandoning what it did
    project_root    VARCHAR,       -- the project's identity (stages/sources/projects.py)
    PRIMARY KEY (path, session_key)
);
ALTER TABLE file_sessions ADD COLUMN IF NOT EXISTS project_root VARCHAR;
-- A database's sessions change one at a time: xxh64 of what the last read said of
-- the session (pipeline/ingest.py fingerprints), so a changed store writes only
-- the sessions that changed; and when the database, still on disk, stopped
-- holding the session (kept, marked, like a transcript gone from disk).
ALTER TABLE file_sessions ADD COLUMN IF NOT EXISTS fingerprint VARCHAR;
ALTER TABLE file_sessions ADD COLUMN IF NOT EXISTS gone_at TIMESTAMP;
-- A session synced in from another machine (deja sync import, the imported reader):
-- the name that machine gave itself, and the session's id there.
ALTER TABLE file_sessions ADD COLUMN IF NOT EXISTS from_machine VARCHAR;
ALTER TABLE file_sessions ADD COLUMN IF NOT EXISTS orig_id VARCHAR;
-- The names a file gave a session that its records hold as summaries (a title, a
-- rename: normalize.names), so an append that sees the name again writes it once.
ALTER TABLE file_sessions ADD COLUMN IF NOT EXISTS named VARCHAR[];

-- Stable small integers for sessions; postings carry them.
CREATE TABLE IF NOT EXISTS session_ords (session_key VARCHAR PRIMARY KEY, ord INTEGER NOT NULL);

-- Compaction-recovery packets (issue: hooks). Preserved by every rebuild.
CREATE TABLE IF NOT EXISTS packets (
    session_id VARCHAR, workspace VARCHAR, harness VARCHAR, created TIMESTAMP,
    delivered BOOLEAN DEFAULT false, body VARCHAR,
    PRIMARY KEY (session_id, workspace)
);
-- Sessions a person told us to forget; a rebuild must not bring them back.
CREATE TABLE IF NOT EXISTS tombstones (session_key VARCHAR PRIMARY KEY, project VARCHAR, created TIMESTAMP, reason VARCHAR);
-- What hooks and recall served: ids and counts, never text.
CREATE TABLE IF NOT EXISTS usage (t TIMESTAMP, kind VARCHAR, bytes BIGINT, sessions VARCHAR[], empty BOOLEAN);
CREATE TABLE IF NOT EXISTS peers (host VARCHAR PRIMARY KEY, alias VARCHAR, added TIMESTAMP);
CREATE TABLE IF NOT EXISTS watermarks (peer VARCHAR, source VARCHAR, ts TIMESTAMP, PRIMARY KEY (peer, source));
-- Lifecycle states a person gave sessions with `deja promote` (corrections append; the latest row wins).
CREATE TABLE IF NOT EXISTS lifecycle (session_key VARCHAR, state VARCHAR, note VARCHAR, "at" TIMESTAMP);  -- "at" is a DuckDB keyword: quote it
