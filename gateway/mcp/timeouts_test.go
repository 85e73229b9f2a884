package mcp

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway"
)

// slowCalls delays every tools/call by delay, then answers like fakeHandler.
type slowCalls struct {
	*fakeHandler
	delay time.Duration
}

func (h slowCalls) CallTool(ctx context.Context, p *gateway.Principal, call *gateway.CallRequest) (*gateway.ToolResult, error) {
	time.Sleep(h.delay)
	return h.fakeHandler.CallTool(ctx, p, call)
}

// The HTTP server's write timeout counts from the request; a tool call
// that takes longer still gets its reply, because the transport gives the
// reply WriteTimeout of its own once the call is done.
func TestReplyOfSlowCallOutlivesWriteTimeout(t *testing.T) {
	const writeTimeout = 100 * time.Millisecond
	tr, err := NewHandler(Options{Authenticator: fakeAuth{}, Handler: slowCalls{&fakeHandler{}, 4 * writeTimeout},
		Logger: zap.NewNop(), WriteTimeout: writeTimeout})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(tr)
	srv.Config.WriteTimeout = writeTimeout
	srv.Start()
	srv.Client().Timeout = 10 * time.Second
	t.Cleanup(func() { tr.Close(); srv.Close() })
	e := &env{t: t, tr: tr, srv: srv}
	sid := e.initialize(tokAlice, Version20250618)
	h := hdr{token: tokAlice, session: sid, version: Version20250618, accept: "application/json"}
	status, resp := e.rpc(h, "tools/call", `{"name":"echo","arguments":{}}`)
	if status != 200 || resp.Error != nil || len(resp.Result) == 0 {
		t.Errorf("JSON reply: status %d, response %+v; want the call's result", status, resp)
	}
	h.accept = "text/event-stream"
	if body := string(readAll(t, e.do("POST", h, `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"echo","arguments":{}}}`))); !strings.Contains(body, "called echo") {
		t.Errorf("SSE reply %q, want the call's result", body)
	}
}
