-- Migration (issue 43, the witness pool's face): every nenrin-witness-request-v1 the face
-- answered or declined, so the status pages list them and an operator sees what the pool asked
-- of this witness. The observation itself is the requester's; only its identity is kept.
CREATE TABLE witness_requests (
    id             INTEGER PRIMARY KEY,
    received_at    TEXT NOT NULL,                 -- UTC, 2026-12-06T03:40:00.123Z
    outcome        TEXT NOT NULL CHECK (outcome IN ('answered', 'declined')),
    reason         TEXT,                          -- the decline reason (bad_request, ...), else NULL
    endpoint       TEXT,                          -- the request's endpoint, when it had one
    request_sha256 TEXT,
    record_sha256  TEXT,                          -- the signed observation's, when answered
    detail         TEXT                           -- the decline's why, short
);
CREATE INDEX witness_requests_recent ON witness_requests (id DESC);
