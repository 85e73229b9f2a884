package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/approvals"
	"github.com/mcpgate/mcpgate/gateway/auth"
)

// approver is a person holding GET /admin/v1/approvals/stream open: every
// approval event the stream sends arrives on events.
type approver struct {
	g      *ccGateway
	events chan approvals.Approval
	cancel context.CancelFunc
}

// openApprovalStream opens the admin approvals stream and returns once the
// gateway counts its holder as an approver (the opening comment arrived).
func (g *ccGateway) openApprovalStream(t *testing.T) *approver {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.srv.URL+"/admin/v1/approvals/stream", nil)
	must(t, err)
	req.Header.Set("Authorization", "Bearer e2e-admin-token")
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("approvals stream: HTTP %d", resp.StatusCode)
	}
	a := &approver{g: g, events: make(chan approvals.Approval, 16), cancel: cancel}
	t.Cleanup(a.close)
	sc := bufio.NewScanner(resp.Body)
	if !sc.Scan() || !strings.HasPrefix(sc.Text(), ": approvals stream open") {
		t.Fatalf("approvals stream opened with %q", sc.Text())
	}
	go func() {
		defer resp.Body.Close()
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var ap approvals.Approval
				if json.Unmarshal([]byte(data), &ap) == nil {
					a.events <- ap
				}
			}
		}
	}()
	return a
}

func (a *approver) close() { a.cancel() }

// next returns the next event of an approval of tool in status (pending:
// a call waits for it), skipping the others.
func (a *approver) next(t *testing.T, tool, status string) approvals.Approval {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ap := <-a.events:
			if ap.Tool == tool && ap.Status == status {
				return ap
			}
		case <-deadline:
			t.Fatalf("the approvals stream sent no %s approval of %s", status, tool)
		}
	}
}

// decide posts approve or reject for id as grace and returns the HTTP status.
func (a *approver) decide(t *testing.T, id, verb string) int {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"decided_by": "grace", "reason": "e2e " + verb})
	status, _ := adminDo(t, a.g.gatewayUnderTest, http.MethodPost, "/approvals/"+id+"/"+verb, "e2e-admin-token", string(body))
	return status
}

// callResult is the outcome of a tools/call made in the background.
type callResult struct {
	res *mcp.CallToolResult
	err error
}

func callAsync(cs *mcp.ClientSession, name string, args map[string]any) <-chan callResult {
	ch := make(chan callResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		ch <- callResult{res, err}
	}()
	return ch
}

func text(res *mcp.CallToolResult) string {
	if res == nil || len(res.Content) == 0 {
		return ""
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); ok {
		return tc.Text
	}
	return ""
}

