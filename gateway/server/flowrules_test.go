package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/approvals"
)

// callExample runs one tools/call of tool with its catalog example
// arguments.
func (g *cachedGateway) callExample(tool string) error {
	args, _ := g.pl.Catalog.ExampleArguments(tool)
	raw, _ := json.Marshal(args)
	_, err := g.pl.CallTool(context.Background(), g.p, &gateway.CallRequest{Name: tool, Arguments: args, RawArguments: raw})
	return err
}

// The flow rule set switched on through the admin API (PUT
// /admin/v1/workspaces/{ws}/flow-rules, docs/policy.md "Flow rules")
// decides the next call of the workspace, with the shipped bundle, whose
// policy data leaves it off, and a caller cache whose TTL is long enough
// that only the change feed can make the switch show: off, an egress
// after a private read runs; on, the same sequence waits for a person's
// approval of the egress, which then runs once.
func TestFlowRulesSwitchedOnThroughTheAdminAPI(t *testing.T) {
	g := newCachedGateway(t)
	svc := approvals.New(g.store, approvals.Options{PollInterval: 10 * time.Millisecond, StreamPoll: 20 * time.Millisecond})
	g.pl.Approvals = svc
	g.admin(t, http.MethodPut, "/workspaces/ws-a/profiles/bot", `{"name":"bot","allowlist":["supacloud.read.*","supacloud.ops.*"]}`)

	// Off: the read taints nothing, and the egress runs at once.
	for _, tool := range []string{"app.files.get", "pr.create"} {
		if err := g.callExample(tool); err != nil {
			t.Fatalf("%s with flow rules off: %v", tool, err)
		}
	}
	if n := g.adapter.calls.Load(); n != 2 {
		t.Fatalf("%d dispatches with flow rules off, want 2", n)
	}

	g.admin(t, http.MethodPut, "/workspaces/ws-a/flow-rules", `{"enabled":true}`)
	if err := g.callExample("app.files.get"); err != nil {
		t.Fatalf("app.files.get with flow rules on: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := svc.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- g.callExample("pr.create") }()
	var a approvals.Approval
	for a.Status != approvals.StatusPending {
		select {
		case a = <-ch:
		case err := <-done:
			t.Fatalf("pr.create after the read returned (%v) without waiting for a person's approval", err)
		case <-time.After(5 * time.Second):
			t.Fatal("no pending approval within 5 s: pr.create after a private read did not wait for one")
		}
	}
	if a.Tool != "pr.create" || !slices.Contains(a.Because, "flow.tainted") {
		t.Errorf("approval asked for %s because %v; want pr.create because flow.tainted", a.Tool, a.Because)
	}
	if n := g.adapter.calls.Load(); n != 3 {
		t.Fatalf("%d dispatches while the egress waits, want 3 (it has not run)", n)
	}
	if _, err := svc.Decide(context.Background(), a.ID, approvals.StatusApproved, "alice", ""); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("approved pr.create: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the approved pr.create did not return within 5 s")
	}
	if n := g.adapter.calls.Load(); n != 4 {
		t.Errorf("%d dispatches, want 4 (the approved egress ran once)", n)
	}
}

// POST /admin/v1/explain shows the taint as the call would meet it: with
// the workspace's flow rules switched on, an explanation of an egress in a
// task that read private data carries the session's history in its input
// and the notice flow.tainted naming the read's audit row, and asks for a
// person's approval; switched off, neither.
func TestExplainShowsTheTaint(t *testing.T) {
	app := explainApp(t)
	ctx, s := context.Background(), app.Store
	if err := s.PutProfile(ctx, &gateway.Profile{WorkspaceID: "ws-a", ID: "p-ops", Name: "ops", Allowlist: []string{"supacloud.read.*", "supacloud.ops.*"}}); err != nil {
		t.Fatal(err)
	}
	p := &gateway.Principal{Kind: gateway.PrincipalAgent, Subject: "u1", WorkspaceID: "ws-a", TaskID: "t-old"}
	read, err := s.Reserve(ctx, gateway.Reservation{
		Event: &gateway.AuditEvent{WorkspaceID: "ws-a", TaskID: "t-old", Actor: "u1", PrincipalKind: gateway.PrincipalAgent,
			Tool: "app.files.get", Tier: "read", Status: gateway.AuditAllowed, ReasonCodes: []string{}},
		Flow: &gateway.FlowRecord{Key: gateway.FlowKey(gateway.SurfaceSupaCloud, p), WorkspaceID: "ws-a", TaskID: "t-old",
			Tool: "app.files.get", Reads: []string{"private"}},
	})
	if err != nil || read.AuditID == 0 {
		t.Fatalf("recording the read: %+v, %v", read, err)
	}
	args, _ := app.Catalog.ExampleArguments("pr.create")
	raw, _ := json.Marshal(args)
	body := `{"workspace":"ws-a","task":"t-old","profile":"p-ops","user":"u1","tool":"pr.create","args":` + string(raw) + `}`
	for _, on := range []bool{false, true} {
		if err := s.SetWorkspaceFlowRules(ctx, "ws-a", on); err != nil {
			t.Fatal(err)
		}
		code, r := postExplain(t, app, body)
		if code != http.StatusOK {
			t.Fatalf("explain (flow rules %v): HTTP %d %+v", on, code, r.Error)
		}
		var notice string
		for _, rs := range r.Decision.Reasons {
			if rs.Code == "flow.tainted" {
				notice = rs.Message
			}
		}
		_, session := r.Input["session"]
		want := fmt.Sprintf("through app.files.get (audit row %d", read.AuditID)
		if on && (!session || !strings.Contains(notice, want) || !r.Decision.Obligations.ApprovalRequired) {
			t.Errorf("explained with flow rules on: session in the input %v, notice %q (want one naming %q), approval %v",
				session, notice, want, r.Decision.Obligations.ApprovalRequired)
		}
		if !on && (session || notice != "" || r.Decision.Obligations.ApprovalRequired) {
			t.Errorf("explained with flow rules off: session in the input %v, notice %q, approval %v; want none", session, notice, r.Decision.Obligations.ApprovalRequired)
		}
	}
}
