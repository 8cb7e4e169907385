-- Sessions (among the candidates) with a record holding every quoted phrase as contiguous text.
WITH ids AS (
    SELECT DISTINCT record_id, session
    FROM read_parquet($files)
    WHERE token = $term
      AND session IN (SELECT unnest($ords))
      AND role IN (SELECT unnest($roles))
)
SELECT DISTINCT ids.session
FROM records r
JOIN ids ON r.record_id = ids.record_id
WHERE list_bool_and([contains(lower(r.text), ph) FOR ph IN $phrases])
