-- Per-task rate-limit counters name their task, so that the sweep can
-- delete them 24 hours after the task reached a terminal state: the same
-- columns as ../postgres/00003_reserve_counts.sql
-- (the embedded store needs no function: its single write connection runs
-- a reservation's statements one after another).

-- +goose Up
ALTER TABLE rate_limit_counters ADD COLUMN task_workspace_id TEXT;
ALTER TABLE rate_limit_counters ADD COLUMN task_id TEXT;
CREATE INDEX rate_limit_counters_task ON rate_limit_counters (task_workspace_id, task_id) WHERE task_id IS NOT NULL;

-- +goose Down
DROP INDEX rate_limit_counters_task;
ALTER TABLE rate_limit_counters DROP COLUMN task_id;
ALTER TABLE rate_limit_counters DROP COLUMN task_workspace_id;
