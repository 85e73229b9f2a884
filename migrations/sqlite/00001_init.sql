-- mcpgate schema for the embedded SQLite store: the same logical schema as
-- ../postgres (migrations_test.go compares their tables and named constraints).
-- Differences, each forced by SQLite:
--   * tables are STRICT, so a value of the wrong type is refused, not coerced;
--   * JSON lives in TEXT columns checked with json_valid/json_type;
--   * booleans are INTEGER 0/1;
--   * times are TEXT in UTC with six fractional digits,
--     'YYYY-MM-DDTHH:MM:SS.ffffffZ', so that text order is time order
--     (the default expression below writes the same shape).
-- CHECK constraints are named: the stores turn a violation into a message for
-- people through migrations.ConstraintMessage, so a new CHECK needs an entry there.

-- +goose Up
CREATE TABLE workspaces (
    id         TEXT    PRIMARY KEY CONSTRAINT workspaces_id_check CHECK (id <> ''),
    name       TEXT    NOT NULL DEFAULT '',
    slug       TEXT    NOT NULL DEFAULT '',
    -- org_plan names an org_plans row; no foreign key, because a workspace may
    -- name a plan before the plan is defined (LoadCaller then leaves OrgPlan nil).
    org_plan   TEXT    NOT NULL DEFAULT '',
    created_at TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%S', 'now') || substr(strftime('%f', 'now'), 3) || '000Z'),
    updated_at TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%S', 'now') || substr(strftime('%f', 'now'), 3) || '000Z')
) STRICT;
-- Slugs name workspaces in URLs, so two workspaces cannot share one; empty means unset.
CREATE UNIQUE INDEX workspaces_slug_key ON workspaces (slug) WHERE slug <> '';

CREATE TABLE seat_types (
    name            TEXT    PRIMARY KEY CONSTRAINT seat_types_name_check CHECK (name <> ''),
    enterprise_only INTEGER NOT NULL DEFAULT 0 CHECK (enterprise_only IN (0, 1)),
    permissions     TEXT    NOT NULL DEFAULT '{}'
        CONSTRAINT seat_types_permissions_check CHECK (json_valid(permissions) AND json_type(permissions) = 'object')
) STRICT;

CREATE TABLE org_plans (
    name        TEXT PRIMARY KEY CONSTRAINT org_plans_name_check CHECK (name <> ''),
    permissions TEXT NOT NULL DEFAULT '{}'
        CONSTRAINT org_plans_permissions_check CHECK (json_valid(permissions) AND json_type(permissions) = 'object')
) STRICT;

CREATE TABLE members (
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    user_id      TEXT NOT NULL CONSTRAINT members_user_id_check CHECK (user_id <> ''),
    role         TEXT NOT NULL
        CONSTRAINT members_role_check CHECK (role IN ('owner', 'admin', 'member', 'viewer')),
    -- seat_type names a seat_types row; no foreign key for the same reason as org_plan.
    seat_type    TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (workspace_id, user_id)
) STRICT;

