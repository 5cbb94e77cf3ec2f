-- Migration 7 (issue 24): alerts. Per target, the incident core's state (alerts::incident::
-- TargetState as JSON), written in the same transaction as the record (or declined fire) that
-- moved it; per channel, its daily count (alerts::budget::ChannelDay as JSON); and the alert
-- outbox: one row per alert id and channel, so planning the same alert twice keeps one row and
-- a restart resends only what no receiver answered 2xx.
CREATE TABLE alert_targets (
    target     TEXT PRIMARY KEY,
    state      TEXT NOT NULL,
    -- When a change the minimum interval held back may be sent (NULL: nothing held).
    flush_at   TEXT,
    -- The open incidents (alerts::outbox::OpenIncident as a JSON array), NULL when none: what
    -- the overview lists without reading every target's state.
    open       TEXT,
    updated_at TEXT NOT NULL
);
CREATE INDEX alert_targets_flush ON alert_targets (flush_at) WHERE flush_at IS NOT NULL;
CREATE INDEX alert_targets_open ON alert_targets (target) WHERE open IS NOT NULL;

CREATE TABLE alert_channels (
    channel TEXT PRIMARY KEY,
    state   TEXT NOT NULL
);

CREATE TABLE alert_outbox (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    alert_id        TEXT    NOT NULL,          -- cwa_...: the webhook-id, the idempotency key
    channel         TEXT    NOT NULL,
    target          TEXT,
    kind            TEXT    NOT NULL,          -- the payload's type
    payload         TEXT    NOT NULL,          -- alerts::payload::AlertPayload (schema 1)
    record_sha256   TEXT,                      -- the record the alert is about, if any
    state           TEXT    NOT NULL CHECK (state IN ('queued', 'delivered', 'held', 'refused')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TEXT,                      -- RFC 3339 UTC; NULL when settled
    last_status     INTEGER,
    last_answer     TEXT,
    created_at      TEXT    NOT NULL,
    delivered_at    TEXT,
    UNIQUE (alert_id, channel)
);
CREATE INDEX alert_outbox_due ON alert_outbox (next_attempt_at) WHERE state = 'queued';
CREATE INDEX alert_outbox_target ON alert_outbox (target, id);
CREATE INDEX alert_outbox_record ON alert_outbox (record_sha256) WHERE record_sha256 IS NOT NULL;

-- Small named states (the store's health episode for health alerts).
CREATE TABLE alert_health (
    name  TEXT PRIMARY KEY,
    state TEXT NOT NULL
);
