-- Migration 4: what the status pages (src/pages) read without parsing records.
--
-- `record_facts`: per record, what a page shows of it that the `records` columns do not hold:
-- whether any fetch ended in a transport error (status 0), the names of the failed assertions
-- (comma-separated, in record order) and the witness that took it, beside copies of the small
-- `records` columns a page lists (a `records` row keeps its bytes before those columns, so
-- reading them walks the bytes' overflow pages: 5,000 strip cells would read 25 MB). Derived from the canonical
-- bytes by SQLite's JSON functions, at insert time by a trigger (every insert path: walks,
-- reveal, import) and here once for the rows already stored. Derived data only: `records verify`
-- checks the records themselves, never this table.
CREATE TABLE record_facts (
    -- No foreign key: a tampered store (a row deleted behind the triggers' back) must stay
    -- readable so `records verify` and the pages can show the damage.
    record_id       INTEGER PRIMARY KEY,
    sha256          TEXT    NOT NULL,
    walked_at       TEXT    NOT NULL,
    endpoint        TEXT    NOT NULL,
    outcome         TEXT,
    n_pass          INTEGER,
    n_total         INTEGER,
    transport_error INTEGER NOT NULL CHECK (transport_error IN (0, 1)),
    failed          TEXT    NOT NULL,
    witness_name    TEXT,
    vantage         TEXT
);

INSERT INTO record_facts (record_id, sha256, walked_at, endpoint, outcome, n_pass, n_total,
    transport_error, failed, witness_name, vantage)
SELECT r.id, r.sha256, r.walked_at, r.endpoint, r.outcome, r.n_pass, r.n_total,
    EXISTS (SELECT 1 FROM json_each(CAST(r.canonical AS TEXT), '$.nodes') n
            WHERE json_extract(n.value, '$.kind') = 'fetch'
              AND json_extract(n.value, '$.response.status') = 0),
    coalesce((SELECT group_concat(name, ',') FROM (
        SELECT CASE WHEN instr(c, ':') > 0 THEN trim(substr(c, 1, instr(c, ':') - 1)) ELSE trim(c) END AS name
        FROM (SELECT json_extract(a.value, '$.claim') AS c, a.key AS k
              FROM json_each(CAST(r.canonical AS TEXT), '$.assertions') a
              WHERE json_extract(a.value, '$.result') = 0)
        WHERE c IS NOT NULL ORDER BY k)), ''),
    json_extract(CAST(r.canonical AS TEXT), '$.witness.name'),
    json_extract(CAST(r.canonical AS TEXT), '$.witness.vantage')
FROM records r;

CREATE TRIGGER records_facts AFTER INSERT ON records
BEGIN
    INSERT INTO record_facts (record_id, sha256, walked_at, endpoint, outcome, n_pass, n_total,
        transport_error, failed, witness_name, vantage)
    VALUES (NEW.id, NEW.sha256, NEW.walked_at, NEW.endpoint, NEW.outcome, NEW.n_pass, NEW.n_total,
        EXISTS (SELECT 1 FROM json_each(CAST(NEW.canonical AS TEXT), '$.nodes') n
                WHERE json_extract(n.value, '$.kind') = 'fetch'
                  AND json_extract(n.value, '$.response.status') = 0),
        coalesce((SELECT group_concat(name, ',') FROM (
            SELECT CASE WHEN instr(c, ':') > 0 THEN trim(substr(c, 1, instr(c, ':') - 1)) ELSE trim(c) END AS name
            FROM (SELECT json_extract(a.value, '$.claim') AS c, a.key AS k
                  FROM json_each(CAST(NEW.canonical AS TEXT), '$.assertions') a
                  WHERE json_extract(a.value, '$.result') = 0)
            WHERE c IS NOT NULL ORDER BY k)), ''),
        json_extract(CAST(NEW.canonical AS TEXT), '$.witness.name'),
        json_extract(CAST(NEW.canonical AS TEXT), '$.witness.vantage'));
END;

-- A target's latest fires (the verdict strip) and its fires in a time range (the day charts).
CREATE INDEX daemon_walks_target_id ON daemon_walks (target, id);
CREATE INDEX daemon_walks_target_started ON daemon_walks (target, started_at);
-- A record page names the fire that stored it.
CREATE INDEX daemon_walks_record ON daemon_walks (record_id);
-- Lane use per day.
CREATE INDEX submissions_filed_day ON submissions (filed_day, last_answer);
-- A revealed record finds the commitment it opens.
CREATE INDEX kept_full_sha256 ON kept_full (sha256);
