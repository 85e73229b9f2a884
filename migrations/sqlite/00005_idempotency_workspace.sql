-- Idempotency keys belong to a workspace, as in
-- ../postgres/00005_idempotency_workspace.sql. SQLite cannot change a
-- primary key in place, so the table is rebuilt with its rows.

-- +goose Up
CREATE TABLE mcp_idempotency_keys_new (
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    task_id      TEXT NOT NULL,
    tool_name    TEXT NOT NULL,
    key          TEXT NOT NULL CONSTRAINT mcp_idempotency_keys_key_check CHECK (key <> ''),
    input_hash   TEXT NOT NULL,
    result       TEXT CHECK (result IS NULL OR json_valid(result)),
    created_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%S', 'now') || substr(strftime('%f', 'now'), 3) || '000Z'),
    PRIMARY KEY (workspace_id, task_id, tool_name, key)
) STRICT;
INSERT INTO mcp_idempotency_keys_new SELECT workspace_id, task_id, tool_name, key, input_hash, result, created_at FROM mcp_idempotency_keys;
DROP TABLE mcp_idempotency_keys;
ALTER TABLE mcp_idempotency_keys_new RENAME TO mcp_idempotency_keys;
CREATE INDEX mcp_idempotency_keys_created ON mcp_idempotency_keys (created_at);

-- +goose Down
CREATE TABLE mcp_idempotency_keys_old (
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    task_id      TEXT NOT NULL,
    tool_name    TEXT NOT NULL,
    key          TEXT NOT NULL CONSTRAINT mcp_idempotency_keys_key_check CHECK (key <> ''),
    input_hash   TEXT NOT NULL,
    result       TEXT CHECK (result IS NULL OR json_valid(result)),
    created_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%S', 'now') || substr(strftime('%f', 'now'), 3) || '000Z'),
    PRIMARY KEY (task_id, tool_name, key)
) STRICT;
-- Plain INSERT: keys that the same task id holds in two workspaces cannot
-- go back to the old key, and the downgrade fails rather than drop one.
INSERT INTO mcp_idempotency_keys_old SELECT workspace_id, task_id, tool_name, key, input_hash, result, created_at FROM mcp_idempotency_keys;
DROP TABLE mcp_idempotency_keys;
ALTER TABLE mcp_idempotency_keys_old RENAME TO mcp_idempotency_keys;
CREATE INDEX mcp_idempotency_keys_created ON mcp_idempotency_keys (created_at);
