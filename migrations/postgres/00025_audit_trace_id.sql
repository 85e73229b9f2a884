-- The trace id of a call's audit row (docs/operations.md, "Traces"): the
-- OpenTelemetry trace of the call, 32 lowercase hex digits, when traces
-- are on; NULL when they are off and on every row written before. The
-- audit chain's canonical form leaves a NULL trace_id out, so the rows
-- sealed before this migration keep their hashes (docs/architecture.md,
-- "The audit chain").
--
-- mcpgate_reserve_batch gains a trace_ids array after approval_ids. The
-- function of 00016 stays beside it (PostgreSQL tells them apart by their
-- arguments): a replica of the release before still calls it during a
-- rolling upgrade, and its rows get no trace id.

-- +goose Up
ALTER TABLE audit_events ADD COLUMN trace_id text;

-- +goose StatementBegin
CREATE FUNCTION mcpgate_reserve_batch(times timestamptz[], request_ids text[], decision_ids text[],
    workspace_ids text[], task_ids text[], profile_ids text[], actors text[], principal_kinds text[],
    token_fingerprints text[], tools text[], tiers text[], statuses text[], error_classes text[],
    reason_codes text[], buckets text[], latencies bigint[], arguments_hashes text[], arguments text[],
    policy_revisions text[], surfaces text[], modes text[], approval_ids text[], trace_ids text[],
    slot_counts integer[], keys text[], windows timestamptz[], expires timestamptz[], limits bigint[],
    task_workspaces text[], tasks text[])
RETURNS TABLE (audit_id bigint, full_slot integer, used bigint)
LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    SELECT * INTO r FROM mcpgate_count_calls(slot_counts, keys, windows, expires, limits, task_workspaces, tasks);
    FOR i IN 1 .. coalesce(array_length(times, 1), 0) LOOP
        audit_id := NULL;
        full_slot := r.full_slots[i];
        used := r.useds[i];
        IF full_slot = 0 THEN
            INSERT INTO audit_events (time, request_id, decision_id, workspace_id, task_id, profile_id, actor,
                principal_kind, token_fingerprint, tool, tier, status, error_class, reason_codes, bucket,
                latency_us, arguments_hash, arguments, policy_revision, surface, mode, approval_id, trace_id)
            VALUES (times[i], request_ids[i], decision_ids[i], workspace_ids[i], task_ids[i], profile_ids[i],
                actors[i], principal_kinds[i], token_fingerprints[i], tools[i], tiers[i], statuses[i],
                error_classes[i], reason_codes[i]::jsonb, buckets[i], latencies[i], arguments_hashes[i],
                arguments[i]::jsonb, policy_revisions[i], surfaces[i], modes[i], approval_ids[i], trace_ids[i])
            RETURNING id INTO audit_id;
        END IF;
        RETURN NEXT;
    END LOOP;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION mcpgate_reserve_batch(timestamptz[], text[], text[], text[], text[], text[], text[], text[], text[],
    text[], text[], text[], text[], text[], text[], bigint[], text[], text[], text[], text[], text[], text[], text[],
    integer[], text[], timestamptz[], timestamptz[], bigint[], text[], text[]);
ALTER TABLE audit_events DROP COLUMN trace_id;
