-- Pinned definitions of bridged tools (docs/requirements.md#pinned-tools):
-- one row per surface, upstream and tool (the upstream's own name). hash
-- is "sha256:<hex>" of the RFC 8785 form of definition, the one a person
-- approved (or the first seen); current is the listed definition under
-- review while the tool is quarantined or rejected. Every replica caches
-- the table and hears its changes on mcpgate_changes (table only: no
-- workspace's callers change), so a decision applies everywhere at once.

-- +goose Up
CREATE TABLE upstream_tool_pins (
    surface      text        NOT NULL,
    upstream     text        NOT NULL,
    tool         text        NOT NULL,
    state        text        NOT NULL CHECK (state IN ('pinned', 'quarantined', 'rejected')),
    change       text        NOT NULL DEFAULT '' CHECK (change IN ('', 'definition', 'new', 'rename')),
    renamed_from text        NOT NULL DEFAULT '',
    hash         text        NOT NULL DEFAULT '',
    definition   text        NOT NULL DEFAULT '',
    current_hash text        NOT NULL DEFAULT '',
    current      text        NOT NULL DEFAULT '',
    decided_by   text        NOT NULL DEFAULT '',
    decided_at   timestamptz,
    updated_at   timestamptz NOT NULL,
    PRIMARY KEY (surface, upstream, tool)
);

-- +goose StatementBegin
CREATE FUNCTION mcpgate_notify_pins() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('mcpgate_changes', jsonb_build_object('s', TG_TABLE_SCHEMA, 't', TG_TABLE_NAME)::text);
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER upstream_tool_pins_notify AFTER INSERT OR UPDATE OR DELETE ON upstream_tool_pins
    FOR EACH ROW EXECUTE FUNCTION mcpgate_notify_pins();

-- +goose Down
DROP TABLE upstream_tool_pins;
DROP FUNCTION mcpgate_notify_pins();
