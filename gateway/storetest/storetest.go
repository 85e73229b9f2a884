// Package storetest is the one test suite every audit store passes, so
// that the embedded store behaves as PostgreSQL does: gateway/postgres and
// gateway/sqlite call Run from their tests.
package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/approvals"
	"github.com/mcpgate/mcpgate/gateway/console/consolesession"
	"github.com/mcpgate/mcpgate/gateway/ratelimit"
)

// Store is what the suite tests: every method the request path, the admin
// API, the limiter store and the token lookups ask of an audit store. The
// suite declares it itself (the consumers' interfaces are subsets of it),
// so that the store tests link only the stores, not the packages that
// use them. The methods' contracts are the consumers' (gateway/server's
// Store and APITokenStore, gateway/admin's Store, ratelimit.Counters);
// the suite checks them.
type Store interface {
	// The request path.
	LoadCaller(ctx context.Context, p *gateway.Principal) (*gateway.Caller, error)
	EnsureTask(ctx context.Context, workspaceID, taskID string) (*gateway.Task, error)
	RecordAudit(ctx context.Context, ev *gateway.AuditEvent) error
	FinishAudit(ctx context.Context, ev *gateway.AuditEvent) error
	Ping(ctx context.Context) error
	Reserve(ctx context.Context, r gateway.Reservation) (gateway.ReservationResult, error)
	SaveIdempotencyResult(ctx context.Context, rec *gateway.IdempotencyRecord) error
	ReleaseIdempotencyKey(ctx context.Context, rec *gateway.IdempotencyRecord) error
	DeleteEndedIdempotencyKeys(ctx context.Context, before time.Time) (int64, error)

	// The admin API.
	PutWorkspace(ctx context.Context, w *gateway.Workspace) error
	PutMember(ctx context.Context, m *gateway.Member) error
	PutProfile(ctx context.Context, p *gateway.Profile) error
	SetDefaultProfile(ctx context.Context, workspaceID string, profileID *string) error
	PutWorkspaceOverrides(ctx context.Context, workspaceID string, p gateway.Permissions) error
	PutMemberOverrides(ctx context.Context, workspaceID, userID string, p gateway.Permissions) error
	PutSeatType(ctx context.Context, s *gateway.SeatType) error
	PutOrgPlan(ctx context.Context, o *gateway.OrgPlan) error
	PutTask(ctx context.Context, t *gateway.Task) error
	CreateAPIToken(ctx context.Context, t *gateway.APIToken) error
	ListAPITokens(ctx context.Context, workspaceID string) ([]gateway.APIToken, error)
	RevokeAPIToken(ctx context.Context, fingerprint string) error
	PutExternalLimits(ctx context.Context, workspaceID string, l gateway.ExternalLimits) error
	ListAuditEvents(ctx context.Context, f gateway.AuditFilter) ([]gateway.AuditEvent, error)
	// ProfileToolUsage groups a profile's audited calls (mcpgate policy
	// suggest; sqlcore.Core.ProfileToolUsage).
	ProfileToolUsage(ctx context.Context, workspaceID, profileID string, since time.Time) ([]gateway.ToolUsage, error)
	// The admin API's reads and deletes.
	Workspace(ctx context.Context, id string) (*gateway.Workspace, error)
	ListWorkspaces(ctx context.Context, after string, limit int) ([]gateway.Workspace, error)
	ListMembers(ctx context.Context, workspaceID string) ([]gateway.Member, error)
	Member(ctx context.Context, workspaceID, userID string) (*gateway.Member, error)
	DeleteMember(ctx context.Context, workspaceID, userID string) error
	ListProfiles(ctx context.Context, workspaceID string) ([]gateway.Profile, error)
	Profile(ctx context.Context, workspaceID, profileID string) (*gateway.Profile, error)
	DefaultProfile(ctx context.Context, workspaceID string) (*string, error)
	DeleteProfile(ctx context.Context, workspaceID, profileID string) (wasDefault bool, tasks []string, total int, err error)
	WorkspaceOverrides(ctx context.Context, workspaceID string) (gateway.Permissions, error)
	MemberOverrides(ctx context.Context, workspaceID, userID string) (gateway.Permissions, error)
	DeleteWorkspaceOverride(ctx context.Context, workspaceID, key string) error
	DeleteMemberOverride(ctx context.Context, workspaceID, userID, key string) error
	ListSeatTypes(ctx context.Context) ([]gateway.SeatType, error)
	SeatType(ctx context.Context, name string) (*gateway.SeatType, error)
	DeleteSeatType(ctx context.Context, name string) error
	ListOrgPlans(ctx context.Context) ([]gateway.OrgPlan, error)
	OrgPlan(ctx context.Context, name string) (*gateway.OrgPlan, error)
	DeleteOrgPlan(ctx context.Context, name string) error
	Task(ctx context.Context, workspaceID, taskID string) (*gateway.Task, error)
	// The cc_server surface's callers (sqlcore.Core.UserWorkspaces,
	// LoadMemberships).
	UserWorkspaces(ctx context.Context, user string) ([]string, error)
	LoadMemberships(ctx context.Context, p *gateway.Principal) (*gateway.Caller, error)
	ListTasks(ctx context.Context, workspaceID, status, after string, limit int) ([]gateway.Task, error)

	// The rate-limit counters (ratelimit.Store's contract).
	ratelimit.Counters

	// ExternalLimits returns a workspace's external-gateway limits (nil
	// fields keep the default); ENotFound for an unknown workspace.
	ExternalLimits(ctx context.Context, workspaceID string) (gateway.ExternalLimits, error)
	// APITokenByHash returns the token with this SHA-256 hash, any status;
	// ENotFound when none has it.
	APITokenByHash(ctx context.Context, hash string) (*gateway.APIToken, error)
	// TouchAPIToken sets last_used_at (never backwards); ENotFound if unknown.
	TouchAPIToken(ctx context.Context, fingerprint string, at time.Time) error

	// Ended MCP sessions (gateway/server's SessionEndStore).
	EndSession(ctx context.Context, id string, until time.Time) error
	SessionEnded(ctx context.Context, id string, now time.Time) (bool, error)
	DeleteEndedSessions(ctx context.Context, before time.Time) (int64, error)

	// Console sessions (gateway/console's SessionStore).
	CreateConsoleSession(ctx context.Context, s *consolesession.Session) error
	ConsoleSession(ctx context.Context, idHash string, now time.Time) (*consolesession.Session, error)
	SetConsoleFlash(ctx context.Context, idHash string, flash []byte) error
	TakeConsoleFlash(ctx context.Context, idHash string) ([]byte, error)
	DeleteConsoleSession(ctx context.Context, idHash string) error
	DeleteExpiredConsoleSessions(ctx context.Context, before time.Time) (int64, error)

	// Approvals a person decides (gateway/approvals' Store).
	CreateApproval(ctx context.Context, a *approvals.Approval) error
	Approval(ctx context.Context, id string) (*approvals.Approval, error)
	OpenApproval(ctx context.Context, k approvals.Key, now time.Time) (*approvals.Approval, error)
	ListApprovals(ctx context.Context, f approvals.Filter) ([]approvals.Approval, error)
	DecideApproval(ctx context.Context, id, status, decidedBy, reason string, at time.Time) (*approvals.Approval, error)
	ExpireApproval(ctx context.Context, id string, at time.Time) (*approvals.Approval, error)
	UseApproval(ctx context.Context, id, argumentsHash string, at time.Time) (*approvals.Approval, error)
	TouchApprovalWatcher(ctx context.Context, id string, until time.Time) error
	DeleteApprovalWatcher(ctx context.Context, id string) error
	ApprovalWatchers(ctx context.Context, now time.Time) (int, error)
}

