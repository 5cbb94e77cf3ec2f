-- Migration 2: the outbox. One row per (record, intake): what we intend to file, where it
-- stands, and when to try next. Every answer the intake gave is kept in `submission_attempts`
-- (append-only), so an operator can see exactly what happened and a restart resumes from here.
CREATE TABLE submissions (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    record_id       INTEGER NOT NULL REFERENCES records (id),
    intake_url      TEXT    NOT NULL,
    lane            TEXT    NOT NULL,          -- 'address' or 'domain:<host>'
    identity        TEXT    NOT NULL,          -- counting identity (§6.2 step 9)
    endpoint        TEXT    NOT NULL,          -- §6.5 attribution
    state           TEXT    NOT NULL CHECK (state IN
                        ('queued', 'sending', 'filed', 'refused', 'kept_local', 'host_offline')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TEXT,                      -- RFC 3339 UTC; NULL when nothing is due
    last_answer     TEXT,                      -- accepted, duplicate, refused, lane_full, retry
    last_status     INTEGER,
    last_error      TEXT,
    reason_code     TEXT,
    counted         INTEGER,
    count_reason    TEXT,
    filed_day       TEXT,                      -- UTC day the intake stored it (lane accounting)
    created_at      TEXT    NOT NULL,
    updated_at      TEXT    NOT NULL,
    UNIQUE (record_id, intake_url)
);
CREATE INDEX submissions_due ON submissions (state, next_attempt_at);
CREATE INDEX submissions_day ON submissions (intake_url, filed_day);
CREATE INDEX submissions_identity ON submissions (intake_url, identity, endpoint, created_at);

CREATE TABLE submission_attempts (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    submission_id INTEGER NOT NULL REFERENCES submissions (id),
    attempted_at  TEXT    NOT NULL,
    answer        TEXT    NOT NULL,
    status        INTEGER NOT NULL,
    body          TEXT    NOT NULL
);
CREATE TRIGGER submission_attempts_insert_only_update BEFORE UPDATE ON submission_attempts
BEGIN SELECT RAISE(ABORT, 'submission_attempts is append-only'); END;
CREATE TRIGGER submission_attempts_insert_only_delete BEFORE DELETE ON submission_attempts
BEGIN SELECT RAISE(ABORT, 'submission_attempts is append-only'); END;
