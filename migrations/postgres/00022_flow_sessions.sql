-- The session history of flow rules (docs/requirements.md#flow-rules,
-- docs/architecture.md "Flow rules and their order"): one row per flow key
-- (a task, an API token, a cc_server conversation). reads is a JSON array
-- of the first call that read each label, sorted by label
-- ([{"label", "tool", "audit_id", "time"}]); tools a JSON array of the
-- distinct tools called, at most gateway.MaxFlowTools. A reservation
-- locks the row (its upsert) before it checks and records, so a read and
-- an egress of one session on two replicas take turns. The row ends with
-- its task (task_id, when the key is a task's) or after a day idle.

-- +goose Up
CREATE TABLE flow_sessions (
    flow_key     text        PRIMARY KEY,
    workspace_id text        NOT NULL,
    task_id      text        NOT NULL DEFAULT '',
    reads        text        NOT NULL DEFAULT '[]',
    tools        text        NOT NULL DEFAULT '[]',
    updated_at   timestamptz NOT NULL
);
CREATE INDEX flow_sessions_task ON flow_sessions (workspace_id, task_id) WHERE task_id <> '';
CREATE INDEX flow_sessions_updated ON flow_sessions (updated_at);

-- +goose Down
DROP TABLE flow_sessions;
