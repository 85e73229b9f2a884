package mcp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
)

// carrierHandler's CallTool waits, as the approval step does, until the
// request carrying the call is gone (gateway.CarrierFrom), and reports
// whether the call's own context was still live then.
type carrierHandler struct {
	*fakeHandler
	started chan struct{}
	ended   chan error // the call's ctx.Err() once the carrier ended; nil: still live
}

func (h carrierHandler) CallTool(ctx context.Context, _ *gateway.Principal, _ *gateway.CallRequest) (*gateway.ToolResult, error) {
	carrier := gateway.CarrierFrom(ctx)
	if carrier == nil {
		h.ended <- errNoCarrier // the test fails below
		return nil, nil
	}
	close(h.started)
	select {
	case <-carrier.Done():
		h.ended <- ctx.Err()
	case <-time.After(5 * time.Second):
		h.ended <- context.DeadlineExceeded
	}
	return nil, gateway.Errorf(gateway.EUnavailable, "the request ended")
}

// TestApprovalWaitEndsWithRequest (transport side, issue 22, item 12): a
// session call runs on a context detached from its HTTP request, and the
// request's own context rides along, so a step that waits for the client
// (a person's approval) ends when the client disconnects while a running
// call is not cancelled by the disconnect.
func TestApprovalWaitEndsWithRequest(t *testing.T) {
	h := carrierHandler{fakeHandler: &fakeHandler{nTools: 1}, started: make(chan struct{}), ended: make(chan error, 1)}
	e := newEnv(t, func(o *Options) { o.Handler = h })
	sid := e.initialize(tokAlice, Version20251125)
	ctx, disconnect := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.srv.URL,
		strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"wait","arguments":{}}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tokAlice)
	req.Header.Set(headerSessionID, sid)
	req.Header.Set(headerProtocolVersion, Version20251125)
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Content-Type", "application/json")
	go func() { // the body is read until the disconnect ends it
		if resp, err := e.srv.Client().Do(req); err == nil {
			_ = readAllQuiet(resp)
		}
	}()
	select {
	case <-h.started:
	case err := <-h.ended:
		t.Fatalf("the call has no carrying request (%v)", err)
	case <-time.After(5 * time.Second):
		t.Fatal("the call did not start within 5 s")
	}
	disconnect()
	if err := <-h.ended; err != nil {
		t.Fatalf("after the disconnect: %v; want the carrier ended and the call's own context live", err)
	}
}

func readAllQuiet(resp *http.Response) error {
	defer resp.Body.Close()
	_, err := io.Copy(io.Discard, resp.Body)
	return err
}

var errNoCarrier = errors.New("no carrier in the call's context")
