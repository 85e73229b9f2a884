-- Signed checkpoints of the audit chain, as in
-- ../postgres/00024_audit_checkpoints.sql (time as text in the stores'
-- layout, UTC with six fractional digits).

-- +goose Up
CREATE TABLE audit_checkpoints (
    seq       INTEGER PRIMARY KEY,
    hash      TEXT    NOT NULL,
    time      TEXT    NOT NULL,
    key_id    TEXT    NOT NULL DEFAULT '',
    signature TEXT    NOT NULL DEFAULT ''
) STRICT;
CREATE INDEX audit_checkpoints_time ON audit_checkpoints (time);

-- +goose Down
DROP TABLE audit_checkpoints;
