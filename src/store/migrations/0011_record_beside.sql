-- What conduct-walker checks of a walked card beyond the reference walker, kept beside the
-- record (conduct-walk.md "How to read this", item 4): the record's bytes are the reference's,
-- so its own verification of a signed card (every algorithm, pinned keys, profiles, uncovered
-- members) and its check of an A2A Terms listing (the block and the lines it would add) live
-- here, written in the record's transaction. Derived data: never part of a record's bytes, never
-- read by `records verify`; an archived record's row leaves with it.
CREATE TABLE record_beside (
    record_id         INTEGER PRIMARY KEY REFERENCES records (id),
    card_verification TEXT,
    terms             TEXT
);
