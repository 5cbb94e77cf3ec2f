-- conduct-walker's own verification of a signed card (every algorithm, pinned keys, profiles,
-- uncovered members): richer than the record's `card_signature` block, which is the reference
-- walker's byte for byte (conduct-walk.md §4.3), so it is kept here, beside the record, written
-- in the record's transaction. Derived data: never part of a record's bytes, never read by
-- `records verify`; an archived record's row leaves with it.
CREATE TABLE card_verifications (
    record_id INTEGER PRIMARY KEY REFERENCES records (id),
    block     TEXT    NOT NULL
);