// Run runs the whole suite as parallel subtests of t. newStore must return
// an empty, migrated store of its own for each call (the suite calls it once
// per subtest) and release it in t.Cleanup.
func Run(t *testing.T, newStore func(t *testing.T) Store) {
	groups := []struct {
		name  string
		tests []test
	}{
		{"Admin", adminTests},
		{"Profiles", profileTests},
		{"LoadCaller", callerTests},
		{"Tasks", taskTests},
		{"Tokens", tokenTests},
		{"Audit", auditTests},
		{"Usage", usageTests},
		{"Idempotency", idempotencyTests},
		{"Sessions", sessionTests},
		{"ConsoleSessions", consoleTests},
		{"Memberships", membershipTests},
		{"Approvals", approvalTests},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for _, tc := range g.tests {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					tc.run(t, newStore(t))
				})
			}
		})
	}
}

// test is one named case of the suite.
type test struct {
	name string
	run  func(t *testing.T, s Store)
}

// ctx returns a context bounded so that a hung store fails the test instead
// of the whole run.
func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// wantCode fails t unless err carries code ("" means no error).
func wantCode(t *testing.T, err error, code gateway.ErrorCode, what string) {
	t.Helper()
	if got := gateway.ErrorCodeOf(err); got != code {
		t.Fatalf("%s: error code %q (err %v), want %q", what, got, err, code)
	}
	if code != "" && gateway.ErrorMessageOf(err) == "" {
		t.Fatalf("%s: error %v has no message for people", what, err)
	}
}

// must fails t on any error.
func must(t testing.TB, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// ptr returns a pointer to v.
func ptr[T any](v T) *T { return &v }

// putWorkspace creates workspace id (name "Workspace <id>", no slug).
func putWorkspace(t *testing.T, s Store, id string) *gateway.Workspace {
	t.Helper()
	w := &gateway.Workspace{ID: id, Name: "Workspace " + id, OrgPlan: "team"}
	must(t, s.PutWorkspace(ctx(t), w), "PutWorkspace "+id)
	return w
}

// loadAs loads the caller of an agent principal.
func loadAs(t *testing.T, s Store, ws, user, profile, task string) *gateway.Caller {
	t.Helper()
	c, err := s.LoadCaller(ctx(t), &gateway.Principal{Kind: gateway.PrincipalAgent, Subject: user,
		WorkspaceID: ws, ProfileID: profile, TaskID: task})
	must(t, err, "LoadCaller")
	return c
}

// BenchLoadCaller measures LoadCaller for a principal whose every part
// exists (member, seat type, org plan, requested and default profile,
// overrides, task): the read on the hot path of every call.
func BenchLoadCaller(b *testing.B, s Store) {
	seedTwoWorkspaces(b, s)
	p := &gateway.Principal{Kind: gateway.PrincipalAgent, Subject: "u1", WorkspaceID: "ws-a",
		ProfileID: "shared", TaskID: "t1"}
	c := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.LoadCaller(c, p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchRecordAudit measures RecordAudit of a typical row, from one
// goroutine.
func BenchRecordAudit(b *testing.B, s Store) {
	c := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := s.RecordAudit(c, event(1, "ws-a", "t1", "app.list", gateway.AuditAllowed)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchRecordAuditParallel measures RecordAudit under concurrent callers,
// as a busy gateway issues it.
func BenchRecordAuditParallel(b *testing.B, s Store) {
	c := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := s.RecordAudit(c, event(1, "ws-a", "t1", "app.list", gateway.AuditAllowed)); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
