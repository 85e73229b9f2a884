-- A workspace's switch of the shipped flow rule set (docs/policy.md, "Flow
-- rules"): set through PUT /admin/v1/workspaces/{ws}/flow-rules and shown
-- to the policy as input.workspace.flow_rules. Policy data may still
-- switch the rule set on for every workspace. The workspaces trigger
-- (00009) announces the change, so every replica's callers see it at once.

-- +goose Up
ALTER TABLE workspaces ADD COLUMN flow_rules boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE workspaces DROP COLUMN flow_rules;
