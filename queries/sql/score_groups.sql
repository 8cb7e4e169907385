-- Session-level BM25 over term groups (a group = one query word and the
-- spellings or word forms it may match). Reads only the buckets of the
-- groups' tokens. $need_and: a session qualifies only through a record that
-- holds at least $and_min groups (the AND rungs; with $whole also by holding
-- them across its records, reported with nrec = 0); otherwise through holding
-- at least $min_groups groups anywhere in the session (the relevance rung).
--
-- Term frequency is counted per record and damped by that record's length
-- (never raised: a short message counts no more than an average one): a word
-- once in a 5,000-token tool dump says less than the same word in a two-line
-- answer.
-- The average length of each role's records is measured over the postings
-- read here. What was said (user ×1.3, assistant, notes) and what tools printed
-- are two fields that saturate apart, the printed one at half weight: forty
-- log lines naming a word cannot stand in for one person saying it, and a
-- word both said and printed counts in both. The session's own length (its
-- speech, in words) damps lightly, so a long session is not rewarded for
-- merely having more records that mention a word. best_ng, for proximity:
-- the most groups one record holds, less as that record is long (words met
-- in a two-line message are closer than words met in a log dump). best: the
-- session's three records to show as snippets.
WITH g AS (
    SELECT unnest($tokens) AS token, unnest($gids) AS gid
),
p AS (
    SELECT g.gid, p.record_id, p.session, p.tf, p.role, p.rec_len,
           greatest(avg(p.rec_len) OVER (PARTITION BY p.role), 1)::DOUBLE AS avglen
    FROM read_parquet($files) p
    JOIN g ON p.token = g.token
    WHERE p.role IN (SELECT unnest($roles))
      AND p.record_id NOT IN (SELECT record_id FROM deletes)
),
s AS (
    SELECT ord, greatest(words, 20) AS dl, epoch_ms(updated) AS updated, epoch_ms(started) AS started,
           coalesce(decision, '') <> '' AS decided, coalesce(gave_up, false) AS gave_up, harness = 'deja' AS note
    FROM sessions
    WHERE ($harness IS NULL OR harness = $harness)
      AND ($project IS NULL OR contains(lower(project), lower($project)))
      AND ($since IS NULL OR epoch_ms(updated) >= $since)
      AND ($session IS NULL OR starts_with(session_id, $session))
),
rec AS (
    SELECT record_id, any_value(session) AS session, count(DISTINCT gid) AS ng, any_value(rec_len) AS len,
           any_value(role) AS role
    FROM p GROUP BY record_id
),
and_sessions AS (
    SELECT session, count(*) FILTER (WHERE ng >= $and_min) AS nrec,
           1 + max((ng - 1) * 200.0 / (200 + len)) AS best_ng,
           -- the snippet records: most groups first, then what was said before
           -- what a tool printed, then the newest (one sort key: ids < 2^40)
           max_by(record_id, ng * 2199023255552 + (role <> 2)::BIGINT * 1099511627776 + record_id, 3) AS best
    FROM rec GROUP BY session
),
per AS (
    SELECT p.session, p.gid,
           coalesce(sum(p.tf * CASE p.role WHEN 0 THEN 1.3 WHEN 1 THEN 1.0 WHEN 3 THEN 0.5 ELSE 1.3 END
                        / greatest(1.0, 0.25 + 0.75 * p.rec_len / p.avglen))
                    FILTER (WHERE p.role <> 2), 0)::DOUBLE AS said,
           coalesce(sum(p.tf / greatest(1.0, 0.25 + 0.75 * p.rec_len / p.avglen))
                    FILTER (WHERE p.role = 2), 0)::DOUBLE AS printed
    FROM p
    JOIN s ON p.session = s.ord
    GROUP BY ALL
),
df AS (SELECT gid, count(*) AS df FROM per GROUP BY gid),
stats AS (SELECT count(*)::DOUBLE AS n, avg(greatest(words, 20))::DOUBLE AS avgdl FROM sessions)
SELECT per.session,
       sum(ln(1 + (stats.n - df.df + 0.5) / (df.df + 0.5))
           * (per.said * 2.2 / (per.said + 1.2 * (0.7 + 0.3 * s.dl / stats.avgdl))
              + 0.5 * per.printed * 2.2 / (per.printed + 1.2 * (0.7 + 0.3 * s.dl / stats.avgdl)))) AS bm25,
       count(*) AS matched,
       coalesce(any_value(a.nrec), 0) AS nrec,
       any_value(s.updated) AS updated,
       coalesce(any_value(a.best_ng), 1) AS best_ng,
       any_value(s.started) AS started,
       any_value(s.decided) AS decided,
       any_value(s.gave_up) AS gave_up,
       any_value(s.note) AS note,
       any_value(a.best) AS best
FROM per
JOIN df USING (gid)
JOIN s ON s.ord = per.session
CROSS JOIN stats
LEFT JOIN and_sessions a ON a.session = per.session
GROUP BY per.session
HAVING ($need_and AND (coalesce(any_value(a.nrec), 0) > 0 OR ($whole AND count(*) >= $and_min)))
    OR (NOT $need_and AND count(*) >= $min_groups)
