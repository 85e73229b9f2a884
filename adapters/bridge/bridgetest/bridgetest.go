// Package bridgetest writes the replies of a misbehaving MCP upstream, for
// the tests that prove a bridged upstream's failures stay its own
// (adapters/bridge, the gateway's end-to-end tests).
package bridgetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// The ways Misbehave answers a request.
const (
	// Slow answers nothing until the client gives up.
	Slow = "slow"
	// Endless opens an event stream that never carries the response.
	Endless = "endless"
	// Garbage answers a body that is not JSON.
	Garbage = "garbage"
	// GarbageEvent opens an event stream whose one event is not JSON,
	// and keeps it open.
	GarbageEvent = "garbage-event"
	// RPCError answers a JSON-RPC error ("backend exploded").
	RPCError = "rpc-error"
	// Down answers 502, as a proxy in front of a dead upstream does.
	Down = "down"
	// Huge answers a result of 10 MB (10,000,000 bytes of text).
	Huge = "huge"
	// Truncated answers JSON cut off in the middle of the result.
	Truncated = "truncated"
)

// Modes are every way Misbehave knows, in a fixed order.
var Modes = []string{Slow, Endless, Garbage, GarbageEvent, RPCError, Down, Huge, Truncated}

// Misbehave answers the JSON-RPC request of id (its raw id) in the way
// mode names, instead of with its result; it returns once the reply is
// written or, for Slow and Endless, once the client went away.
func Misbehave(w http.ResponseWriter, r *http.Request, mode string, id json.RawMessage) {
	switch mode {
	case Slow:
		<-r.Context().Done()
	case Endless:
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for {
			if _, err := io.WriteString(w, ": still here\n\n"); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	case Garbage:
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, "<html>this is not JSON</html>")
	case GarbageEvent:
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "event: message\ndata: <html>this is not JSON</html>\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	case RPCError:
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32000,"message":"backend exploded"}}`, id)
	case Down:
		http.Error(w, "bad gateway", http.StatusBadGateway)
	case Huge:
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"%s"}]}}`, id, strings.Repeat("x", 10_000_000))
	case Truncated:
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"te`, id)
	default:
		panic("bridgetest: unknown mode " + mode)
	}
}

// Wrap serves each request with next, except a tools/call for which mode
// (given the called tool's name) returns a mode: that one is answered by
// Misbehave.
func Wrap(next http.Handler, mode func(tool string) string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &msg)
		if msg.Method == "tools/call" {
			if m := mode(msg.Params.Name); m != "" {
				Misbehave(w, r, m, msg.ID)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}
