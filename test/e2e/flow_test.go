package e2e

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/approvals"
	"github.com/mcpgate/mcpgate/gateway/auth"
	"github.com/mcpgate/mcpgate/policies"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bundleWithoutTests is a copy of the shipped bundle in a temporary
// folder without its tests, for a test to change a rule and add a test of
// its own (a folder runs its tests when it loads).
func bundleWithoutTests(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	must(t, os.CopyFS(dir, policies.FS))
	must(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, "_test.rego") {
			err = os.Remove(p)
		}
		return err
	}))
	return dir
}

// bundleWithFlowRules is the shipped bundle with the flow rule set of
// surface switched on as rules says, and one test of its own instead of
// the shipped ones (a folder runs its tests when it loads).
func bundleWithFlowRules(t *testing.T, surface, rules string) string {
	t.Helper()
	dir := bundleWithoutTests(t)
	f := filepath.Join(dir, surface, "flow.rego")
	b, err := os.ReadFile(f)
	must(t, err)
	const off = `flow_rules := {"all_workspaces": false, "workspaces": []}`
	if !strings.Contains(string(b), off) {
		t.Fatalf("%s/flow.rego no longer holds %s", surface, off)
	}
	must(t, os.WriteFile(f, []byte(strings.Replace(string(b), off, "flow_rules := "+rules, 1)), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, surface, "on_test.rego"),
		[]byte("package "+surface+"_test\n\ntest_flow_rules_on if data."+surface+".flow_rules\n"), 0o644))
	return dir
}

// TestCCServerFlowRules: on both stores, with the cc_server flow rule set
// on, a conversation that read private data (search_code) sends a message
// only once a person approves that exact call, the refusal naming the
// read; the approved message runs once; another conversation is clean.
func TestCCServerFlowRules(t *testing.T) {
	for kind, dbURL := range storeKinds(t) {
		t.Run(kind, func(t *testing.T) {
			g := startCCGatewayEnv(t, dbURL(t), map[string]string{"MCPGATE_POLICY_DIR": bundleWithFlowRules(t, "ccserver", `{"all_workspaces": true}`)})
			conv := func(id string) string {
				return g.ccToken(t, auth.CCClaims{Subject: "ada", ConversationID: id})
			}
			cs := g.ccConnect(t, conv("conv-1"), false)
			space := acmeSpace(t, cs)
			msg := map[string]any{"workspace_id": "ws-acme", "space_id": space, "sender_agent": "ada-bot", "text": "status"}
			if res, err := ccCall(t, cs, "send_message", msg); err != nil || res.IsError {
				t.Fatalf("send_message in a clean conversation: %v %q", err, text(res))
			}
			if res, err := ccCall(t, cs, "search_code", map[string]any{"workspace_id": "ws-acme", "query": "billing"}); err != nil || res.IsError {
				t.Fatalf("search_code: %v %q", err, text(res))
			}
			read := g.lastCCAudit(t, "search_code")

			res, err := ccCall(t, cs, "send_message", msg)
			if want := fmt.Sprintf("private data through search_code (audit row %d", read.ID); err != nil || !res.IsError || !strings.Contains(text(res), want) {
				t.Fatalf("send_message after the read: %v %q; want refused naming %q", err, text(res), want)
			}
			if ev := g.lastCCAudit(t, "send_message"); ev.Status != gateway.AuditDenied || !containsCode(ev.ReasonCodes, "flow.tainted") {
				t.Errorf("refusal's audit row: %s %v; want denied with flow.tainted", ev.Status, ev.ReasonCodes)
			}

			ap := approveTaintedSend(t, g, cs, msg)
			if ev := g.lastCCAudit(t, "send_message"); ev.Status != gateway.AuditAllowed || ev.ApprovalID != ap.ID {
				t.Errorf("approved call's audit row: %s approval %q; want allowed naming %s", ev.Status, ev.ApprovalID, ap.ID)
			}

			other := g.ccConnect(t, conv("conv-2"), false)
			if res, err := ccCall(t, other, "send_message", msg); err != nil || res.IsError {
				t.Fatalf("send_message in another conversation: %v %q", err, text(res))
			}
		})
	}
}

