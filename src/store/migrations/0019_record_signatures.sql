-- Migration 19 (issue 45): every signature the store made for a record. A record waiting in the
-- outbox is signed again at filing time with the key `key_url` serves then (witness-pool.md
-- §8.5), so one record can carry several signatures: the walk-time one stays in `records`
-- (whose rows never change, and whose chain covers the bytes, not the signatures) and is copied
-- here too, so this table alone answers "which keys signed this record, and when".
-- No foreign key: a row outlives its record's archiving (the archive deletes `records` rows),
-- and `records verify` reads the signatures of the rows it finds.
CREATE TABLE record_signatures (
    record_id      INTEGER NOT NULL,
    public_key_b64 TEXT    NOT NULL,
    signature_b64  TEXT    NOT NULL,
    signed_at      TEXT    NOT NULL,
    made_at        TEXT    NOT NULL CHECK (made_at IN ('walk', 'filing')),
    -- Ed25519 is deterministic: one key gives one signature over the same bytes.
    PRIMARY KEY (record_id, public_key_b64)
);

INSERT INTO record_signatures (record_id, public_key_b64, signature_b64, signed_at, made_at)
SELECT id, public_key_b64, signature_b64, inserted_at, 'walk' FROM records
WHERE signature_b64 IS NOT NULL;

-- The walk-time signature is copied in the record's own transaction, whoever inserts it (a
-- walk, `records import`).
CREATE TRIGGER record_signatures_walk AFTER INSERT ON records
WHEN NEW.signature_b64 IS NOT NULL
BEGIN
    INSERT OR IGNORE INTO record_signatures
        (record_id, public_key_b64, signature_b64, signed_at, made_at)
    VALUES (NEW.id, NEW.public_key_b64, NEW.signature_b64, NEW.inserted_at, 'walk');
END;

CREATE TRIGGER record_signatures_insert_only_update BEFORE UPDATE ON record_signatures
BEGIN
    SELECT RAISE(ABORT, 'record_signatures is insert-only');
END;
