package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/mcp/jsonrpc"
)

// format is how a POST's JSON-RPC responses are sent back.
type format int

const (
	formatJSON format = iota // Content-Type: application/json
	formatSSE                // Content-Type: text/event-stream, one event per response
)

// acceptable parses an Accept header into what it allows. A missing header
// allows anything. Media ranges with q=0 are refused ranges (RFC 9110 §12.5.1).
func acceptable(values []string) (jsonOK, sseOK bool) {
	if len(values) == 0 {
		return true, true
	}
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			typ, params, _ := strings.Cut(part, ";")
			if refused(params) {
				continue
			}
			switch strings.ToLower(strings.TrimSpace(typ)) {
			case "*/*":
				jsonOK, sseOK = true, true
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				sseOK = true
			}
		}
	}
	return jsonOK, sseOK
}

// refused reports whether media-range parameters carry q=0.
func refused(params string) bool {
	for p := range strings.SplitSeq(params, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
			q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return err == nil && q == 0
		}
	}
	return false
}

// replyFormat picks the format of a POST reply: JSON whenever the client
// accepts it (the usual "application/json, text/event-stream"), SSE when it
// accepts only event streams, and ok=false (406) when it accepts neither.
func replyFormat(r *http.Request) (f format, ok bool) {
	jsonOK, sseOK := acceptable(r.Header.Values("Accept"))
	switch {
	case jsonOK:
		return formatJSON, true
	case sseOK:
		return formatSSE, true
	default:
		return 0, false
	}
}

// writeJSON sends v, a value of this package that always encodes, as a
// JSON body with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, _ := json.Marshal(v)
	writeBody(w, status, body)
}

func writeBody(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// startSSE writes the headers of an event stream: no caching or transforming
// proxies, no nginx buffering, so each event reaches the client when flushed.
func startSSE(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
}

// writeEvent sends one event (name "message" for a JSON-RPC message,
// "endpoint" for the 2024-11-05 endpoint) and flushes it, so every event
// reaches the client when written. data never holds a raw newline
// (json.Marshal escapes them; an endpoint is a URL), so one data line holds
// it.
func writeEvent(w http.ResponseWriter, rc *http.ResponseController, name string, data []byte) error {
	buf := make([]byte, 0, len(name)+len(data)+len("event: \ndata: \n\n"))
	buf = append(buf, "event: "...)
	buf = append(buf, name...)
	buf = append(buf, "\ndata: "...)
	buf = append(buf, data...)
	buf = append(buf, "\n\n"...)
	if _, err := w.Write(buf); err != nil {
		return err
	}
	return rc.Flush()
}

// replyWriter sends the responses of one POST in format f as each is
// ready: one SSE event per response, flushed at once; the members of a
// JSON array for a batch; or, for a single JSON response, the one object
// with its length at finish. Nothing is written before the first response,
// so a POST that produces none is still answered 202.
type replyWriter struct {
	mu    sync.Mutex // write, stream and finish may come from a call's relay goroutines
	w     http.ResponseWriter
	rc    *http.ResponseController
	f     format
	batch bool
	n     int    // responses written
	held  []byte // the single JSON response, written by finish
	gone  bool   // a write failed: the client is gone
	// canSSE: the client accepts an event stream, so a single request's
	// reply may switch to one to carry messages before its response
	// (stream); sse: the stream was started.
	canSSE, sse bool
	// deadline gives the next write its own deadline (Options.WriteTimeout),
	// counted from when that response is ready, not from the request.
	deadline func(*http.ResponseController)
}

func newReplyWriter(w http.ResponseWriter, f format, batch bool, deadline func(*http.ResponseController)) *replyWriter {
	return &replyWriter{w: w, rc: http.NewResponseController(w), f: f, batch: batch, deadline: deadline}
}

// write sends one encoded response. It always reports true: a client that
// went away does not cancel the rest of its batch (MCP basic/transports:
// a disconnect is not a cancellation), whose responses are then dropped.
func (rw *replyWriter) write(data []byte) bool {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	first := rw.n == 0 && !rw.sse
	rw.n++
	if !rw.gone && (rw.f == formatSSE || rw.batch) {
		rw.deadline(rw.rc)
	}
	switch {
	case rw.gone:
	case rw.f == formatSSE:
		if first {
			startSSE(rw.w)
			rw.sse = true
		}
		rw.gone = writeEvent(rw.w, rw.rc, "message", data) != nil
	case !rw.batch:
		rw.held = data
	default:
		sep := []byte{','}
		if first {
			rw.w.Header().Set("Content-Type", "application/json")
			rw.w.WriteHeader(http.StatusOK)
			sep[0] = '['
		}
		_, err := rw.w.Write(sep)
		if err == nil {
			_, err = rw.w.Write(data)
		}
		rw.gone = err != nil
	}
	return true
}

// finish completes the reply: 202 Accepted when there was no response,
// the single JSON response, or the closing bracket of a batch's array.
func (rw *replyWriter) finish() {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	rw.deadline(rw.rc)
	switch {
	case rw.n == 0:
		rw.w.WriteHeader(http.StatusAccepted)
	case rw.gone || rw.f == formatSSE:
	case !rw.batch:
		writeBody(rw.w, http.StatusOK, rw.held)
	default:
		_, _ = rw.w.Write([]byte{']'})
	}
}

// fail answers the request with send (an error reply of its own HTTP
// status) instead of a response, when nothing of the reply has been
// written yet; it reports whether it did.
func (rw *replyWriter) fail(send func()) bool {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if rw.n > 0 || rw.sse || rw.gone || rw.batch {
		return false
	}
	rw.n, rw.gone = 1, true // later writes and finish leave the reply alone
	send()
	return true
}

// stream sends data, a message of a request that is not its response (a
// relayed notification or request), on the reply before the response:
// the reply becomes an event stream if it is not one yet. It reports
// false when the reply cannot carry it: a batch, a client that accepts
// only JSON, or a response already written.
func (rw *replyWriter) stream(data []byte) bool {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if rw.batch || rw.gone || rw.n > 0 || (rw.f != formatSSE && !rw.canSSE) {
		return false
	}
	rw.f = formatSSE
	rw.deadline(rw.rc)
	if !rw.sse {
		startSSE(rw.w)
		rw.sse = true
	}
	rw.gone = writeEvent(rw.w, rw.rc, "message", data) != nil
	return !rw.gone
}

// replyError answers a request with a transport-level error: the HTTP status
// of err's class and a JSON-RPC error body (docs/http.md, Errors). A 401 also
// carries WWW-Authenticate.
func (t *Transport) replyError(w http.ResponseWriter, r *http.Request, id json.RawMessage, err error) {
	e, status := t.wireError(r.Context(), err)
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", t.challenge(r, err))
	}
	writeJSON(w, status, jsonrpc.Response{JSONRPC: "2.0", ID: id, Error: e})
}

