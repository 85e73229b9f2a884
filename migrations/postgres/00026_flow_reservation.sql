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
--    max_tools; the row is written only when that changed it (or, with
--    f_at, its time is set in any case).
--
-- Several such reservations at once join the group commit's one statement
-- as reservations without flows do (reserveFlowBatch):
-- mcpgate_reserve_flow_batch locks the calls' flow rows in key order (byte
-- order), before any counter, the existing ones with SELECT … FOR NO KEY
-- UPDATE and the missing ones by inserting them; it leaves the calls
-- whose row holds another number of labels than they were decided on out
-- (flow_changed, nothing written), passes the others to
-- mcpgate_reserve_batch (mcpgate_pick narrows its arrays to them), records
-- each written call with mcpgate_record_flow and deletes the rows it
-- inserted for calls not written. The gateway sends each flow key at most
-- once per batch (a second one raises): a call's check then depends on
-- no other call of the batch.
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
    f_max_tools integer, f_at timestamptz DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    r jsonb;
    t jsonb;
    added jsonb;
    changed boolean := false;
BEGIN
    SELECT f.reads::jsonb, f.tools::jsonb INTO r, t FROM flow_sessions f WHERE f.flow_key = f_key;
    IF cardinality(f_labels) > 0 THEN
        SELECT jsonb_agg(jsonb_build_object('label', d.l, 'tool', f_tool, 'audit_id', f_audit_id, 'time', f_time))
        INTO added
        FROM (SELECT DISTINCT u.l FROM unnest(f_labels) AS u(l)) d
        WHERE NOT EXISTS (SELECT 1 FROM jsonb_array_elements(r) AS e(v) WHERE e.v ->> 'label' = d.l);
    END IF;
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
        UPDATE flow_sessions SET reads = r::text, tools = t::text, updated_at = coalesce(f_at, updated_at)
        WHERE flow_key = f_key;
    ELSIF f_at IS NOT NULL THEN
        UPDATE flow_sessions SET updated_at = f_at WHERE flow_key = f_key;
    END IF;
    RETURN f_audit_id;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION mcpgate_pick(a anyarray, idx integer[]) RETURNS anyarray
LANGUAGE sql IMMUTABLE AS $$
    SELECT ARRAY(SELECT a[k.i] FROM unnest(idx) WITH ORDINALITY AS k(i, o) ORDER BY k.o)
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION mcpgate_reserve_flow_batch(times timestamptz[], request_ids text[], decision_ids text[],
    workspace_ids text[], task_ids text[], profile_ids text[], actors text[], principal_kinds text[],
    token_fingerprints text[], tools text[], tiers text[], statuses text[], error_classes text[],
    reason_codes text[], buckets text[], latencies bigint[], arguments_hashes text[], arguments text[],
    policy_revisions text[], surfaces text[], modes text[], approval_ids text[], trace_ids text[],
    slot_counts integer[], keys text[], windows timestamptz[], expires timestamptz[], limits bigint[],
    task_workspaces text[], tasks text[],
    flow_keys text[], flow_workspaces text[], flow_tasks text[], seens integer[], label_counts integer[],
    labels text[], flow_tools text[], flow_times text[], max_tools integer)
RETURNS TABLE (audit_id bigint, full_slot integer, used bigint, flow_changed boolean)
LANGUAGE plpgsql AS $$
DECLARE
    n integer := coalesce(array_length(times, 1), 0);
    call_times timestamptz[] := times;
    created boolean[];   -- per call: this function inserted its flow row
    changed boolean[];   -- per call: its flow row holds another number of labels than seens
    ids bigint[];
    fulls integer[];
    useds bigint[];
    keep integer[];      -- the calls passed on to mcpgate_reserve_batch, in order
    sidx integer[];      -- their slots
    slo integer[];       -- each call's first slot
    llo integer[];       -- each call's first label
    nreads integer;
    q integer;
    prev text;
    j integer := 0;
    r record;
