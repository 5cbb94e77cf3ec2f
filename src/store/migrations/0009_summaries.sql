-- Migration 7 (issue 27): summary rows, so /metrics and the status pages cost O(targets), not
-- O(history). Each table is kept by triggers, so it changes in the same transaction as the row
-- it counts (a kill -9 can never leave a count apart from its rows), on every write path (the
-- daemon, walk --db, reveal, import), and is filled here once from the rows already stored.
-- Derived data only: `records verify` never reads these tables. Counters only ever go up for
-- records (a record that leaves the live store was still stored: `_total` counters must not fall).
--
-- To add a figure (ledger follower, alerts): a table of its own with its triggers in its own
-- migration, read by a function of its own in `store::summary`.

-- conduct_walker_walks_total: stored records by endpoint and outcome (`none`: no verdict).
CREATE TABLE summary_records (
    endpoint TEXT    NOT NULL,
    outcome  TEXT    NOT NULL,
    n        INTEGER NOT NULL,
    PRIMARY KEY (endpoint, outcome)
) WITHOUT ROWID;

-- conduct_walker_assertion_failures_total: stored records in which an assertion failed, by the
-- claim's text before ':' (as `daemon::metrics::failed_assertions` reads a record).
CREATE TABLE summary_assertion_failures (
    assertion TEXT    PRIMARY KEY,
    n         INTEGER NOT NULL
) WITHOUT ROWID;

