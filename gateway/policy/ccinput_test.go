package policy_test

import (
	"context"
	"slices"
	"testing"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/policy"
	"github.com/mcpgate/mcpgate/policies"
	"github.com/mcpgate/mcpgate/tools"
)

// ccRefs are the cc_server catalog's tools as the engine takes them.
func ccRefs(t testing.TB) (*tools.Catalog, []policy.ToolRef) {
	cat, err := tools.LoadCCServer()
	if err != nil {
		t.Fatal(err)
	}
	var refs []policy.ToolRef
	for _, tl := range cat.Tools() {
		refs = append(refs, policy.ToolRef{Name: tl.Name, Group: tl.Group, RequiresApproval: tl.RequiresApproval, ActionClasses: tl.ActionClasses})
	}
	return cat, refs
}

func newCCEngine(t testing.TB, cacheSize int) (*policy.Engine, []policy.ToolRef) {
	_, refs := ccRefs(t)
	e, err := policy.New(context.Background(), policy.Options{FS: policies.FS, Surface: gateway.SurfaceCCServer, Tools: refs, CacheSize: cacheSize})
	if err != nil {
		t.Fatal(err)
	}
	return e, refs
}

func ccUser(mode string) *gateway.Principal {
	return &gateway.Principal{Kind: gateway.PrincipalUser, Subject: "ada", Mode: mode}
}

// TestCCServerEngineDecides: the engine sends the cc_server input and
// reads the decision's group, mode, workspace and approval obligation,
// with the cache on and off alike.
func TestCCServerEngineDecides(t *testing.T) {
	for _, size := range []int{0, -1} {
		e, refs := newCCEngine(t, size)
		members := &gateway.Caller{Memberships: []string{"ws-acme"}}
		ctx := context.Background()

		d, err := e.Decide(ctx, ccUser("plan"), members, ref(refs, "create_ticket"), map[string]any{"workspace_id": "ws-acme"})
		if err != nil {
			t.Fatal(err)
		}
		if d.Allow || d.Mode != "plan" || d.Group != "tickets" || !hasReason(d, "mode.tool_not_allowed") {
			t.Errorf("plan create_ticket: %+v, want denied by mode.tool_not_allowed with group tickets, mode plan", d)
		}

		d, err = e.Decide(ctx, ccUser(""), members, ref(refs, "create_ticket"), map[string]any{"workspace_id": "ws-acme"})
		if err != nil {
			t.Fatal(err)
		}
		if !d.Allow || d.Mode != "chat" || d.WorkspaceID != "ws-acme" || !d.Obligations.ApprovalRequired ||
			!slices.Equal(d.Obligations.ApprovalBecause, []string{"tool.requires_approval"}) {
			t.Errorf("chat create_ticket: %+v, want allowed in ws-acme, mode chat, approval required because tool.requires_approval", d)
		}

		d, err = e.Decide(ctx, ccUser("chat"), members, ref(refs, "list_tickets"), map[string]any{"workspace_id": "ws-globex"})
		if err != nil {
			t.Fatal(err)
		}
		if d.Allow || !hasReason(d, "workspace.not_member") {
			t.Errorf("list_tickets in a foreign workspace: %+v, want workspace.not_member", d)
		}

		// The resource's workspace enters the input: a mismatch is refused.
		tr := ref(refs, "get_ticket")
		tr.Resource = map[string]string{"kind": "ticket", "id": "TCK-1", "workspace_id": "ws-globex"}
		d, err = e.Decide(ctx, ccUser("chat"), members, tr, map[string]any{"workspace_id": "ws-acme", "ticket_id": "TCK-1"})
		if err != nil {
			t.Fatal(err)
		}
		if d.Allow || !hasReason(d, "workspace.mismatch") {
			t.Errorf("get_ticket of another workspace's ticket: %+v, want workspace.mismatch", d)
		}

		// The memberships are part of the input (and so of the cache key).
		d, err = e.Decide(ctx, ccUser("chat"), &gateway.Caller{Memberships: []string{"ws-globex"}}, ref(refs, "list_tickets"), map[string]any{"workspace_id": "ws-globex"})
		if err != nil || !d.Allow {
			t.Errorf("list_tickets as a member of ws-globex: %+v, %v; want allowed", d, err)
		}
	}
}

func hasReason(d *gateway.Decision, code string) bool {
	for _, r := range d.Reasons {
		if r.Code == code {
			return true
		}
	}
	return false
}

// TestCCServerVisibleInAgreesWithDecide: for every mode, with and without
// a workspace, the visible set is exactly the tools whose call with the
// catalog's example arguments (in that workspace) is allowed — unless
// only the call can tell (a resource, an own ticket): those are checked
// to be visible at least.
func TestCCServerVisibleInAgreesWithDecide(t *testing.T) {
	e, refs := newCCEngine(t, 0)
	cat, _ := ccRefs(t)
	members := &gateway.Caller{Memberships: []string{"ws-acme"}}
	ctx := context.Background()
	for _, mode := range []string{"chat", "plan", "review", "orchestrate", "bogus"} {
		for _, ws := range []string{"", "ws-acme", "ws-globex"} {
			p := ccUser(mode)
			vis, err := e.VisibleIn(ctx, p, members, ws)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range refs {
				args, _ := cat.ExampleArguments(r.Name)
				if _, scoped := args["workspace_id"]; scoped {
					if ws == "" {
						continue // a scoped call always names a workspace
					}
					args["workspace_id"] = ws
				} else if ws != "" && (r.Name == "search_tool_bm25" || r.Name == "list_my_tools") {
					args["workspace_id"] = ws
				}
				d, err := e.Decide(ctx, p, members, r, args)
				if err != nil {
					t.Fatal(err)
				}
				if d.Allow && !vis[r.Name] {
					t.Errorf("mode %s ws %q: %s allowed but not visible", mode, ws, r.Name)
				}
				if !d.Allow && vis[r.Name] && !hasReason(d, "mode.own_ticket_only") {
					t.Errorf("mode %s ws %q: %s visible but refused: %v", mode, ws, r.Name, d.Reasons)
				}
			}
			if mode == "bogus" && len(vis) != 0 {
				t.Errorf("unknown mode sees %d tools, want none", len(vis))
			}
		}
	}
}

func TestCCServerLimitsFromPolicyData(t *testing.T) {
	e, _ := newCCEngine(t, 0)
	if n, ok := e.LimitInt("calls_per_minute"); !ok || n != 120 {
		t.Errorf("calls_per_minute = %d, %v; want 120 from data.ccserver.limits", n, ok)
	}
	sc, _ := newEngine(t, gateway.EditionCommunity)
	if _, ok := sc.LimitInt("calls_per_minute"); ok {
		t.Error("the SupaCloud engine reads cc_server's limits")
	}
}

func TestUnknownSurfaceRefused(t *testing.T) {
	if _, err := policy.New(context.Background(), policy.Options{FS: policies.FS, Surface: "nope"}); err == nil {
		t.Fatal("an unknown surface was accepted")
	}
}
