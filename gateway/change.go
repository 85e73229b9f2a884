package gateway

// Change announces a write to data that decisions read (profiles, the
// workspace default profile, members, overrides, seat types, org plans,
// task status, external limits, API token status), so that every replica
// drops what it cached and tells its open streams. The PostgreSQL store
// announces the writes of every replica (LISTEN/NOTIFY); a replica's own
// admin API announces its writes directly.
type Change struct {
	// Table is the table written, e.g. "agent_profiles"; informative.
	Table string
	// WorkspaceID is the workspace whose callers the change reaches; ""
	// for every workspace (seat types, org plans, or a change the
	// announcement could not name).
	WorkspaceID string
	// TokenFingerprint is set when an API token's status changed (a
	// revocation) or the token was removed: sessions of that token end.
	TokenFingerprint string
	// SessionID is set when the MCP session of that id was ended (table
	// mcp_ended_sessions): replicas drop what they kept of it; "" with
	// that table for an end the announcement could not name.
	SessionID string
}