// ticketsTitled counts ws-acme's tickets titled title (list_tickets as ada).
func ticketsTitled(t *testing.T, cs *mcp.ClientSession, title string) int {
	t.Helper()
	res, err := ccCall(t, cs, "list_tickets", map[string]any{"workspace_id": "ws-acme"})
	if err != nil || res.IsError {
		t.Fatalf("list_tickets: %v %+v", err, res)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	return strings.Count(string(raw), `"title":"`+title+`"`)
}

// The audit rows these tests read come back from the store
// (ListAuditEvents), so the approval_id they check is the column written.

// TestCCServerApprovalsAdmin: on both stores, over the admin API, with a
// person holding the approvals stream open: an approved create_ticket runs
// exactly once and its audit row names the approval; the same call again
// needs a new approval (an approval runs its call once); a changed
// argument needs its own approval, which a rejection refuses (audited with
// the approval and approval.rejected); deciding a used approval is a
// conflict. With nobody holding the stream open, the call is refused at
// once for want of a person.
func TestCCServerApprovalsAdmin(t *testing.T) {
	t.Parallel()
	for kind, dbURL := range storeKinds(t) {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			g := startCCGateway(t, dbURL(t))
			cs := g.ccConnect(t, g.ccToken(t, auth.CCClaims{Subject: "ada"}), kind == "postgres")
			args := map[string]any{"workspace_id": "ws-acme", "title": "Approved ticket"}

			// Nobody to ask: refused at once, nothing created.
			start := time.Now()
			res, err := ccCall(t, cs, "create_ticket", args)
			if err != nil || !res.IsError || !strings.Contains(text(res), "no one who could approve it is connected") {
				t.Fatalf("without an approver: %v %q, want refused for want of a person", err, text(res))
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("refusal for want of a person took %v, want at once", d)
			}
			if ev := g.lastCCAudit(t, "create_ticket"); ev.Status != gateway.AuditDenied || !containsCode(ev.ReasonCodes, approvals.ReasonNoPerson) {
				t.Errorf("no-person audit row: %s %v", ev.Status, ev.ReasonCodes)
			}

			person := g.openApprovalStream(t)
			pending := callAsync(cs, "create_ticket", args)
			ap := person.next(t, "create_ticket", approvals.StatusPending)
			if ap.Subject != "ada" || ap.WorkspaceID != "ws-acme" || ap.ArgumentsHash == "" {
				t.Errorf("pending approval: %+v", ap)
			}
			select {
			case r := <-pending:
				t.Fatalf("the call returned before anyone decided: %v %q", r.err, text(r.res))
			case <-time.After(300 * time.Millisecond):
			}
			if code := person.decide(t, ap.ID, "approve"); code != http.StatusOK {
				t.Fatalf("approve: HTTP %d", code)
			}
			r := <-pending
			if r.err != nil || r.res.IsError {
				t.Fatalf("approved call: %v %q, want it to run", r.err, text(r.res))
			}
			ev := g.lastCCAudit(t, "create_ticket")
			if ev.Status != gateway.AuditAllowed || ev.ApprovalID != ap.ID || ev.ArgumentsHash != ap.ArgumentsHash {
				t.Errorf("approved call's audit row: status %s approval_id %q hash %s; want allowed naming %s with hash %s",
					ev.Status, ev.ApprovalID, ev.ArgumentsHash, ap.ID, ap.ArgumentsHash)
			}
			if ap.PolicyRevision == "" || ap.PolicyRevision != ev.PolicyRevision {
				t.Errorf("approval bound to policy revision %q, want the deciding revision %q", ap.PolicyRevision, ev.PolicyRevision)
			}
			if n := ticketsTitled(t, cs, "Approved ticket"); n != 1 {
				t.Errorf("the approved call created %d tickets, want exactly 1", n)
			}
			if code := person.decide(t, ap.ID, "reject"); code != http.StatusConflict {
				t.Errorf("rejecting a used approval: HTTP %d, want 409", code)
			}

			// The same call again: the used approval does not run it twice.
			again := callAsync(cs, "create_ticket", args)
			ap2 := person.next(t, "create_ticket", approvals.StatusPending)
			if ap2.ID == ap.ID || ap2.ArgumentsHash != ap.ArgumentsHash {
				t.Errorf("the same call again: approval %s (hash %s), want a new one for the same hash", ap2.ID, ap2.ArgumentsHash)
			}
			person.reject(t, ap2.ID)
			if r := <-again; r.err != nil || !r.res.IsError {
				t.Fatalf("rejected repeat: %v %q, want refused", r.err, text(r.res))
			}

			// A changed argument: its own approval, rejected.
			changed := map[string]any{"workspace_id": "ws-acme", "title": "Changed ticket"}
			rej := callAsync(cs, "create_ticket", changed)
			ap3 := person.next(t, "create_ticket", approvals.StatusPending)
			if ap3.ID == ap.ID || ap3.ArgumentsHash == ap.ArgumentsHash {
				t.Errorf("changed argument: approval %s hash %s, want a new approval with another hash than %s", ap3.ID, ap3.ArgumentsHash, ap.ArgumentsHash)
			}
			person.reject(t, ap3.ID)
			r = <-rej
			if r.err != nil || !r.res.IsError || !strings.Contains(text(r.res), "grace rejected approval "+ap3.ID) {
				t.Fatalf("rejected call: %v %q, want refused naming grace and the approval", r.err, text(r.res))
			}
			ev = g.lastCCAudit(t, "create_ticket")
			if ev.Status != gateway.AuditDenied || ev.ApprovalID != ap3.ID || !containsCode(ev.ReasonCodes, approvals.ReasonRejected) {
				t.Errorf("rejected call's audit row: %s approval_id %q %v", ev.Status, ev.ApprovalID, ev.ReasonCodes)
			}
			if n := ticketsTitled(t, cs, "Changed ticket"); n != 0 {
				t.Errorf("the rejected call created %d tickets", n)
			}
			if n := ticketsTitled(t, cs, "Approved ticket"); n != 1 {
				t.Errorf("after the repeat: %d tickets titled Approved ticket, want still 1", n)
			}
		})
	}
}

// reject rejects approval id, which must still be pending.
func (a *approver) reject(t *testing.T, id string) {
	t.Helper()
	if code := a.decide(t, id, "reject"); code != http.StatusOK {
		t.Fatalf("reject %s: HTTP %d, want 200", id, code)
	}
}

// TestCCServerApprovalExpires: on both stores, an approval nobody decides
// within MCPGATE_APPROVAL_TTL expires; the call is refused, nothing runs,
// and the audit row names the approval with approval.expired.
func TestCCServerApprovalExpires(t *testing.T) {
	t.Parallel()
	for kind, dbURL := range storeKinds(t) {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			g := startCCGatewayEnv(t, dbURL(t), map[string]string{"MCPGATE_APPROVAL_TTL": "1s"})
			cs := g.ccConnect(t, g.ccToken(t, auth.CCClaims{Subject: "ada"}), false)
			person := g.openApprovalStream(t)
			pending := callAsync(cs, "create_ticket", map[string]any{"workspace_id": "ws-acme", "title": "Expiring ticket"})
			ap := person.next(t, "create_ticket", approvals.StatusPending)
			r := <-pending
			if r.err != nil || !r.res.IsError || !strings.Contains(text(r.res), "before it expired") {
				t.Fatalf("undecided call: %v %q, want refused as expired", r.err, text(r.res))
			}
			ev := g.lastCCAudit(t, "create_ticket")
			if ev.Status != gateway.AuditDenied || ev.ApprovalID != ap.ID || !containsCode(ev.ReasonCodes, approvals.ReasonExpired) {
				t.Errorf("expired call's audit row: %s approval_id %q %v", ev.Status, ev.ApprovalID, ev.ReasonCodes)
			}
			if code := person.decide(t, ap.ID, "approve"); code != http.StatusConflict {
				t.Errorf("approving an expired approval: HTTP %d, want 409", code)
			}
			if n := ticketsTitled(t, cs, "Expiring ticket"); n != 0 {
				t.Errorf("the expired call created %d tickets", n)
			}
		})
	}
}

