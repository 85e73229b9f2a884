package approvals_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/approvals"
	"github.com/mcpgate/mcpgate/gateway/mcp/wire"
	"github.com/mcpgate/mcpgate/gateway/sqlite"
)

// newStore is a migrated in-memory store with workspace ws-a.
func newStore(t *testing.T) *sqlite.Store {
	t.Helper()
	ctx := context.Background()
	s, err := sqlite.Open(ctx, ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.PutWorkspace(ctx, &gateway.Workspace{ID: "ws-a", Name: "A"}); err != nil {
		t.Fatal(err)
	}
	return s
}

func newService(s approvals.Store, ttl time.Duration) *approvals.Service {
	return approvals.New(s, approvals.Options{TTL: ttl, PollInterval: 20 * time.Millisecond, StreamPoll: 50 * time.Millisecond, WatcherTTL: 300 * time.Millisecond})
}

var agent = &gateway.Principal{Kind: gateway.PrincipalAgent, Subject: "u1", WorkspaceID: "ws-a", TaskID: "t1"}

func call(hash string) approvals.Call {
	return approvals.Call{Principal: agent, Tool: "create_ticket", ArgumentsHash: hash,
		Because: []string{"tool.requires_approval"}, Arguments: []byte(`{"title":"x"}`)}
}

// watch opens an admin approvals stream for the rest of the test.
func watch(t *testing.T, svc *approvals.Service) <-chan approvals.Approval {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ch, err := svc.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// next returns the next approval the stream yields.
func next(t *testing.T, ch <-chan approvals.Approval) approvals.Approval {
	t.Helper()
	select {
	case a, ok := <-ch:
		if !ok {
			t.Fatal("the approvals stream closed")
		}
		return a
	case <-time.After(5 * time.Second):
		t.Fatal("the approvals stream yielded nothing within 5 s")
	}
	return approvals.Approval{}
}

// nextPending returns the next pending approval the stream yields,
// skipping those that left pending.
func nextPending(t *testing.T, ch <-chan approvals.Approval) approvals.Approval {
	t.Helper()
	for {
		if a := next(t, ch); a.Status == approvals.StatusPending {
			return a
		}
	}
}

type outcome struct {
	a   *approvals.Approval
	err error
}

// approveAsync runs Approve in the background.
func approveAsync(ctx context.Context, svc *approvals.Service, c approvals.Call, el wire.Elicitor) <-chan outcome {
	done := make(chan outcome, 1)
	go func() {
		a, err := svc.Approve(ctx, c, el)
		done <- outcome{a, err}
	}()
	return done
}

func result(t *testing.T, done <-chan outcome) outcome {
	t.Helper()
	select {
	case o := <-done:
		return o
	case <-time.After(5 * time.Second):
		t.Fatal("Approve did not return within 5 s")
	}
	return outcome{}
}

// wantRefusal fails t unless err is an EForbidden refusal with reason code.
func wantRefusal(t *testing.T, err error, code string) {
	t.Helper()
	var ge *gateway.Error
	if gateway.ErrorCodeOf(err) != gateway.EForbidden || !asError(err, &ge) || len(ge.Reasons) != 1 || ge.Reasons[0].Code != code {
		t.Fatalf("error %v, want an EForbidden refusal with reason %s", err, code)
	}
}

func asError(err error, ge **gateway.Error) bool {
	e, ok := err.(*gateway.Error)
	*ge = e
	return ok
}

func TestRefusedAtOnceWithNobodyConnected(t *testing.T) {
	s := newStore(t)
	svc := newService(s, time.Minute)
	start := time.Now()
	a, err := svc.Approve(context.Background(), call("h1"), nil)
	wantRefusal(t, err, approvals.ReasonNoPerson)
	if took := time.Since(start); took > time.Second {
		t.Errorf("the refusal took %v; it must come at once", took)
	}
	if a != nil {
		t.Errorf("approval %+v returned; none should be created", a)
	}
	if !strings.Contains(gateway.ErrorMessageOf(err), "/admin/v1/approvals/stream") {
		t.Errorf("message %q does not say how to get a person connected", gateway.ErrorMessageOf(err))
	}
	list, err := svc.List(context.Background(), approvals.Filter{})
	if err != nil || len(list) != 0 {
		t.Errorf("approvals stored = %v, %v; want none", list, err)
	}
}

func TestStreamCountsAsAPersonAndApprovalRunsOnce(t *testing.T) {
	s := newStore(t)
	svc := newService(s, time.Minute)
	ch := watch(t, svc)
	done := approveAsync(context.Background(), svc, call("h1"), nil)
	p := next(t, ch)
	if p.Status != approvals.StatusPending || p.Tool != "create_ticket" || p.ArgumentsHash != "h1" || p.Subject != "u1" {
		t.Fatalf("stream yielded %+v, want the pending approval of the call", p)
	}
	if _, err := svc.Decide(context.Background(), p.ID, approvals.StatusApproved, "", ""); gateway.ErrorCodeOf(err) != gateway.EInvalid {
		t.Errorf("Decide without decided_by: %v, want EInvalid", err)
	}
	if _, err := svc.Decide(context.Background(), p.ID, approvals.StatusApproved, "alice", "ok"); err != nil {
		t.Fatal(err)
	}
	o := result(t, done)
	if o.err != nil || o.a.Status != approvals.StatusUsed || o.a.ID != p.ID || o.a.DecidedBy != "alice" {
		t.Fatalf("Approve = %+v, %v; want approval %s used", o.a, o.err, p.ID)
	}
	if d := next(t, ch); d.ID != p.ID || d.Status == approvals.StatusPending {
		t.Errorf("stream yielded %+v after the decision, want %s no longer pending", d, p.ID)
	}
	// The same call again needs a new approval: the first one is used.
	done = approveAsync(context.Background(), svc, call("h1"), nil)
	p2 := next(t, ch)
	if p2.ID == p.ID || p2.Status != approvals.StatusPending {
		t.Fatalf("second call's approval %+v; want a new pending one", p2)
	}
	if _, err := svc.Decide(context.Background(), p2.ID, approvals.StatusRejected, "bob", "not twice"); err != nil {
		t.Fatal(err)
	}
	o = result(t, done)
	wantRefusal(t, o.err, approvals.ReasonRejected)
	if msg := gateway.ErrorMessageOf(o.err); !strings.Contains(msg, "bob") || !strings.Contains(msg, "not twice") || o.a == nil || o.a.ID != p2.ID {
		t.Errorf("rejection %q (approval %+v) should name bob, the reason and approval %s", msg, o.a, p2.ID)
	}
}

func TestChangedArgumentsNeedANewApproval(t *testing.T) {
	s := newStore(t)
	svc := newService(s, time.Minute)
	ch := watch(t, svc)
	// A call whose client gives up leaves its approval pending.
	ctx, cancel := context.WithCancel(context.Background())
	done := approveAsync(ctx, svc, call("h1"), nil)
	first := next(t, ch)
	cancel()
	if o := result(t, done); gateway.ErrorCodeOf(o.err) != gateway.EUnavailable || o.a == nil || o.a.ID != first.ID {
		t.Fatalf("Approve after the request ended = %+v, %v; want EUnavailable naming %s", o.a, o.err, first.ID)
	}
	if _, err := svc.Decide(context.Background(), first.ID, approvals.StatusApproved, "alice", ""); err != nil {
		t.Fatal(err)
	}
	// Other arguments find no approval: a new one, pending.
	done = approveAsync(context.Background(), svc, call("h2"), nil)
	other := nextPending(t, ch)
	if other.ID == first.ID || other.ArgumentsHash != "h2" {
		t.Fatalf("call with changed arguments waits on %+v, want a new approval for h2", other)
	}
	// The retry with the approved arguments runs on the first approval.
	a, err := svc.Approve(context.Background(), call("h1"), nil)
	if err != nil || a.ID != first.ID || a.Status != approvals.StatusUsed {
		t.Fatalf("retry with the approved arguments = %+v, %v; want %s used", a, err, first.ID)
	}
	if _, err := svc.Decide(context.Background(), other.ID, approvals.StatusRejected, "alice", "no"); err != nil {
		t.Fatal(err)
	}
	wantRefusal(t, result(t, done).err, approvals.ReasonRejected)
}

func TestExpiryRefusesAndIsStored(t *testing.T) {
	s := newStore(t)
	svc := newService(s, 150*time.Millisecond)
	ch := watch(t, svc)
	done := approveAsync(context.Background(), svc, call("h1"), nil)
	p := next(t, ch)
	o := result(t, done)
	wantRefusal(t, o.err, approvals.ReasonExpired)
	got, err := s.Approval(context.Background(), p.ID)
	if err != nil || got.Status != approvals.StatusExpired {
		t.Fatalf("stored approval = %+v, %v; want expired", got, err)
	}
	if _, err := svc.Decide(context.Background(), p.ID, approvals.StatusApproved, "alice", ""); gateway.ErrorCodeOf(err) != gateway.EConflict {
		t.Errorf("a decision after the expiry: %v, want EConflict", err)
	}
}

func TestAnotherReplicaDecidesAndWatches(t *testing.T) {
	s := newStore(t)
	a, b := newService(s, time.Minute), newService(s, time.Minute) // two replicas, one store
	chB := watch(t, b)                                             // the approver is connected to replica b
	done := approveAsync(context.Background(), a, call("h1"), nil) // the call lands on replica a
	p := next(t, chB)
	if _, err := b.Decide(context.Background(), p.ID, approvals.StatusApproved, "alice", ""); err != nil {
		t.Fatal(err)
	}
	if o := result(t, done); o.err != nil || o.a.Status != approvals.StatusUsed {
		t.Fatalf("Approve on replica a = %+v, %v; want used after replica b's decision", o.a, o.err)
	}
}

func TestStreamClosedCountsNoMore(t *testing.T) {
	s := newStore(t)
	svc := newService(s, time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := svc.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := svc.Reachable(context.Background()); err != nil || !ok {
		t.Fatalf("Reachable with a stream open = %v, %v", ok, err)
	}
	other := newService(s, time.Minute)
	if ok, err := other.Reachable(context.Background()); err != nil || !ok {
		t.Fatalf("Reachable on another replica with a stream open = %v, %v", ok, err)
	}
	cancel()
	for range ch { // drained and closed once the stream has deregistered
	}
	for _, svc := range []*approvals.Service{svc, other} {
		if ok, err := svc.Reachable(context.Background()); err != nil || ok {
			t.Errorf("Reachable after the stream closed = %v, %v; want false", ok, err)
		}
	}
}

// elicitor answers every elicitation with res (after the request reaches
// it), and records the requests.
type elicitor struct {
	res  wire.ElicitResult
	reqs chan wire.ElicitRequest
}

func (e *elicitor) Elicit(ctx context.Context, req wire.ElicitRequest) (wire.ElicitResult, error) {
	e.reqs <- req
	return e.res, nil
}

func TestElicitation(t *testing.T) {
	for _, tc := range []struct {
		name   string
		res    wire.ElicitResult
		reason string // "" for approved
	}{
		{"accept approve", wire.ElicitResult{Action: wire.ElicitAccept, Content: map[string]any{"decision": "approve"}}, ""},
		{"accept reject", wire.ElicitResult{Action: wire.ElicitAccept, Content: map[string]any{"decision": "reject", "reason": "wrong board"}}, "wrong board"},
		{"decline", wire.ElicitResult{Action: wire.ElicitDecline}, "declined"},
		{"cancel", wire.ElicitResult{Action: wire.ElicitCancel}, "dismissed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			svc := newService(s, time.Minute)
			el := &elicitor{res: tc.res, reqs: make(chan wire.ElicitRequest, 1)}
			// No stream is open: the elicitation-capable client alone is enough.
			a, err := svc.Approve(context.Background(), call("h1"), el)
			req := <-el.reqs
			if !strings.Contains(req.Message, "create_ticket") || !strings.Contains(req.Message, "approval") || req.RequestedSchema["type"] != "object" {
				t.Errorf("elicitation request %+v: want a form naming the tool and the approval", req)
			}
			if tc.reason == "" {
				if err != nil || a.Status != approvals.StatusUsed || a.DecidedBy != "elicitation:u1" {
					t.Fatalf("Approve = %+v, %v; want used, decided by elicitation:u1", a, err)
				}
				return
			}
			wantRefusal(t, err, approvals.ReasonRejected)
			if !strings.Contains(gateway.ErrorMessageOf(err), tc.reason) || a.DecidedBy != "elicitation:u1" {
				t.Errorf("refusal %q by %q; want the reason %q, decided by elicitation:u1", gateway.ErrorMessageOf(err), a.DecidedBy, tc.reason)
			}
		})
	}
}

// silent is an elicitor whose user never answers.
type silent struct{}

func (silent) Elicit(ctx context.Context, _ wire.ElicitRequest) (wire.ElicitResult, error) {
	<-ctx.Done()
	return wire.ElicitResult{}, ctx.Err()
}

func TestAdminDecisionWinsOverAPendingElicitation(t *testing.T) {
	s := newStore(t)
	svc := newService(s, time.Minute)
	ch := watch(t, svc)
	done := approveAsync(context.Background(), svc, call("h1"), silent{})
	p := next(t, ch)
	if _, err := svc.Decide(context.Background(), p.ID, approvals.StatusApproved, "alice", ""); err != nil {
		t.Fatal(err)
	}
	if o := result(t, done); o.err != nil || o.a.DecidedBy != "alice" {
		t.Fatalf("Approve = %+v, %v; want approved by alice", o.a, o.err)
	}
}

// An approver present without a stream (the console's approvals page)
// makes a call wait instead of being refused; the presence lapses after
// PresenceTTL without a renewal, and Absent ends it at once.
func TestPresenceCountsAsAPersonUntilItLapses(t *testing.T) {
	s := newStore(t)
	clock := time.Now()
	var mu sync.Mutex
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); clock = clock.Add(d) }
	svc := approvals.New(s, approvals.Options{TTL: time.Hour, PollInterval: 20 * time.Millisecond, PresenceTTL: 15 * time.Second, Now: now})
	ctx := context.Background()
	if err := svc.Present(ctx, "console_a"); err != nil {
		t.Fatal(err)
	}
	if ok, err := svc.Reachable(ctx); err != nil || !ok {
		t.Fatalf("Reachable with a present approver = %v, %v; want true", ok, err)
	}
	done := approveAsync(ctx, svc, call("h1"), nil)
	var pending []approvals.Approval
	for deadline := time.Now().Add(5 * time.Second); len(pending) == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		var err error
		if pending, err = svc.List(ctx, approvals.Filter{Status: approvals.StatusPending}); err != nil {
			t.Fatal(err)
		}
	}
	if len(pending) != 1 {
		t.Fatalf("pending approvals with a present approver: %v; want the call waiting", pending)
	}
	if _, err := svc.Decide(ctx, pending[0].ID, approvals.StatusApproved, "olivia", ""); err != nil {
		t.Fatal(err)
	}
	if o := result(t, done); o.err != nil || o.a.Status != approvals.StatusUsed {
		t.Fatalf("Approve after the present approver approved = %+v, %v; want used", o.a, o.err)
	}

	advance(14 * time.Second)
	if ok, _ := svc.Reachable(ctx); !ok {
		t.Error("the approver stopped counting before PresenceTTL passed")
	}
	advance(2 * time.Second)
	if ok, _ := svc.Reachable(ctx); ok {
		t.Error("the approver still counts after PresenceTTL without a renewal")
	}
	_, err := svc.Approve(ctx, call("h2"), nil)
	wantRefusal(t, err, approvals.ReasonNoPerson)
	if !strings.Contains(gateway.ErrorMessageOf(err), "/console/approvals") {
		t.Errorf("refusal %q does not name the console's approvals page", gateway.ErrorMessageOf(err))
	}

	if err := svc.Present(ctx, "console_a"); err != nil {
		t.Fatal(err)
	}
	if err := svc.Absent(ctx, "console_a"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := svc.Reachable(ctx); ok {
		t.Error("the approver still counts after Absent")
	}
	if err := svc.Absent(ctx, "console_unknown"); err != nil {
		t.Errorf("Absent of an unknown approver: %v", err)
	}
}
