-- A reservation refused by its deadline never commits later (issue 22).
-- When PostgreSQL stalls, the gateway refuses the call at its deadline,
-- but the reservation statement may still sit in the backend's socket (or
-- wait for a counter's lock); once the stall ends it ran and committed in
-- autocommit: an allowed audit row the client never got, and a used slot.
-- Each reservation statement now ends with mcpgate_before(deadline): past
-- the gateway's deadline (a little before it, for the reply's way back) it
-- raises, and the whole statement rolls back, nothing written.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION mcpgate_before(deadline timestamptz) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    IF clock_timestamp() >= deadline THEN
        RAISE EXCEPTION 'the reservation reached PostgreSQL after its deadline %, when the gateway had refused the call', deadline
            USING ERRCODE = 'MGDL1';
    END IF;
    RETURN true;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION mcpgate_before(timestamptz);
