-- blame: records that name a file's basename ($base), per session the newest
-- $per_session of them, with the session filters of blame (--harness,
-- --project, --since; $project_rule is queries/project_match). The mention is verified (path component or standalone
-- word) in Python; strpos only narrows the scan.
WITH s AS (
    SELECT session_key, ord
    FROM sessions
    WHERE ($harness IS NULL OR harness = $harness)
      AND $project_rule
      AND ($since IS NULL OR epoch_ms(updated) >= $since)
),
hits AS (
    SELECT s.ord, r.role, r.text, epoch_ms(r.ts) AS ts,
           row_number() OVER (PARTITION BY s.ord ORDER BY r.ts DESC, r.seq DESC) AS rn
    FROM records r
    JOIN s USING (session_key)
    WHERE strpos(r.text, $base) > 0
      AND r.record_id NOT IN (SELECT record_id FROM deletes)
)
SELECT ord, role, text, ts FROM hits WHERE rn <= $per_session
