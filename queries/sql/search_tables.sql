-- The tables one search ranks from, made once per search: every rung reads
-- them instead of opening Parquet again.
--
-- q_sessions: every session, with what ranking needs of it (its title for the
-- title signal) and whether the query's filters admit it (the corpus statistics count them all; $project_rule
-- is queries/project_match).
CREATE OR REPLACE TEMP TABLE q_sessions AS
SELECT ord, greatest(words, 20)::DOUBLE AS dl, epoch_ms(updated) AS updated, epoch_ms(started) AS started,
       coalesce(decision, '') <> '' AS decided, coalesce(gave_up, false) AS gave_up, harness = 'deja' AS note,
       title,
       ($harness IS NULL OR harness = $harness)
       AND $project_rule
       AND ($since IS NULL OR epoch_ms(updated) >= $since)
       AND ($session IS NULL OR starts_with(session_id, $session)) AS admitted
FROM sessions;
-- q_postings: the postings of the words the ladder has asked for so far (of
-- the admitted sessions when a filter is given), of
-- the roles searched, without deleted records (filled by Searcher.load).
CREATE OR REPLACE TEMP TABLE q_postings (token VARCHAR, record_id BIGINT, session INTEGER, tf INTEGER,
                                         role TINYINT, rec_len INTEGER);
