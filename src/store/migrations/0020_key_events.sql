-- Migration 20 (issue 45): the witness key's history, one row per change (its first key
-- recorded, a rotation, a revocation). Each row is a link of a hash chain of its own:
-- chain_hash = sha256(previous row's chain_hash || sha256(canonical JSON of the event)), 32 zero
-- bytes before the first row, over the raw 32-byte values as the records' chain. The event names
-- the records' chain head at that moment (`records_head`), so an audit places each key change
-- among the records; a key's `since_commit` in the history is the first 8 hex of the chain hash
-- of the row that recorded its creation. `history` is the KEY_HISTORY_v1 hashed members after
-- the change (canonical JSON), `history_sha256` their sha256.
CREATE TABLE key_events (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    at              TEXT    NOT NULL,
    event           TEXT    NOT NULL CHECK (event IN ('recorded', 'rotated', 'revoked')),
    public_key_b64  TEXT    NOT NULL,
    records_head    TEXT,
    event_canonical BLOB    NOT NULL,
    chain_hash      TEXT    NOT NULL CHECK (length(chain_hash) = 64),
    history         BLOB    NOT NULL,
    history_sha256  TEXT    NOT NULL CHECK (length(history_sha256) = 64)
);

CREATE TRIGGER key_events_insert_only_update BEFORE UPDATE ON key_events
BEGIN
    SELECT RAISE(ABORT, 'key_events is insert-only');
END;

CREATE TRIGGER key_events_insert_only_delete BEFORE DELETE ON key_events
BEGIN
    SELECT RAISE(ABORT, 'key_events is insert-only');
END;
