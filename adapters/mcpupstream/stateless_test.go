package mcpupstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/mcp/wire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// roundRelay is a fakeRelay of a stateless client call with round;
// refuse, when set, is what InputRequired answers.
type roundRelay struct {
	fakeRelay
	round  *wire.InputRound
	refuse error
	asked  json.RawMessage
}

func (r *roundRelay) Round() *wire.InputRound { return r.round }
func (r *roundRelay) InputRequired(_ context.Context, requests json.RawMessage) error {
	r.asked = requests
	return r.refuse
}

// mrtrServer is a Go SDK upstream (stateless when stateless) whose tool
// "ask" asks for a name with an input-required result and greets it on the
// retry that answers, checking its requestState.
func mrtrServer(t *testing.T, stateless bool) string {
	s := mcp.NewServer(&mcp.Implementation{Name: "asker", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "ask", InputSchema: objectSchema}, func(ctx context.Context, req *mcp.CallToolRequest, _ map[string]any) (*mcp.CallToolResult, any, error) {
		if e, ok := req.Params.InputResponses["who"].(*mcp.ElicitResult); ok && e.Action == "accept" && req.Params.RequestState == "st-1" {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello " + e.Content["name"].(string)}}}, nil, nil
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"who": &mcp.ElicitParams{Message: "name?",
			RequestedSchema: &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"name": {Type: "string"}}}}},
			RequestState: "st-1"}, nil, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: stateless}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// A stateless client's call reaches a 2026-07-28 upstream statelessly:
