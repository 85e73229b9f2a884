package mcp

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgate/mcpgate/gateway/mcp/sessionid"
)

// elicitClient connects the Go SDK client to url over the Streamable HTTP
// transport (sse false) or HTTP+SSE, pinned to version, answering
// elicitations with answer when it is not nil (which declares the
// capability).
func elicitClient(ctx context.Context, t *testing.T, url string, sse bool, version string, answer func(*sdk.ElicitRequest) *sdk.ElicitResult) *sdk.ClientSession {
	t.Helper()
	var opts sdk.ClientOptions
	if answer != nil {
		opts.ElicitationHandler = func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) { return answer(req), nil }
	}
	hc := &http.Client{Transport: bearer{tokAlice, http.DefaultTransport}}
	var tr sdk.Transport = &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: hc}
	if sse {
		tr = &sdk.SSEClientTransport{Endpoint: url, HTTPClient: hc}
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "elicit", Version: "1"}, &opts).Connect(ctx, tr, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func elicitText(ctx context.Context, t *testing.T, cs *sdk.ClientSession) string {
	t.Helper()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "elicit"})
	if err != nil {
		t.Fatalf("CallTool elicit: %v", err)
	}
	if res.IsError || len(res.Content) != 1 {
		t.Fatalf("CallTool elicit: %+v", res)
	}
	return res.Content[0].(*sdk.TextContent).Text
}

// TestElicitorOnlyForDeclaringClients: a tools/call carries an Elicitor
// exactly when the session's client declared elicitation in form mode at
// initialize; the Elicitor's elicitation/create reaches the real client
// (Go SDK) over Streamable HTTP at 2025-11-25 (with "mode": "form") and
// 2025-06-18, and over HTTP+SSE, and its answer comes back.
func TestElicitorOnlyForDeclaringClients(t *testing.T) {
	e, srv := legacyEnv(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var modes atomic.Value
	approve := func(req *sdk.ElicitRequest) *sdk.ElicitResult {
		modes.Store(req.Params.Mode)
		if req.Params.Message != "approve?" {
			return &sdk.ElicitResult{Action: "decline"}
		}
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"decision": "approve"}}
	}
	decline := func(req *sdk.ElicitRequest) *sdk.ElicitResult {
		modes.Store(req.Params.Mode)
		return &sdk.ElicitResult{Action: "decline"}
	}
	tests := []struct {
		name, path, version string
		answer              func(*sdk.ElicitRequest) *sdk.ElicitResult
		want, wantMode      string
	}{
		{"streamable 2025-11-25 accepts", "/mcp", Version20251125, approve, "accept approve", "form"},
		{"streamable 2025-06-18 declines", "/mcp", Version20250618, decline, "decline ", ""},
		{"streamable without the capability", "/mcp", Version20251125, nil, "no elicitor", ""},
		{"sse 2024-11-05 accepts", "/sse", Version20241105, approve, "accept approve", ""},
		{"sse without the capability", "/sse", Version20241105, nil, "no elicitor", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			modes.Store("unset")
			cs := elicitClient(ctx, t, srv.URL+tc.path, tc.path == "/sse", tc.version, tc.answer)
			if got := elicitText(ctx, t, cs); got != tc.want {
				t.Fatalf("call = %q, want %q", got, tc.want)
			}
			if tc.answer != nil && modes.Load() != tc.wantMode {
				t.Fatalf("elicitation mode = %q, want %q", modes.Load(), tc.wantMode)
			}
		})
	}
	if len(e.errorLogs()) != 0 {
		t.Fatalf("error logs: %v", e.errorLogs())
	}
}

// TestElicitCapabilityInSessionID: the capability travels in the signed
// session id, so a replica that never saw initialize (B) still asks the
// client (TestSessionIDForgedOrForeign flips every byte of an id, the
// capability byte among them).
func TestElicitCapabilityInSessionID(t *testing.T) {
	a, b := replicas(t)
	// initialize goes to A, everything else to B.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Header.Get(headerSessionID) == "" {
			a.tr.ServeHTTP(w, r)
			return
		}
		b.tr.ServeHTTP(w, r)
	}))
	defer srv.Close()
	defer b.tr.Close() // runs first: ends the SDK's GET stream so srv.Close can return
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs := elicitClient(ctx, t, srv.URL, false, Version20251125, func(*sdk.ElicitRequest) *sdk.ElicitResult {
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"decision": "reject"}}
	})
	if got := elicitText(ctx, t, cs); got != "accept reject" {
		t.Fatalf("call on B = %q, want the client's answer", got)
	}
	if len(a.h.calls) != 0 {
		t.Fatalf("A ran %d calls; only initialize should reach it", len(a.h.calls))
	}
}

// TestSessionIDV1StillVerifies: an id of the earlier "s1." form (no
// capability byte) is served, with no capabilities; the same id with the
// "s2." prefix is not.
func TestSessionIDV1StillVerifies(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.SessionSecret = testSessionSecret })
	p := principals[tokAlice]
	body := []byte{byte(len(Version20250618))}
	body = append(body, Version20250618...)
	body = binary.BigEndian.AppendUint64(body, uint64(time.Now().UnixMilli()))
	nonce := make([]byte, sessionid.NonceLen)
	_, _ = rand.Read(nonce)
	body = append(body, nonce...)
	mac := e.tr.signer.MAC(sessionid.LabelV1, body, &p)
	enc := base64.RawURLEncoding.EncodeToString(append(body, mac[:]...))
	v1 := sessionid.PrefixV1 + enc
	if code, r := e.rpc(hdr{token: tokAlice, session: v1}, "tools/call", `{"name":"elicit"}`); code != 200 || !strings.Contains(string(r.Result), "no elicitor") {
		t.Fatalf("s1 id: %d %s %+v, want the call served without an elicitor", code, r.Result, r.Error)
	}
	if code, _ := e.rpc(hdr{token: tokAlice, session: sessionid.Prefix + enc}, "ping", ""); code != 404 {
		t.Fatalf("s1 body under the s2 prefix: %d, want 404", code)
	}
}
