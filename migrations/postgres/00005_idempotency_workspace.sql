-- Idempotency keys belong to a workspace: task ids are unique per
-- workspace only (tasks' primary key is workspace_id + id), so a key of
-- one workspace must never stand in the way of the same task id and key in
-- another (docs/architecture.md, Invariants: workspace isolation). docs/requirements.md#idempotency-keys scopes keys to
-- task_id + tool_name + key; the workspace is the task's.

-- +goose Up
ALTER TABLE mcp_idempotency_keys DROP CONSTRAINT mcp_idempotency_keys_pkey;
ALTER TABLE mcp_idempotency_keys ADD PRIMARY KEY (workspace_id, task_id, tool_name, key);

-- +goose Down
ALTER TABLE mcp_idempotency_keys DROP CONSTRAINT mcp_idempotency_keys_pkey;
ALTER TABLE mcp_idempotency_keys ADD PRIMARY KEY (task_id, tool_name, key);
