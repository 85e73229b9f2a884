-- The tamper-evident chain over the audit trail (issue 26; docs/architecture.md,
-- "The audit chain").
--
-- kind names what a row records (tool_call for every row so far); open is
-- true while the call a reservation recorded has not finished: its status
-- and latency are the reservation's, FinishAudit writes the final ones and
-- closes it. The sealer (gateway/auditchain, sqlcore.Core.SealAudit) gives
-- each closed row, in id order, the next seq and hash = SHA-256(previous
-- hash || RFC 8785 of the row); audit_chain holds the last seq and hash it
-- sealed. seq is given at sealing, not at insert, so a reservation that
-- rolls back leaves no hole. Rows that exist now are finished (open false);
-- rows inserted from now on are open unless their INSERT says otherwise
-- (RecordAudit writes finished rows, reservations open ones).
--
-- audit_events_unsealed holds only the rows not sealed yet (a few seconds'
-- worth), which is what the sealer reads; audit_events_seq only sealed rows,
-- so an insert touches neither the seq index nor a NULL entry in it.

-- +goose Up
ALTER TABLE audit_events ADD COLUMN kind text NOT NULL DEFAULT 'tool_call';
ALTER TABLE audit_events ADD COLUMN open boolean NOT NULL DEFAULT false;
ALTER TABLE audit_events ALTER COLUMN open SET DEFAULT true;
ALTER TABLE audit_events ADD COLUMN seq bigint;
ALTER TABLE audit_events ADD COLUMN hash text;
CREATE UNIQUE INDEX audit_events_seq ON audit_events (seq) WHERE seq IS NOT NULL;
CREATE INDEX audit_events_unsealed ON audit_events (id) WHERE hash IS NULL;

CREATE TABLE audit_chain (
    id        integer     PRIMARY KEY CHECK (id = 1),
    seq       bigint      NOT NULL,
    hash      text        NOT NULL,
    sealed_at timestamptz
);
INSERT INTO audit_chain (id, seq, hash) VALUES (1, 0, '0000000000000000000000000000000000000000000000000000000000000000');

-- FinishAudit closes the row, and never changes a sealed one: a row sealed
-- while open (its gateway died, or the call outlived the sealer's bound)
-- stays as it was sealed, and the late finish is reported as not found.
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
            reason_codes = reasons[i]::jsonb, policy_revision = revisions[i]
        WHERE id = ids[i];
        IF FOUND THEN
            found_ids := found_ids || ids[i];
        END IF;
    END LOOP;
    RETURN found_ids;
END
$$;
-- +goose StatementEnd
DROP TABLE audit_chain;
DROP INDEX audit_events_unsealed;
DROP INDEX audit_events_seq;
ALTER TABLE audit_events DROP COLUMN hash;
ALTER TABLE audit_events DROP COLUMN seq;
ALTER TABLE audit_events DROP COLUMN open;
ALTER TABLE audit_events DROP COLUMN kind;
