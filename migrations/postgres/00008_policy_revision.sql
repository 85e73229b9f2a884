-- Every audit row names the revision of the policy bundle that decided its
-- call (docs/policy.md, "Revisions"): the bundle's .manifest revision, or
-- "sha256:" and a hash of its files. Rows written before this migration,
-- and refusals made before any policy was asked (an unknown tool, say),
-- hold ''.

-- +goose Up
ALTER TABLE audit_events ADD COLUMN policy_revision text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE audit_events DROP COLUMN policy_revision;
