package ccdemo

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/pipeline"
	"github.com/mcpgate/mcpgate/tools"
)

// The backend is a pipeline adapter that resolves resources.
var (
	_ pipeline.Adapter          = (*Backend)(nil)
	_ pipeline.ResourceResolver = (*Backend)(nil)
)

func catalog(t *testing.T) *tools.Catalog {
	t.Helper()
	c, err := tools.LoadCCServer()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// refs gives, for an argument naming an entity, the kind and index of the
// seeded entity of workspace ws to pass.
var refs = map[string]struct {
	kind string
	i    int
}{
	"ticket_id": {"ticket", 0}, "related_ticket_id": {"ticket", 1}, "parent_ticket_id": {"ticket", 1},
	"artifact_id": {"artifact", 0}, "space_id": {"space", 0}, "review_id": {"review", 0},
	"fact_id": {"fact", 0}, "superseded_by": {"fact", 1}, "policy_id": {"policy", 0},
	"goal_id": {"goal", 0}, "parent_goal_id": {"goal", 1}, "approval_id": {"approval", 0},
	"work_product_id": {"work_product", 0}, "playbook_id": {"playbook", 0}, "rig_id": {"rig", 0},
	"run_id": {"run", 0}, "to_agent_id": {"agent", 1}, "agent_id": {"agent", 1}, "reviewer_agent_id": {"agent", 2},
}

// validArgs builds valid arguments for tool in workspace ws: the schema's
// example, every entity reference (required or not) pointing at a record
// of ws.
func validArgs(t *testing.T, b *Backend, c *tools.Catalog, tool tools.Tool, ws, actor string) map[string]any {
	t.Helper()
	args, _ := c.ExampleArguments(tool.Name)
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal(tool.InputSchema, &s)
	b.mu.Lock()
	w := b.workspace(ws, "")
	feeds := b.feedsOf(actor)
	b.mu.Unlock()
	for p := range s.Properties {
		switch ref, ok := refs[p]; {
		case ok:
			args[p] = w.kinds[ref.kind][ref.i]["id"]
		case p == "workspace_id":
			args[p] = ws
		case p == "node_id":
			args[p] = "N-1"
		case p == "base_revision_id":
			args[p] = "R-1"
		case p == "slug" && tool.Name != "create_skill":
			args[p] = "release-notes"
		case p == "article_id":
			args[p] = feeds.articles[0]["id"]
		case p == "name" && tool.Group == "code_graph":
			args[p] = "PriceCart"
		}
	}
	if tool.Name == "search_code" {
		args["query"] = "cart"
	}
	if err := c.Validate(tool.Name, args); err != nil {
		t.Fatalf("%s: test arguments %v invalid: %v", tool.Name, args, err)
	}
	return args
}

func call(t *testing.T, b *Backend, tool, ws string, args map[string]any) *gateway.ToolResult {
	t.Helper()
	res, err := b.CallTool(context.Background(), gateway.ToolCall{Tool: tool, Actor: "u-ada", Arguments: args})
	if err != nil {
		t.Fatalf("%s in %s: %v", tool, ws, err)
	}
	return res
}

func text(r *gateway.ToolResult) string {
	if r.IsError {
		return r.Content[0]["text"].(string)
	}
	raw, _ := json.Marshal(r.StructuredContent)
	return string(raw)
}

func TestBackendAnswersTheWholeCatalog(t *testing.T) {
	c := catalog(t)
	var names []string
	for _, tool := range c.Tools() {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if got := New().Tools(); !slices.Equal(got, names) {
		t.Fatalf("backend tools differ from the catalog:\nbackend %v\ncatalog %v", got, names)
	}
}

// TestEveryToolAnswers: every catalog tool, called with valid arguments in
// a fresh backend, returns a structured result, not an error.
func TestEveryToolAnswers(t *testing.T) {
	c := catalog(t)
	for _, tool := range c.Tools() {
		b := New()
		args := validArgs(t, b, c, tool, "ws-acme", "u-ada")
		res := call(t, b, tool.Name, "ws-acme", args)
		if res.IsError || res.StructuredContent == nil {
			t.Errorf("%s(%v): %s", tool.Name, args, text(res))
		}
	}
}

func TestWritesChangeState(t *testing.T) {
	b := New()
	c := catalog(t)
	tool, _ := c.Lookup("close_ticket")
	args := validArgs(t, b, c, *tool, "ws-acme", "u-ada")
	call(t, b, "close_ticket", "ws-acme", args)
	got := call(t, b, "get_ticket", "ws-acme", map[string]any{"workspace_id": "ws-acme", "ticket_id": args["ticket_id"]})
	if got.StructuredContent["status"] != "completed" {
		t.Errorf("closed ticket has status %v", got.StructuredContent["status"])
	}
	// A stale revision is refused.
	wp, _ := c.Lookup("save_work_product_revision")
	wargs := validArgs(t, b, c, *wp, "ws-acme", "u-ada")
	if r := call(t, b, wp.Name, "ws-acme", wargs); r.IsError {
		t.Fatal(text(r))
	}
	if r := call(t, b, wp.Name, "ws-acme", wargs); !r.IsError || !strings.Contains(text(r), "latest is R-2") {
		t.Errorf("a save on a stale revision: %s", text(r))
	}
	// The author cannot confirm their own finding.
	b.mu.Lock()
	rev := b.workspaces["ws-acme"].kinds["review"][0]["id"]
	b.mu.Unlock()
	res, _ := b.CallTool(context.Background(), gateway.ToolCall{Tool: "confirm_review_node", Actor: "sam", Arguments: map[string]any{"workspace_id": "ws-acme", "review_id": rev, "node_id": "N-1"}})
	if !res.IsError {
		t.Error("sam confirmed sam's own finding")
	}
}

// TestForeignEntityIsNeverReturned: every tool that names an entity,
// called in ws-globex with ws-acme's entity, answers not found and shows
// nothing of ws-acme; lists in ws-globex hold no ws-acme id; the resolver
// tells the entity's own workspace.
func TestForeignEntityIsNeverReturned(t *testing.T) {
	c := catalog(t)
	acmeTag := tag("ws-acme")
	for _, tool := range c.Tools() {
		b := New()
		if tool.Resource != nil {
			args := validArgs(t, b, c, tool, "ws-globex", "u-ada")
			foreign := validArgs(t, b, c, tool, "ws-acme", "u-ada")[tool.Resource.IDArgument]
			args[tool.Resource.IDArgument] = foreign
			res := call(t, b, tool.Name, "ws-globex", args)
			if !res.IsError || !strings.Contains(text(res), "in workspace ws-globex") {
				t.Errorf("%s with ws-acme's %v in ws-globex: %s", tool.Name, foreign, text(res))
			}
			attrs, found, err := b.ResolveResource(context.Background(), "", tool.Resource.Kind, foreign.(string))
			if err != nil || !found || attrs["workspace_id"] != "ws-acme" {
				t.Errorf("ResolveResource(%s %v) = %v %v %v, want ws-acme", tool.Resource.Kind, foreign, attrs, found, err)
			}
			continue
		}
		if strings.HasPrefix(tool.Name, "list_") || tool.Name == "search_memory" || tool.Name == "search_code" || tool.Name == "get_org_chart" {
			if tool.Name == "list_workspaces" {
				continue // global: lists every workspace by design
			}
			res := call(t, b, tool.Name, "ws-globex", validArgs(t, b, c, tool, "ws-globex", "u-ada"))
			if strings.Contains(text(res), acmeTag) || strings.Contains(text(res), "ws-acme") {
				t.Errorf("%s in ws-globex shows ws-acme data: %s", tool.Name, text(res))
			}
		}
	}
	if _, found, err := New().ResolveResource(context.Background(), "", "ticket", "TCK-000000-1"); found || err != nil {
		t.Errorf("an unknown ticket resolves: %v %v", found, err)
	}
}

func TestWorkspaceWiring(t *testing.T) {
	b := New()
	ctx := context.Background()
	_, err := b.CallTool(ctx, gateway.ToolCall{Tool: "list_tickets", WorkspaceID: "ws-acme", Arguments: map[string]any{"workspace_id": "ws-globex"}})
	if !errors.Is(err, gateway.ErrNotDispatched) || gateway.ErrorCodeOf(err) != gateway.EInvalid {
		t.Errorf("pinned to ws-acme, naming ws-globex: %v", err)
	}
	if _, err := b.CallTool(ctx, gateway.ToolCall{Tool: "list_tickets", Arguments: map[string]any{}}); gateway.ErrorCodeOf(err) != gateway.EInvalid {
		t.Errorf("no workspace: %v", err)
	}
	pinned, err := b.CallTool(ctx, gateway.ToolCall{Tool: "list_tickets", WorkspaceID: "ws-globex"})
	if err != nil || pinned.StructuredContent["workspace_id"] != "ws-globex" {
		t.Errorf("pinned call: %v %v", pinned, err)
	}
	if res, _ := b.CallTool(ctx, gateway.ToolCall{Tool: "hire_agent"}); !res.IsError || !strings.Contains(text(res), "unknown tool") {
		t.Errorf("hire_agent: %v", res)
	}
	if res, _ := b.CallTool(ctx, gateway.ToolCall{Tool: "list_my_tools"}); res.IsError {
		t.Errorf("list_my_tools without a workspace: %s", text(res))
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := b.CallTool(cancelled, gateway.ToolCall{Tool: "list_feeds"}); gateway.ErrorCodeOf(err) != gateway.EUnavailable {
		t.Errorf("cancelled: %v", err)
	}
	// A new workspace is generated with its own ids.
	res := call(t, b, "list_tickets", "ws-initech", map[string]any{"workspace_id": "ws-initech"})
	if !strings.Contains(text(res), tag("ws-initech")) {
		t.Errorf("ws-initech tickets: %s", text(res))
	}
	ws := call(t, b, "list_workspaces", "", nil)
	if !strings.Contains(text(ws), "ws-initech") || !strings.Contains(text(ws), "Acme Web") {
		t.Errorf("list_workspaces: %s", text(ws))
	}
}

func TestConcurrentCalls(t *testing.T) {
	b := New()
	var wg sync.WaitGroup
	for i := range 8 {
		ws := []string{"ws-acme", "ws-globex"}[i%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				if _, err := b.CallTool(context.Background(), gateway.ToolCall{Tool: "create_ticket", Actor: "u-ada", Arguments: map[string]any{"workspace_id": ws, "title": "load"}}); err != nil {
					t.Error(err)
				}
				_, _ = b.CallTool(context.Background(), gateway.ToolCall{Tool: "list_tickets", Arguments: map[string]any{"workspace_id": ws}})
			}
		}()
	}
	wg.Wait()
	b.mu.Lock()
	defer b.mu.Unlock()
	if n := len(b.workspaces["ws-acme"].kinds["ticket"]); n != 3+80 {
		t.Errorf("ws-acme has %d tickets, want 83", n)
	}
}
