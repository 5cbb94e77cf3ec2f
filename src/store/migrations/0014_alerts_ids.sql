-- Migration (issue 35, alert ids): the store's own identifier, made once when this migration
-- runs and never changed. Every alert id is derived from it (alerts::alert_id), so two witnesses, or one
-- whose store was made anew, never send two different alerts under one id: a receiver that
-- deduplicates by id (as Standard Webhooks tells it to) would silently drop one of them.
CREATE TABLE store_identity (
    one        INTEGER PRIMARY KEY CHECK (one = 1),  -- one row
    id         TEXT    NOT NULL CHECK (length(id) = 32),
    created_at TEXT    NOT NULL
);
INSERT INTO store_identity (one, id, created_at)
VALUES (1, lower(hex(randomblob(16))), strftime('%Y-%m-%dT%H:%M:%SZ', 'now'));

-- Each channel's queue in the order it was planned: what a channel sends next, and the rows
-- released at once when its receiver answers again.
CREATE INDEX alert_outbox_queue ON alert_outbox (channel, id) WHERE state = 'queued';
