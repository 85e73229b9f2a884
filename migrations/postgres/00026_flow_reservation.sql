-- A reservation that records in a flow session in one statement (issue
-- 28, the cost of flow rules): until now it was a transaction of its own
-- (BEGIN, lock the flow_sessions row, check, take the slots and insert the
-- audit row, record, COMMIT), five round trips where a reservation without
-- a flow record takes one. The gateway now sends it as one statement in
-- autocommit (gateway/postgres, reserveFlowAndAudit) that runs, in the
-- order of docs/architecture.md "Flow rules and their order":
--
-- 1. mcpgate_lock_flow: the upsert of lockFlow (the flow row's lock, before
--    any counter row); when the row holds another number of labels than
--    the call was decided on (seen), it raises MGFL1 and the statement
--    rolls back: no flow row, no slot, no audit row (FlowChanged);
-- 2. mcpgate_take_slots and the audit row's INSERT with mcpgate_before, as
--    reserveAndAudit (a full slot raises MGRL1: nothing written);
-- 3. mcpgate_record_flow: the call's labels the row lacks (each with its
--    tool, audit row and time), merged in byte order of label (COLLATE
--    "C", as Go sorts them), and its tool unless listed or the list holds
--    max_tools; the row is written only when that changed it.
--
-- reads and tools stay JSON text that the gateway decodes as before; the
-- time of a read is passed as the gateway formats it (RFC 3339, UTC, at
-- most microseconds), never formatted here. SQLite keeps its transaction:
-- its reservations run one at a time on one connection anyway.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION mcpgate_lock_flow(f_key text, f_workspace text, f_task text, f_at timestamptz, f_seen integer)
RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    n integer;
BEGIN
    INSERT INTO flow_sessions AS f (flow_key, workspace_id, task_id, reads, tools, updated_at)
    VALUES (f_key, f_workspace, f_task, '[]', '[]', f_at)
    ON CONFLICT (flow_key) DO UPDATE SET updated_at = excluded.updated_at
    RETURNING jsonb_array_length(f.reads::jsonb) INTO n;
    IF n <> f_seen THEN
        RAISE EXCEPTION 'flow session % holds % labels, the call was decided on %', f_key, n, f_seen
            USING ERRCODE = 'MGFL1';
    END IF;
    RETURN true;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION mcpgate_record_flow(f_key text, f_audit_id bigint, f_labels text[], f_tool text, f_time text,
    f_max_tools integer)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    r jsonb;
    t jsonb;
    added jsonb;
    changed boolean := false;
BEGIN
    SELECT f.reads::jsonb, f.tools::jsonb INTO r, t FROM flow_sessions f WHERE f.flow_key = f_key;
    SELECT jsonb_agg(jsonb_build_object('label', d.l, 'tool', f_tool, 'audit_id', f_audit_id, 'time', f_time))
    INTO added
    FROM (SELECT DISTINCT u.l FROM unnest(f_labels) AS u(l)) d
    WHERE NOT EXISTS (SELECT 1 FROM jsonb_array_elements(r) AS e(v) WHERE e.v ->> 'label' = d.l);
    IF added IS NOT NULL THEN
        SELECT jsonb_agg(x.v ORDER BY x.v ->> 'label' COLLATE "C") INTO r
        FROM (SELECT e.v FROM jsonb_array_elements(r) AS e(v)
              UNION ALL SELECT e.v FROM jsonb_array_elements(added) AS e(v)) AS x;
        changed := true;
    END IF;
    IF f_tool <> '' AND jsonb_array_length(t) < f_max_tools AND NOT t @> jsonb_build_array(f_tool) THEN
        t := t || jsonb_build_array(f_tool);
        changed := true;
    END IF;
    IF changed THEN
        UPDATE flow_sessions SET reads = r::text, tools = t::text WHERE flow_key = f_key;
    END IF;
    RETURN f_audit_id;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION mcpgate_record_flow(text, bigint, text[], text, text, integer);
DROP FUNCTION mcpgate_lock_flow(text, text, text, timestamptz, integer);
