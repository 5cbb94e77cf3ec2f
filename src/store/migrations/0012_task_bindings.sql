-- Migration 0012 (issue 33, spec conduct-walk.md §5.1): task bindings. One row per record whose
-- walk was asked to bind its A2A Task to a task-delegation ledger: why it was skipped, or the
-- observation to send (the exact body, built and signed before the row is committed, in the
-- record's own transaction) and what became of it. Sent at most once: a row is marked
-- `sending` (committed) before its POST leaves, and a row a stopped process left `sending` is
-- settled as `unknown` and never sent again, since the ledger is not known to dedupe by
-- evidence_id. 0011 is reserved for the filing rewrite; this file runs after it.
CREATE TABLE task_bindings (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    record_id    INTEGER NOT NULL UNIQUE REFERENCES records (id),
    ledger_url   TEXT    NOT NULL,
    state        TEXT    NOT NULL CHECK (state IN
                     ('skipped', 'queued', 'sending', 'answered', 'failed', 'unknown')),
    -- skipped: the one-line reason; failed / unknown: why there is no answer.
    note         TEXT,
    task_id      TEXT,
    evidence_id  TEXT,
    witness_id   TEXT,                      -- W, did:key of the walk's signing key
    requester_id TEXT,                      -- P, did:key of the key made for this binding
    body         TEXT,                      -- exactly what is POSTed
    created_at   TEXT    NOT NULL,
    sent_at      TEXT,
    answered_at  TEXT,
    http_status  INTEGER,
    answer       TEXT,                      -- the JSON body, or {"raw": first 500 characters}
    CHECK ((state = 'skipped') = (body IS NULL))
);
CREATE INDEX task_bindings_queued ON task_bindings (id) WHERE state = 'queued';
CREATE INDEX task_bindings_sending ON task_bindings (sent_at) WHERE state = 'sending';
