package mcpupstream

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/mcp/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fakeRelay is the calling client: it records what it is sent and answers
// requests with answer.
type fakeRelay struct {
	token  json.RawMessage
	answer func(method string, params json.RawMessage) (json.RawMessage, error)

	mu   sync.Mutex
	sent []string // method and params of each message, in order
}

func (f *fakeRelay) ProgressToken() json.RawMessage { return f.token }

func (f *fakeRelay) Notify(_ context.Context, method string, params json.RawMessage) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, method+" "+string(params))
	return nil
}

func (f *fakeRelay) Request(_ context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	f.mu.Lock()
	f.sent = append(f.sent, method+" "+string(params))
	f.mu.Unlock()
	return f.answer(method, params)
}

func (f *fakeRelay) messages() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.sent...)
}

// relayServer is an upstream whose tool "chatty" reports progress, logs,
// asks the client for a name by elicitation and answers with it; "wait"
// runs until cancelled and reports that on cancelled.
func relayServer(t *testing.T, cancelled chan<- struct{}, opts *mcp.StreamableHTTPOptions) string {
	s := mcp.NewServer(&mcp.Implementation{Name: "chatty", Version: "1"}, &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}, Tools: &mcp.ToolCapabilities{}}})
	s.AddTool(&mcp.Tool{Name: "chatty", InputSchema: objectSchema}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		for _, p := range []float64{0, 50, 100} {
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: p, Total: 100}); err != nil {
				return nil, err
			}
		}
		_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: "working"})
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "your name?", RequestedSchema: &jsonschema.Schema{
			Type: "object", Properties: map[string]*jsonschema.Schema{"name": {Type: "string"}}}})
		if err != nil {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "elicitation: " + err.Error()}}}, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Action + " " + res.Content["name"].(string)}}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "wait", InputSchema: objectSchema}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		<-ctx.Done()
		cancelled <- struct{}{}
		return nil, ctx.Err()
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, opts))
	t.Cleanup(srv.Close)
	return srv.URL
}

