-- No query reads audit_events by surface: the admin listing filters by
-- workspace, task, tool and status (served by audit_events_workspace_time,
-- audit_events_task_tool and audit_events_time), the usage report by
-- workspace and profile, and rate-limit counts live in rate_limit_counters.
-- The surface index of 00009 only cost every tools/call one more index
-- insertion and one more page in its reservation's commit (issue 9, SQLite
-- gateway CPU per call); PostgreSQL dropped its twin in its migration 00015.

-- +goose Up
DROP INDEX audit_events_surface_time;

-- +goose Down
CREATE INDEX audit_events_surface_time ON audit_events (surface, time);
