-- The session history of flow rules, as in ../postgres/00022_flow_sessions.sql;
-- reservations run on the one write connection, so they take turns on a
-- flow key without a row lock.

-- +goose Up
CREATE TABLE flow_sessions (
    flow_key     TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    task_id      TEXT NOT NULL DEFAULT '',
    reads        TEXT NOT NULL DEFAULT '[]',
    tools        TEXT NOT NULL DEFAULT '[]',
    updated_at   TEXT NOT NULL
) STRICT;
CREATE INDEX flow_sessions_task ON flow_sessions (workspace_id, task_id) WHERE task_id <> '';
CREATE INDEX flow_sessions_updated ON flow_sessions (updated_at);

-- +goose Down
DROP TABLE flow_sessions;