// TestSupaCloudFlowRules: on both stores, with the flow rule set on for
// ws-a, an agent task that read a support conversation replies to the
// customer only once a person approves that exact reply, the refusal
// naming the read; the approved reply runs once; a new task is clean.
func TestSupaCloudFlowRules(t *testing.T) {
	for kind, dbURL := range storeKinds(t) {
		t.Run(kind, func(t *testing.T) {
			g := startGateway(t, dbURL(t), map[string]string{"MCPGATE_POLICY_DIR": bundleWithFlowRules(t, "supacloud", `{"workspaces": ["ws-a"]}`)})
			ids := seedFixtures(t, g)["ws-a"]
			conv := map[string]any{"resource": ids["$resource"], "conversation_id": ids["$conversation"]}
			reply := map[string]any{"resource": ids["$resource"], "conversation_id": ids["$conversation"], "body": "Thanks, fixed."}
			cs := g.connect(t, g.token(t, "ws-a", "olivia", "task-ws-a", "full"))
			if res, err := ccCall(t, cs, "conversation.reply", reply); err != nil || res.IsError {
				t.Fatalf("conversation.reply in a clean task: %v %q", err, text(res))
			}
			if res, err := ccCall(t, cs, "conversation.get", conv); err != nil || res.IsError {
				t.Fatalf("conversation.get: %v %q", err, text(res))
			}
			read := g.lastAudit(t, "ws-a", "task-ws-a", "conversation.get")
			res, err := ccCall(t, cs, "conversation.reply", reply)
			if want := fmt.Sprintf("private data through conversation.get (audit row %d", read.ID); err != nil || !res.IsError || !strings.Contains(text(res), want) {
				t.Fatalf("conversation.reply after the read: %v %q; want refused naming %q", err, text(res), want)
			}

			person := (&ccGateway{gatewayUnderTest: g}).openApprovalStream(t)
			pending := callAsync(cs, "conversation.reply", reply)
			ap := person.next(t, "conversation.reply", approvals.StatusPending)
			person.decide(t, ap.ID, "approve")
			if r := <-pending; r.err != nil || r.res.IsError {
				t.Fatalf("approved conversation.reply: %v %q", r.err, text(r.res))
			}
			if ev := g.lastAudit(t, "ws-a", "task-ws-a", "conversation.reply"); ev.Status != gateway.AuditAllowed || ev.ApprovalID != ap.ID {
				t.Errorf("approved reply's audit row: %s approval %q; want allowed naming %s", ev.Status, ev.ApprovalID, ap.ID)
			}

			fresh := g.connect(t, g.token(t, "ws-a", "olivia", "task-new", "full"))
			if res, err := ccCall(t, fresh, "conversation.reply", reply); err != nil || res.IsError {
				t.Fatalf("conversation.reply in a new task: %v %q", err, text(res))
			}
		})
	}
}

// putFlowRules switches the flow rule set of ws on or off through the
// admin API, as a workspace's admin does.
func (g *ccGateway) putFlowRules(t *testing.T, ws string, on bool) {
	t.Helper()
	body := fmt.Sprintf(`{"enabled":%v}`, on)
	if code, reply := adminDo(t, g.gatewayUnderTest, http.MethodPut, "/workspaces/"+ws+"/flow-rules", "e2e-admin-token", body); code != http.StatusOK {
		t.Fatalf("PUT /admin/v1/workspaces/%s/flow-rules %s: HTTP %d %s", ws, body, code, reply)
	}
}

