-- Migration (issue 44, spec witness-pool.md §7, §11.5 notify): the consent file's `notify`
-- kept with each read, so the daemon's consent cache rebuilt at start still knows where an
-- origin asked to be told; and every notification decided after a scheduled walk.
ALTER TABLE consent_checks ADD COLUMN notify TEXT;   -- the file's string `notify`, else NULL

-- One row per notification decided (guards 2-9 of §7.4; guard 1's `null` writes no row). A
-- row that will POST is written `attempted = 1` with `status` NULL BEFORE the POST is sent and
-- given its status after: a daemon killed in between finds it at the next start and settles it
-- as interrupted, never sending it again. Guards 6 and 7 count attempted rows here, so the
-- hour per endpoint and the three per wave hold across restarts.
CREATE TABLE notifications (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    walk_id        INTEGER NOT NULL REFERENCES daemon_walks (id),  -- the scheduled walk it follows
    record_id      INTEGER,             -- that walk's record (no FK: retention may archive it)
    record_sha256  TEXT,
    endpoint       TEXT    NOT NULL,    -- the body's `endpoint`
    url            TEXT    NOT NULL,    -- the consent file's `notify`, as written
    -- A wave is one round of the scheduler: the fires that share one scheduled instant
    -- (`daemon_walks.scheduled_for`); guard 7 allows three POSTs per wave.
    wave           TEXT    NOT NULL,
    decided_at     TEXT    NOT NULL,    -- UTC, 2026-12-06T03:40:00.123Z
    attempted      INTEGER NOT NULL CHECK (attempted IN (0, 1)),  -- 1: steps 8-9 ran or run
    status         TEXT,                -- notify_status JSON; NULL only while a POST is in flight
    -- What /metrics counts the status as; NULL while in flight.
    result         TEXT CHECK (result IS NULL OR result IN
                       ('sent', 'refused', 'rate_limited', 'deferred', 'failed'))
);
CREATE INDEX notifications_endpoint ON notifications (endpoint, attempted, decided_at);
CREATE INDEX notifications_wave ON notifications (wave, attempted);
CREATE INDEX notifications_record ON notifications (record_id);
CREATE INDEX notifications_result ON notifications (result);
