-- The audit chain's seals move out of audit_events (issue 26, step 2;
-- docs/architecture.md, "The audit chain"), as in the PostgreSQL
-- migration 00021: audit_unsealed holds the id of every row not sealed
-- yet (a trigger adds it in the insert's transaction), audit_seals one
-- row per sealed row (seq, the audit row's id, its hash). An audit row is
-- written by its insert and its finish only; a finish changes a row only
-- while its audit_unsealed entry exists.

-- +goose Up
CREATE TABLE audit_seals (
    seq  INTEGER PRIMARY KEY,
    id   INTEGER NOT NULL,
    hash TEXT    NOT NULL
) STRICT;
CREATE UNIQUE INDEX audit_seals_id ON audit_seals (id);
INSERT INTO audit_seals (seq, id, hash) SELECT seq, id, hash FROM audit_events WHERE seq IS NOT NULL;

CREATE TABLE audit_unsealed (
    id INTEGER PRIMARY KEY
) STRICT;
INSERT INTO audit_unsealed (id) SELECT id FROM audit_events WHERE hash IS NULL;

-- +goose StatementBegin
CREATE TRIGGER audit_events_unsealed AFTER INSERT ON audit_events
BEGIN
    INSERT INTO audit_unsealed (id) VALUES (new.id);
END;
-- +goose StatementEnd

DROP INDEX audit_events_unsealed;
DROP INDEX audit_events_seq;
ALTER TABLE audit_events DROP COLUMN seq;
ALTER TABLE audit_events DROP COLUMN hash;

-- +goose Down
ALTER TABLE audit_events ADD COLUMN seq INTEGER;
ALTER TABLE audit_events ADD COLUMN hash TEXT;
UPDATE audit_events SET seq = (SELECT s.seq FROM audit_seals s WHERE s.id = audit_events.id),
    hash = (SELECT s.hash FROM audit_seals s WHERE s.id = audit_events.id);
CREATE UNIQUE INDEX audit_events_seq ON audit_events (seq) WHERE seq IS NOT NULL;
CREATE INDEX audit_events_unsealed ON audit_events (id) WHERE hash IS NULL;
DROP TRIGGER audit_events_unsealed;
DROP TABLE audit_unsealed;
DROP TABLE audit_seals;
