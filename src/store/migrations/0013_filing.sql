-- Migration 13 (issue 34): filing when answers are lost. An attempt whose answer never came
-- leaves its row `sending` with a retry time; the next step is a lookup (GET <intake>/<sha256>),
-- logged in `submission_attempts` as `found`, `not_found` or `lookup_failed`.
--
-- How many lookups a row has had: failed ones back off like failed POSTs (attempts + lookups).
ALTER TABLE submissions ADD COLUMN lookups INTEGER NOT NULL DEFAULT 0;

-- Lookups by result for /metrics, kept by a trigger in the attempt's own transaction (as the
-- summaries of migration 9): a scrape reads three rows however long the history.
CREATE TABLE summary_lookups (
    result TEXT    PRIMARY KEY,
    n      INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TRIGGER summary_lookups_insert AFTER INSERT ON submission_attempts
WHEN NEW.answer IN ('found', 'not_found', 'lookup_failed')
BEGIN
    INSERT INTO summary_lookups (result, n) VALUES (NEW.answer, 1)
    ON CONFLICT (result) DO UPDATE SET n = n + 1;
END;
