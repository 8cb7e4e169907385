-- For the served sessions: their records holding the most query groups, for
-- snippets; among equals what was said before what a tool printed, then the
-- newest.
WITH g AS (
    SELECT unnest($tokens) AS token, unnest($gids) AS gid
),
d AS (
    SELECT record_id, session, role FROM docs
    WHERE session IN (SELECT unnest($ords))
      AND role IN (SELECT unnest($roles))
      AND record_id NOT IN (SELECT record_id FROM deletes)
),
p AS (
    SELECT g.gid, p.record_id, d.session, d.role
    FROM read_parquet($files) p
    JOIN g ON p.token = g.token
    JOIN d ON p.record_id = d.record_id
),
ranked AS (
    SELECT session, record_id, count(DISTINCT gid) AS ng,
           row_number() OVER (PARTITION BY session ORDER BY count(DISTINCT gid) DESC, any_value(role) = 2,
                                                   record_id DESC) AS rk
    FROM p GROUP BY session, record_id
)
SELECT session, record_id, ng FROM ranked WHERE rk <= $per_session ORDER BY session, rk
