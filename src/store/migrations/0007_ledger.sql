-- Migration 7 (issue 23): the ledger monitor's tables. None of them touches `records`,
-- `submissions` or the records chain: a ledger that lies, stalls or is down changes only these.
--
-- `ledger_follow`: one row per submission the intake accepted (201 or a dedupe answer), written
-- in the transaction that marks the submission filed (store::outbox::record_attempt), and for
-- the rows already filed here once. No foreign keys (as record_facts: a tampered store must stay
-- readable).
CREATE TABLE ledger_follow (
    submission_id INTEGER PRIMARY KEY,
    record_id     INTEGER NOT NULL,
    sha256        TEXT    NOT NULL,
    intake_url    TEXT    NOT NULL,
    state         TEXT    NOT NULL CHECK (state IN ('pending', 'anchored', 'finding')),
    filed_at      TEXT    NOT NULL,
    next_poll_at  TEXT,                -- NULL: no more reads (anchored, inclusion settled)
    polls         INTEGER NOT NULL DEFAULT 0,
    last_poll_at  TEXT,
    last_seen     TEXT,                -- not_found, pending, anchored, unreadable
    seen          INTEGER NOT NULL DEFAULT 0 CHECK (seen IN (0, 1)),
    listed_in     INTEGER,             -- batch entry seen listing it (before the read)
    ledger_entry  INTEGER,
    claim_sha256  TEXT,                -- the batch's claim_sha256
    stored_sha256 TEXT,                -- sha256 of the intake's copy of the bytes
    anchored_at   TEXT,                -- first seen anchored
    verified_at   TEXT,                -- inclusion verified (ledger.md §7 steps 2-3)
    overdue_at    TEXT                 -- the overdue finding was opened
);
CREATE INDEX ledger_follow_due ON ledger_follow (intake_url, next_poll_at);
CREATE INDEX ledger_follow_sha ON ledger_follow (intake_url, sha256);
CREATE INDEX ledger_follow_overdue ON ledger_follow (intake_url, state, filed_at);
CREATE INDEX ledger_follow_record ON ledger_follow (record_id);   -- retention's hold (store::archive)

-- Per intake: the poll bucket, the held head and the counters the faces read (kept by the
-- triggers below and by the follower, never by scanning history).
CREATE TABLE ledger_intakes (
    intake_url      TEXT    PRIMARY KEY,
    bucket_tokens   REAL,
    bucket_at       TEXT,
    head_n          INTEGER,
    head            TEXT,
    head_seen_at    TEXT,
    filed           INTEGER NOT NULL DEFAULT 0,
    pending         INTEGER NOT NULL DEFAULT 0,
    anchored        INTEGER NOT NULL DEFAULT 0,
    with_finding    INTEGER NOT NULL DEFAULT 0,
    verified        INTEGER NOT NULL DEFAULT 0,
    overdue         INTEGER NOT NULL DEFAULT 0,
    findings        INTEGER NOT NULL DEFAULT 0,
    reads           INTEGER NOT NULL DEFAULT 0,
    passes          INTEGER NOT NULL DEFAULT 0,
    last_pass_at    TEXT
);

-- Every head held, append-only: (n, head) as recomputed and agreed with the served head.
CREATE TABLE ledger_heads (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    intake_url TEXT    NOT NULL,
    n          INTEGER NOT NULL,
    head       TEXT    NOT NULL,
    seen_at    TEXT    NOT NULL
);
CREATE INDEX ledger_heads_intake ON ledger_heads (intake_url, id);

-- Every entry fetched or recomputed: its claim, the hash of its raw bytes (when read) and the
-- chain head after it.
CREATE TABLE ledger_entries (
    intake_url   TEXT    NOT NULL,
    n            INTEGER NOT NULL,
    claim_sha256 TEXT    NOT NULL,
    raw_sha256   TEXT,
    entry_sha256 TEXT    NOT NULL,
    kind         TEXT,                 -- batch, checkpoint, other (when read)
    rows         INTEGER,              -- batch rows
    seen_at      TEXT    NOT NULL,
    PRIMARY KEY (intake_url, n)
);

-- Findings with their evidence (JSON: both heads, both claims, the bytes' hashes, and the
-- bytes when short). A finding is opened once per evidence; nothing closes it silently.
CREATE TABLE ledger_findings (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    intake_url      TEXT    NOT NULL,
    kind            TEXT    NOT NULL,
    sha256          TEXT,              -- our record, when about one
    entry_n         INTEGER,           -- the entry, when about one
    evidence        TEXT    NOT NULL,
    evidence_sha256 TEXT    NOT NULL,
    opened_at       TEXT    NOT NULL,
    UNIQUE (intake_url, kind, evidence_sha256)
);
CREATE INDEX ledger_findings_sha ON ledger_findings (sha256);

