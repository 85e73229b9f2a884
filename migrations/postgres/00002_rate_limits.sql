-- Rate-limit counters (docs/requirements.md#rate-limits; docs/architecture.md, Data). One row per
-- bucket key and window. The gateway changes a counter only inside the
-- transaction that inserts the call's audit_events row, so the two commit
-- together: counts survive restarts and every replica sees the same ones.
-- Concurrent reservations of one bucket queue on the row lock that the
-- upsert takes, which is what makes "10 of 200 concurrent calls" exact.

-- +goose Up
CREATE TABLE rate_limit_counters (
    -- e.g. "mcpgate:task:ws-a/task-1:task.ops" (see gateway/ratelimit).
    bucket_key   text        NOT NULL,
    -- Start of the calendar window in UTC (hour or day); 1970-01-01 for
    -- per-task buckets, which have no window.
    window_start timestamptz NOT NULL,
    count        bigint      NOT NULL DEFAULT 0,
    -- When the window ends and the row may be swept; NULL for per-task buckets.
    expires_at   timestamptz,
    PRIMARY KEY (bucket_key, window_start)
);
-- The sweep deletes ended windows.
CREATE INDEX rate_limit_counters_expires ON rate_limit_counters (expires_at) WHERE expires_at IS NOT NULL;

-- +goose Down
DROP TABLE rate_limit_counters;
