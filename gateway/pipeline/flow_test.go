package pipeline_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/approvals"
	"github.com/mcpgate/mcpgate/gateway/pipeline"
	"github.com/mcpgate/mcpgate/gateway/policy"
	"github.com/mcpgate/mcpgate/gateway/sqlite"
	"github.com/mcpgate/mcpgate/policies"
)

// flowBundle is the shipped bundle with the flow rule set switched on
// for workspace ws-a, as an operator does in policy data.
func flowBundle(t *testing.T) fs.FS {
	t.Helper()
	m := fstest.MapFS{}
	err := fs.WalkDir(policies.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(policies.FS, p)
		m[p] = &fstest.MapFile{Data: b}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	const off = `flow_rules := {"all_workspaces": false, "workspaces": []}`
	f := m["supacloud/flow.rego"]
	if !bytes.Contains(f.Data, []byte(off)) {
		t.Fatalf("supacloud/flow.rego no longer holds %s", off)
	}
	f.Data = bytes.Replace(f.Data, []byte(off), []byte(`flow_rules := {"all_workspaces": false, "workspaces": ["ws-a"]}`), 1)
	return m
}

// flowFixture is the reservation fixture deciding with the shipped bundle
// (flow rules on for ws-a), u1 an owner of ws-a, no rate limits, and the
// approval step on; its decisions keep their input, as with a decision
// log.
func flowFixture(t *testing.T) (*fixture, *approvals.Service) {
	t.Helper()
	f := newFixture(t)
	ctx := context.Background()
	if err := f.store.PutMember(ctx, &gateway.Member{WorkspaceID: "ws-a", UserID: "u1", Role: "owner"}); err != nil {
		t.Fatal(err)
	}
	e, err := policy.New(ctx, policy.Options{FS: flowBundle(t), Edition: gateway.EditionCommunity, Tools: pipeline.ToolRefs(f.pl.Catalog), KeepInput: true})
	if err != nil {
		t.Fatal(err)
	}
	svc := approvals.New(f.store, approvals.Options{PollInterval: 10 * time.Millisecond, StreamPoll: 20 * time.Millisecond})
	f.pl.Decider, f.pl.Approvals, f.pl.RateLimits = e, svc, nil
	return f, svc
}

// callAs runs a tools/call of tool, with its example arguments, by p.
func (f *fixture) callAs(p *gateway.Principal, tool string) error {
	args, _ := f.pl.Catalog.ExampleArguments(tool)
	raw, _ := json.Marshal(args)
	_, err := f.pl.CallTool(context.Background(), p, &gateway.CallRequest{Name: tool, Arguments: args, RawArguments: raw})
	return err
}

func TestFlowEgressAfterPrivateReadNeedsApproval(t *testing.T) {
	f, svc := flowFixture(t)
	task := func(id string) *gateway.Principal { p := *f.p; p.TaskID = id; return &p }
	if err := f.callAs(task("t1"), "pr.create"); err != nil {
		t.Fatalf("pr.create in a clean session: %v", err)
	}
	if err := f.callAs(task("t1"), "app.files.get"); err != nil {
		t.Fatalf("app.files.get: %v", err)
	}
	read := lastAudit(t, f)

	// No one could approve: refused at once, naming the tainting call.
	err := f.callAs(task("t1"), "pr.create")
	ge, _ := err.(*gateway.Error)
	if ge == nil || ge.Code != gateway.EForbidden {
		t.Fatalf("pr.create after the read: %v, want a Forbidden refusal", err)
	}
	if want := "app.files.get (audit row " + strconv.FormatInt(read.ID, 10); !strings.Contains(ge.Message, want) {
		t.Errorf("refusal %q does not name the tainting call (%s)", ge.Message, want)
	}
	if ev := lastAudit(t, f); !slices.Contains(ev.ReasonCodes, "flow.tainted") || !slices.Contains(ev.ReasonCodes, approvals.ReasonNoPerson) {
		t.Errorf("refusal's audit row reasons %v; want flow.tainted and %s", ev.ReasonCodes, approvals.ReasonNoPerson)
	}
	if n := f.up.calls.Load(); n != 2 {
		t.Fatalf("%d dispatches, want 2 (the refused egress never ran)", n)
	}

	// A person approves that exact call: it runs once.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := svc.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- f.callAs(task("t1"), "pr.create") }()
	a := pendingOf(t, ch)
	if !slices.Contains(a.Because, "flow.tainted") {
		t.Errorf("approval asked because %v, want flow.tainted", a.Because)
	}
	if _, err := svc.Decide(context.Background(), a.ID, approvals.StatusApproved, "alice", ""); err != nil {
		t.Fatal(err)
	}
	if err := errOf(t, done); err != nil {
		t.Fatalf("approved pr.create: %v", err)
	}
	if n := f.up.calls.Load(); n != 3 {
		t.Errorf("%d dispatches, want 3 (the approved egress ran once)", n)
	}

	// Another task is another session: clean.
	if err := f.callAs(task("t2"), "pr.create"); err != nil {
		t.Fatalf("pr.create in a new task: %v", err)
	}
}

// The decision log shows the taint: the logged decision of an egress
// after a private read carries the notice flow.tainted naming the read's
// audit row, and its input the session's history with that read, which
// is what replay re-decides on.
func TestFlowDecisionLogShowsTheTaint(t *testing.T) {
	f, _ := flowFixture(t)
	rec := &decisionRecorder{}
	f.pl.DecisionLog = rec
	if err := f.callAs(f.p, "app.files.get"); err != nil {
		t.Fatalf("app.files.get: %v", err)
	}
	read := lastAudit(t, f)
	_ = f.callAs(f.p, "pr.create") // refused: no person to approve
	if len(rec.calls) != 2 {
		t.Fatalf("logged %d decisions, want 2", len(rec.calls))
	}
	egress := rec.calls[1]
	in, err := json.Marshal(egress.input)
	if err != nil {
		t.Fatal(err)
	}
	type flowRead struct {
		Tool    string `json:"tool"`
		AuditID int64  `json:"audit_id"`
	}
	var input struct {
		Session struct {
			Reads []flowRead `json:"reads"`
		} `json:"session"`
	}
	if err := json.Unmarshal(in, &input); err != nil {
		t.Fatalf("logged input %s: %v", in, err)
	}
	r := input.Session.Reads
	if len(r) == 0 || slices.ContainsFunc(r, func(r flowRead) bool { return r.Tool != "app.files.get" || r.AuditID != read.ID }) {
		t.Errorf("logged input's session reads %+v; want each label read by app.files.get at audit row %d", r, read.ID)
	}
	want := "app.files.get (audit row " + strconv.FormatInt(read.ID, 10)
	if !slices.ContainsFunc(egress.reasons, func(r gateway.Reason) bool { return r.Code == "flow.tainted" && strings.Contains(r.Message, want) }) {
		t.Errorf("logged reasons %+v; want flow.tainted naming %s", egress.reasons, want)
	}
}

// A coordinator's flow key is its API token: its reads are recorded
// under the token, and another token of the same workspace starts clean.
func TestFlowCoordinatorKeyIsTheToken(t *testing.T) {
	f, _ := flowFixture(t)
	token := func(fp string) *gateway.Principal {
		return &gateway.Principal{Kind: gateway.PrincipalCoordinator, Subject: "token:" + fp, WorkspaceID: "ws-a",
			TokenFingerprint: fp, Scopes: []string{"mcp:read", "mcp:ops"}}
	}
	if err := f.callAs(token("fp1"), "memory.list_recent"); err != nil {
		t.Fatalf("memory.list_recent: %v", err)
	}
	for fp, want := range map[string][]string{"fp1": {"private"}, "fp2": {}} {
		s, err := f.store.FlowSession(context.Background(), gateway.FlowKey(gateway.SurfaceSupaCloud, token(fp)))
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Labels(); !slices.Equal(got, want) {
			t.Errorf("labels read under token %s = %v, want %v", fp, got, want)
		}
	}
}

// racingStore reserves a private read in the session (as another replica
// would) just before the first egress reservation locks the flow key.
type racingStore struct {
	*sqlite.Store
	once   sync.Once
	inject func()
}

func (s *racingStore) Reserve(ctx context.Context, r gateway.Reservation) (gateway.ReservationResult, error) {
	if r.Flow != nil && r.Event.Tool == "pr.create" {
		s.once.Do(s.inject)
	}
	return s.Store.Reserve(ctx, r)
}

// An egress decided on a clean history whose session reads private data
// before its reservation is decided again, on the history with the read,
// and then needs an approval: it never runs on the stale decision.
func TestFlowEgressDecidedAgainAfterAConcurrentRead(t *testing.T) {
	f, _ := flowFixture(t)
	key := gateway.FlowKey(gateway.SurfaceSupaCloud, f.p)
	f.pl.Store = &racingStore{Store: f.store, inject: func() {
		ev := &gateway.AuditEvent{Time: time.Now(), WorkspaceID: "ws-a", TaskID: "t1", Tool: "script.get", Status: gateway.AuditAllowed, Kind: gateway.AuditKindToolCall}
		_, err := f.store.Reserve(context.Background(), gateway.Reservation{Event: ev,
			Flow: &gateway.FlowRecord{Key: key, WorkspaceID: "ws-a", TaskID: "t1", Tool: "script.get", Reads: []string{"private"}}})
		if err != nil {
			t.Error(err)
		}
	}}
	err := f.callAs(f.p, "pr.create")
	if ge, _ := err.(*gateway.Error); ge == nil || !strings.Contains(ge.Message, "private data through script.get") {
		t.Fatalf("pr.create with a read reserved in between: %v; want the approval refusal naming script.get", err)
	}
	if n := f.up.calls.Load(); n != 0 {
		t.Errorf("%d dispatches, want none", n)
	}
}

// countingFlows counts the session histories read from the store.
type countingFlows struct {
	pipeline.FlowStore
	reads atomic.Int64
}

func (c *countingFlows) FlowSession(ctx context.Context, key string) (*gateway.FlowSession, error) {
	c.reads.Add(1)
	return c.FlowStore.FlowSession(ctx, key)
}

// A session's history read within a second stands in for a read: the
// session's next call decides on it, unless its own record changed the
// history (a new tool, a new label) or the second has passed.
func TestFlowHistoryReadOncePerSecond(t *testing.T) {
	f, _ := flowFixture(t)
	flows := &countingFlows{FlowStore: f.store}
	now := time.Date(2026, 5, 6, 12, 0, 0, 0, time.UTC)
	f.pl.Flows, f.pl.Now = flows, func() time.Time { return now }
	step := func(tool string, wantReads int64) {
		t.Helper()
		if err := f.callAs(f.p, tool); err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		if n := flows.reads.Load(); n != wantReads {
			t.Fatalf("after %s: %d history reads, want %d", tool, n, wantReads)
		}
	}
	step("pr.create", 1) // first sight: read, then dropped (its record adds the tool)
	step("pr.create", 2) // read again: the record changes nothing now
	step("pr.create", 2) // from the cache
	now = now.Add(time.Second)
	step("pr.create", 3)     // a second later: read again
	step("app.files.get", 3) // from the cache, but its record adds a label: dropped
	step("app.files.get", 4)
	if err := f.callAs(f.p, "pr.create"); err == nil {
		t.Fatal("pr.create after the private read ran; want the approval refusal")
	}
}

// A history cached before another process recorded a private read in the
// session does not let an egress through: the reservation finds more
// labels than the call was decided on, and the call is decided again on
// the store's history.
func TestFlowStaleCachedHistoryIsDecidedAgain(t *testing.T) {
	f, _ := flowFixture(t)
	flows := &countingFlows{FlowStore: f.store}
	f.pl.Flows = flows
	for range 2 {
		if err := f.callAs(f.p, "pr.create"); err != nil {
			t.Fatalf("pr.create in a clean session: %v", err)
		}
	}
	key := gateway.FlowKey(gateway.SurfaceSupaCloud, f.p)
	ev := &gateway.AuditEvent{Time: time.Now(), WorkspaceID: "ws-a", TaskID: "t1", Tool: "script.get", Status: gateway.AuditAllowed, Kind: gateway.AuditKindToolCall}
	if _, err := f.store.Reserve(context.Background(), gateway.Reservation{Event: ev,
		Flow: &gateway.FlowRecord{Key: key, WorkspaceID: "ws-a", TaskID: "t1", Tool: "script.get", Reads: []string{"private"}}}); err != nil {
		t.Fatal(err)
	}
	before := flows.reads.Load()
	err := f.callAs(f.p, "pr.create")
	if ge, _ := err.(*gateway.Error); ge == nil || !strings.Contains(ge.Message, "private data through script.get") {
		t.Fatalf("pr.create after another process's read: %v; want the approval refusal naming script.get", err)
	}
	if n := flows.reads.Load() - before; n != 1 {
		t.Errorf("%d history reads for the egress; want 1 (decided on the cache, then again on the store's)", n)
	}
	if n := f.up.calls.Load(); n != 2 {
		t.Errorf("%d dispatches, want 2 (the egress after the read never ran)", n)
	}
}
