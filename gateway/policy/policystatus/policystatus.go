// Package policystatus is what an operator sees of the policy lifecycle of
// a surface: the live revision, its load attempts and the shadow
// candidate (GET /admin/v1/policy). gateway/policy makes these values; the
// admin API, the console and `mcpgate policy reload` read them. It imports
// only the standard library, so its readers do not link OPA.
package policystatus

import "time"

// Outcomes of a policy load attempt (Attempt.Outcome).
const (
	// Live: the candidate passed every check and now decides calls.
	Live = "live"
	// Unchanged: the candidate passed and has the revision already
	// live; nothing was swapped (the caches stay warm).
	Unchanged = "unchanged"
	// Refused: the candidate failed a check; the running revision
	// stays.
	Refused = "refused"
)

// Where a candidate's tests were run (Attempt.TestsFrom).
const (
	// TestsRun: the tests ran for this attempt and passed.
	TestsRun = "run"
	// TestsCached: this process ran the same bytes' tests before
	// (an earlier load, the other surface, the shadow folder) and they
	// passed; they were not run again.
	TestsCached = "cached"
	// TestsReplica: another replica announced that it ran the
	// tests of the same bytes (its content hash) and they passed; this
	// replica compiled and checked the queries but ran no test
	// (MCPGATE_POLICY_RETEST_ON_REPLICAS=true turns that off).
	TestsReplica = "replica"
)

// Status is what an operator sees of one surface's policy: the
// revision that decides its calls, where it came from, the last load
// attempt and the last one refused, and the shadow candidate if any
// (GET /admin/v1/policy, docs/http.md).
type Status struct {
	// Surface is the surface the bundle serves ("supacloud").
	Surface string `json:"surface"`
	// Revision is the live bundle's revision: its .manifest revision, else
	// "sha256:" and a hash of its loaded files.
	Revision string `json:"revision"`
	// Source is SourceEmbedded (the bundle built into the binary, which
	// never reloads) or the folder MCPGATE_POLICY_DIR names.
	Source string `json:"source"`
	// Watched says whether Source is watched for changes.
	Watched bool `json:"watched"`
	// LiveSince is when Revision went live.
	LiveSince time.Time `json:"live_since"`
	// LastAttempt is the most recent load of a candidate (at start, after
	// a change in the folder, or asked for through the admin API).
	LastAttempt *Attempt `json:"last_attempt,omitempty"`
	// LastFailure is the most recent attempt that was refused; nil when
	// none was.
	LastFailure *Attempt `json:"last_failure,omitempty"`
	// Shadow is the candidate evaluated beside the live bundle and never
	// enforced (MCPGATE_SHADOW_POLICY_DIR); nil when shadow mode is off.
	Shadow *Shadow `json:"shadow,omitempty"`
}

// SourceEmbedded is Status.Source of the bundle built into the binary.
const SourceEmbedded = "embedded"

// Reloadable reports whether the live bundle can be reloaded: it comes
// from a folder (MCPGATE_POLICY_DIR), not from the binary.
func (s Status) Reloadable() bool { return s.Source != SourceEmbedded }

// Attempt is one load of a candidate bundle.
type Attempt struct {
	Time time.Time `json:"time"`
	// Trigger is what asked for it: "start", "watch" (a change in the
	// folder), "admin" (POST /admin/v1/policy/reload, `mcpgate policy
	// reload`), "replica" (another replica reloaded and asked every
	// replica to) or "resync" (the check once the announcements of other
	// replicas resumed after a gap).
	Trigger string `json:"trigger"`
	// Revision is the candidate's revision, when its files could be read.
	Revision string `json:"revision,omitempty"`
	// Outcome is Live, Unchanged or Refused.
	Outcome string `json:"outcome"`
	// Content is the candidate's content hash (policy.ContentHash: the
	// OPA version and every file's bytes, tests included), when its files
	// could be read. Tests run once per content hash.
	Content string `json:"content,omitempty"`
	// Tests is the number of the candidate's own Rego tests that passed:
	// every test of every package in its folder, the count `opa test`
	// and `mcpgate policy test` print as PASS for that folder (with
	// TestsFrom TestsReplica, on the replica that ran them).
	Tests int `json:"tests"`
	// TestsFrom says where a candidate that passed had its tests run:
	// TestsRun, TestsCached or TestsReplica; empty for
	// the embedded bundle and a candidate refused before its tests ran.
	TestsFrom string `json:"tests_from,omitempty"`
	// Error says why a refused candidate was refused, with OPA's message
	// (a compile error, a missing decision rule, the failing tests).
	Error string `json:"error,omitempty"`
}

// Shadow is the shadow candidate of a surface.
type Shadow struct {
	// Source is the folder MCPGATE_SHADOW_POLICY_DIR names.
	Source string `json:"source"`
	// Revision is the shadow bundle's revision; empty while none could be
	// loaded.
	Revision string `json:"revision,omitempty"`
	// LastAttempt is its most recent load, as for the live bundle.
	LastAttempt *Attempt `json:"last_attempt,omitempty"`
	// FlipsSince is when the gateway started counting Flips: its start
	// (the counts are kept in memory, per process, across reloads).
	FlipsSince time.Time `json:"flips_since"`
	// Flips are the calls the shadow candidate decided otherwise than
	// the live bundle since FlipsSince, per tool and direction, sorted by
	// tool then direction: the counts of
	// mcpgate_policy_shadow_flips_total on this replica. Empty (never
	// null) when none flipped.
	Flips []ShadowFlips `json:"flips"`
}

// ShadowFlips counts the shadow flips of one tool in one direction.
type ShadowFlips struct {
	Tool string `json:"tool"`
	// Direction is "allow_to_deny" (the live bundle allowed, the shadow
	// would deny), "deny_to_allow", "allow_to_approval" (both allow, only
	// the shadow would have a person approve the call) or
	// "approval_to_allow".
	Direction string `json:"direction"`
	Count     int64  `json:"count"`
}
