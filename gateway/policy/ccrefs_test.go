package policy_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/pipeline"
	"github.com/mcpgate/mcpgate/gateway/policy"
	"github.com/mcpgate/mcpgate/policies"
	"github.com/mcpgate/mcpgate/tools"
	"github.com/mcpgate/mcpgate/tools/search"
)

// bundleWith is the shipped bundle with the file name's text old
// replaced by new (exactly once).
func bundleWith(t *testing.T, name, old, new string) fs.FS {
	t.Helper()
	out := fstest.MapFS{}
	err := fs.WalkDir(policies.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(policies.FS, p)
		if p == name {
			if strings.Count(string(b), old) != 1 {
				t.Fatalf("%s does not hold %q exactly once; the test data must follow the file", name, old)
			}
			b = []byte(strings.Replace(string(b), old, new, 1))
		}
		out[p] = &fstest.MapFile{Data: b}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

type oneCaller struct{ c *gateway.Caller }

func (o oneCaller) LoadCaller(context.Context, *gateway.Principal) (*gateway.Caller, error) {
	return o.c, nil
}

// TestActionToolInReadOnlyModeListIsRefused: a bundle whose plan mode
// (read-only) lists browser_use, a tool with action classes, still
// refuses it in plan mode, in list_my_tools and in tools/call alike: both
// take the tool's references from one builder (pipeline.ToolRef, into
// policy input.tool and input.tools), which carries the catalog's group,
// requires_approval and action classes. Without the action classes the
// same bundle would list it, so the refusal rests on them.
func TestActionToolInReadOnlyModeListIsRefused(t *testing.T) {
	ctx := context.Background()
	cat, err := tools.LoadCCServer()
	if err != nil {
		t.Fatal(err)
	}
	tool, ok := cat.Lookup("browser_use")
	if !ok || len(tool.ActionClasses) == 0 {
		t.Fatalf("the cc_server catalog has no browser_use with action classes: %+v", tool)
	}
	bundle := bundleWith(t, "ccserver/modes.rego", `{"todo_read", "todo_write", "submit_plan", "exit_plan_mode"}`,
		`{"todo_read", "todo_write", "submit_plan", "exit_plan_mode", "browser_use"}`)
	engine := func(refs []policy.ToolRef) *policy.Engine {
		e, err := policy.New(ctx, policy.Options{FS: bundle, Surface: gateway.SurfaceCCServer, Edition: gateway.EditionCommunity, Tools: refs, CacheSize: -1})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	p := &gateway.Principal{Kind: gateway.PrincipalUser, Subject: "u-ada", Mode: "plan"}
	caller := &gateway.Caller{Memberships: []string{"ws-acme"}}
	listMine := func(e *policy.Engine) map[string]bool {
		callable := func(ctx context.Context, p *gateway.Principal, c *gateway.Caller, ws string) (map[string]bool, error) {
			return e.VisibleIn(ctx, p, c, ws)
		}
		res, err := search.NewTools(nil, callable, oneCaller{caller}, cat).CallTool(ctx,
			gateway.ToolCall{Tool: search.ToolListMine, Principal: p, Arguments: map[string]any{"workspace_id": "ws-acme"}})
		if err != nil {
			t.Fatal(err)
		}
		listed := map[string]bool{}
		for _, tl := range res.StructuredContent["tools"].([]map[string]any) {
			listed[tl["name"].(string)] = true
		}
		return listed
	}
	e := engine(pipeline.ToolRefs(cat))
	listed := listMine(e)
	if listed["browser_use"] {
		t.Error("list_my_tools in plan mode lists browser_use, which declares action classes")
	}
	if !listed["submit_plan"] {
		t.Errorf("list_my_tools in plan mode: %v, want submit_plan among them", listed)
	}
	args := map[string]any{"workspace_id": "ws-acme", "task": "open the dashboard"}
	d, err := e.Decide(ctx, p, caller, pipeline.ToolRef(tool, nil), args)
	if err != nil {
		t.Fatal(err)
	}
	if d.Allow || len(d.Reasons) == 0 || d.Reasons[0].Code != "action.read_only_mode" {
		t.Errorf("tools/call browser_use in plan mode: %+v, want refused with action.read_only_mode", d)
	}

	// Control: the same bundle with references that lost their action
	// classes lists the tool, so the edit above did reach the policy.
	stripped := pipeline.ToolRefs(cat)
	for i := range stripped {
		stripped[i].ActionClasses = nil
	}
	if !listMine(engine(stripped))["browser_use"] {
		t.Error("without action classes the edited plan mode does not list browser_use; the test data no longer reaches the policy")
	}
}

// TestCCServerShadowFlips: the cc_server surface's shadow candidate runs
// under the same lifecycle as SupaCloud's (policy.Live, its tests
// included): a candidate whose plan mode also lists run_playbook decides
// a plan-mode call otherwise than the live bundle, the flip is counted and
// handed to OnFlip with both revisions, and the call keeps the live
// decision.
func TestCCServerShadowFlips(t *testing.T) {
	ctx := context.Background()
	cat, err := tools.LoadCCServer()
	if err != nil {
		t.Fatal(err)
	}
	shadow := bundleWith(t, "ccserver/modes.rego", `{"todo_read", "todo_write", "submit_plan", "exit_plan_mode"}`,
		`{"todo_read", "todo_write", "submit_plan", "exit_plan_mode", "run_playbook"}`)
	// The candidate holds the cc_server package (and the log mask) only,
	// so its gate runs the cc_server tests alone.
	for name := range shadow.(fstest.MapFS) {
		if strings.HasPrefix(name, gateway.SurfaceSupaCloud+"/") {
			delete(shadow.(fstest.MapFS), name)
		}
	}
	dir := t.TempDir()
	if err := os.CopyFS(dir, shadow); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".manifest"), []byte(`{"revision": "cc-shadow"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var flips []policy.Flip
	l, err := policy.NewLive(ctx, policy.LiveOptions{
		Engine:   policy.Options{Surface: gateway.SurfaceCCServer, Edition: gateway.EditionCommunity, Tools: pipeline.ToolRefs(cat)},
		Embedded: policies.FS, ShadowDir: dir, Revision: policies.Revision,
		OnFlip: func(_ context.Context, f policy.Flip) { flips = append(flips, f) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if st := l.Status().Shadow; st == nil || st.Revision != "cc-shadow" {
		t.Fatalf("shadow status %+v (%+v), want cc-shadow loaded", st, st.LastAttempt)
	}
	tool, _ := cat.Lookup("run_playbook")
	p := &gateway.Principal{Kind: gateway.PrincipalUser, Subject: "u-ada", Mode: "plan"}
	d, err := l.Decide(ctx, p, &gateway.Caller{Memberships: []string{"ws-acme"}}, pipeline.ToolRef(tool, nil),
		map[string]any{"workspace_id": "ws-acme", "title": "t"})
	if err != nil {
		t.Fatal(err)
	}
	if d.Allow || d.Revision != l.Engine().Revision() {
		t.Errorf("decision %+v: want the live bundle's refusal", d)
	}
	if len(flips) != 1 || flips[0].Direction != policy.FlipDenyToAllow || flips[0].ShadowRevision != "cc-shadow" || flips[0].Tool != "run_playbook" {
		t.Errorf("flips %+v, want one deny_to_allow of run_playbook by cc-shadow", flips)
	}
	if counted := l.Status().Shadow.Flips; len(counted) != 1 || counted[0].Count != 1 {
		t.Errorf("counted flips %+v, want the one", counted)
	}
}