BEGIN
    -- Every call's slots and labels are consecutive in keys… and labels.
    slo[1] := 1;
    llo[1] := 1;
    FOR i IN 1 .. n - 1 LOOP
        slo[i + 1] := slo[i] + slot_counts[i];
        llo[i + 1] := llo[i] + label_counts[i];
    END LOOP;

    -- Lock the calls' flow rows in key order (byte order), before any
    -- counter: the existing row with SELECT … FOR NO KEY UPDATE, a
    -- missing one by inserting it (deleted below unless its call is
    -- written). A row another transaction is inserting is invisible to
    -- the SELECT; the INSERT then waits for that transaction, and does
    -- nothing if it committed: look again.
    FOR q IN SELECT u.o FROM unnest(flow_keys) WITH ORDINALITY AS u(k, o) WHERE u.k IS NOT NULL
             ORDER BY u.k COLLATE "C" LOOP
        IF flow_keys[q] = prev THEN
            RAISE EXCEPTION 'flow key % twice in one batch of reservations', prev;
        END IF;
        prev := flow_keys[q];
        LOOP
            SELECT jsonb_array_length(f.reads::jsonb) INTO nreads FROM flow_sessions f
            WHERE f.flow_key = flow_keys[q] FOR NO KEY UPDATE;
            IF FOUND THEN
                created[q] := false;
                EXIT;
            END IF;
            INSERT INTO flow_sessions (flow_key, workspace_id, task_id, reads, tools, updated_at)
            VALUES (flow_keys[q], flow_workspaces[q], flow_tasks[q], '[]', '[]', times[q])
            ON CONFLICT (flow_key) DO NOTHING;
            IF FOUND THEN
                nreads := 0;
                created[q] := true;
                EXIT;
            END IF;
        END LOOP;
        changed[q] := nreads <> seens[q];
    END LOOP;

    -- The calls whose flow did not change take their slots and audit rows
    -- as a batch without flows would.
    -- (the arguments are narrowed to them only when a call was left out).
    keep := ARRAY(SELECT i FROM generate_series(1, n) AS i WHERE NOT coalesce(changed[i], false) ORDER BY i);
    IF cardinality(keep) < n THEN
        sidx := ARRAY(SELECT s FROM unnest(keep) WITH ORDINALITY AS k(i, o),
                      generate_series(slo[k.i], slo[k.i] + slot_counts[k.i] - 1) AS s ORDER BY k.o, s);
        times := mcpgate_pick(times, keep);
        request_ids := mcpgate_pick(request_ids, keep);
        decision_ids := mcpgate_pick(decision_ids, keep);
        workspace_ids := mcpgate_pick(workspace_ids, keep);
        task_ids := mcpgate_pick(task_ids, keep);
        profile_ids := mcpgate_pick(profile_ids, keep);
        actors := mcpgate_pick(actors, keep);
        principal_kinds := mcpgate_pick(principal_kinds, keep);
        token_fingerprints := mcpgate_pick(token_fingerprints, keep);
        tools := mcpgate_pick(tools, keep);
        tiers := mcpgate_pick(tiers, keep);
        statuses := mcpgate_pick(statuses, keep);
        error_classes := mcpgate_pick(error_classes, keep);
        reason_codes := mcpgate_pick(reason_codes, keep);
        buckets := mcpgate_pick(buckets, keep);
        latencies := mcpgate_pick(latencies, keep);
        arguments_hashes := mcpgate_pick(arguments_hashes, keep);
        arguments := mcpgate_pick(arguments, keep);
        policy_revisions := mcpgate_pick(policy_revisions, keep);
        surfaces := mcpgate_pick(surfaces, keep);
        modes := mcpgate_pick(modes, keep);
        approval_ids := mcpgate_pick(approval_ids, keep);
        trace_ids := mcpgate_pick(trace_ids, keep);
        slot_counts := mcpgate_pick(slot_counts, keep);
        keys := mcpgate_pick(keys, sidx);
        windows := mcpgate_pick(windows, sidx);
        expires := mcpgate_pick(expires, sidx);
        limits := mcpgate_pick(limits, sidx);
        task_workspaces := mcpgate_pick(task_workspaces, sidx);
        tasks := mcpgate_pick(tasks, sidx);
    END IF;
    IF cardinality(keep) > 0 THEN
        FOR r IN SELECT * FROM mcpgate_reserve_batch(times, request_ids, decision_ids, workspace_ids, task_ids,
                profile_ids, actors, principal_kinds, token_fingerprints, tools, tiers, statuses, error_classes,
                reason_codes, buckets, latencies, arguments_hashes, arguments, policy_revisions, surfaces, modes,
                approval_ids, trace_ids, slot_counts, keys, windows, expires, limits, task_workspaces, tasks) LOOP
            j := j + 1;
            ids[keep[j]] := r.audit_id;
            fulls[keep[j]] := r.full_slot;
            useds[keep[j]] := r.used;
        END LOOP;
    END IF;

    -- Record each written call in its flow row; a row created for a call
    -- that was not written goes again.
    FOR i IN 1 .. n LOOP
        IF flow_keys[i] IS NOT NULL AND ids[i] IS NOT NULL THEN
            PERFORM mcpgate_record_flow(flow_keys[i], ids[i], labels[llo[i] : llo[i] + label_counts[i] - 1],
                flow_tools[i], flow_times[i], max_tools, call_times[i]);
        ELSIF flow_keys[i] IS NOT NULL AND created[i] THEN
            DELETE FROM flow_sessions WHERE flow_key = flow_keys[i];
        END IF;
        audit_id := ids[i];
        full_slot := coalesce(fulls[i], 0);
        used := coalesce(useds[i], 0);
        flow_changed := coalesce(changed[i], false);
        RETURN NEXT;
    END LOOP;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION mcpgate_reserve_flow_batch(timestamptz[], text[], text[], text[], text[], text[], text[], text[],
    text[], text[], text[], text[], text[], text[], text[], bigint[], text[], text[], text[], text[], text[], text[],
    text[], integer[], text[], timestamptz[], timestamptz[], bigint[], text[], text[],
    text[], text[], text[], integer[], integer[], text[], text[], text[], integer);
DROP FUNCTION mcpgate_pick(anyarray, integer[]);
DROP FUNCTION mcpgate_record_flow(text, bigint, text[], text, text, integer, timestamptz);
DROP FUNCTION mcpgate_lock_flow(text, text, text, timestamptz, integer);
