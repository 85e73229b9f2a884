-- A reservation without an idempotency claim is one statement in
-- autocommit, with no BEGIN and COMMIT of its own (issue 9, "Fewer writes
-- per call"): one round trip instead of three. That needs a statement that
-- is all or nothing by itself, so mcpgate_take_slots differs from
-- mcpgate_reserve_counts (migration 00003, kept for replicas of the
-- previous release during a rolling upgrade) in one point: at the first
-- counter that would pass its limit it raises instead of giving back the
-- slots and returning. A statement that raises rolls back entirely — the
-- slots taken before the full one, a counter row it created, and the audit
-- row of the same statement — so a full bucket leaves nothing written and
-- needs no commit. The counter rows stay locked until the statement's
-- transaction ends, so concurrent calls of one bucket queue on them, in
-- this gateway and every other replica, as before.
--
-- Arguments are those of mcpgate_reserve_counts. It returns the number of
-- counters taken. A full counter raises SQLSTATE MGRL1 with DETAIL
-- '<index> <count>': the counter's 1-based index and its count before this
-- call.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION mcpgate_take_slots(keys text[], windows timestamptz[], expires timestamptz[], limits bigint[],
    task_workspaces text[], tasks text[])
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
    k integer := coalesce(array_length(keys, 1), 0);
BEGIN
    FOR i IN 1 .. k LOOP
        INSERT INTO rate_limit_counters AS c (bucket_key, window_start, count, expires_at, task_workspace_id, task_id)
        VALUES (keys[i], windows[i], 1, expires[i], task_workspaces[i], tasks[i])
        ON CONFLICT (bucket_key, window_start) DO UPDATE SET count = c.count + 1,
            task_workspace_id = coalesce(c.task_workspace_id, excluded.task_workspace_id),
            task_id = coalesce(c.task_id, excluded.task_id)
        RETURNING c.count INTO n;
        IF n > limits[i] THEN
            RAISE EXCEPTION 'rate-limit counter % is full', keys[i]
                USING ERRCODE = 'MGRL1', DETAIL = i || ' ' || (n - 1);
        END IF;
    END LOOP;
    RETURN k;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION mcpgate_take_slots(text[], timestamptz[], timestamptz[], bigint[], text[], text[]);
