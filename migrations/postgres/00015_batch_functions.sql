-- Three costs of every tools/call on PostgreSQL (issue 9, PostgreSQL CPU per
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
--
-- 3. Each reservation was its own transaction, with its own synchronous
--    commit (a WAL flush) and round trip. mcpgate_reserve_batch takes the
--    reservations that wait while another is being written, in one
--    statement and one commit. Its arguments are the 22 audit columns of
--    the calls as parallel arrays (in the order of the audit INSERT), then
--    each call's number of slots, then the slots of all calls one after
--    another as mcpgate_take_slots's six arrays. For each call in turn it
--    takes the call's slots with mcpgate_take_slots inside a block of its
--    own: a full counter (SQLSTATE MGRL1) rolls back that call's slots
--    only, and the call gets no audit row; otherwise it inserts the call's
--    audit row. It returns one row per call, in order: the audit row's id,
--    or NULL with the full counter's 1-based index and its count before
--    the call (mcpgate_take_slots's DETAIL). Any other error fails the
--    whole statement, and nothing of it is written. A later call of the
--    batch sees the slots of the earlier ones, as if they had committed
--    one after another, so limits stay exact; the counter rows stay locked
--    until the batch commits.

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

-- +goose StatementBegin
CREATE FUNCTION mcpgate_reserve_batch(times timestamptz[], request_ids text[], decision_ids text[],
    workspace_ids text[], task_ids text[], profile_ids text[], actors text[], principal_kinds text[],
    token_fingerprints text[], tools text[], tiers text[], statuses text[], error_classes text[],
    reason_codes text[], buckets text[], latencies bigint[], arguments_hashes text[], arguments text[],
    policy_revisions text[], surfaces text[], modes text[], approval_ids text[],
    slot_counts integer[], keys text[], windows timestamptz[], expires timestamptz[], limits bigint[],
    task_workspaces text[], tasks text[])
RETURNS TABLE (audit_id bigint, full_slot integer, used bigint)
LANGUAGE plpgsql AS $$
DECLARE
    lo integer := 1;
    hi integer;
    detail text;
BEGIN
    FOR i IN 1 .. coalesce(array_length(times, 1), 0) LOOP
        hi := lo + slot_counts[i] - 1;
        audit_id := NULL;
        full_slot := 0;
        used := 0;
        BEGIN
            PERFORM mcpgate_take_slots(keys[lo:hi], windows[lo:hi], expires[lo:hi], limits[lo:hi],
                task_workspaces[lo:hi], tasks[lo:hi]);
        EXCEPTION WHEN SQLSTATE 'MGRL1' THEN
            GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
            full_slot := split_part(detail, ' ', 1)::integer;
            used := split_part(detail, ' ', 2)::bigint;
        END;
        IF full_slot = 0 THEN
            INSERT INTO audit_events (time, request_id, decision_id, workspace_id, task_id, profile_id, actor,
                principal_kind, token_fingerprint, tool, tier, status, error_class, reason_codes, bucket,
                latency_us, arguments_hash, arguments, policy_revision, surface, mode, approval_id)
            VALUES (times[i], request_ids[i], decision_ids[i], workspace_ids[i], task_ids[i], profile_ids[i],
                actors[i], principal_kinds[i], token_fingerprints[i], tools[i], tiers[i], statuses[i],
                error_classes[i], reason_codes[i]::jsonb, buckets[i], latencies[i], arguments_hashes[i],
                arguments[i]::jsonb, policy_revisions[i], surfaces[i], modes[i], approval_ids[i])
            RETURNING id INTO audit_id;
        END IF;
        RETURN NEXT;
        lo := hi + 1;
    END LOOP;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION mcpgate_reserve_batch(timestamptz[], text[], text[], text[], text[], text[], text[], text[], text[],
    text[], text[], text[], text[], text[], text[], bigint[], text[], text[], text[], text[], text[], text[],
    integer[], text[], timestamptz[], timestamptz[], bigint[], text[], text[]);
DROP FUNCTION mcpgate_finish_audits(bigint[], text[], text[], bigint[], text[], text[]);
CREATE INDEX audit_events_surface_time ON audit_events (surface, time);
