-- What session-level BM25 over term groups needs (a group = one query word
-- and the spellings or word forms it may match), one row per session the
-- filters admit, from the search's postings (q_postings). Searcher.rank turns
-- the rows into scores: the IDF of each group counts these sessions, and which
-- sessions qualify depends on the rung (an AND needs a record holding
-- $and_min groups: nrec; relevance needs some groups anywhere: said_k/printed_k).
-- Two aggregations and one join: planning a deeper query cost more than
-- running it on a search's few thousand postings.
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
p AS NOT MATERIALIZED (
    SELECT g.gid, p.record_id, p.session, p.role, p.rec_len,
           p.tf / greatest(1.0, 0.25 + 0.75 * p.rec_len
                                / greatest(avg(p.rec_len) OVER (PARTITION BY p.role), 1)) AS w
    FROM q_postings p
    JOIN g ON p.token = g.token
),
rec AS (
    SELECT record_id, any_value(session) AS session, any_value(role) AS role, any_value(rec_len) AS len,
           bit_count(bit_or(1::BIGINT << gid)) AS ng,  -- distinct groups, as a bit set (a DISTINCT aggregate cost a second hash table)
           $record_sums  -- w_k: sum(w) FILTER (WHERE gid = k), one per group
    FROM p GROUP BY record_id
),
sess AS (
    SELECT session,
           count(*) FILTER (WHERE ng >= $and_min) AS nrec,
           1 + max((ng - 1) * 200.0 / (200 + len))::DOUBLE AS best_ng,
           -- the snippet records: most groups first, then what was said before
           -- what a tool printed, then the newest (one sort key: ids < 2^40);
           -- each as role * 2^40 + record_id, so their roles come along
           max_by(role::BIGINT * 1099511627776 + record_id,
                  ng * 2199023255552 + (role <> 2)::BIGINT * 1099511627776 + record_id, 3) AS best,
           $session_sums  -- said_k (user ×1.3, notes ×1.3, assistant ×1) and printed_k (tool output)
    FROM rec GROUP BY session
)
SELECT s.ord, s.dl, s.updated, s.started, s.decided, s.gave_up, s.note, sess.* EXCLUDE (session)
FROM sess JOIN q_sessions s ON s.ord = sess.session
WHERE s.admitted