// the upstream's input-required result comes back as the result's Input
// (after the relay's check), and the retry with inputResponses and
// requestState completes; the relay's refusal is the call's error.
func TestCallToolStatelessRoundTrip(t *testing.T) {
	a, err := New(context.Background(), mrtrServer(t, true), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	caps := json.RawMessage(`{"elicitation":{"form":{}}}`)
	first := &roundRelay{round: &wire.InputRound{Capabilities: caps}}
	res, err := a.CallTool(wire.WithRelay(context.Background(), first), gateway.ToolCall{Tool: "ask", RawArguments: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Input == nil || string(res.Input.State) != `"st-1"` || !strings.Contains(string(res.Input.Requests), `"elicitation/create"`) {
		t.Fatalf("first attempt: %+v, want an input-required result asking for elicitation with state st-1", res)
	}
	if string(first.asked) != string(res.Input.Requests) {
		t.Errorf("the relay checked %s, the result asks %s", first.asked, res.Input.Requests)
	}
	retry := &roundRelay{round: &wire.InputRound{Capabilities: caps, State: res.Input.State,
		Responses: json.RawMessage(`{"who":{"action":"accept","content":{"name":"Ada"}}}`)}}
	res, err = a.CallTool(wire.WithRelay(context.Background(), retry), gateway.ToolCall{Tool: "ask", RawArguments: json.RawMessage(`{}`)})
	if err != nil || res.Input != nil || len(res.Content) != 1 || res.Content[0]["text"] != "hello Ada" {
		t.Fatalf("retry: %+v, %v; want hello Ada", res, err)
	}
	refused := &roundRelay{round: &wire.InputRound{Capabilities: caps}, refuse: gateway.Errorf(gateway.EForbidden, "no")}
	if _, err := a.CallTool(wire.WithRelay(context.Background(), refused), gateway.ToolCall{Tool: "ask", RawArguments: json.RawMessage(`{}`)}); gateway.ErrorCodeOf(err) != gateway.EForbidden {
		t.Fatalf("refused by the relay: %v, want EForbidden", err)
	}
}

// A session-only upstream refuses the stateless attempt, which ran
// nothing: the call goes on a session declaring the client's capabilities
// (elicitation), where the Go SDK asks with an elicitation request during
// the call, and later calls skip the attempt.
func TestCallToolStatelessFallsBackToSession(t *testing.T) {
	a, err := New(context.Background(), mrtrServer(t, false), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	r := &roundRelay{round: &wire.InputRound{Capabilities: json.RawMessage(`{"elicitation":{"form":{}}}`)}}
	r.answer = func(string, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"action":"accept","content":{"name":"Bo"}}`), nil
	}
	res, err := a.CallTool(wire.WithRelay(context.Background(), r), gateway.ToolCall{Tool: "ask", RawArguments: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if !a.sessionOnly.Load() {
		t.Error("the upstream's refusal of 2026-07-28 was not remembered")
	}
	if res.Input != nil || len(r.messages()) != 1 || !strings.HasPrefix(r.messages()[0], "elicitation/create") {
		t.Fatalf("result %+v, relayed %v; want the session's elicitation request relayed", res, r.messages())
	}
}

// Item 3 of issue 30 (SEP-2575): a stateless upstream that refuses a call
// because the client did not declare a capability the tool needs (-32021,
// HTTP 400) ran nothing; the adapter passes the refusal on as
// EMissingCapability with the upstream's requiredCapabilities, and does not
// fall back to its session (which declares every capability it relays, so
// the tool would run there).
func TestUndeclaredCapabilityRefused(t *testing.T) {
	for _, stateless := range []bool{true, false} {
		t.Run(fmt.Sprintf("stateless=%v", stateless), func(t *testing.T) { undeclaredCapabilityRefused(t, stateless) })
	}
}

// undeclaredCapabilityRefused is TestUndeclaredCapabilityRefused against a
// stateless or a session-only upstream: on the latter, a stateless client's
// call goes on a session that declares no capability (the client takes no
// requests during a call), so the upstream refuses it the same way.
func undeclaredCapabilityRefused(t *testing.T, stateless bool) {
	s := mcp.NewServer(&mcp.Implementation{Name: "needs-sampling", Version: "1"}, nil)
	ran := false
	mcp.AddTool(s, &mcp.Tool{Name: "needs_sampling", InputSchema: objectSchema}, func(ctx context.Context, req *mcp.CallToolRequest, _ map[string]any) (*mcp.CallToolResult, any, error) {
		if caps := req.ClientCapabilities(); caps != nil && caps.Sampling != nil {
			ran = true
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ran"}}}, nil, nil
		}
		data, _ := json.Marshal(mcp.MissingRequiredClientCapabilityData{RequiredCapabilities: &mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}}})
		return nil, nil, &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: "sampling capability required", Data: data}
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: stateless}))
	t.Cleanup(srv.Close)
	a, err := New(context.Background(), srv.URL, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	r := &roundRelay{round: &wire.InputRound{Capabilities: json.RawMessage(`{}`)}}
	_, err = a.CallTool(wire.WithRelay(context.Background(), r), gateway.ToolCall{Tool: "needs_sampling", RawArguments: json.RawMessage(`{}`)})
	var ge *gateway.Error
	if !errors.As(err, &ge) || ge.Code != gateway.EMissingCapability {
		t.Fatalf("err = %v, want EMissingCapability", err)
	}
	var required map[string]json.RawMessage
	if json.Unmarshal(ge.RequiredCapabilities, &required) != nil || required["sampling"] == nil {
		t.Errorf("RequiredCapabilities = %s, want an object naming sampling", ge.RequiredCapabilities)
	}
	if !errors.Is(err, gateway.ErrNotDispatched) {
		t.Error("the refusal is not marked not dispatched")
	}
	if ran || a.sessionOnly.Load() == stateless {
		t.Errorf("ran = %v, sessionOnly = %v: the tool ran on capabilities the client did not declare", ran, a.sessionOnly.Load())
	}
	// A client with a session (no round) still gets the relaying session.
	res, err := a.CallTool(wire.WithRelay(context.Background(), &fakeRelay{}), gateway.ToolCall{Tool: "needs_sampling", RawArguments: json.RawMessage(`{}`)})
	if !stateless && (err != nil || !ran || len(res.Content) != 1) {
		t.Errorf("session client: %+v, %v; want the tool run on the relaying session", res, err)
	}
}
