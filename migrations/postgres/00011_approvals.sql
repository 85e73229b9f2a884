-- Approvals a person decides before a tool runs (the cc_server
-- specification: a requiresApproval tool, or an action-class tool whose
-- guard answered prompt). Each row is bound to one exact call: principal
-- (kind, subject, workspace), tool, canonical argument hash and policy
-- revision. Status moves pending → approved | rejected | expired, and
-- approved → used once, when the call is dispatched: each move is one
-- conditional UPDATE, so two replicas cannot both use an approval.
--
-- approval_watchers holds one row per open admin approvals stream
-- (GET /admin/v1/approvals/stream) on any replica, renewed while it is
-- open: a call that needs an approval is refused at once when no row is
-- current (no responsible person connected) and its client cannot be asked.

-- +goose Up
CREATE TABLE approvals (
    id              text        PRIMARY KEY,
    workspace_id    text        NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    principal_kind  text        NOT NULL,
    subject         text        NOT NULL,
    task_id         text        NOT NULL DEFAULT '',
    tool            text        NOT NULL,
    arguments_hash  text        NOT NULL,
    policy_revision text        NOT NULL DEFAULT '',
    because         jsonb       NOT NULL DEFAULT '[]',
    status          text        NOT NULL
        CONSTRAINT approvals_status_check CHECK (status IN ('pending', 'approved', 'rejected', 'expired', 'used')),
    created_at      timestamptz NOT NULL,
    expires_at      timestamptz NOT NULL,
    decided_by      text        NOT NULL DEFAULT '',
    decided_at      timestamptz,
    reason          text        NOT NULL DEFAULT '',
    used_at         timestamptz
);
-- The open approvals of one call, found again by a retry.
CREATE INDEX approvals_open_key ON approvals (workspace_id, subject, tool, arguments_hash)
    WHERE status IN ('pending', 'approved');
CREATE INDEX approvals_status_created ON approvals (status, created_at DESC, id DESC);

CREATE TABLE approval_watchers (
    id    text        PRIMARY KEY,
    until timestamptz NOT NULL
);
CREATE INDEX approval_watchers_until ON approval_watchers (until);

-- +goose Down
DROP TABLE approval_watchers;
DROP TABLE approvals;