// TestCCServerApprovalElicitation: a client that declared elicitation
// (the Go SDK with an ElicitationHandler) is asked itself, with nobody on
// the admin stream: accepting with approve runs the call once, the audit
// row naming the approval; declining refuses it, audited. Over Streamable
// HTTP on SQLite and HTTP+SSE on PostgreSQL.
func TestCCServerApprovalElicitation(t *testing.T) {
	t.Parallel()
	for kind, dbURL := range storeKinds(t) {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			g := startCCGateway(t, dbURL(t))
			var asked atomic.Int32
			var message atomic.Value
			answer := func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked.Add(1)
				message.Store(req.Params.Message)
				if strings.Contains(req.Params.Message, "Decline me") {
					return &mcp.ElicitResult{Action: "decline"}, nil
				}
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "approve"}}, nil
			}
			cs := g.ccConnectWith(t, g.ccToken(t, auth.CCClaims{Subject: "ada"}), kind == "postgres",
				&mcp.ClientOptions{ElicitationHandler: answer})

			res, err := ccCall(t, cs, "create_ticket", map[string]any{"workspace_id": "ws-acme", "title": "Elicited ticket"})
			if err != nil || res.IsError {
				t.Fatalf("accepted by elicitation: %v %q, want it to run", err, text(res))
			}
			if m, _ := message.Load().(string); asked.Load() != 1 || !strings.Contains(m, "create_ticket") || !strings.Contains(m, "Elicited ticket") {
				t.Errorf("asked %d times with %q; want once, naming the tool and its arguments", asked.Load(), m)
			}
			ev := g.lastCCAudit(t, "create_ticket")
			if ev.Status != gateway.AuditAllowed || !strings.HasPrefix(ev.ApprovalID, "apr_") {
				t.Errorf("elicited call's audit row: %s approval_id %q", ev.Status, ev.ApprovalID)
			}
			decided := g.approval(t, ev.ApprovalID)
			if decided.Status != approvals.StatusUsed || decided.DecidedBy != "elicitation:ada" {
				t.Errorf("elicited approval: status %s decided_by %q; want used, elicitation:ada", decided.Status, decided.DecidedBy)
			}
			if n := ticketsTitled(t, cs, "Elicited ticket"); n != 1 {
				t.Errorf("the accepted call created %d tickets, want 1", n)
			}

			res, err = ccCall(t, cs, "create_ticket", map[string]any{"workspace_id": "ws-acme", "title": "Decline me"})
			if err != nil || !res.IsError || !strings.Contains(text(res), "rejected approval") {
				t.Fatalf("declined by elicitation: %v %q, want refused", err, text(res))
			}
			ev = g.lastCCAudit(t, "create_ticket")
			if ev.Status != gateway.AuditDenied || ev.ApprovalID == "" || !containsCode(ev.ReasonCodes, approvals.ReasonRejected) {
				t.Errorf("declined call's audit row: %s approval_id %q %v", ev.Status, ev.ApprovalID, ev.ReasonCodes)
			}
			if n := ticketsTitled(t, cs, "Decline me"); n != 0 {
				t.Errorf("the declined call created %d tickets", n)
			}
		})
	}
}

// approval reads approval id back through GET /admin/v1/approvals.
func (g *ccGateway) approval(t *testing.T, id string) approvals.Approval {
	t.Helper()
	for _, status := range []string{approvals.StatusUsed, approvals.StatusRejected, approvals.StatusApproved, approvals.StatusPending, approvals.StatusExpired} {
		req, err := http.NewRequest(http.MethodGet, g.srv.URL+"/admin/v1/approvals?status="+status, nil)
		must(t, err)
		req.Header.Set("Authorization", "Bearer e2e-admin-token")
		resp, err := http.DefaultClient.Do(req)
		must(t, err)
		var out struct {
			Approvals []approvals.Approval `json:"approvals"`
		}
		err = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		must(t, err)
		for _, a := range out.Approvals {
			if a.ID == id {
				return a
			}
		}
	}
	t.Fatalf("GET /admin/v1/approvals lists no approval %s", id)
	return approvals.Approval{}
}