-- The measured party's replies as served (ledger.md §2.4): not anchored, may change; every
-- version seen is kept, by the hash of the `responses` array as served.
CREATE TABLE ledger_responses (
    intake_url     TEXT NOT NULL,
    sha256         TEXT NOT NULL,
    content_sha256 TEXT NOT NULL,
    responses      TEXT NOT NULL,
    count          INTEGER NOT NULL,
    first_seen     TEXT NOT NULL,
    PRIMARY KEY (intake_url, sha256, content_sha256)
);

-- Other witnesses' records about watched endpoints (`ledger pull`), read from the intake and
-- checked against their anchored batch. Apart from our records and chain; the ledger keeps no
-- signature, so none is here.
CREATE TABLE foreign_records (
    intake_url       TEXT    NOT NULL,
    sha256           TEXT    NOT NULL,
    endpoint         TEXT    NOT NULL,
    ledger_entry     INTEGER NOT NULL,
    record_canonical TEXT    NOT NULL,
    witness_name     TEXT    NOT NULL,
    vantage          TEXT    NOT NULL,
    signed           INTEGER NOT NULL,
    signed_domain    TEXT,
    mode             TEXT    NOT NULL,
    walked_at        TEXT,
    outcome          TEXT,
    checked          TEXT    NOT NULL,  -- "ok", or the findings of the batch check
    fetched_at       TEXT    NOT NULL,
    PRIMARY KEY (intake_url, sha256)
);
CREATE INDEX foreign_records_endpoint ON foreign_records (endpoint, walked_at);

-- How far `ledger pull` has read an intake's batches for an endpoint.
CREATE TABLE ledger_pulls (
    intake_url TEXT    NOT NULL,
    endpoint   TEXT    NOT NULL,
    upto_n     INTEGER NOT NULL,
    pulled_at  TEXT    NOT NULL,
    PRIMARY KEY (intake_url, endpoint)
);

CREATE TRIGGER ledger_follow_counts_insert AFTER INSERT ON ledger_follow
BEGIN
    INSERT OR IGNORE INTO ledger_intakes (intake_url) VALUES (NEW.intake_url);
    UPDATE ledger_intakes SET filed = filed + 1,
        pending = pending + (NEW.state = 'pending'),
        anchored = anchored + (NEW.state = 'anchored'),
        with_finding = with_finding + (NEW.state = 'finding')
    WHERE intake_url = NEW.intake_url;
END;
CREATE TRIGGER ledger_follow_counts_state AFTER UPDATE OF state ON ledger_follow
WHEN OLD.state <> NEW.state
BEGIN
    UPDATE ledger_intakes SET
        pending = pending - (OLD.state = 'pending') + (NEW.state = 'pending'),
        anchored = anchored - (OLD.state = 'anchored') + (NEW.state = 'anchored'),
        with_finding = with_finding - (OLD.state = 'finding') + (NEW.state = 'finding')
    WHERE intake_url = NEW.intake_url;
END;
CREATE TRIGGER ledger_follow_counts_verified AFTER UPDATE OF verified_at ON ledger_follow
WHEN OLD.verified_at IS NULL AND NEW.verified_at IS NOT NULL
BEGIN
    UPDATE ledger_intakes SET verified = verified + 1 WHERE intake_url = NEW.intake_url;
END;
CREATE TRIGGER ledger_follow_counts_overdue AFTER UPDATE OF overdue_at ON ledger_follow
WHEN OLD.overdue_at IS NULL AND NEW.overdue_at IS NOT NULL
BEGIN
    UPDATE ledger_intakes SET overdue = overdue + 1 WHERE intake_url = NEW.intake_url;
END;
CREATE TRIGGER ledger_findings_count AFTER INSERT ON ledger_findings
BEGIN
    INSERT OR IGNORE INTO ledger_intakes (intake_url) VALUES (NEW.intake_url);
    UPDATE ledger_intakes SET findings = findings + 1 WHERE intake_url = NEW.intake_url;
END;
CREATE TRIGGER ledger_findings_append_only_update BEFORE UPDATE ON ledger_findings
BEGIN SELECT RAISE(ABORT, 'ledger_findings is append-only'); END;
CREATE TRIGGER ledger_findings_append_only_delete BEFORE DELETE ON ledger_findings
BEGIN SELECT RAISE(ABORT, 'ledger_findings is append-only'); END;

-- The submissions filed before this migration are followed from now on (first read: now).
INSERT INTO ledger_follow (submission_id, record_id, sha256, intake_url, state, filed_at, next_poll_at)
SELECT s.id, s.record_id, r.sha256, s.intake_url, 'pending', s.updated_at, s.updated_at
FROM submissions s JOIN records r ON r.id = s.record_id
WHERE s.state = 'filed';