-- Fires by target and state, with the latest finished_at of that state (state `done`: the
-- target's last success). Rows stay at n = 0 when every fire left a state.
CREATE TABLE summary_fires (
    target           TEXT    NOT NULL,
    state            TEXT    NOT NULL,
    n                INTEGER NOT NULL,
    last_finished_at TEXT,
    PRIMARY KEY (target, state)
) WITHOUT ROWID;

-- Endpoints of records some daemon fire stored (the overview lists the others apart).
CREATE TABLE summary_fired_endpoints (
    endpoint TEXT PRIMARY KEY
) WITHOUT ROWID;

-- Submissions by (state, last_answer, counted); '' and -1 stand for NULL (a key must compare
-- equal to itself).
CREATE TABLE summary_submissions (
    state       TEXT    NOT NULL,
    last_answer TEXT    NOT NULL,
    counted     INTEGER NOT NULL,
    n           INTEGER NOT NULL,
    PRIMARY KEY (state, last_answer, counted)
) WITHOUT ROWID;

-- The latest consent read of each origin.
CREATE TABLE summary_consent_latest (
    origin   TEXT    PRIMARY KEY,
    check_id INTEGER NOT NULL
) WITHOUT ROWID;

-- The fires left `running` (aborted at start and at shutdown) without a pass over every fire.
CREATE INDEX daemon_walks_running ON daemon_walks (state) WHERE state = 'running';

-- What is already stored.
INSERT INTO summary_records (endpoint, outcome, n)
SELECT endpoint, coalesce(outcome, 'none'), count(*) FROM records GROUP BY 1, 2;

INSERT INTO summary_assertion_failures (assertion, n)
SELECT name, count(*) FROM (
    SELECT CASE WHEN instr(c, ':') > 0 THEN trim(substr(c, 1, instr(c, ':') - 1), char(32, 9, 10, 11, 12, 13))
                ELSE trim(c, char(32, 9, 10, 11, 12, 13)) END AS name
    FROM (SELECT json_extract(a.value, '$.claim') AS c
          FROM records r, json_each(CAST(r.canonical AS TEXT), '$.assertions') a
          WHERE substr(r.canonical, 1, 1) = X'7B'   -- raw rows: none is compressed before this runs
            AND typeof(a.key) = 'integer'
            AND json_type(a.value, '$.result') = 'false'
            AND json_type(a.value, '$.claim') = 'text'))
GROUP BY name;

INSERT INTO summary_fires (target, state, n, last_finished_at)
SELECT target, state, count(*), max(finished_at) FROM daemon_walks GROUP BY 1, 2;

INSERT INTO summary_fired_endpoints (endpoint)
SELECT DISTINCT r.endpoint FROM daemon_walks w JOIN records r ON r.id = w.record_id;

INSERT INTO summary_submissions (state, last_answer, counted, n)
SELECT state, coalesce(last_answer, ''),
       CASE WHEN counted IS NULL THEN -1 WHEN counted != 0 THEN 1 ELSE 0 END, count(*)
FROM submissions GROUP BY 1, 2, 3;

INSERT INTO summary_consent_latest (origin, check_id)
SELECT origin, max(id) FROM consent_checks GROUP BY origin;

-- Records: inserted only (counted once, never uncounted).
CREATE TRIGGER summary_records_insert AFTER INSERT ON records
BEGIN
    INSERT INTO summary_records (endpoint, outcome, n)
    VALUES (NEW.endpoint, coalesce(NEW.outcome, 'none'), 1)
    ON CONFLICT (endpoint, outcome) DO UPDATE SET n = n + 1;
END;

-- Failed assertions of a raw row (its bytes are JSON text). Rows stored compressed (migration
-- 8's zstd frames) are counted by the store itself with the same statement over the bytes it
-- compressed (`store::SUMMARY_FAILURES_SQL`): keep the two in step.
CREATE TRIGGER summary_assertions_insert AFTER INSERT ON records
WHEN substr(NEW.canonical, 1, 1) = X'7B'
BEGIN
    INSERT INTO summary_assertion_failures (assertion, n)
    SELECT name, count(*) FROM (
        SELECT CASE WHEN instr(c, ':') > 0 THEN trim(substr(c, 1, instr(c, ':') - 1), char(32, 9, 10, 11, 12, 13))
                    ELSE trim(c, char(32, 9, 10, 11, 12, 13)) END AS name
        FROM (SELECT json_extract(a.value, '$.claim') AS c
              FROM json_each(CAST(NEW.canonical AS TEXT), '$.assertions') a
              WHERE typeof(a.key) = 'integer'
                AND json_type(a.value, '$.result') = 'false'
                AND json_type(a.value, '$.claim') = 'text'))
    GROUP BY name HAVING true
    ON CONFLICT (assertion) DO UPDATE SET n = n + excluded.n;
END;

-- Fires: a row is inserted `running` and updated once it ends (or inserted already ended).
CREATE TRIGGER summary_fires_insert AFTER INSERT ON daemon_walks
BEGIN
    INSERT INTO summary_fires (target, state, n, last_finished_at)
    VALUES (NEW.target, NEW.state, 1, NEW.finished_at)
    ON CONFLICT (target, state) DO UPDATE SET n = n + 1,
        last_finished_at = CASE WHEN last_finished_at IS NULL
                                  OR excluded.last_finished_at > last_finished_at
                                THEN coalesce(excluded.last_finished_at, last_finished_at)
                                ELSE last_finished_at END;
    INSERT OR IGNORE INTO summary_fired_endpoints (endpoint)
    SELECT endpoint FROM records WHERE id = NEW.record_id;
END;

CREATE TRIGGER summary_fires_update AFTER UPDATE OF target, state, finished_at, record_id ON daemon_walks
BEGIN
    UPDATE summary_fires SET n = n - 1 WHERE target = OLD.target AND state = OLD.state;
    INSERT INTO summary_fires (target, state, n, last_finished_at)
    VALUES (NEW.target, NEW.state, 1, NEW.finished_at)
    ON CONFLICT (target, state) DO UPDATE SET n = n + 1,
        last_finished_at = CASE WHEN last_finished_at IS NULL
                                  OR excluded.last_finished_at > last_finished_at
                                THEN coalesce(excluded.last_finished_at, last_finished_at)
                                ELSE last_finished_at END;
    INSERT OR IGNORE INTO summary_fired_endpoints (endpoint)
    SELECT endpoint FROM records WHERE id = NEW.record_id;
END;

CREATE TRIGGER summary_fires_delete AFTER DELETE ON daemon_walks
BEGIN
    UPDATE summary_fires SET n = n - 1 WHERE target = OLD.target AND state = OLD.state;
END;

-- Submissions move between states: each change moves one count.
CREATE TRIGGER summary_submissions_insert AFTER INSERT ON submissions
BEGIN
    INSERT INTO summary_submissions (state, last_answer, counted, n)
    VALUES (NEW.state, coalesce(NEW.last_answer, ''),
            CASE WHEN NEW.counted IS NULL THEN -1 WHEN NEW.counted != 0 THEN 1 ELSE 0 END, 1)
    ON CONFLICT (state, last_answer, counted) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER summary_submissions_update AFTER UPDATE OF state, last_answer, counted ON submissions
BEGIN
    UPDATE summary_submissions SET n = n - 1
    WHERE state = OLD.state AND last_answer = coalesce(OLD.last_answer, '')
      AND counted = CASE WHEN OLD.counted IS NULL THEN -1 WHEN OLD.counted != 0 THEN 1 ELSE 0 END;
    INSERT INTO summary_submissions (state, last_answer, counted, n)
    VALUES (NEW.state, coalesce(NEW.last_answer, ''),
            CASE WHEN NEW.counted IS NULL THEN -1 WHEN NEW.counted != 0 THEN 1 ELSE 0 END, 1)
    ON CONFLICT (state, last_answer, counted) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER summary_submissions_delete AFTER DELETE ON submissions
BEGIN
    UPDATE summary_submissions SET n = n - 1
    WHERE state = OLD.state AND last_answer = coalesce(OLD.last_answer, '')
      AND counted = CASE WHEN OLD.counted IS NULL THEN -1 WHEN OLD.counted != 0 THEN 1 ELSE 0 END;
END;

CREATE TRIGGER summary_consent_latest_insert AFTER INSERT ON consent_checks
BEGIN
    INSERT INTO summary_consent_latest (origin, check_id) VALUES (NEW.origin, NEW.id)
    ON CONFLICT (origin) DO UPDATE SET check_id = max(check_id, excluded.check_id);
END;
