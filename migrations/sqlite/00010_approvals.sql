-- Approvals a person decides before a tool runs, and the open admin
-- approvals streams, as in ../postgres/00011_approvals.sql.

-- +goose Up
CREATE TABLE approvals (
    id              TEXT PRIMARY KEY,
    workspace_id    TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    principal_kind  TEXT NOT NULL,
    subject         TEXT NOT NULL,
    task_id         TEXT NOT NULL DEFAULT '',
    tool            TEXT NOT NULL,
    arguments_hash  TEXT NOT NULL,
    policy_revision TEXT NOT NULL DEFAULT '',
    because         TEXT NOT NULL DEFAULT '[]',
    status          TEXT NOT NULL
        CONSTRAINT approvals_status_check CHECK (status IN ('pending', 'approved', 'rejected', 'expired', 'used')),
    created_at      TEXT NOT NULL,
    expires_at      TEXT NOT NULL,
    decided_by      TEXT NOT NULL DEFAULT '',
    decided_at      TEXT,
    reason          TEXT NOT NULL DEFAULT '',
    used_at         TEXT
) STRICT;
CREATE INDEX approvals_open_key ON approvals (workspace_id, subject, tool, arguments_hash)
    WHERE status IN ('pending', 'approved');
CREATE INDEX approvals_status_created ON approvals (status, created_at DESC, id DESC);

CREATE TABLE approval_watchers (
    id    TEXT PRIMARY KEY,
    until TEXT NOT NULL
) STRICT;
CREATE INDEX approval_watchers_until ON approval_watchers (until);

-- +goose Down
DROP TABLE approval_watchers;
DROP TABLE approvals;
