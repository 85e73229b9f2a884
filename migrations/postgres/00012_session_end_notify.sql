-- Each replica keeps its "not ended" answers for the MCP sessions it
-- serves instead of reading mcp_ended_sessions on every request (issue 9,
-- PostgreSQL CPU per call), so an end recorded through one replica is
-- announced to the others on the channel mcpgate_changes, which drop their
-- answer for that session: {"s": schema, "t": "mcp_ended_sessions",
-- "k": session id}. An id too long for a NOTIFY payload is announced
-- without "k", as an end of every session (each replica then reads the
-- table again once per session). Rows deleted by the sweep are not
-- announced: their ids no longer verify.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION mcpgate_notify_session_end() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    payload jsonb := jsonb_build_object('s', TG_TABLE_SCHEMA, 't', TG_TABLE_NAME, 'k', NEW.id);
BEGIN
    IF octet_length(payload::text) > 7900 THEN
        payload := jsonb_build_object('s', TG_TABLE_SCHEMA, 't', TG_TABLE_NAME);
    END IF;
    PERFORM pg_notify('mcpgate_changes', payload::text);
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER mcp_ended_sessions_notify AFTER INSERT OR UPDATE ON mcp_ended_sessions
    FOR EACH ROW EXECUTE FUNCTION mcpgate_notify_session_end();

-- +goose Down
DROP TRIGGER mcp_ended_sessions_notify ON mcp_ended_sessions;
DROP FUNCTION mcpgate_notify_session_end();
