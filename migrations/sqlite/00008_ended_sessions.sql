-- Ended MCP sessions (DELETE), as in ../postgres/00009_replica_fanout.sql;
-- a row may go once until has passed. The embedded store serves one
-- process, so it has no change announcements: the admin API's changes
-- reach this process's caches and streams directly.

-- +goose Up
CREATE TABLE mcp_ended_sessions (
    id    TEXT PRIMARY KEY,
    until TEXT NOT NULL
) STRICT;
CREATE INDEX mcp_ended_sessions_until ON mcp_ended_sessions (until);

-- +goose Down
DROP TABLE mcp_ended_sessions;
