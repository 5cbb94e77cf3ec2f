-- Migration 4: walks a model started through `conduct-walker mcp`, beside the records they
-- stored. The operator's per-UTC-day cap counts these rows, so it holds across server restarts
-- (an MCP client starts a fresh server process for every session).
CREATE TABLE mcp_walks (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    day            TEXT    NOT NULL,    -- UTC day the walk started (YYYY-MM-DD)
    started_at     TEXT    NOT NULL,
    origin         TEXT    NOT NULL,
    finished_at    TEXT,
    state          TEXT    NOT NULL CHECK (state IN ('running', 'done', 'cancelled', 'error')),
    record_sha256  TEXT,
    detail         TEXT
);
CREATE INDEX mcp_walks_day ON mcp_walks (day);
