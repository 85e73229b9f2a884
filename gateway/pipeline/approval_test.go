package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/approvals"
	"github.com/mcpgate/mcpgate/gateway/mcp/wire"
	"github.com/mcpgate/mcpgate/gateway/pipeline"
	"github.com/mcpgate/mcpgate/gateway/policy"
)

// approving allows every tool and asks a person's approval for
// schedule.pause, as policies/ccserver does for a requiresApproval tool.
type approving struct{ decider }

func (approving) Decide(_ context.Context, _ *gateway.Principal, _ *gateway.Caller, tool policy.ToolRef, _ map[string]any) (*gateway.Decision, error) {
	ob := gateway.Obligations{}
	if tool.Name == "schedule.pause" {
		ob = gateway.Obligations{ApprovalRequired: true, ApprovalBecause: []string{"guard.prompt"}}
	}
	return &gateway.Decision{ID: "d-allow", Allow: true, Visible: true, Tier: tool.Tier, Obligations: ob}, nil
}

// approvalFixture is the reservation fixture with the approval step on,
// an approvals stream open and a recording adapter.
func approvalFixture(t *testing.T) (*fixture, *approvals.Service, <-chan approvals.Approval, *recorder) {
	t.Helper()
	f := newFixture(t)
	svc := approvals.New(f.store, approvals.Options{PollInterval: 10 * time.Millisecond, StreamPoll: 20 * time.Millisecond})
	rec := &recorder{}
	f.pl.Decider, f.pl.Approvals, f.pl.Adapter = approving{}, svc, rec
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ch, err := svc.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return f, svc, ch, rec
}

// callAsync runs a tools/call of schedule.pause with raw arguments.
func callAsync(f *fixture, raw string) <-chan error {
	done := make(chan error, 1)
	go func() {
		var args map[string]any
		_ = json.Unmarshal([]byte(raw), &args)
		_, err := f.pl.CallTool(context.Background(), f.p, &gateway.CallRequest{Name: "schedule.pause", Arguments: args, RawArguments: json.RawMessage(raw)})
		done <- err
	}()
	return done
}

func pendingOf(t *testing.T, ch <-chan approvals.Approval) approvals.Approval {
	t.Helper()
	for {
		select {
		case a := <-ch:
			if a.Status == approvals.StatusPending {
				return a
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no pending approval within 5 s")
		}
	}
}

func errOf(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("the call did not return within 5 s")
	}
	return nil
}

// lastAudit returns the newest audit row.
func lastAudit(t *testing.T, f *fixture) gateway.AuditEvent {
	t.Helper()
	evs, err := f.store.ListAuditEvents(context.Background(), gateway.AuditFilter{Limit: 1})
	if err != nil || len(evs) != 1 {
		t.Fatalf("ListAuditEvents = %v, %v", evs, err)
	}
	return evs[0]
}

func TestApprovedCallRunsOnceWithTheApprovedArguments(t *testing.T) {
	f, svc, ch, rec := approvalFixture(t)
	const args = `{ "schedule_id" : "sch_1" }`
	done := callAsync(f, args)
	a := pendingOf(t, ch)
	if len(rec.calls) != 0 {
		t.Fatal("the adapter was called before the approval")
	}
	if _, err := svc.Decide(context.Background(), a.ID, approvals.StatusApproved, "alice", ""); err != nil {
		t.Fatal(err)
	}
	if err := errOf(t, done); err != nil {
		t.Fatalf("approved call: %v", err)
	}
	if got := rec.only(t); string(got.RawArguments) != args {
		t.Errorf("adapter got %s, want the approved arguments %s", got.RawArguments, args)
	}
	ev := lastAudit(t, f)
	if ev.Status != gateway.AuditAllowed || ev.ArgumentsHash != a.ArgumentsHash {
		t.Errorf("audit row status %s hash %s; want allowed with the approval's hash %s", ev.Status, ev.ArgumentsHash, a.ArgumentsHash)
	}

	// The same call again: the used approval does not let it run; a new one is asked.
	done = callAsync(f, args)
	b := pendingOf(t, ch)
	if b.ID == a.ID {
		t.Fatalf("the second call reused approval %s", a.ID)
	}
	if _, err := svc.Decide(context.Background(), b.ID, approvals.StatusRejected, "bob", "once is enough"); err != nil {
		t.Fatal(err)
	}
	err := errOf(t, done)
	if gateway.ErrorCodeOf(err) != gateway.EForbidden {
		t.Fatalf("rejected call: %v, want a Forbidden refusal", err)
	}
	if ge, _ := err.(*gateway.Error); ge == nil || ge.DecisionID != "d-allow" {
		t.Errorf("refusal %+v does not name the decision", err)
	}
	if len(rec.calls) != 1 {
		t.Errorf("the adapter got %d calls, want 1", len(rec.calls))
	}
	ev = lastAudit(t, f)
	if ev.Status != gateway.AuditDenied || len(ev.ReasonCodes) != 1 || ev.ReasonCodes[0] != approvals.ReasonRejected {
		t.Errorf("rejection's audit row: status %s reasons %v; want denied, %s", ev.Status, ev.ReasonCodes, approvals.ReasonRejected)
	}
}

func TestApprovalStepAuditRowNamesTheApproval(t *testing.T) {
	f, svc, ch, _ := approvalFixture(t)
	obs := &auditObserver{}
	f.pl.Metrics = obs
	done := callAsync(f, `{"schedule_id":"sch_1"}`)
	a := pendingOf(t, ch)
	if _, err := svc.Decide(context.Background(), a.ID, approvals.StatusRejected, "bob", ""); err != nil {
		t.Fatal(err)
	}
	_ = errOf(t, done)
	if obs.last == nil || obs.last.ApprovalID != a.ID {
		t.Errorf("audit event %+v; want approval_id %s", obs.last, a.ID)
	}
}