// encode marshals a response; a result that cannot be encoded (e.g. NaN in
// structured content) becomes an internal error for that request.
func (t *Transport) encode(ctx context.Context, resp jsonrpc.Response) []byte {
	if data, ok := encodeToolResult(resp); ok {
		return data
	}
	data, err := json.Marshal(resp)
	if err == nil {
		return data
	}
	e, _ := t.wireError(ctx, gateway.Wrap(gateway.EInternal, err, "the result could not be encoded as JSON; the gateway logged the cause"))
	data, _ = json.Marshal(jsonrpc.Response{JSONRPC: "2.0", ID: resp.ID, Error: e})
	return data
}

// encodeToolResult is json.Marshal(resp) for the usual reply, a tool
// result under an id that encoding/json copies as it is, without
// reflection; ok is false for any other response.
func encodeToolResult(resp jsonrpc.Response) ([]byte, bool) {
	res, isResult := resp.Result.(*gateway.ToolResult)
	if !isResult || res == nil || resp.Error != nil || resp.JSONRPC != "2.0" || !jsonrpc.PlainID(resp.ID) {
		return nil, false
	}
	// MarshalJSON writes compact JSON with HTML characters escaped: what
	// encoding/json makes of a Marshaler's output.
	body, err := res.MarshalJSON()
	if err != nil {
		return nil, false
	}
	return jsonrpc.ResultEnvelope(resp.ID, body), true
}

// writeDeadline gives the next write WriteTimeout from now, in place of
// the HTTP server's deadline, which counts from the request (none when
// WriteTimeout is 0). Test recorders cannot set deadlines: ignore that.
func (t *Transport) writeDeadline(rc *http.ResponseController) {
	var d time.Time
	if t.opts.WriteTimeout > 0 {
		d = time.Now().Add(t.opts.WriteTimeout)
	}
	_ = rc.SetWriteDeadline(d)
}
