-- Two costs of every tools/call on PostgreSQL (issue 9, PostgreSQL CPU per
-- call):
--
-- 1. No query reads audit_events by surface: the admin listing filters by
--    workspace, task, tool and status (served by audit_events_workspace_time,
--    audit_events_task_tool and audit_events_time), the usage report by
--    workspace and profile, and rate-limit counts live in
--    rate_limit_counters. The surface index of 00010 only cost each audit
--    row one more index insertion.
--
-- 2. Finishing a batch of audit rows was one UPDATE … FROM unnest(…) sent
--    as a prepared statement. PostgreSQL planned it again on every batch: a
--    generic plan of unnest over parameters is estimated at 100 rows, so the
--    planner always preferred a custom plan, and planning cost more than the
--    update itself. mcpgate_finish_audits updates the rows one primary-key
--    UPDATE at a time inside the function, whose plan PL/pgSQL keeps for the
--    session (a generic plan: for an id lookup it costs the same as a custom
--    one). Its arguments are parallel arrays (id, status, error class,
--    latency in µs, reason codes as JSON text, policy revision); it returns
--    the ids it found. It turns synchronous_commit off for the transaction
--    it runs in (set_config(…, true)), as the statement it replaces did: the
--    finish of a call commits asynchronously, its reservation did not.

-- +goose Up
DROP INDEX audit_events_surface_time;

-- +goose StatementBegin
CREATE FUNCTION mcpgate_finish_audits(ids bigint[], statuses text[], classes text[], latencies bigint[],
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

-- +goose Down
DROP FUNCTION mcpgate_finish_audits(bigint[], text[], text[], bigint[], text[], text[]);
CREATE INDEX audit_events_surface_time ON audit_events (surface, time);
