-- Reservations that cannot deadlock (issue 9). mcpgate_take_slots (00006)
-- and mcpgate_reserve_batch (00015) took each call's counters in the
-- call's order, and the batch took its calls one after another, so it held
-- the counter rows of its earlier calls while it locked those of later
-- ones. Two batches (two replicas, or a batch and a claim's transaction)
-- whose calls named counters in crossed order deadlocked, and PostgreSQL
-- broke it only after deadlock_timeout (1 s) by aborting one of them.
--
-- Now every transaction of the gateway that locks counter rows locks them
-- in one global order, bucket_key (byte order, COLLATE "C") then
-- window_start, before it decides anything: mcpgate_count_calls locks the
-- union of all its calls' counters, each in turn — the existing row with
-- SELECT … FOR NO KEY UPDATE, a missing one by inserting it at count 0 —
-- so a transaction only ever waits for a counter that sorts after every
-- counter it holds, and no cycle of waits can form. (A claim's
-- transaction locks its idempotency row before its counters; a batch
-- claims none. The sweeps delete in the same order.) With every row
-- locked, it decides the calls in their order in memory — a call takes
-- its slots only if each has room, as if the calls had committed one
-- after another — then writes each changed counter once, and deletes the
-- rows it created that no call took a slot of. So the limits stay exact,
-- each call is all or nothing, and a full call leaves nothing, not even a
-- counter at zero. It needs no block with an exception handler (a
-- subtransaction) per call any more.
--
-- mcpgate_count_calls's arguments: each call's number of slots, then the
-- slots of all calls one after another as mcpgate_take_slots's six
-- arrays. Its results: for each call, in order, full_slots 0 (the call
-- took its slots) or the 1-based index of its first full slot, and useds
-- that slot's count before the call (0 for a call that took its slots).
--
-- mcpgate_take_slots, the statement of a lone call, cannot be refused
-- halfway (a full slot raises and rolls the statement back), so it keeps
-- its upserts and only runs them in that order: it takes every slot, then
-- raises at the first full one in the call's order, with the same DETAIL
-- as before. Its few slots are sorted in PL/pgSQL; a batch's counters by
-- a query.
--
-- mcpgate_take_slots and mcpgate_reserve_batch keep their arguments and
-- results; the Down migration restores their bodies of 00006 and 00015.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION mcpgate_count_calls(slot_counts integer[], keys text[], windows timestamptz[], expires timestamptz[],
    limits bigint[], task_workspaces text[], tasks text[], OUT full_slots integer[], OUT useds bigint[])
LANGUAGE plpgsql AS $$
DECLARE
    -- The distinct counters, sorted: key, window, expiry, task.
    ck text[];
    cw timestamptz[];
    ce timestamptz[];
    ctw text[];
    ct text[];
    cnt bigint[];         -- each counter's count, as the calls take slots
    orig bigint[];        -- its count when locked
    created boolean[];    -- this function inserted its row
    pos integer[];        -- each slot's counter, an index into ck
    n bigint;
    lo integer := 1;
    hi integer;
    f integer;
BEGIN
    SELECT array_agg(d.k ORDER BY d.k COLLATE "C", d.w), array_agg(d.w ORDER BY d.k COLLATE "C", d.w),
           array_agg(d.e ORDER BY d.k COLLATE "C", d.w), array_agg(d.tw ORDER BY d.k COLLATE "C", d.w),
           array_agg(d.t ORDER BY d.k COLLATE "C", d.w)
    INTO ck, cw, ce, ctw, ct
    FROM (SELECT u.k, u.w, max(u.e) AS e, max(u.tw) AS tw, max(u.t) AS t
          FROM unnest(keys, windows, expires, task_workspaces, tasks) AS u(k, w, e, tw, t)
          GROUP BY u.k, u.w) d;
    SELECT array_agg(c.i ORDER BY s.o) INTO pos
    FROM unnest(keys, windows) WITH ORDINALITY AS s(k, w, o)
    JOIN unnest(ck, cw) WITH ORDINALITY AS c(k, w, i) ON c.k = s.k AND c.w = s.w;

    -- Lock every counter, in order. A row another transaction is
    -- inserting is invisible to the SELECT; the INSERT then waits for that
    -- transaction, and does nothing if it committed: look again.
    FOR i IN 1 .. coalesce(array_length(ck, 1), 0) LOOP
        LOOP
            SELECT c.count INTO n FROM rate_limit_counters c
            WHERE c.bucket_key = ck[i] AND c.window_start = cw[i] FOR NO KEY UPDATE;
            IF FOUND THEN
                created[i] := false;
                EXIT;
            END IF;
            INSERT INTO rate_limit_counters (bucket_key, window_start, count, expires_at, task_workspace_id, task_id)
            VALUES (ck[i], cw[i], 0, ce[i], ctw[i], ct[i])
            ON CONFLICT (bucket_key, window_start) DO NOTHING;
            IF FOUND THEN
                n := 0;
                created[i] := true;
                EXIT;
            END IF;
        END LOOP;
        cnt[i] := n;
    END LOOP;
    orig := cnt;

    -- Decide the calls in their order, as mcpgate_take_slots would have
    -- one after another: the first slot past its limit refuses the call,
    -- and the slots it took before that are given back.
    full_slots := '{}';
    useds := '{}';
    FOR q IN 1 .. coalesce(array_length(slot_counts, 1), 0) LOOP
        hi := lo + slot_counts[q] - 1;
        f := 0;
        n := 0;
        FOR j IN lo .. hi LOOP
            cnt[pos[j]] := cnt[pos[j]] + 1;
            IF cnt[pos[j]] > limits[j] THEN
                f := j - lo + 1;
                n := cnt[pos[j]] - 1;
                FOR r IN lo .. j LOOP
                    cnt[pos[r]] := cnt[pos[r]] - 1;
                END LOOP;
                EXIT;
            END IF;
        END LOOP;
        full_slots := full_slots || f;
        useds := useds || n;
        lo := hi + 1;
    END LOOP;

    -- Write what changed; the locks are held already, so the order no
    -- longer matters. A counter learns its task here if it was written
    -- without one (by AddRateCount), so the sweep finds it.
    FOR i IN 1 .. coalesce(array_length(ck, 1), 0) LOOP
        IF cnt[i] <> orig[i] THEN
            UPDATE rate_limit_counters SET count = cnt[i],
                task_workspace_id = coalesce(task_workspace_id, ctw[i]), task_id = coalesce(task_id, ct[i])
            WHERE bucket_key = ck[i] AND window_start = cw[i];
        ELSIF created[i] THEN
            DELETE FROM rate_limit_counters WHERE bucket_key = ck[i] AND window_start = cw[i];
        END IF;
    END LOOP;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION mcpgate_take_slots(keys text[], windows timestamptz[], expires timestamptz[], limits bigint[],
    task_workspaces text[], tasks text[])
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    k integer := coalesce(array_length(keys, 1), 0);
    ord integer[];   -- the slots in lock order
    counts bigint[]; -- each slot's count with this call
    n bigint;
    i integer;
    j integer;
BEGIN
    -- A call has a few slots: sort them by insertion, ties (one counter
    -- named twice) in the call's order.
    FOR s IN 1 .. k LOOP
        j := s - 1;
        WHILE j >= 1 AND (keys[ord[j]] COLLATE "C" > keys[s] COLLATE "C"
                OR keys[ord[j]] = keys[s] AND windows[ord[j]] > windows[s]) LOOP
            ord[j + 1] := ord[j];
            j := j - 1;
        END LOOP;
        ord[j + 1] := s;
    END LOOP;
    FOR s IN 1 .. k LOOP
        i := ord[s];
        INSERT INTO rate_limit_counters AS c (bucket_key, window_start, count, expires_at, task_workspace_id, task_id)
        VALUES (keys[i], windows[i], 1, expires[i], task_workspaces[i], tasks[i])
        ON CONFLICT (bucket_key, window_start) DO UPDATE SET count = c.count + 1,
            task_workspace_id = coalesce(c.task_workspace_id, excluded.task_workspace_id),
            task_id = coalesce(c.task_id, excluded.task_id)
        RETURNING c.count INTO n;
        counts[i] := n;
    END LOOP;
    -- The first full slot in the call's order, as before; raising rolls
    -- back every slot taken and every counter row created.
    FOR s IN 1 .. k LOOP
        IF counts[s] > limits[s] THEN
            RAISE EXCEPTION 'rate-limit counter % is full', keys[s]
                USING ERRCODE = 'MGRL1', DETAIL = s || ' ' || (counts[s] - 1);
        END IF;
    END LOOP;
    RETURN k;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION mcpgate_reserve_batch(times timestamptz[], request_ids text[], decision_ids text[],
    workspace_ids text[], task_ids text[], profile_ids text[], actors text[], principal_kinds text[],
    token_fingerprints text[], tools text[], tiers text[], statuses text[], error_classes text[],
    reason_codes text[], buckets text[], latencies bigint[], arguments_hashes text[], arguments text[],
    policy_revisions text[], surfaces text[], modes text[], approval_ids text[],
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
                latency_us, arguments_hash, arguments, policy_revision, surface, mode, approval_id)
            VALUES (times[i], request_ids[i], decision_ids[i], workspace_ids[i], task_ids[i], profile_ids[i],
                actors[i], principal_kinds[i], token_fingerprints[i], tools[i], tiers[i], statuses[i],
                error_classes[i], reason_codes[i]::jsonb, buckets[i], latencies[i], arguments_hashes[i],
                arguments[i]::jsonb, policy_revisions[i], surfaces[i], modes[i], approval_ids[i])
            RETURNING id INTO audit_id;
        END IF;
        RETURN NEXT;
    END LOOP;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION mcpgate_take_slots(keys text[], windows timestamptz[], expires timestamptz[], limits bigint[],
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

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION mcpgate_reserve_batch(times timestamptz[], request_ids text[], decision_ids text[],
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

DROP FUNCTION mcpgate_count_calls(integer[], text[], timestamptz[], timestamptz[], bigint[], text[], text[]);
