-- The trace id of a call's audit row, as in
-- ../postgres/00025_audit_trace_id.sql: NULL when traces are off and on
-- every row written before, which the audit chain's canonical form leaves
-- out, so the rows sealed before keep their hashes.

-- +goose Up
ALTER TABLE audit_events ADD COLUMN trace_id TEXT;

-- +goose Down
ALTER TABLE audit_events DROP COLUMN trace_id;
