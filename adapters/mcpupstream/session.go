package mcpupstream

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rejectedByTransport is the SDK's marker (JSON-RPC -32005) for "the
// transport refused to send this request"; WireError compares by code.
var rejectedByTransport = &jsonrpc.Error{Code: -32005}

// do runs op on the live session, opening one first when needed. When op
// fails in a way that shows the request never reached the upstream's
// handler (or op is safe to repeat), the session is dropped and op runs once
// more on a fresh one; any other transport failure drops the session, so the
// next call reconnects, and is returned.
func (a *Adapter) do(ctx context.Context, what string, safeToRepeat bool, op func(context.Context, *mcp.ClientSession) error) error {
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	for attempt := 0; ; attempt++ {
		s, err := a.currentSession(ctx)
		if err != nil {
			return err
		}
		flight := a.flights.begin()
		err = a.scrub(op(ctx, s))
		alone := a.flights.end(flight)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return a.timedOut(ctx, what, err)
		}
		if isUpstreamRPCError(err) {
			return a.rpcError(what, err)
		}
		a.drop(s)
		if attempt == 0 && (safeToRepeat || neverDelivered(err, alone)) {
			continue
		}
		if neverDelivered(err, alone) { // this attempt, and (for tools/call) the one before
			return notDispatched(a.unavailable(err))
		}
		return a.unavailable(err)
	}
}

// currentSession returns the live session or connects a new one. Holding
// the lock while connecting makes concurrent callers share one reconnect.
func (a *Adapter) currentSession(ctx context.Context) (*mcp.ClientSession, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil, notDispatched(gateway.Errorf(gateway.EUnavailable,
			"upstream MCP adapter for %s is closed; restart the gateway", a.display))
	}
	if a.session != nil {
		return a.session, nil
	}
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	s, err := a.client.Connect(ctx, a.transport, a.sessOpts)
	if err != nil {
		return nil, notDispatched(a.unavailable(a.scrub(err)))
	}
	a.session = s
	return s, nil
}

// drop forgets s if it is still the live session and closes it in the
// background (closing may send an HTTP DELETE to a slow upstream).
func (a *Adapter) drop(s *mcp.ClientSession) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.session != s {
		return // another caller already dropped or replaced it
	}
	a.session = nil
	a.closing.Add(1)
	go func() {
		defer a.closing.Done()
		_ = s.Close() // the session is already broken; its close error says nothing new
	}()
}

// neverDelivered reports whether err proves the request never reached a
// tool handler, so that sending it again cannot run a tool twice. A dial
// error always does. A lost session (the upstream answered 404) or a
// closed one does only when the request was alone on the adapter (alone,
// see flights): the SDK fails every request in flight on a session once
// any of them meets the 404 or the close, including requests the upstream
// is already running.
func neverDelivered(err error, alone bool) bool {
	if errors.Is(err, mcp.ErrSessionMissing) || errors.Is(err, mcp.ErrConnectionClosed) {
		return alone
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// flights counts the adapter's requests in flight, so that a request can
// tell whether any other one overlapped it.
type flights struct {
	mu     sync.Mutex
	active int
	starts uint64 // requests begun, ever
}

// flight is one request's view of flights at its start.
type flight struct {
	others bool   // another request was in flight when it began
	start  uint64 // flights.starts after it began
}

func (f *flights) begin() flight {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.active++
	f.starts++
	return flight{others: f.active > 1, start: f.starts}
}

// end reports whether the request of fl was alone: no other request was in
// flight when it began, and none began before it ended.
func (f *flights) end(fl flight) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.active--
	return !fl.others && f.starts == fl.start
}

// isUpstreamRPCError reports whether err is a JSON-RPC error response the
// upstream sent (as opposed to a transport failure).
func isUpstreamRPCError(err error) bool {
	var rpc *jsonrpc.Error
	return errors.As(err, &rpc) && !errors.Is(rpc, rejectedByTransport)
}

// rpcError translates a JSON-RPC error the upstream answered. Invalid
// params and method not found are protocol errors raised before a tool
// runs (MCP reports a failing tool as an isError result instead), so they
// are marked not dispatched; any other code leaves the outcome unknown.
// An upstream that answers -32602 after its tool had side effects breaks
// that MCP rule and, with it, this marking.
func (a *Adapter) rpcError(what string, err error) error {
	var rpc *jsonrpc.Error
	errors.As(err, &rpc)
	switch rpc.Code {
	case jsonrpc.CodeInvalidParams:
		return notDispatched(gateway.Wrap(gateway.EInvalid, err, fmt.Sprintf(
			"upstream MCP server %s rejected %s as invalid: %s; check the tool name and arguments against the upstream's tools/list", a.display, what, rpc.Message)))
	case jsonrpc.CodeMethodNotFound:
		return notDispatched(gateway.Wrap(gateway.EUnavailable, err, fmt.Sprintf(
			"upstream MCP server %s does not know %s (JSON-RPC %d: %s); check that MCPGATE_UPSTREAM_URL points at the server that implements it", a.display, what, rpc.Code, rpc.Message)))
	}
	return gateway.Wrap(gateway.EUnavailable, err, fmt.Sprintf(
		"upstream MCP server %s answered %s with JSON-RPC error %d: %s", a.display, what, rpc.Code, rpc.Message))
}

func (a *Adapter) timedOut(ctx context.Context, what string, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return gateway.Wrap(gateway.EUnavailable, err, fmt.Sprintf(
			"upstream MCP server %s did not answer %s in time (limit %s); check the upstream's health or raise the timeout", a.display, what, a.timeout))
	}
	return gateway.Wrap(gateway.EUnavailable, err, fmt.Sprintf(
		"%s to upstream MCP server %s was cancelled by the caller", what, a.display))
}

func (a *Adapter) unavailable(err error) *gateway.Error {
	return gateway.Wrap(gateway.EUnavailable, err, fmt.Sprintf(
		"upstream MCP server %s unreachable: %s; check that it is running and that MCPGATE_UPSTREAM_URL points at its MCP endpoint", a.display, shortCause(err)))
}

// shortCause names the root of a transport failure in a few words; the full
// chain stays in the wrapped error for the logs.
func shortCause(err error) string {
	var op *net.OpError
	switch {
	case errors.As(err, &op):
		return op.Op + ": " + op.Err.Error()
	case errors.Is(err, mcp.ErrSessionMissing):
		return "it no longer knows the session and a new one could not be used"
	case errors.Is(err, mcp.ErrConnectionClosed):
		return "the session was closed"
	default:
		return err.Error()
	}
}

// notDispatched marks e's cause with gateway.ErrNotDispatched: the request
// provably never reached a tool handler.
func notDispatched(e *gateway.Error) *gateway.Error {
	e.Err = gateway.NotDispatched(e.Err)
	return e
}
