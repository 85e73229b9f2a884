-- The tamper-evident chain over the audit trail, as in
-- ../postgres/00019_audit_chain.sql. SQLite cannot change a column's
-- default, so open is added with the default of new rows (1: a
-- reservation's row is open until FinishAudit) and the rows that exist
-- now, all finished, are closed by the UPDATE.

-- +goose Up
ALTER TABLE audit_events ADD COLUMN kind TEXT NOT NULL DEFAULT 'tool_call';
ALTER TABLE audit_events ADD COLUMN open INTEGER NOT NULL DEFAULT 1 CHECK (open IN (0, 1));
UPDATE audit_events SET open = 0;
ALTER TABLE audit_events ADD COLUMN seq INTEGER;
ALTER TABLE audit_events ADD COLUMN hash TEXT;
CREATE UNIQUE INDEX audit_events_seq ON audit_events (seq) WHERE seq IS NOT NULL;
CREATE INDEX audit_events_unsealed ON audit_events (id) WHERE hash IS NULL;

CREATE TABLE audit_chain (
    id        INTEGER PRIMARY KEY CHECK (id = 1),
    seq       INTEGER NOT NULL,
    hash      TEXT    NOT NULL,
    sealed_at TEXT
) STRICT;
INSERT INTO audit_chain (id, seq, hash) VALUES (1, 0, '0000000000000000000000000000000000000000000000000000000000000000');

-- +goose Down
DROP TABLE audit_chain;
DROP INDEX audit_events_unsealed;
DROP INDEX audit_events_seq;
ALTER TABLE audit_events DROP COLUMN hash;
ALTER TABLE audit_events DROP COLUMN seq;
ALTER TABLE audit_events DROP COLUMN open;
ALTER TABLE audit_events DROP COLUMN kind;
