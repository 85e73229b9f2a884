-- One statement reserves all the rate-limit slots of a call
-- (docs/requirements.md#rate-limits; issue #3): the gateway used to send one upsert per bucket
-- inside the reservation transaction, so an ops call cost six round trips
-- (BEGIN, audit row, three counters, COMMIT). mcpgate_reserve_counts takes
-- the call's counters in order (per task, workspace/day, profile/hour) and
-- is all or nothing: at the first counter that would pass its limit it
-- gives back the slots it took — the per-task refund of docs/requirements.md#limit-order — and
-- reports which one was full. The upserts lock their rows until the
-- transaction ends, so concurrent calls of one bucket queue on it, in this
-- gateway and every other replica, and none sees a slot about to be
-- refunded.
--
-- Per-task counters have no window to expire with: task_workspace_id and
-- task_id name their task, and the sweep deletes them 24 hours after the
-- task reached a terminal state (the retention of idempotency keys,
-- docs/requirements.md#idempotency-keys).
--
-- Arguments are parallel arrays, one element per counter: bucket_key,
-- window_start, expires_at (NULL: no window end), the limit, and the
-- counter's task (NULLs for windowed counters). Result:
-- full_slot is 0 when every counter had room, else the 1-based index of
-- the full one; counts are the new counts of the counters it reached (for
-- the full one, with this call included).

-- +goose Up
ALTER TABLE rate_limit_counters ADD COLUMN task_workspace_id text, ADD COLUMN task_id text;
CREATE INDEX rate_limit_counters_task ON rate_limit_counters (task_workspace_id, task_id) WHERE task_id IS NOT NULL;

-- +goose StatementBegin
CREATE FUNCTION mcpgate_reserve_counts(keys text[], windows timestamptz[], expires timestamptz[], limits bigint[],
    task_workspaces text[], tasks text[])
RETURNS TABLE (full_slot integer, counts bigint[])
LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    full_slot := 0;
    counts := '{}';
    FOR i IN 1 .. coalesce(array_length(keys, 1), 0) LOOP
        INSERT INTO rate_limit_counters AS c (bucket_key, window_start, count, expires_at, task_workspace_id, task_id)
        VALUES (keys[i], windows[i], 1, expires[i], task_workspaces[i], tasks[i])
        ON CONFLICT (bucket_key, window_start) DO UPDATE SET count = c.count + 1,
            -- A counter written without its task (before this migration,
            -- or by AddRateCount) learns it here, so the sweep finds it.
            task_workspace_id = coalesce(c.task_workspace_id, excluded.task_workspace_id),
            task_id = coalesce(c.task_id, excluded.task_id)
        RETURNING c.count INTO n;
        counts := counts || n;
        IF n > limits[i] THEN
            full_slot := i;
            FOR j IN 1 .. i LOOP
                UPDATE rate_limit_counters SET count = count - 1
                WHERE bucket_key = keys[j] AND window_start = windows[j];
            END LOOP;
            EXIT;
        END IF;
    END LOOP;
    RETURN NEXT;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION mcpgate_reserve_counts(text[], timestamptz[], timestamptz[], bigint[], text[], text[]);
DROP INDEX rate_limit_counters_task;
ALTER TABLE rate_limit_counters DROP COLUMN task_workspace_id, DROP COLUMN task_id;
