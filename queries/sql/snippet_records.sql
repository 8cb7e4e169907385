-- The records that matched every term, for the served sessions' snippets, newest first.
WITH p AS (
    SELECT token, record_id, session
    FROM read_parquet($files)
    WHERE token IN (SELECT unnest($terms))
      AND session IN (SELECT unnest($ords))
      AND role IN (SELECT unnest($roles))
),
ids AS (
    SELECT record_id, any_value(session) AS session
    FROM p GROUP BY record_id HAVING count(DISTINCT token) = $nterms
)
SELECT ids.session, r.text
FROM records r
JOIN ids ON r.record_id = ids.record_id
WHERE r.record_id NOT IN (SELECT record_id FROM deletes)
ORDER BY ids.session, r.role = 'user' DESC, r.ts DESC
