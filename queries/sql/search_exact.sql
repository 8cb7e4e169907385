-- Exact rung: sessions where one record holds every query term (AND per record),
-- with each term's role-weighted frequency in the session and its document
-- frequency, for BM25 at session level. Reads only the query's buckets.
WITH p AS (
    SELECT token, record_id, session, tf, role
    FROM read_parquet($files)
    WHERE token IN (SELECT unnest($terms))
      AND role IN (SELECT unnest($roles))
      AND record_id NOT IN (SELECT record_id FROM deletes)
),
and_records AS (
    SELECT record_id FROM p GROUP BY record_id HAVING count(DISTINCT token) = $nterms
),
nrec AS (
    SELECT p.session, count(DISTINCT p.record_id) AS n
    FROM p JOIN and_records USING (record_id)
    GROUP BY p.session
),
s AS (
    SELECT ord, words, epoch_ms(updated) AS updated
    FROM sessions
    WHERE ord IN (SELECT session FROM nrec)
      AND ($harness IS NULL OR harness = $harness)
      AND ($project IS NULL OR contains(lower(project), lower($project)))
      AND ($since IS NULL OR epoch_ms(updated) >= $since)
),
df AS (SELECT token, count(DISTINCT session) AS df FROM p GROUP BY token)
SELECT s.ord,
       p.token,
       sum(p.tf * CASE p.role WHEN 0 THEN 1.3 WHEN 1 THEN 1.0 WHEN 2 THEN 0.6 WHEN 3 THEN 0.5 ELSE 1.3 END)::DOUBLE AS wtf,
       any_value(df.df) AS df,
       any_value(s.words) AS words,
       any_value(s.updated) AS updated,
       any_value(nrec.n) AS n
FROM p
JOIN s ON p.session = s.ord
JOIN df USING (token)
JOIN nrec ON nrec.session = s.ord
GROUP BY s.ord, p.token
