-- The ids of agent profiles deleted from a workspace. A session whose JWT
-- names such a profile falls back as a session without agent_profile_id
-- does (the workspace default profile, else the read-only fallback), and
-- its decisions say so; an id that never existed in the workspace is still
-- refused every tool. Re-creating a profile with the id removes its row.
-- Rows go with their workspace.

-- +goose Up
CREATE TABLE deleted_agent_profiles (
    workspace_id text        NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    id           text        NOT NULL,
    deleted_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workspace_id, id)
);

-- +goose Down
DROP TABLE deleted_agent_profiles;
