-- Session-level BM25 over term groups (a group = one query word and the
-- spellings or word forms it may match). Reads only the buckets of the
-- groups' tokens. $need_and: a session qualifies only through a record that
-- holds at least $and_min groups (the AND rungs); otherwise through holding
-- at least $min_groups groups anywhere in the session (the relevance rung).
WITH g AS (
    SELECT unnest($tokens) AS token, unnest($gids) AS gid
),
p AS (
    SELECT g.gid, p.record_id, p.session, p.tf, p.role
    FROM read_parquet($files) p
    JOIN g ON p.token = g.token
    WHERE p.role IN (SELECT unnest($roles))
      AND p.record_id NOT IN (SELECT record_id FROM deletes)
),
s AS (
    SELECT ord, greatest(words, 20) AS dl, epoch_ms(updated) AS updated
    FROM sessions
    WHERE ($harness IS NULL OR harness = $harness)
      AND ($project IS NULL OR contains(lower(project), lower($project)))
      AND ($since IS NULL OR epoch_ms(updated) >= $since)
      AND ($session IS NULL OR starts_with(session_id, $session))
),
rec AS (
    SELECT record_id, any_value(session) AS session, count(DISTINCT gid) AS ng
    FROM p GROUP BY record_id
),
and_sessions AS (
    SELECT session, count(*) FILTER (WHERE ng >= $and_min) AS nrec, max(ng) AS best_ng
    FROM rec GROUP BY session
),
per AS (
    SELECT p.session, p.gid,
           sum(p.tf * CASE p.role WHEN 0 THEN 1.3 WHEN 1 THEN 1.0 WHEN 2 THEN 0.5 WHEN 3 THEN 0.5 ELSE 1.3 END)::DOUBLE AS wtf
    FROM p JOIN s ON p.session = s.ord
    GROUP BY ALL
),
df AS (SELECT gid, count(*) AS df FROM per GROUP BY gid),
stats AS (SELECT count(*)::DOUBLE AS n, avg(greatest(words, 20))::DOUBLE AS avgdl FROM sessions)
SELECT per.session,
       sum(ln(1 + (stats.n - df.df + 0.5) / (df.df + 0.5))
           * per.wtf * 2.2 / (per.wtf + 1.2 * (0.25 + 0.75 * s.dl / stats.avgdl))) AS bm25,
       count(*) AS matched,
       coalesce(any_value(a.nrec), 0) AS nrec,
       any_value(s.updated) AS updated,
       coalesce(any_value(a.best_ng), 1) AS best_ng
FROM per
JOIN df USING (gid)
JOIN s ON s.ord = per.session
CROSS JOIN stats
LEFT JOIN and_sessions a ON a.session = per.session
GROUP BY per.session
HAVING ($need_and AND coalesce(any_value(a.nrec), 0) > 0) OR (NOT $need_and AND count(*) >= $min_groups)