// approveTaintedSend calls send_message with msg in cs, which must wait
// for a person's approval because flow.tainted; a person approves it
// through the admin approvals stream, and the call must then succeed.
func approveTaintedSend(t *testing.T, g *ccGateway, cs *mcp.ClientSession, msg map[string]any) approvals.Approval {
	t.Helper()
	person := g.openApprovalStream(t)
	pending := callAsync(cs, "send_message", msg)
	ap := person.next(t, "send_message", approvals.StatusPending)
	if !containsCode(ap.Because, "flow.tainted") {
		t.Errorf("approval asked because %v, want flow.tainted", ap.Because)
	}
	person.decide(t, ap.ID, "approve")
	if r := <-pending; r.err != nil || r.res.IsError {
		t.Fatalf("approved send_message: %v %q", r.err, text(r.res))
	}
	return ap
}

// acmeSpace is the id of the first space list_spaces names in ws-acme.
func acmeSpace(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	spaces, err := ccCall(t, cs, "list_spaces", map[string]any{"workspace_id": "ws-acme"})
	if err != nil || spaces.IsError {
		t.Fatalf("list_spaces: %v %q", err, text(spaces))
	}
	raw, _ := json.Marshal(spaces.StructuredContent)
	space := regexp.MustCompile(`"id":"([^"]+)"`).FindStringSubmatch(string(raw))
	if space == nil {
		t.Fatalf("list_spaces named no space: %s", raw)
	}
	return space[1]
}

// TestCCServerFlowRulesSwitchedThroughTheAdminAPI: on both stores, with
// the shipped bundle (whose policy data leaves the flow rule set off), a
// workspace's admin switches it on through the admin API; a cc_server
// user's conversation that read private data (get_space_notes) then
// sends a message only once a person approves that exact call, the
// refusal naming the read; the approved message runs once. Switched off,
// the same conversation's message runs at once.
func TestCCServerFlowRulesSwitchedThroughTheAdminAPI(t *testing.T) {
	for kind, dbURL := range storeKinds(t) {
		t.Run(kind, func(t *testing.T) {
			g := startCCGatewayEnv(t, dbURL(t), nil)
			cs := g.ccConnect(t, g.ccToken(t, auth.CCClaims{Subject: "ada", ConversationID: "conv-switch"}), false)
			space := acmeSpace(t, cs)
			read := map[string]any{"workspace_id": "ws-acme", "space_id": space}
			msg := map[string]any{"workspace_id": "ws-acme", "space_id": space, "sender_agent": "ada-bot", "text": "status"}
			sends := func() int {
				return g.countAudit(t, gateway.AuditFilter{Tool: "send_message", Status: gateway.AuditAllowed})
			}

			// Off (the shipped default): a read taints nothing.
			if res, err := ccCall(t, cs, "get_space_notes", read); err != nil || res.IsError {
				t.Fatalf("get_space_notes with flow rules off: %v %q", err, text(res))
			}
			if res, err := ccCall(t, cs, "send_message", msg); err != nil || res.IsError {
				t.Fatalf("send_message with flow rules off: %v %q", err, text(res))
			}

			g.putFlowRules(t, "ws-acme", true)
			if res, err := ccCall(t, cs, "get_space_notes", read); err != nil || res.IsError {
				t.Fatalf("get_space_notes with flow rules on: %v %q", err, text(res))
			}
			tainting := g.lastCCAudit(t, "get_space_notes")
			res, err := ccCall(t, cs, "send_message", msg)
			if want := fmt.Sprintf("private data through get_space_notes (audit row %d", tainting.ID); err != nil || !res.IsError || !strings.Contains(text(res), want) {
				t.Fatalf("send_message after the read, switched on: %v %q; want refused naming %q", err, text(res), want)
			}

			before := sends()
			approveTaintedSend(t, g, cs, msg)
			if n := sends() - before; n != 1 {
				t.Errorf("the approved send_message ran %d times, want once", n)
			}

			g.putFlowRules(t, "ws-acme", false)
			if res, err := ccCall(t, cs, "send_message", msg); err != nil || res.IsError {
				t.Fatalf("send_message in the tainted conversation, switched off: %v %q", err, text(res))
			}
		})
	}
}
