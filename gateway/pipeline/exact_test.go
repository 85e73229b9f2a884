package pipeline_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/confirm"
	"github.com/mcpgate/mcpgate/gateway/mcp"
	"github.com/mcpgate/mcpgate/gateway/policy"
	"github.com/mcpgate/mcpgate/tools"
)

// big is 2^53 + 1: the first integer an IEEE double cannot hold. Decoded
// into a float64 it becomes 2^53 (small).
const (
	big   = "9007199254740993"
	small = "9007199254740992"
)

// recorder is an adapter that keeps the calls it is handed.
type recorder struct {
	mu    sync.Mutex
	calls []gateway.ToolCall
}

func (r *recorder) CallTool(_ context.Context, c gateway.ToolCall) (*gateway.ToolResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, c)
	return &gateway.ToolResult{StructuredContent: map[string]any{"ok": true}}, nil
}

func (r *recorder) only(t *testing.T) gateway.ToolCall {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.calls) != 1 {
		t.Fatalf("the adapter got %d calls, want 1", len(r.calls))
	}
	return r.calls[0]
}

// confirming allows every tool and asks for the deploy confirmation for
// ledger.transfer, as the policy does for app.deploy.
type confirming struct{ decider }

func (confirming) Decide(_ context.Context, _ *gateway.Principal, _ *gateway.Caller, tool policy.ToolRef, _ map[string]any) (*gateway.Decision, error) {
	return &gateway.Decision{ID: "d-allow", Allow: true, Visible: true, Tier: tool.Tier,
		Obligations: gateway.Obligations{ConfirmationRequired: tool.Name == "ledger.transfer"}}, nil
}

type onePrincipal struct{ p *gateway.Principal }

func (a onePrincipal) Authenticate(*http.Request) (*gateway.Principal, error) { return a.p, nil }

const ledgerSchema = `{"type":"object","properties":{"amount":{"type":"integer"},"note":{"type":"string"},` +
	`"confirmation_token":{"type":"string"},"idempotency_key":{"type":"string"}},"required":["amount"]}`

// exactFixture is the pipeline behind the real MCP transport, with two
// upstream-style tools that take a number: ledger.echo (ops) and
// ledger.transfer (deploy, confirmed). The client is the Go SDK's.
func exactFixture(t *testing.T) (*fixture, *recorder, *sdk.ClientSession) {
	t.Helper()
	f := newConfirmFixture(t, true)
	cat, _, err := f.pl.Catalog.WithUpstream([]tools.UpstreamTool{{Name: "ledger.echo", InputSchema: json.RawMessage(ledgerSchema)}}, gateway.TierOps)
	if err != nil {
		t.Fatal(err)
	}
	if cat, _, err = cat.WithUpstream([]tools.UpstreamTool{{Name: "ledger.transfer", InputSchema: json.RawMessage(ledgerSchema)}}, gateway.TierDeploy); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	f.pl.Catalog, f.pl.Decider, f.pl.Adapter = cat, confirming{}, rec
	tr, err := mcp.NewHandler(mcp.Options{Authenticator: onePrincipal{f.p}, Handler: f.pl})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(tr)
	t.Cleanup(srv.Close)
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "exact", Version: "1"}, nil).Connect(context.Background(),
		&sdk.StreamableClientTransport{Endpoint: srv.URL, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return f, rec, cs
}

func callRaw(cs *sdk.ClientSession, tool, args string) (*sdk.CallToolResult, error) {
	return cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tool, Arguments: json.RawMessage(args)})
}

// TestAdapterGetsEveryDigit: a number no float64 holds reaches the adapter
// with every digit, both decoded (Arguments) and as the client's bytes.
func TestAdapterGetsEveryDigit(t *testing.T) {
	_, rec, cs := exactFixture(t)
	res, err := callRaw(cs, "ledger.echo", `{"amount":`+big+`,"note":"x"}`)
	if err != nil || res.IsError {
		t.Fatalf("call: %v %v", err, res)
	}
	c := rec.only(t)
	if got, ok := c.Arguments["amount"].(json.Number); !ok || got.String() != big {
		t.Errorf("adapter got amount %#v, want json.Number %s", c.Arguments["amount"], big)
	}
	if !strings.Contains(string(c.RawArguments), `"amount":`+big) {
		t.Errorf("adapter got raw arguments %s, want them to hold %s", c.RawArguments, big)
	}
}

// TestConfirmationTokenIsForEveryDigit: a token issued for 2^53+1 does not
// confirm 2^53, and the confirmed call reaches the adapter with every digit
// and without the token.
func TestConfirmationTokenIsForEveryDigit(t *testing.T) {
	f, rec, cs := exactFixture(t)
	res, err := callRaw(cs, "ledger.transfer", `{"amount":`+big+`}`)
	if err != nil || res.IsError {
		t.Fatalf("step 1: %v %v", err, res)
	}
	token, _ := res.StructuredContent.(map[string]any)["confirmation_token"].(string)
	if token == "" {
		t.Fatalf("step 1 gave no token: %v", res.StructuredContent)
	}

	_, err = callRaw(cs, "ledger.transfer", `{"amount":`+small+`,"confirmation_token":"`+token+`","idempotency_key":"k1"}`)
	if err == nil || !strings.Contains(err.Error(), "other arguments") {
		t.Fatalf("a token for %s confirmed %s: error %v, want \"other arguments\"", big, small, err)
	}
	if ev := f.last(t); !contains(ev.ReasonCodes, "confirmation.other_arguments") {
		t.Errorf("audit row reasons %v, want confirmation.other_arguments", ev.ReasonCodes)
	}
	rec.mu.Lock()
	n := len(rec.calls)
	rec.mu.Unlock()
	if n != 0 {
		t.Fatalf("the refused call was dispatched")
	}

	res, err = callRaw(cs, "ledger.transfer", `{"amount":`+big+`,"confirmation_token":"`+token+`","idempotency_key":"k1"}`)
	if err != nil || res.IsError {
		t.Fatalf("step 2: %v %v", err, res)
	}
	c := rec.only(t)
	raw := string(c.RawArguments)
	if !strings.Contains(raw, `"amount":`+big) || !strings.Contains(raw, `"idempotency_key":"k1"`) || strings.Contains(raw, "confirmation_token") {
		t.Errorf("adapter got raw arguments %s, want amount %s and the key, without the token", raw, big)
	}
	if _, ok := c.Arguments[confirm.ArgToken]; ok {
		t.Errorf("adapter got the confirmation token in Arguments")
	}
}

// TestOneArgumentsHash: the audit row's arguments_hash is the hash the
// confirmation token and the idempotency key are bound to, whatever the
// client's key order and whitespace.
func TestOneArgumentsHash(t *testing.T) {
	f, _, cs := exactFixture(t)
	if _, err := callRaw(cs, "ledger.transfer", ` { "note" : "n", "amount" : 1 } `); err != nil {
		t.Fatal(err)
	}
	first := f.last(t)
	want, err := confirm.InputHash(map[string]any{"amount": json.Number("1"), "note": "n"})
	if err != nil {
		t.Fatal(err)
	}
	if first.ArgumentsHash != want {
		t.Errorf("audit arguments_hash %s, confirmation input hash %s: want one hash", first.ArgumentsHash, want)
	}
	if _, err := callRaw(cs, "ledger.echo", `{"amount":1,"note":"n"}`); err != nil {
		t.Fatal(err)
	}
	if second := f.last(t); second.ArgumentsHash != first.ArgumentsHash {
		t.Errorf("the same arguments hash as %s and %s", first.ArgumentsHash, second.ArgumentsHash)
	}
}
