-- Rate-limit counters for the embedded store: the same logical table as
-- ../postgres/00002_rate_limits.sql. Times are TEXT in the shape of
-- 00001_init.sql ('YYYY-MM-DDTHH:MM:SS.ffffffZ', UTC), so that text order is
-- time order. Counters change only inside the write transaction that inserts
-- the call's audit_events row; the store's single write connection
-- serialises those transactions.

-- +goose Up
CREATE TABLE rate_limit_counters (
    bucket_key   TEXT    NOT NULL,
    window_start TEXT    NOT NULL,
    count        INTEGER NOT NULL DEFAULT 0,
    expires_at   TEXT,
    PRIMARY KEY (bucket_key, window_start)
) STRICT, WITHOUT ROWID;
CREATE INDEX rate_limit_counters_expires ON rate_limit_counters (expires_at) WHERE expires_at IS NOT NULL;

-- +goose Down
DROP TABLE rate_limit_counters;
