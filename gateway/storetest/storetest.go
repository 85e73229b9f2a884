// Package storetest is the one test suite every audit store passes, so
// that the embedded store behaves as PostgreSQL does: gateway/postgres and
// gateway/sqlite call Run from their tests.
package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/store"
)

// Store is what the suite tests: the whole store contract
// (gateway/store.Store), declared once for the stores, their consumers
// and this suite.
type Store = store.Store

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
		{"AuditChain", chainTests},
		{"Usage", usageTests},
		{"Idempotency", idempotencyTests},
		{"Sessions", sessionTests},
		{"ConsoleSessions", consoleTests},
		{"Memberships", membershipTests},
		{"Approvals", approvalTests},
		{"Flows", flowTests},
		{"Pins", pinTests},
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
