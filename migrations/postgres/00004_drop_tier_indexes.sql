-- The two tier indexes of audit_events were made for deriving rate-limit
-- counts from the audit trail (00001_init.sql: "Workspace-day caps count one
-- tier in a time window", "Profile-hour caps count one profile's tier").
-- The counts live in rate_limit_counters since 00002, and no query reads
-- audit_events by tier: the indexes only cost every tools/call two more
-- index insertions on the hot path (issue #3, reservation benchmark).

-- +goose Up
DROP INDEX audit_events_workspace_tier_time;
DROP INDEX audit_events_profile_tier_time;

-- +goose Down
CREATE INDEX audit_events_workspace_tier_time ON audit_events (workspace_id, tier, time);
CREATE INDEX audit_events_profile_tier_time ON audit_events (profile_id, tier, time);
