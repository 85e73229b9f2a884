-- mcpgate schema for PostgreSQL, the system of record (docs/architecture.md, Data).
-- The SQLite folder holds the same logical schema; keep the two in step
-- (migrations_test.go compares their tables and named constraints).
-- CHECK constraints are named: the stores turn a violation into a message for
-- people through migrations.ConstraintMessage, so a new CHECK needs an entry there.

-- +goose Up
CREATE TABLE workspaces (
    id         text        PRIMARY KEY CONSTRAINT workspaces_id_check CHECK (id <> ''),
    name       text        NOT NULL DEFAULT '',
    slug       text        NOT NULL DEFAULT '',
    -- org_plan names an org_plans row; no foreign key, because a workspace may
    -- name a plan before the plan is defined (LoadCaller then leaves OrgPlan nil).
    org_plan   text        NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
-- Slugs name workspaces in URLs, so two workspaces cannot share one; empty means unset.
CREATE UNIQUE INDEX workspaces_slug_key ON workspaces (slug) WHERE slug <> '';

CREATE TABLE seat_types (
    name            text    PRIMARY KEY CONSTRAINT seat_types_name_check CHECK (name <> ''),
    enterprise_only boolean NOT NULL DEFAULT false,
    permissions     jsonb   NOT NULL DEFAULT '{}'
        CONSTRAINT seat_types_permissions_check CHECK (jsonb_typeof(permissions) = 'object')
);

CREATE TABLE org_plans (
    name        text  PRIMARY KEY CONSTRAINT org_plans_name_check CHECK (name <> ''),
    permissions jsonb NOT NULL DEFAULT '{}'
        CONSTRAINT org_plans_permissions_check CHECK (jsonb_typeof(permissions) = 'object')
);

CREATE TABLE members (
    workspace_id text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    user_id      text NOT NULL CONSTRAINT members_user_id_check CHECK (user_id <> ''),
    role         text NOT NULL
        CONSTRAINT members_role_check CHECK (role IN ('owner', 'admin', 'member', 'viewer')),
    -- seat_type names a seat_types row; no foreign key for the same reason as org_plan.
    seat_type    text NOT NULL DEFAULT '',
    PRIMARY KEY (workspace_id, user_id)
);

-- Profile ids are scoped to their workspace: every lookup names both, so a
-- principal of one workspace can never reach another workspace's profile.
CREATE TABLE agent_profiles (
    workspace_id         text    NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    id                   text    NOT NULL CONSTRAINT agent_profiles_id_check CHECK (id <> ''),
    name                 text    NOT NULL DEFAULT '',
    allowlist            jsonb   NOT NULL DEFAULT '[]'
        CONSTRAINT agent_profiles_allowlist_check CHECK (jsonb_typeof(allowlist) = 'array'),
    -- NULL means no restriction on script.run; [] allows no script (docs/requirements.md#script-run-carve-out).
    script_allowlist     jsonb
        CONSTRAINT agent_profiles_script_allowlist_check
        CHECK (script_allowlist IS NULL OR jsonb_typeof(script_allowlist) = 'array'),
    is_workspace_default boolean NOT NULL DEFAULT false,
    updated_at           timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workspace_id, id)
);
-- At most one default profile per workspace
-- (docs/requirements.md#workspace-default-profile).
CREATE UNIQUE INDEX agent_profiles_one_default ON agent_profiles (workspace_id)
    WHERE is_workspace_default;

CREATE TABLE workspace_permission_overrides (
    workspace_id   text    NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    permission_key text    NOT NULL
        CONSTRAINT workspace_permission_overrides_key_check CHECK (permission_key <> ''),
    granted        boolean NOT NULL,
    PRIMARY KEY (workspace_id, permission_key)
);

CREATE TABLE member_permission_overrides (
    workspace_id   text    NOT NULL,
    user_id        text    NOT NULL,
    permission_key text    NOT NULL
        CONSTRAINT member_permission_overrides_key_check CHECK (permission_key <> ''),
    granted        boolean NOT NULL,
    PRIMARY KEY (workspace_id, user_id, permission_key),
    FOREIGN KEY (workspace_id, user_id) REFERENCES members (workspace_id, user_id) ON DELETE CASCADE
);

CREATE TABLE tasks (
    workspace_id text        NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    id           text        NOT NULL CONSTRAINT tasks_id_check CHECK (id <> ''),
    status       text        NOT NULL
        CONSTRAINT tasks_status_check CHECK (status IN ('running', 'completed', 'failed', 'cancelled')),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workspace_id, id)
);

-- scmt_ tokens: only the SHA-256 hash is stored, never the value (docs/requirements.md#api-tokens).
CREATE TABLE api_tokens (
    fingerprint  text        PRIMARY KEY
        CONSTRAINT api_tokens_fingerprint_check CHECK (fingerprint <> ''),
    workspace_id text        NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    label        text        NOT NULL DEFAULT '',
    scopes       jsonb       NOT NULL DEFAULT '[]'
        CONSTRAINT api_tokens_scopes_check CHECK (jsonb_typeof(scopes) = 'array'),
    status       text        NOT NULL DEFAULT 'active'
        CONSTRAINT api_tokens_status_check CHECK (status IN ('active', 'revoked')),
    token_hash   text        NOT NULL UNIQUE
        CONSTRAINT api_tokens_token_hash_check CHECK (token_hash <> ''),
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at   timestamptz
);
CREATE INDEX api_tokens_workspace ON api_tokens (workspace_id, created_at);

-- Per-token hourly limits of the external gateway; NULL keeps the default
-- (docs/requirements.md#external-limits: 50 reads per tool, 30 ops).
CREATE TABLE external_limits (
    workspace_id          text    PRIMARY KEY REFERENCES workspaces (id) ON DELETE CASCADE,
    reads_per_tool_hourly integer
        CONSTRAINT external_limits_reads_check CHECK (reads_per_tool_hourly >= 0),
    ops_per_token_hourly  integer
        CONSTRAINT external_limits_ops_check CHECK (ops_per_token_hourly >= 0),
    updated_at            timestamptz NOT NULL DEFAULT now()
);

-- One row per tools/call, whatever the outcome (docs/architecture.md, Invariants). No foreign key
-- to workspaces on purpose: a call naming an unknown workspace is audited too,
-- and deleting a workspace must not erase its trail.
CREATE TABLE audit_events (
    id                bigserial   PRIMARY KEY,
    time              timestamptz NOT NULL DEFAULT now(),
    request_id        text        NOT NULL DEFAULT '',
    decision_id       text        NOT NULL DEFAULT '',
    workspace_id      text        NOT NULL DEFAULT '',
    task_id           text        NOT NULL DEFAULT '',
    profile_id        text        NOT NULL DEFAULT '',
    actor             text        NOT NULL DEFAULT '',
    principal_kind    text        NOT NULL DEFAULT '',
    token_fingerprint text        NOT NULL DEFAULT '',
    tool              text        NOT NULL DEFAULT '',
    tier              text        NOT NULL DEFAULT '',
    status            text        NOT NULL DEFAULT '',
    error_class       text        NOT NULL DEFAULT '',
    reason_codes      jsonb       NOT NULL DEFAULT '[]',
    bucket            text        NOT NULL DEFAULT '',
    latency_us        bigint      NOT NULL DEFAULT 0,
    arguments_hash    text        NOT NULL DEFAULT '',
    -- Only set when the operator turns on argument logging (docs/architecture.md, Invariants).
    arguments         jsonb
);
-- Listing by workspace, newest first; workspace-day rate-limit windows.
CREATE INDEX audit_events_workspace_time ON audit_events (workspace_id, time);
-- Per-task caps count a task's calls (docs/requirements.md#rate-limits).
CREATE INDEX audit_events_task_tool ON audit_events (task_id, tool);
-- Workspace-day caps count one tier in a time window (docs/requirements.md#workspace-profile-caps).
CREATE INDEX audit_events_workspace_tier_time ON audit_events (workspace_id, tier, time);
-- Profile-hour caps count one profile's tier in a time window.
CREATE INDEX audit_events_profile_tier_time ON audit_events (profile_id, tier, time);
-- Unfiltered listings and retention sweeps.
CREATE INDEX audit_events_time ON audit_events (time);

-- Idempotency keys of confirmed deploy-tier calls, scoped to task_id +
-- tool_name + key and cleaned up 24 hours after the parent task reaches a
-- terminal state (docs/requirements.md#deploy-confirmation).
CREATE TABLE mcp_idempotency_keys (
    workspace_id text        NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    task_id      text        NOT NULL,
    tool_name    text        NOT NULL,
    key          text        NOT NULL CONSTRAINT mcp_idempotency_keys_key_check CHECK (key <> ''),
    input_hash   text        NOT NULL,
    result       jsonb,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (task_id, tool_name, key)
);
CREATE INDEX mcp_idempotency_keys_created ON mcp_idempotency_keys (created_at);

-- +goose Down
DROP TABLE mcp_idempotency_keys;
DROP TABLE audit_events;
DROP TABLE external_limits;
DROP TABLE api_tokens;
DROP TABLE tasks;
DROP TABLE member_permission_overrides;
DROP TABLE workspace_permission_overrides;
DROP TABLE agent_profiles;
DROP TABLE members;
DROP TABLE org_plans;
DROP TABLE seat_types;
DROP TABLE workspaces;