func TestApprovalRefusedWithoutAPersonOrWithoutApprovals(t *testing.T) {
	f := newFixture(t)
	rec := &recorder{}
	f.pl.Decider, f.pl.Adapter = approving{}, rec
	for name, ap := range map[string]pipeline.Approver{
		"approvals off":    nil,
		"nobody connected": approvals.New(f.store, approvals.Options{}),
	} {
		f.pl.Approvals = ap
		err := errOf(t, callAsync(f, `{"schedule_id":"sch_1"}`))
		if gateway.ErrorCodeOf(err) != gateway.EForbidden {
			t.Errorf("%s: %v, want a Forbidden refusal", name, err)
		}
	}
	if len(rec.calls) != 0 {
		t.Errorf("the adapter got %d calls, want none", len(rec.calls))
	}
}

// auditObserver keeps the last audit event observed.
type auditObserver struct{ last *gateway.AuditEvent }

func (o *auditObserver) ObserveCall(ev *gateway.AuditEvent)      { c := *ev; o.last = &c }
func (o *auditObserver) ObserveReservation(time.Duration, error) {}

// approvingElicitor answers every elicitation with approve, as a client
// that approves its own calls would.
type approvingElicitor struct{ asked chan struct{} }

func (e approvingElicitor) Elicit(context.Context, wire.ElicitRequest) (wire.ElicitResult, error) {
	e.asked <- struct{}{}
	return wire.ElicitResult{Action: wire.ElicitAccept, Content: map[string]any{"decision": "approve"}}, nil
}

// An agent's client is the agent itself, not a person: the approval step
// never asks it by elicitation (it would approve its own call), so with no
// approver connected its call is refused and nothing runs, while a user's
// client that declared elicitation is asked and its approval runs the call.
func TestApprovalNotElicitedFromAnAgent(t *testing.T) {
	for kind, wantRun := range map[gateway.PrincipalKind]bool{gateway.PrincipalAgent: false, gateway.PrincipalUser: true} {
		t.Run(string(kind), func(t *testing.T) {
			f := newFixture(t)
			rec := &recorder{}
			f.pl.Decider, f.pl.Adapter = approving{}, rec
			f.pl.Approvals = approvals.New(f.store, approvals.Options{PollInterval: 10 * time.Millisecond})
			p := *f.p
			p.Kind = kind
			el := approvingElicitor{asked: make(chan struct{}, 1)}
			ctx := wire.WithElicitor(context.Background(), el)
			raw := `{"schedule_id":"sch_1"}`
			_, err := f.pl.CallTool(ctx, &p, &gateway.CallRequest{Name: "schedule.pause",
				Arguments: map[string]any{"schedule_id": "sch_1"}, RawArguments: json.RawMessage(raw)})
			asked := len(el.asked) > 0
			if ran := err == nil && len(rec.calls) == 1; ran != wantRun || asked != wantRun {
				t.Fatalf("%s: ran %v, elicited %v (err %v); want both %v", kind, ran, asked, err, wantRun)
			}
			if !wantRun && !hasReason(err, approvals.ReasonNoPerson) {
				t.Errorf("%s: %v, want reason %s", kind, err, approvals.ReasonNoPerson)
			}
		})
	}
}

func hasReason(err error, code string) bool {
	var e *gateway.Error
	if !errors.As(err, &e) {
		return false
	}
	for _, r := range e.Reasons {
		if r.Code == code {
			return true
		}
	}
	return false
}

// With traces on, the approval step is a child span of the call's only
// when the decision asks for a person: a call that waited for one shows
// where it waited, a call that did not has no empty span for it.
func TestApprovalStepSpanOnlyWhenAsked(t *testing.T) {
	f, svc, ch, _ := approvalFixture(t)
	spans := tracetest.NewSpanRecorder()
	f.pl.Tracer = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)).Tracer("test")
	done := callAsync(f, `{"schedule_id":"sch_1"}`)
	if _, err := svc.Decide(context.Background(), pendingOf(t, ch).ID, approvals.StatusApproved, "alice", ""); err != nil {
		t.Fatal(err)
	}
	if err := errOf(t, done); err != nil {
		t.Fatalf("approved call: %v", err)
	}
	if _, err := f.pl.CallTool(context.Background(), f.p, &gateway.CallRequest{Name: "run.events", Arguments: map[string]any{"run_id": "r1"},
		RawArguments: json.RawMessage(`{"run_id":"r1"}`)}); err != nil {
		t.Fatalf("run.events: %v", err)
	}
	steps := map[string][]string{} // call span name -> its children's names
	names := map[trace.SpanID]string{}
	for _, s := range spans.Ended() {
		names[s.SpanContext().SpanID()] = s.Name()
	}
	for _, s := range spans.Ended() {
		if parent := names[s.Parent().SpanID()]; parent != "" {
			steps[parent] = append(steps[parent], s.Name())
		}
	}
	for call, want := range map[string]bool{"tools/call schedule.pause": true, "tools/call run.events": false} {
		if got := slices.Contains(steps[call], "mcpgate.awaitApproval"); got != want || !slices.Contains(steps[call], "mcpgate.dispatch") {
			t.Errorf("%s's step spans %v: awaitApproval %v, want %v (and a dispatch)", call, steps[call], got, want)
		}
	}
}