-- Profile ids are scoped to their workspace: every lookup names both, so a
-- principal of one workspace can never reach another workspace's profile.
CREATE TABLE agent_profiles (
    workspace_id         TEXT    NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    id                   TEXT    NOT NULL CONSTRAINT agent_profiles_id_check CHECK (id <> ''),
    name                 TEXT    NOT NULL DEFAULT '',
    allowlist            TEXT    NOT NULL DEFAULT '[]'
        CONSTRAINT agent_profiles_allowlist_check CHECK (json_valid(allowlist) AND json_type(allowlist) = 'array'),
    -- NULL means no restriction on script.run; [] allows no script (docs/requirements.md#script-run-carve-out).
    script_allowlist     TEXT
        CONSTRAINT agent_profiles_script_allowlist_check
        CHECK (script_allowlist IS NULL OR (json_valid(script_allowlist) AND json_type(script_allowlist) = 'array')),
    is_workspace_default INTEGER NOT NULL DEFAULT 0 CHECK (is_workspace_default IN (0, 1)),
    updated_at           TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%S', 'now') || substr(strftime('%f', 'now'), 3) || '000Z'),
    PRIMARY KEY (workspace_id, id)
) STRICT;
-- At most one default profile per workspace
-- (docs/requirements.md#workspace-default-profile).
CREATE UNIQUE INDEX agent_profiles_one_default ON agent_profiles (workspace_id)
    WHERE is_workspace_default = 1;

CREATE TABLE workspace_permission_overrides (
    workspace_id   TEXT    NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    permission_key TEXT    NOT NULL
        CONSTRAINT workspace_permission_overrides_key_check CHECK (permission_key <> ''),
    granted        INTEGER NOT NULL CHECK (granted IN (0, 1)),
    PRIMARY KEY (workspace_id, permission_key)
) STRICT;

CREATE TABLE member_permission_overrides (
    workspace_id   TEXT    NOT NULL,
    user_id        TEXT    NOT NULL,
    permission_key TEXT    NOT NULL
        CONSTRAINT member_permission_overrides_key_check CHECK (permission_key <> ''),
    granted        INTEGER NOT NULL CHECK (granted IN (0, 1)),
    PRIMARY KEY (workspace_id, user_id, permission_key),
    FOREIGN KEY (workspace_id, user_id) REFERENCES members (workspace_id, user_id) ON DELETE CASCADE
) STRICT;

CREATE TABLE tasks (
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    id           TEXT NOT NULL CONSTRAINT tasks_id_check CHECK (id <> ''),
    status       TEXT NOT NULL
        CONSTRAINT tasks_status_check CHECK (status IN ('running', 'completed', 'failed', 'cancelled')),
    updated_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%S', 'now') || substr(strftime('%f', 'now'), 3) || '000Z'),
    PRIMARY KEY (workspace_id, id)
) STRICT;

-- scmt_ tokens: only the SHA-256 hash is stored, never the value (docs/requirements.md#api-tokens).
CREATE TABLE api_tokens (
    fingerprint  TEXT PRIMARY KEY
        CONSTRAINT api_tokens_fingerprint_check CHECK (fingerprint <> ''),
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    label        TEXT NOT NULL DEFAULT '',
    scopes       TEXT NOT NULL DEFAULT '[]'
        CONSTRAINT api_tokens_scopes_check CHECK (json_valid(scopes) AND json_type(scopes) = 'array'),
    status       TEXT NOT NULL DEFAULT 'active'
        CONSTRAINT api_tokens_status_check CHECK (status IN ('active', 'revoked')),
    token_hash   TEXT NOT NULL UNIQUE
        CONSTRAINT api_tokens_token_hash_check CHECK (token_hash <> ''),
    created_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%S', 'now') || substr(strftime('%f', 'now'), 3) || '000Z'),
    last_used_at TEXT,
    revoked_at   TEXT
) STRICT;
CREATE INDEX api_tokens_workspace ON api_tokens (workspace_id, created_at);

-- Per-token hourly limits of the external gateway; NULL keeps the default
-- (docs/requirements.md#external-limits: 50 reads per tool, 30 ops).
CREATE TABLE external_limits (
    workspace_id          TEXT    PRIMARY KEY REFERENCES workspaces (id) ON DELETE CASCADE,
    reads_per_tool_hourly INTEGER
        CONSTRAINT external_limits_reads_check CHECK (reads_per_tool_hourly >= 0),
    ops_per_token_hourly  INTEGER
        CONSTRAINT external_limits_ops_check CHECK (ops_per_token_hourly >= 0),
    updated_at            TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%S', 'now') || substr(strftime('%f', 'now'), 3) || '000Z')
) STRICT;

-- One row per tools/call, whatever the outcome (docs/architecture.md, Invariants). No foreign key
-- to workspaces on purpose: a call naming an unknown workspace is audited too,
-- and deleting a workspace must not erase its trail. AUTOINCREMENT keeps ids
-- from being reused after old rows are deleted.
CREATE TABLE audit_events (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    time              TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%S', 'now') || substr(strftime('%f', 'now'), 3) || '000Z'),
    request_id        TEXT    NOT NULL DEFAULT '',
    decision_id       TEXT    NOT NULL DEFAULT '',
    workspace_id      TEXT    NOT NULL DEFAULT '',
    task_id           TEXT    NOT NULL DEFAULT '',
    profile_id        TEXT    NOT NULL DEFAULT '',
    actor             TEXT    NOT NULL DEFAULT '',
    principal_kind    TEXT    NOT NULL DEFAULT '',
    token_fingerprint TEXT    NOT NULL DEFAULT '',
    tool              TEXT    NOT NULL DEFAULT '',
    tier              TEXT    NOT NULL DEFAULT '',
    status            TEXT    NOT NULL DEFAULT '',
    error_class       TEXT    NOT NULL DEFAULT '',
    reason_codes      TEXT    NOT NULL DEFAULT '[]' CHECK (json_valid(reason_codes)),
    bucket            TEXT    NOT NULL DEFAULT '',
    latency_us        INTEGER NOT NULL DEFAULT 0,
    arguments_hash    TEXT    NOT NULL DEFAULT '',
    -- Only set when the operator turns on argument logging (docs/architecture.md, Invariants).
    arguments         TEXT
) STRICT;
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
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    task_id      TEXT NOT NULL,
    tool_name    TEXT NOT NULL,
    key          TEXT NOT NULL CONSTRAINT mcp_idempotency_keys_key_check CHECK (key <> ''),
    input_hash   TEXT NOT NULL,
    result       TEXT CHECK (result IS NULL OR json_valid(result)),
    created_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%S', 'now') || substr(strftime('%f', 'now'), 3) || '000Z'),
    PRIMARY KEY (task_id, tool_name, key)
) STRICT;
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
