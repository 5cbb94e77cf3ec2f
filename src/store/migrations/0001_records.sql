-- Migration 1: the walk records and, for commitment-mode walks, the full record kept beside.
--
-- `records` is append-only: rows are never updated or deleted (triggers below refuse both), and
-- each row's chain_hash = sha256(previous row's chain_hash || this row's sha256), over the raw
-- 32-byte values, with 32 zero bytes before the first row. AUTOINCREMENT keeps ids from being
-- reused, so sqlite_sequence also remembers rows removed from the end.
CREATE TABLE records (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    sha256         TEXT    NOT NULL UNIQUE CHECK (length(sha256) = 64),
    canonical      BLOB    NOT NULL,
    signature_b64  TEXT,
    public_key_b64 TEXT,
    signed         INTEGER NOT NULL CHECK (signed IN (0, 1)),
    endpoint       TEXT    NOT NULL,
    origin         TEXT    NOT NULL,
    walked_at      TEXT    NOT NULL,
    walker_mode    TEXT,
    privacy_mode   TEXT    NOT NULL,
    verdict_ok     INTEGER CHECK (verdict_ok IN (0, 1)),
    outcome        TEXT,
    n_pass         INTEGER,
    n_total        INTEGER,
    key_url        TEXT,
    inserted_at    TEXT    NOT NULL,
    chain_hash     TEXT    NOT NULL CHECK (length(chain_hash) = 64),
    CHECK ((signature_b64 IS NULL) = (public_key_b64 IS NULL)),
    CHECK (signed = (signature_b64 IS NOT NULL))
);
CREATE INDEX records_walked_at ON records (walked_at);
CREATE INDEX records_endpoint ON records (endpoint, walked_at);

-- Commitment mode (conduct-walk.md §4.6): the filed record is in `records`; the full record and
-- its salt are kept here so the commitment can be revealed later. Never filed anywhere.
CREATE TABLE kept_full (
    record_id INTEGER PRIMARY KEY REFERENCES records (id),
    canonical BLOB    NOT NULL,
    sha256    TEXT    NOT NULL CHECK (length(sha256) = 64),
    salt_hex  TEXT    NOT NULL CHECK (length(salt_hex) = 64)
);

CREATE TRIGGER records_insert_only_update BEFORE UPDATE ON records
BEGIN SELECT RAISE(ABORT, 'records are insert-only: corrections are new rows'); END;
CREATE TRIGGER records_insert_only_delete BEFORE DELETE ON records
BEGIN SELECT RAISE(ABORT, 'records are insert-only: rows are never deleted'); END;
CREATE TRIGGER kept_full_insert_only_update BEFORE UPDATE ON kept_full
BEGIN SELECT RAISE(ABORT, 'kept_full is insert-only'); END;
CREATE TRIGGER kept_full_insert_only_delete BEFORE DELETE ON kept_full
BEGIN SELECT RAISE(ABORT, 'kept_full is insert-only'); END;
