package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"time"
)

// forwardedHeaders are the headers copied from the client's request to the
// upstream's and from the upstream's response back to the client (a
// header the other side did not send is not set). Every other header stays
// where it is.
var forwardedHeaders = []string{"Content-Type", "Accept", "Mcp-Session-Id", "MCP-Protocol-Version", "Mcp-Method", "Mcp-Name"}

// toolsCall is what marks a request body as a JSON-RPC tools/call: the Go
// SDK client, like most, marshals the request without spaces.
var toolsCall = []byte(`"method":"tools/call"`)

// Call outcomes written by finish.
const (
	statusAllowed = "allowed" // written by begin, before the forward
	statusOK      = "ok"      // the upstream answered with a 2xx status
	statusError   = "error"   // it answered with another status, or not at all
)

// store is what a tools/call writes (sqlStore); nil writes nothing.
type store interface {
	// begin inserts the call's row (status statusAllowed), committed
	// synchronously, and returns its id.
	begin(ctx context.Context, session, name string) (int64, error)
	// finish sets the outcome and the upstream's latency of row id.
	finish(ctx context.Context, id int64, status string, latency time.Duration) error
	Close() error
}

// floor is the forwarding handler.
type floor struct {
	upstream string
	client   *http.Client
	store    store
}

// newFloor forwards to the upstream URL, writing tools/calls to st (nil:
// none).
func newFloor(upstream string, st store) *floor {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 256
	return &floor{upstream: upstream, client: &http.Client{Transport: tr}, store: st}
}

func (f *floor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "benchfloor: reading the request body: "+err.Error(), http.StatusBadRequest)
		return
	}
	var id int64
	record := f.store != nil && r.Method == http.MethodPost && bytes.Contains(body, toolsCall)
	if record {
		if id, err = f.store.begin(r.Context(), r.Header.Get("Mcp-Session-Id"), r.Header.Get("Mcp-Name")); err != nil {
			http.Error(w, "benchfloor: the call's row was not written, so the call was not forwarded: "+err.Error(), http.StatusInternalServerError)
			return
		}
	}

	req, err := http.NewRequestWithContext(r.Context(), r.Method, f.upstream, bytes.NewReader(body))
	if err != nil {
		http.Error(w, "benchfloor: "+err.Error(), http.StatusInternalServerError)
		return
	}
	copyHeaders(req.Header, r.Header)
	t0 := time.Now()
	resp, err := f.client.Do(req)
	var out []byte
	if err == nil {
		out, err = io.ReadAll(resp.Body)
		_ = resp.Body.Close()
	}
	latency := time.Since(t0)
	if record {
		status := statusError
		if err == nil && resp.StatusCode/100 == 2 {
			status = statusOK
		}
		if ferr := f.store.finish(r.Context(), id, status, latency); ferr != nil {
			http.Error(w, "benchfloor: the call's row was not finished: "+ferr.Error(), http.StatusInternalServerError)
			return
		}
	}
	if err != nil {
		http.Error(w, "benchfloor: the upstream did not answer: "+err.Error(), http.StatusBadGateway)
		return
	}
	copyHeaders(w.Header(), resp.Header)
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(out)
}

// copyHeaders sets in dst each of forwardedHeaders that src has.
func copyHeaders(dst, src http.Header) {
	for _, h := range forwardedHeaders {
		if v := src.Values(h); len(v) > 0 {
			dst[http.CanonicalHeaderKey(h)] = v
		}
	}
}
