-- A workspace's switch of the shipped flow rule set, as in
-- ../postgres/00023_workspace_flow_rules.sql (one process serves the
-- embedded store: the admin API announces the change in process).

-- +goose Up
ALTER TABLE workspaces ADD COLUMN flow_rules INTEGER NOT NULL DEFAULT 0 CHECK (flow_rules IN (0, 1));

-- +goose Down
ALTER TABLE workspaces DROP COLUMN flow_rules;
