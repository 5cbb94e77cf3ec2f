-- Reciprocal walks (issue 44; witness-pool.md §6): every message to the witness face that
-- carried `EXT/caller_card`, what it was answered, and the walk it queued. A queued walk is
-- committed here before the answer leaves, so a killed daemon still walks it; `running` rows a
-- stopped daemon left are queued again at the next start. The record a walk produced is in
-- `records` (its id and sha256 here) and its filing in `outbox`; no foreign key, so archiving an
-- old record never waits on this table.
CREATE TABLE reciprocal_walks (
    id            INTEGER PRIMARY KEY,
    requested_at  TEXT NOT NULL,
    -- The raw value, clipped to 300 characters (a string or the JSON of another value).
    caller_card   TEXT NOT NULL,
    -- `https://host[:port]`; NULL when steps 1–2 refused the value.
    origin        TEXT,
    -- reciprocal::state: declined, joined, queued, running, walked, cancelled, failed.
    state         TEXT NOT NULL CHECK (state IN
                      ('declined', 'joined', 'queued', 'running', 'walked', 'cancelled', 'failed')),
    -- A decline or cancel reason (reciprocal::Decline).
    reason        TEXT,
    detail        TEXT,
    -- requested_at + reciprocal_within: the promise made to the caller.
    walk_by       TEXT,
    started_at    TEXT,
    finished_at   TEXT,
    record_id     INTEGER,
    record_sha256 TEXT,
    intake_url    TEXT
);
CREATE INDEX reciprocal_walks_by_origin ON reciprocal_walks (origin, state);
CREATE INDEX reciprocal_walks_by_state ON reciprocal_walks (state, id);
