package pipeline_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/mcp"
	"github.com/mcpgate/mcpgate/tools"
)

// TestParamHeadersAfterDecision: a 2026-07-28 tools/call's Mcp-Param-*
// headers are checked once the policy allowed the tool. An allowed call
// with a missing header is HTTP 400 / -32020 and never dispatched; a
// denied call gets its denial, not a word of the tool's annotations; a
// call whose header matches is dispatched.
func TestParamHeadersAfterDecision(t *testing.T) {
	f := newFixture(t)
	schema := json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`)
	cat, _, err := f.pl.Catalog.WithUpstream([]tools.UpstreamTool{{Name: "geo.where", InputSchema: schema}, {Name: "geo.secret", InputSchema: schema}}, gateway.TierOps)
	if err != nil {
		t.Fatal(err)
	}
	f.pl.Catalog, f.pl.Decider = cat, decider{deny: map[string]bool{"geo.secret": true}}
	tr, err := mcp.NewHandler(mcp.Options{Authenticator: onePrincipal{f.p}, Handler: f.pl})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(tr)
	t.Cleanup(srv.Close)
	post := func(tool, region string) (int, string) {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":{"region":"us-west1"},` +
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
		req, _ := http.NewRequest("POST", srv.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", tool)
		if region != "" {
			req.Header.Set("Mcp-Param-Region", region)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := post("geo.where", ""); code != 400 || !strings.Contains(body, `"code":-32020`) || !strings.Contains(body, "missing Mcp-Param-Region") {
		t.Fatalf("allowed call without its header: %d %s; want 400 with -32020", code, body)
	}
	if code, body := post("geo.where", "eu-west1"); code != 400 || !strings.Contains(body, "does not match") {
		t.Fatalf("allowed call with another value: %d %s; want 400 with -32020", code, body)
	}
	if n := f.up.calls.Load(); n != 0 {
		t.Fatalf("refused calls dispatched %d times", n)
	}
	if code, body := post("geo.secret", ""); code != 200 || !strings.Contains(body, `"isError":true`) || strings.Contains(body, "Mcp-Param") {
		t.Fatalf("denied call: %d %s; want its denial as a tool execution error", code, body)
	}
	if code, body := post("geo.where", "us-west1"); code != 200 || strings.Contains(body, `"isError":true`) || f.up.calls.Load() != 1 {
		t.Fatalf("call with its header: %d %s, %d dispatched; want it dispatched", code, body, f.up.calls.Load())
	}
}