// During a call the upstream's progress (its token mapped back to the
// client's), its log message and its elicitation reach the client in
// order, and the client's answer reaches the upstream's tool.
func TestCallToolRelaysUpstreamMessages(t *testing.T) {
	a := newAdapter(t, relayServer(t, nil, nil), Options{})
	relay := &fakeRelay{token: json.RawMessage(`"client-tok-7"`), answer: func(method string, _ json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"action":"accept","content":{"name":"Ada"}}`), nil
	}}
	ctx := wire.WithRelay(context.Background(), relay)
	res, err := a.CallTool(ctx, gateway.ToolCall{Tool: "chatty"})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || res.Content[0]["text"] != "accept Ada" {
		t.Fatalf("result %+v: the client's answer did not reach the upstream", res)
	}
	got := relay.messages()
	if len(got) != 5 {
		t.Fatalf("relayed %d messages, want 3 progress, 1 log, 1 elicitation: %q", len(got), got)
	}
	for i := range 3 {
		if !strings.HasPrefix(got[i], "notifications/progress ") || !strings.Contains(got[i], `"progressToken":"client-tok-7"`) {
			t.Errorf("message %d = %s, want progress with the client's token", i, got[i])
		}
	}
	if !strings.HasPrefix(got[3], "notifications/message ") || !strings.Contains(got[3], `"working"`) {
		t.Errorf("message 3 = %s, want the log message", got[3])
	}
	if !strings.HasPrefix(got[4], "elicitation/create ") || !strings.Contains(got[4], "your name?") {
		t.Errorf("message 4 = %s, want the elicitation", got[4])
	}
}

// A client's refusal (a JSON-RPC error from the relay, as the policy or
// the client gives it) reaches the upstream as the answer to its request,
// and the call still completes.
func TestCallToolRelaysARefusalBack(t *testing.T) {
	a := newAdapter(t, relayServer(t, nil, nil), Options{})
	relay := &fakeRelay{answer: func(string, json.RawMessage) (json.RawMessage, error) {
		return nil, &wire.RPCError{Code: -32602, Message: "refused by policy"}
	}}
	res, err := a.CallTool(wire.WithRelay(context.Background(), relay), gateway.ToolCall{Tool: "chatty"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(res.Content[0]["text"].(string), "refused by policy") {
		t.Fatalf("result %+v, want the tool's error quoting the refusal", res)
	}
	for _, m := range relay.messages() {
		if strings.HasPrefix(m, "notifications/progress") {
			t.Errorf("progress relayed although the client asked for none: %s", m)
		}
	}
}

// A call without a relay answers the upstream's request with -32601 and
// drops its notifications.
func TestCallToolWithoutRelayRefusesUpstreamRequests(t *testing.T) {
	a := newAdapter(t, relayServer(t, nil, nil), Options{})
	res, err := a.CallTool(context.Background(), gateway.ToolCall{Tool: "chatty"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(res.Content[0]["text"].(string), "cannot relay elicitation/create") {
		t.Fatalf("result %+v, want the tool's error quoting the gateway's refusal", res)
	}
}

// The caller's cancellation (a client's notifications/cancelled cancels
// the call's context) reaches the upstream as notifications/cancelled:
// the upstream's tool sees its context end.
func TestCancellationReachesUpstream(t *testing.T) {
	cancelled := make(chan struct{}, 1)
	a := newAdapter(t, relayServer(t, cancelled, nil), Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := a.CallTool(ctx, gateway.ToolCall{Tool: "wait"})
		done <- err
	}()
	time.Sleep(200 * time.Millisecond) // the tool runs
	cancel()
	if err := <-done; gateway.ErrorCodeOf(err) != gateway.EUnavailable || !strings.Contains(gateway.ErrorMessageOf(err), "cancelled by the caller") {
		t.Fatalf("error %v, want EUnavailable cancelled by the caller", err)
	}
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream's tool never saw the cancellation")
	}
}

// An upstream that answers with JSON bodies instead of event streams is
// served the same; it cannot relay anything, having no stream.
func TestCallToolJSONResponses(t *testing.T) {
	u := startUpstreamWith(t, &mcp.StreamableHTTPOptions{JSONResponse: true})
	a := newAdapter(t, u.url(), Options{})
	res, err := a.CallTool(context.Background(), gateway.ToolCall{Tool: "echo", RawArguments: json.RawMessage(`{"project_id":"prj-2"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.StructuredContent["arguments"].(map[string]any)["project_id"]; got != "prj-2" {
		t.Errorf("result over JSON = %+v", res.StructuredContent)
	}
	if _, err := a.CallTool(context.Background(), gateway.ToolCall{Tool: "no.such.tool"}); !errors.Is(err, gateway.ErrNotDispatched) {
		t.Errorf("unknown tool over JSON: %v, want an error marked not dispatched", err)
	}
}

// The upstream's result keeps every digit on its way to the client.
func TestDecodeResultKeepsNumbersExact(t *testing.T) {
	res, err := decodeResult(json.RawMessage(`{"content":[{"type":"text","text":"x","_meta":{"n":9007199254740993}}],"structuredContent":{"n":9007199254740993,"f":1.50}}`))
	if err != nil {
		t.Fatal(err)
	}
	if res.StructuredContent["n"] != json.Number("9007199254740993") || res.StructuredContent["f"] != json.Number("1.50") {
		t.Errorf("structured content %v", res.StructuredContent)
	}
	if res.Content[0]["_meta"].(map[string]any)["n"] != json.Number("9007199254740993") {
		t.Errorf("content block %v", res.Content[0])
	}
}

// An upstream that keeps a call's event stream open after the response
// (MCP asks it to close the stream then; a faulty or hostile one does not)
// does not hold the call: the result goes back as soon as it arrives, not
// when the upstream finally closes the stream or the timeout fires.
func TestCallToolReturnsWhenTheResponseArrivesOnAnOpenStream(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.NewDecoder(r.Body).Decode(&m)
		w.Header().Set("Mcp-Session-Id", "up-1")
		switch m.Method {
		case "initialize":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"open","version":"1"}}}`))
		case "tools/call":
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write([]byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":" + string(m.ID) + ",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"done\"}]}}\n\n"))
			w.(http.Flusher).Flush()
			select { // the stream stays open
			case <-release:
			case <-r.Context().Done():
			}
		case "":
			w.WriteHeader(http.StatusAccepted)
		default:
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{}}`))
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	a := newAdapter(t, srv.URL, Options{Timeout: 20 * time.Second})
	start := time.Now()
	res, err := a.CallTool(context.Background(), gateway.ToolCall{Tool: "echo", RawArguments: json.RawMessage(`{}`)})
	if took := time.Since(start); err != nil || took > 5*time.Second {
		t.Fatalf("CallTool on a stream left open: %+v, %v after %v; want the result at once", res, err, took)
	}
}
