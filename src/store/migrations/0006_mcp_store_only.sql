-- Migration 6: the MCP server caps walks that file with the intake (the lane's budget) apart
-- from store-only walks (their own, larger cap), so each row says which it was. Rows from
-- before count as filing walks, the stricter of the two.
ALTER TABLE mcp_walks ADD COLUMN files INTEGER NOT NULL DEFAULT 1 CHECK (files IN (0, 1));
CREATE INDEX mcp_walks_day_files ON mcp_walks (day, files);
