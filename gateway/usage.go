package gateway

import "time"

// ToolUsage is one group of a profile's audited tools/call rows
// (Store.ProfileToolUsage; mcpgate policy suggest): the calls of one tool
// that ended in one status and bucket, and whether the policy decided them
// (the row has a decision id; a call refused before the decision, such as
// one of an unknown workspace, has none).
type ToolUsage struct {
	Tool   string `json:"tool"`
	Tier   Tier   `json:"tier"`
	Status string `json:"status"`
	// Bucket is the rate-limit bucket a rate_limited row names, "" otherwise.
	Bucket  string `json:"bucket,omitempty"`
	Decided bool   `json:"decided"`
	// Calls is the number of rows in the group; Last the time of the newest.
	Calls int64     `json:"calls"`
	Last  time.Time `json:"last"`
}
