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

// PolicyRequest asks every replica to reload its policy folder: one
// replica reloaded (through its admin API, `mcpgate policy reload` or its
// folder watcher) and announces it, and each other replica runs its own
// gated reload (the candidate's tests) and keeps its live revision when
// its candidate fails. The PostgreSQL store carries it on the channel
// mcpgate_policy.
type PolicyRequest struct {
	// Surface is the surface whose bundle to reload ("supacloud",
	// "ccserver"); "" for every surface.
	Surface string
	// Revision is the revision the announcing replica loaded (its
	// candidate's, whether or not it went live); informative: each
	// replica loads what its own folder holds.
	Revision string
	// Tested is the content hash (PolicyAttempt.Content) of the
	// candidate whose own tests passed on the announcing replica; ""
	// when it was refused. A replica whose folder holds the same bytes
	// may take them without running the tests again.
	Tested string
	// Tests is how many of those tests passed there.
	Tests int
	// Seal is the announcing replica's HMAC-SHA256 (hex) of Surface,
	// Tested and Tests under a key derived from the replicas' shared
	// MCPGATE_SESSION_SECRET. Anyone who may connect to the database can
	// send on the policy channel, so a Tested whose Seal does not verify
	// vouches for nothing: the receiving replica runs the tests itself.
	Seal string
	// Origin names the announcing replica (a random id per process), so
	// a replica ignores its own announcements.
	Origin string
}
