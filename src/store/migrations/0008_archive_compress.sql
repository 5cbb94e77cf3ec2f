-- Migration 7 (issue 27): records at rest compressed, and retention into verifiable archives.
--
-- Records at rest: `records.canonical` now holds either the canonical bytes (every older row, and
-- any row whose bytes start with `{`) or one zstd frame of them (store::codec). The frame header
-- names its dictionary, kept here; dictionaries are never changed or removed, or the rows
-- compressed with them could not be read.
CREATE TABLE record_dicts (
    id         INTEGER PRIMARY KEY,      -- zstd's dictionary id (derived from its content)
    bytes      BLOB    NOT NULL,
    sha256     TEXT    NOT NULL CHECK (length(sha256) = 64),
    samples    INTEGER NOT NULL,         -- how many records it was trained on
    trained_at TEXT    NOT NULL
);
CREATE TRIGGER record_dicts_insert_only_update BEFORE UPDATE ON record_dicts
BEGIN SELECT RAISE(ABORT, 'record_dicts is insert-only'); END;
CREATE TRIGGER record_dicts_insert_only_delete BEFORE DELETE ON record_dicts
BEGIN SELECT RAISE(ABORT, 'record_dicts is insert-only: rows compressed with it need it'); END;

-- Retention (store::archive): a run of consecutive rows leaves the live store only into an
-- archive segment file, and only in the transaction that writes its cut: the range, the chain
-- value before it, its first and last rows' sha256 and chain hash, and the file's name and
-- sha256. `records verify` links the chain across the gap through the cut, and, given the
-- archive directory, re-verifies every archived row against it. `records import ARCHIVE` puts
-- the rows back and removes the cut.
CREATE TABLE record_cuts (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    first_id     INTEGER NOT NULL,
    last_id      INTEGER NOT NULL,
    count        INTEGER NOT NULL CHECK (count = last_id - first_id + 1),
    prev_chain   TEXT    NOT NULL CHECK (length(prev_chain) = 64),
    first_sha256 TEXT    NOT NULL CHECK (length(first_sha256) = 64),
    first_chain  TEXT    NOT NULL CHECK (length(first_chain) = 64),
    last_sha256  TEXT    NOT NULL CHECK (length(last_sha256) = 64),
    last_chain   TEXT    NOT NULL CHECK (length(last_chain) = 64),
    file         TEXT    NOT NULL,
    file_sha256  TEXT    NOT NULL CHECK (length(file_sha256) = 64),
    created_at   TEXT    NOT NULL,
    CHECK (first_id <= last_id)
);
CREATE UNIQUE INDEX record_cuts_first ON record_cuts (first_id);
CREATE TRIGGER record_cuts_insert_only_update BEFORE UPDATE ON record_cuts
BEGIN SELECT RAISE(ABORT, 'record_cuts is insert-only'); END;
-- A cut goes only when its rows are back (records import of its segment).
CREATE TRIGGER record_cuts_only_when_restored BEFORE DELETE ON record_cuts
WHEN (SELECT count(*) FROM records WHERE id BETWEEN OLD.first_id AND OLD.last_id) != OLD.count
BEGIN SELECT RAISE(ABORT, 'a cut is removed only when its rows are restored (records import)'); END;

-- Rows are still never deleted, except those a cut covers (written in the same transaction);
-- the triggers keep their names (tamper tests and auditors drop them by name).
DROP TRIGGER records_insert_only_delete;
CREATE TRIGGER records_insert_only_delete BEFORE DELETE ON records
WHEN NOT EXISTS (SELECT 1 FROM record_cuts c WHERE OLD.id BETWEEN c.first_id AND c.last_id)
BEGIN SELECT RAISE(ABORT, 'records are insert-only: rows leave only into an archive (records archive)'); END;
DROP TRIGGER kept_full_insert_only_delete;
CREATE TRIGGER kept_full_insert_only_delete BEFORE DELETE ON kept_full
WHEN NOT EXISTS (SELECT 1 FROM record_cuts c WHERE OLD.record_id BETWEEN c.first_id AND c.last_id)
BEGIN SELECT RAISE(ABORT, 'kept_full is insert-only: rows leave only into an archive'); END;

-- The facts of a compressed row cannot be read by SQL's JSON functions: the store writes them
-- (store::insert_facts, the same expressions over the bytes it compressed); this trigger keeps
-- doing it for raw rows.
DROP TRIGGER records_facts;
CREATE TRIGGER records_facts AFTER INSERT ON records
WHEN substr(NEW.canonical, 1, 1) = X'7B'
BEGIN
    INSERT INTO record_facts (record_id, sha256, walked_at, endpoint, outcome, n_pass, n_total,
        transport_error, failed, witness_name, vantage)
    VALUES (NEW.id, NEW.sha256, NEW.walked_at, NEW.endpoint, NEW.outcome, NEW.n_pass, NEW.n_total,
        EXISTS (SELECT 1 FROM json_each(CAST(NEW.canonical AS TEXT), '$.nodes') n
                WHERE json_extract(n.value, '$.kind') = 'fetch'
                  AND json_extract(n.value, '$.response.status') = 0),
        coalesce((SELECT group_concat(name, ',') FROM (
            SELECT CASE WHEN instr(c, ':') > 0 THEN trim(substr(c, 1, instr(c, ':') - 1)) ELSE trim(c) END AS name
            FROM (SELECT json_extract(a.value, '$.claim') AS c, a.key AS k
                  FROM json_each(CAST(NEW.canonical AS TEXT), '$.assertions') a
                  WHERE json_extract(a.value, '$.result') = 0)
            WHERE c IS NOT NULL ORDER BY k)), ''),
        json_extract(CAST(NEW.canonical AS TEXT), '$.witness.name'),
        json_extract(CAST(NEW.canonical AS TEXT), '$.witness.vantage'));
END;
