-- The audit chain's seals move out of audit_events (issue 26, step 2;
-- docs/architecture.md, "The audit chain").
--
-- Sealing used to UPDATE every audit row a second time (seq, hash): a new
-- version of a wide row, and, since seq and hash are indexed (or in an
-- index's predicate), an entry in each of audit_events' nine indexes, plus
-- a row lock first; PostgreSQL's CPU per call grew by 13-22 % at c=16.
-- Now an audit row is written by its insert and its finish only:
--
-- audit_unsealed holds the id of every row not sealed yet; a BEFORE INSERT
-- trigger adds it in the insert's own transaction (every path that inserts
-- an audit row, the reservation functions included), so a reservation
-- that rolls back leaves nothing. The sealer deletes the ids it seals.
-- audit_seals holds one narrow row per sealed row: seq (the chain order),
-- the audit row's id and its hash.
--
-- A finish first takes a KEY SHARE lock on the row's audit_unsealed entry:
-- a sealer that claims (deletes) the entry waits for the finish to commit
-- and then reads the finished row; a finish that comes after the claim
-- finds no entry and changes nothing (the store reports the row not found).

-- +goose Up
CREATE TABLE audit_seals (
    seq  bigint PRIMARY KEY,
    id   bigint NOT NULL,
    hash text   NOT NULL
);
CREATE UNIQUE INDEX audit_seals_id ON audit_seals (id);
INSERT INTO audit_seals (seq, id, hash) SELECT seq, id, hash FROM audit_events WHERE seq IS NOT NULL;

CREATE TABLE audit_unsealed (
    id bigint PRIMARY KEY
);
INSERT INTO audit_unsealed (id) SELECT id FROM audit_events WHERE hash IS NULL;

-- +goose StatementBegin
CREATE FUNCTION mcpgate_audit_unsealed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO audit_unsealed (id) VALUES (NEW.id);
    RETURN NEW;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER audit_events_unsealed BEFORE INSERT ON audit_events
    FOR EACH ROW EXECUTE FUNCTION mcpgate_audit_unsealed();

DROP INDEX audit_events_unsealed;
DROP INDEX audit_events_seq;
ALTER TABLE audit_events DROP COLUMN seq, DROP COLUMN hash;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION mcpgate_finish_audits(ids bigint[], statuses text[], classes text[], latencies bigint[],
    reasons text[], revisions text[])
RETURNS bigint[]
LANGUAGE plpgsql AS $$
DECLARE
    found_ids bigint[] := '{}';
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    FOR i IN 1 .. coalesce(array_length(ids, 1), 0) LOOP
        PERFORM 1 FROM audit_unsealed WHERE id = ids[i] FOR KEY SHARE;
        CONTINUE WHEN NOT FOUND;
        UPDATE audit_events SET status = statuses[i], error_class = classes[i], latency_us = latencies[i],
            reason_codes = reasons[i]::jsonb, policy_revision = revisions[i], open = false
        WHERE id = ids[i];
        IF FOUND THEN
            found_ids := found_ids || ids[i];
        END IF;
    END LOOP;
    RETURN found_ids;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION mcpgate_finish_audits(ids bigint[], statuses text[], classes text[], latencies bigint[],
    reasons text[], revisions text[])
RETURNS bigint[]
LANGUAGE plpgsql AS $$
DECLARE
    found_ids bigint[] := '{}';
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    FOR i IN 1 .. coalesce(array_length(ids, 1), 0) LOOP
        UPDATE audit_events SET status = statuses[i], error_class = classes[i], latency_us = latencies[i],
            reason_codes = reasons[i]::jsonb, policy_revision = revisions[i], open = false
        WHERE id = ids[i] AND hash IS NULL;
        IF FOUND THEN
            found_ids := found_ids || ids[i];
        END IF;
    END LOOP;
    RETURN found_ids;
END
$$;
-- +goose StatementEnd
ALTER TABLE audit_events ADD COLUMN seq bigint, ADD COLUMN hash text;
UPDATE audit_events a SET seq = s.seq, hash = s.hash FROM audit_seals s WHERE s.id = a.id;
CREATE UNIQUE INDEX audit_events_seq ON audit_events (seq) WHERE seq IS NOT NULL;
CREATE INDEX audit_events_unsealed ON audit_events (id) WHERE hash IS NULL;
DROP TRIGGER audit_events_unsealed ON audit_events;
DROP FUNCTION mcpgate_audit_unsealed();
DROP TABLE audit_unsealed;
DROP TABLE audit_seals;
