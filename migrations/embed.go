// Package migrations holds mcpgate's SQL schema as goose migrations, one
// folder per dialect with the same logical schema (docs/architecture.md, Data), embedded in
// the binary so that `mcpgate migrate` and the stores need no files on disk.
package migrations

import (
	"embed"
	"io/fs"
)

//go:embed postgres/*.sql sqlite/*.sql
var files embed.FS

// Postgres holds the PostgreSQL migrations (goose SQL files such as
// 00001_init.sql) at its root, ready for goose.NewProvider with
// goose.DialectPostgres.
var Postgres fs.FS = mustSub("postgres")

// SQLite holds the embedded-store migrations at its root, ready for
// goose.NewProvider with goose.DialectSQLite3.
var SQLite fs.FS = mustSub("sqlite")

// mustSub roots a dialect folder; the folder names are fixed by the embed
// directive above, so an error is a build mistake, not a runtime condition.
func mustSub(dir string) fs.FS {
	sub, err := fs.Sub(files, dir)
	if err != nil {
		panic("migrations: " + err.Error())
	}
	return sub
}

// constraintMessages explains each named CHECK constraint of the schema to the
// person whose write it refused. Keys are the constraint names used in both
// dialect folders; migrations_test.go fails when a named CHECK lacks an entry.
var constraintMessages = map[string]string{
	"approvals_status_check":                   "approval status must be pending, approved, rejected, expired or used",
	"workspaces_id_check":                      "workspace id must not be empty",
	"seat_types_name_check":                    "seat type name must not be empty",
	"seat_types_permissions_check":             "seat type permissions must be a JSON object of permission keys to true/false",
	"org_plans_name_check":                     "org plan name must not be empty",
	"org_plans_permissions_check":              "org plan permissions must be a JSON object of permission keys to true/false",
	"members_user_id_check":                    "member user id must not be empty",
	"members_role_check":                       "role must be one of owner, admin, member, viewer",
	"agent_profiles_id_check":                  "profile id must not be empty",
	"agent_profiles_allowlist_check":           "allowlist must be a JSON array of grant entries such as \"supacloud.read.*\"",
	"agent_profiles_script_allowlist_check":    "script_allowlist must be a JSON array of script slugs, or null for no restriction",
	"workspace_permission_overrides_key_check": "permission override keys must not be empty",
	"member_permission_overrides_key_check":    "permission override keys must not be empty",
	"tasks_id_check":                           "task id must not be empty",
	"tasks_status_check":                       "status must be one of running, completed, failed, cancelled",
	"api_tokens_fingerprint_check":             "api token fingerprint must not be empty",
	"api_tokens_scopes_check":                  "api token scopes must be a JSON array such as [\"mcp:read\"]",
	"api_tokens_status_check":                  "api token status must be active or revoked",
	"api_tokens_token_hash_check":              "api token hash must not be empty",
	"external_limits_reads_check":              "reads_per_tool_hourly must be a whole number >= 0, or null for the default (50)",
	"external_limits_ops_check":                "ops_per_token_hourly must be a whole number >= 0, or null for the default (30)",
	"mcp_idempotency_keys_key_check":           "idempotency_key must not be empty",
}

// ConstraintMessage returns the message for people that explains why the
// named CHECK constraint refused a write (for example "members_role_check" →
// "role must be one of owner, admin, member, viewer"), and false for a name
// the schema does not define.
func ConstraintMessage(name string) (string, bool) {
	msg, ok := constraintMessages[name]
	return msg, ok
}
