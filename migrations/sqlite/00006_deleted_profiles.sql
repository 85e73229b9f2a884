-- The ids of agent profiles deleted from a workspace, as in
-- ../postgres/00007_deleted_profiles.sql: a session whose JWT names one
-- falls back as a session without agent_profile_id does, and says so.

-- +goose Up
CREATE TABLE deleted_agent_profiles (
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    id           TEXT NOT NULL,
    deleted_at   TEXT NOT NULL,
    PRIMARY KEY (workspace_id, id)
) STRICT;

-- +goose Down
DROP TABLE deleted_agent_profiles;
