package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/server"
)

// sdkUpstream is a go-sdk MCP server of the tools given (each answers its
// own name), served on a loopback httptest server; it returns the server
// (to change its tools while the gateway runs) and its URL.
func sdkUpstream(t *testing.T, names ...string) (*mcp.Server, string) {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "sdk-upstream", Version: "1"}, nil)
	for _, n := range names {
		addEcho(s, n, "Tool "+n+".", false)
	}
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return s, srv.URL + "/mcp"
}

// addEcho adds a tool to s that answers "<name> ran" (claiming it only
// reads when readOnly).
func addEcho(s *mcp.Server, name, desc string, readOnly bool) {
	s.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: json.RawMessage(`{"type":"object"}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: readOnly}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + " ran"}}}, nil
		})
}

// seedAgent registers workspace ws-a, owner alice, running task t1 and
// profile bot granting allowlist, and returns alice's principal.
func seedAgent(t *testing.T, app *server.App, allowlist ...string) *gateway.Principal {
	t.Helper()
	ctx := context.Background()
	s := app.Store
	for _, err := range []error{
		s.PutWorkspace(ctx, &gateway.Workspace{ID: "ws-a", Name: "A", Slug: "a"}),
		s.PutMember(ctx, &gateway.Member{WorkspaceID: "ws-a", UserID: "alice", Role: gateway.RoleOwner}),
		s.PutTask(ctx, &gateway.Task{WorkspaceID: "ws-a", ID: "t1", Status: gateway.TaskRunning}),
		s.PutProfile(ctx, &gateway.Profile{WorkspaceID: "ws-a", ID: "bot", Name: "bot", Allowlist: allowlist}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return &gateway.Principal{Kind: gateway.PrincipalAgent, Subject: "alice", WorkspaceID: "ws-a", TaskID: "t1", ProfileID: "bot"}
}

// listedNames are the names tools/list shows p.
func listedNames(t *testing.T, app *server.App, p *gateway.Principal) []string {
	t.Helper()
	ts, err := app.Pipeline.ListTools(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, x := range ts {
		names = append(names, x.Name)
	}
	return names
}

// callBridged calls tool with no arguments; it returns the result's text,
// or the refusal's code.
func callBridged(app *server.App, p *gateway.Principal, tool string) (string, gateway.ErrorCode) {
	res, err := app.Pipeline.CallTool(context.Background(), p, &gateway.CallRequest{Name: tool, Arguments: map[string]any{}, RawArguments: json.RawMessage(`{}`)})
	if err != nil {
		return "", gateway.ErrorCodeOf(err)
	}
	text, _ := res.Content[0]["text"].(string)
	return text, ""
}

// Bridged tools are listed, granted and called through the one pipeline:
// the upstream wildcard grants one upstream's tools and not the other's,
// the tier wildcard grants by the upstreams file's tier whatever the
// upstream's readOnlyHint claims, and a tool is listed exactly when a
// call of it is allowed (listed ⇔ callable); a call reaches the upstream
// under its own name.
func TestBridgedToolsListedIffCallable(t *testing.T) {
	forge, forgeURL := sdkUpstream(t, "issues.list")
	addEcho(forge, "issues.close", "Close an issue.", true) // claims read-only; its tier is ops
	_, trackerURL := sdkUpstream(t, "tickets.get")
	app, _, err := upstreamsApp(t, `{"upstreams":[
	  {"name":"forge","url":"`+forgeURL+`","tier":"ops"},
	  {"name":"tracker","url":"`+trackerURL+`","tier":"read"}
	]}`)
	if err != nil {
		t.Fatal(err)
	}
	p := seedAgent(t, app, "supacloud.forge.*")
	all := []string{"forge.issues.list", "forge.issues.close", "tracker.tickets.get"}
	for note, tc := range map[string]struct {
		allowlist []string
		want      []string
	}{
		"upstream wildcard":         {[]string{"supacloud.forge.*"}, []string{"forge.issues.list", "forge.issues.close"}},
		"read wildcard, by tier":    {[]string{"supacloud.read.*"}, []string{"tracker.tickets.get"}},
		"exact name":                {[]string{"forge.issues.close"}, []string{"forge.issues.close"}},
		"supacloud.<listed name>":   {[]string{"supacloud.tracker.tickets.get"}, []string{"tracker.tickets.get"}},
		"other upstream's wildcard": {[]string{"supacloud.tracker.*"}, []string{"tracker.tickets.get"}},
	} {
		t.Run(note, func(t *testing.T) {
			if err := app.Store.PutProfile(context.Background(), &gateway.Profile{WorkspaceID: "ws-a", ID: "bot", Name: "bot", Allowlist: tc.allowlist}); err != nil {
				t.Fatal(err)
			}
			app.Callers.InvalidateAll()
			listed := listedNames(t, app, p)
			for _, name := range all {
				isListed := slices.Contains(listed, name)
				text, code := callBridged(app, p, name)
				if isListed != slices.Contains(tc.want, name) {
					t.Errorf("%s listed = %v, want %v (list %v)", name, isListed, !isListed, listed)
				}
				if callable := code == ""; callable != isListed {
					t.Errorf("%s: listed %v but callable %v (%s) (listed ⇔ callable)", name, isListed, callable, code)
				}
				if code == "" && text != strings.SplitN(name, ".", 2)[1]+" ran" {
					t.Errorf("%s answered %q; want the upstream's own tool to run", name, text)
				}
			}
		})
	}
}
