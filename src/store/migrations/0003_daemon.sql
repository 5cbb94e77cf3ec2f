-- Migration 3: what the daemon (`conduct-walker run`) did, beside the records it stored.
--
-- `daemon_walks`: one row per scheduled fire of a target. A row is written `running` before the
-- walk starts, so a walk cut off (SIGTERM past the grace deadline, a crash, kill -9) is visible
-- afterwards as `aborted` and is never mistaken for the agent's failure: the agent's failures are
-- only ever in the record itself.
CREATE TABLE daemon_walks (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    target         TEXT    NOT NULL,
    origin         TEXT    NOT NULL,
    endpoint       TEXT,                -- as configured (NULL: the card's first measured endpoint)
    scheduled_for  TEXT    NOT NULL,    -- the fire time (cron time + the target's jitter)
    started_at     TEXT    NOT NULL,
    finished_at    TEXT,
    state          TEXT    NOT NULL CHECK (state IN
                       ('running', 'done', 'aborted', 'declined', 'skipped_overlap', 'error')),
    record_id      INTEGER REFERENCES records (id),
    record_sha256  TEXT,
    submission     TEXT,                -- the pipeline's submission state, when filed or queued
    detail         TEXT                 -- why: aborted by shutdown, the error, the consent sha
);
CREATE INDEX daemon_walks_target ON daemon_walks (target, state, finished_at);

-- `consent_checks`: every read of an origin's /.well-known/mcp-conduct.json (at most one per
-- origin per day). `declined` rows are the evidence that the daemon stopped walking an origin:
-- the sha256 of the exact bytes it was served and when.
CREATE TABLE consent_checks (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    origin      TEXT    NOT NULL,
    checked_at  TEXT    NOT NULL,
    outcome     TEXT    NOT NULL CHECK (outcome IN ('declined', 'silent', 'absent', 'unreadable')),
    status      INTEGER,                -- HTTP status; 0 for a transport failure
    sha256      TEXT CHECK (sha256 IS NULL OR length(sha256) = 64),
    detail      TEXT
);
CREATE INDEX consent_checks_origin ON consent_checks (origin, id);
CREATE TRIGGER consent_checks_insert_only_update BEFORE UPDATE ON consent_checks
BEGIN SELECT RAISE(ABORT, 'consent_checks is append-only'); END;
CREATE TRIGGER consent_checks_insert_only_delete BEFORE DELETE ON consent_checks
BEGIN SELECT RAISE(ABORT, 'consent_checks is append-only'); END;
