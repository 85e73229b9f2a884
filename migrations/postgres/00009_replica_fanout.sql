-- Replicas on one PostgreSQL (docs/architecture.md, "Replicas"):
--   * mcp_ended_sessions records the MCP sessions a client ended (DELETE),
--     so every replica refuses them; a row may go once until has passed,
--     since the session id stops verifying then anyway;
--   * triggers announce each change a decision reads on the channel
--     mcpgate_changes (LISTEN/NOTIFY), whatever wrote it (the admin API of
--     any replica, the CLI, SQL by hand), so every replica drops its cached
--     callers and tells its open streams. The payload is small JSON:
--     {"s": schema, "t": table, "w": workspace id (absent: every workspace),
--      "k": token fingerprint (api_tokens only)}.
--     The channel is database-wide, so the schema lets a replica ignore the
--     changes of another schema of the same database.
-- The channel mcpgate_policy is reserved for policy reload requests.

-- +goose Up
CREATE TABLE mcp_ended_sessions (
    id    text        PRIMARY KEY,
    until timestamptz NOT NULL
);
CREATE INDEX mcp_ended_sessions_until ON mcp_ended_sessions (until);

-- +goose StatementBegin
CREATE FUNCTION mcpgate_notify_change() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    r       record;
    ws      text;
    payload jsonb;
BEGIN
    IF TG_OP = 'DELETE' THEN r := OLD; ELSE r := NEW; END IF;
    payload := jsonb_build_object('s', TG_TABLE_SCHEMA, 't', TG_TABLE_NAME);
    IF TG_TABLE_NAME = 'workspaces' THEN
        ws := r.id;
    ELSIF TG_TABLE_NAME NOT IN ('seat_types', 'org_plans') THEN
        ws := r.workspace_id;
    END IF;
    IF ws IS NOT NULL THEN
        payload := payload || jsonb_build_object('w', ws);
    END IF;
    IF TG_TABLE_NAME = 'api_tokens' THEN
        payload := payload || jsonb_build_object('k', r.fingerprint);
    END IF;
    -- NOTIFY refuses payloads of 8000 bytes or more, which would fail the
    -- write: an oversized id is announced as a change of everything.
    IF octet_length(payload::text) > 7900 THEN
        payload := jsonb_build_object('s', TG_TABLE_SCHEMA, 't', TG_TABLE_NAME);
    END IF;
    PERFORM pg_notify('mcpgate_changes', payload::text);
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER workspaces_notify AFTER INSERT OR UPDATE OR DELETE ON workspaces
    FOR EACH ROW EXECUTE FUNCTION mcpgate_notify_change();
CREATE TRIGGER members_notify AFTER INSERT OR UPDATE OR DELETE ON members
    FOR EACH ROW EXECUTE FUNCTION mcpgate_notify_change();
-- Profiles and the workspace default profile (agent_profiles.is_workspace_default).
CREATE TRIGGER agent_profiles_notify AFTER INSERT OR UPDATE OR DELETE ON agent_profiles
    FOR EACH ROW EXECUTE FUNCTION mcpgate_notify_change();
CREATE TRIGGER workspace_permission_overrides_notify AFTER INSERT OR UPDATE OR DELETE ON workspace_permission_overrides
    FOR EACH ROW EXECUTE FUNCTION mcpgate_notify_change();
CREATE TRIGGER member_permission_overrides_notify AFTER INSERT OR UPDATE OR DELETE ON member_permission_overrides
    FOR EACH ROW EXECUTE FUNCTION mcpgate_notify_change();
CREATE TRIGGER seat_types_notify AFTER INSERT OR UPDATE OR DELETE ON seat_types
    FOR EACH ROW EXECUTE FUNCTION mcpgate_notify_change();
CREATE TRIGGER org_plans_notify AFTER INSERT OR UPDATE OR DELETE ON org_plans
    FOR EACH ROW EXECUTE FUNCTION mcpgate_notify_change();
CREATE TRIGGER external_limits_notify AFTER INSERT OR UPDATE OR DELETE ON external_limits
    FOR EACH ROW EXECUTE FUNCTION mcpgate_notify_change();
-- Task status: a task first seen is registered as running on every replica
-- alike, so only a task created in another status, a status change and a
-- removal are announced (not every first request of a new task).
CREATE TRIGGER tasks_notify_insert AFTER INSERT ON tasks
    FOR EACH ROW WHEN (NEW.status <> 'running') EXECUTE FUNCTION mcpgate_notify_change();
CREATE TRIGGER tasks_notify_update AFTER UPDATE ON tasks
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status) EXECUTE FUNCTION mcpgate_notify_change();
CREATE TRIGGER tasks_notify_delete AFTER DELETE ON tasks
    FOR EACH ROW EXECUTE FUNCTION mcpgate_notify_change();
-- Token revocation (and removal); a use (last_used_at) is not a change.
CREATE TRIGGER api_tokens_notify_update AFTER UPDATE ON api_tokens
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status) EXECUTE FUNCTION mcpgate_notify_change();
CREATE TRIGGER api_tokens_notify_delete AFTER DELETE ON api_tokens
    FOR EACH ROW EXECUTE FUNCTION mcpgate_notify_change();

-- +goose Down
DROP TRIGGER api_tokens_notify_delete ON api_tokens;
DROP TRIGGER api_tokens_notify_update ON api_tokens;
DROP TRIGGER tasks_notify_delete ON tasks;
DROP TRIGGER tasks_notify_update ON tasks;
DROP TRIGGER tasks_notify_insert ON tasks;
DROP TRIGGER external_limits_notify ON external_limits;
DROP TRIGGER org_plans_notify ON org_plans;
DROP TRIGGER seat_types_notify ON seat_types;
DROP TRIGGER member_permission_overrides_notify ON member_permission_overrides;
DROP TRIGGER workspace_permission_overrides_notify ON workspace_permission_overrides;
DROP TRIGGER agent_profiles_notify ON agent_profiles;
DROP TRIGGER members_notify ON members;
DROP TRIGGER workspaces_notify ON workspaces;
DROP FUNCTION mcpgate_notify_change();
DROP TABLE mcp_ended_sessions;
