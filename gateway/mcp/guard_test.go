package mcp

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHostCheck(t *testing.T) {
	loopback := []string{"127.0.0.1", "localhost", "[::1]"}
	tests := []struct {
		name    string
		allowed []string
		host    string
		want    int
	}{
		{"no list allows any host", nil, "evil.example.com", 200},
		{"loopback name with port", loopback, "localhost:8080", 200},
		{"loopback address with port", loopback, "127.0.0.1:8080", 200},
		{"IPv6 loopback with port", loopback, "[::1]:8080", 200},
		{"IPv6 loopback without port", loopback, "[::1]", 200},
		{"case-insensitive", loopback, "LOCALHOST:9", 200},
		{"rebound name refused", loopback, "evil.example.com", 403},
		{"rebound name with port refused", loopback, "evil.example.com:8080", 403},
		{"suffix trick refused", loopback, "localhost.evil.example.com", 403},
		{"host:port entry matches its port", []string{"gw.example.com:443"}, "gw.example.com:443", 200},
		{"host:port entry refuses other ports", []string{"gw.example.com:443"}, "gw.example.com:8443", 403},
		{"wildcard entry", []string{"*"}, "anything.example", 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(o *Options) { o.AllowedHosts = tc.allowed })
			// No token: a refused Host must be answered before authentication.
			tok := tokAlice
			if tc.want == 403 {
				tok = ""
			}
			resp := e.do("POST", hdr{token: tok, host: tc.host}, initBody(Version20251125))
			r := decodeResp(t, readAll(t, resp))
			if resp.StatusCode != tc.want {
				t.Fatalf("status = %d, want %d (%+v)", resp.StatusCode, tc.want, r.Error)
			}
			if tc.want == 403 && (r.Error == nil || r.Error.Data.Class != "Forbidden" || !strings.Contains(r.Error.Message, "MCPGATE_ALLOWED_HOSTS")) {
				t.Fatalf("403 body = %+v, want a JSON-RPC Forbidden error naming MCPGATE_ALLOWED_HOSTS", r.Error)
			}
		})
	}
}

// preflight sends a CORS preflight request without credentials, as browsers do.
func (e *env) preflight(origin string) *http.Response {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodOptions, e.srv.URL, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Origin", origin)
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "authorization, content-type, mcp-session-id, mcp-protocol-version")
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	readAll(e.t, resp)
	return resp
}

func TestCORSPreflight(t *testing.T) {
	tests := []struct {
		name    string
		allowed []string
		origin  string
		want    int
	}{
		{"no origins configured refuses browsers", nil, "https://app.example.com", 403},
		{"listed origin answered before authentication", []string{"https://app.example.com"}, "https://app.example.com", 204},
		{"unlisted origin refused", []string{"https://app.example.com"}, "https://evil.example", 403},
		{"wildcard allows any origin", []string{"*"}, "https://evil.example", 204},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(o *Options) { o.AllowedOrigins = tc.allowed })
			resp := e.preflight(tc.origin)
			if resp.StatusCode != tc.want {
				t.Fatalf("status = %d, want %d", resp.StatusCode, tc.want)
			}
			h := resp.Header
			if tc.want != 204 {
				if h.Get("Access-Control-Allow-Origin") != "" {
					t.Fatalf("refused preflight carries CORS headers: %v", h)
				}
				return
			}
			checks := map[string]string{
				"Access-Control-Allow-Origin":  tc.origin,
				"Access-Control-Allow-Methods": "GET, POST, DELETE",
				"Access-Control-Max-Age":       "600",
			}
			for k, v := range checks {
				if h.Get(k) != v {
					t.Errorf("%s = %q, want %q", k, h.Get(k), v)
				}
			}
			for _, name := range []string{"Authorization", "Content-Type", "Mcp-Session-Id", "MCP-Protocol-Version", "Last-Event-ID"} {
				if !strings.Contains(h.Get("Access-Control-Allow-Headers"), name) {
					t.Errorf("Access-Control-Allow-Headers %q lacks %s", h.Get("Access-Control-Allow-Headers"), name)
				}
			}
			if e.sessionCount() != 0 || h.Get("WWW-Authenticate") != "" {
				t.Fatal("a preflight reached authentication or created a session")
			}
		})
	}
}

func TestCORSOnRequests(t *testing.T) {
	const origin = "https://app.example.com"
	e := newEnv(t, func(o *Options) { o.AllowedOrigins = []string{origin} })
	tests := []struct {
		name, origin, token string
		want                int
		wantCORS            bool
	}{
		{"browser initialize exposes the session id", origin, tokAlice, 200, true},
		{"browser 401 exposes the challenge", origin, "", 401, true},
		{"non-browser request gets no CORS headers", "", tokAlice, 200, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := e.do("POST", hdr{token: tc.token, origin: tc.origin}, initBody(Version20251125))
			readAll(t, resp)
			if resp.StatusCode != tc.want {
				t.Fatalf("status = %d, want %d", resp.StatusCode, tc.want)
			}
			h := resp.Header
			if !tc.wantCORS {
				if h.Get("Access-Control-Allow-Origin") != "" || h.Get("Access-Control-Expose-Headers") != "" {
					t.Fatalf("CORS headers without Origin: %v", h)
				}
				return
			}
			if h.Get("Access-Control-Allow-Origin") != origin || !strings.Contains(h.Get("Vary"), "Origin") {
				t.Fatalf("Allow-Origin %q Vary %q", h.Get("Access-Control-Allow-Origin"), h.Get("Vary"))
			}
			for _, name := range []string{"Mcp-Session-Id", "MCP-Protocol-Version", "WWW-Authenticate"} {
				if !strings.Contains(h.Get("Access-Control-Expose-Headers"), name) {
					t.Errorf("Access-Control-Expose-Headers %q lacks %s", h.Get("Access-Control-Expose-Headers"), name)
				}
			}
		})
	}
}

func TestChallengeNamesResourceMetadata(t *testing.T) {
	const meta = "https://gw.example.com/.well-known/oauth-protected-resource"
	e := newEnv(t, func(o *Options) { o.ResourceMetadataURL = meta })
	tests := []struct{ name, token, want string }{
		{"no credentials: no error code", "", `Bearer realm="mcpgate", resource_metadata="` + meta + `"`},
		{"bad credentials: invalid_token", "nope", `Bearer realm="mcpgate", resource_metadata="` + meta + `", error="invalid_token", error_description="missing or invalid bearer token; send Authorization: Bearer <token>"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, method := range []string{"POST", "GET", "DELETE"} {
				resp := e.do(method, hdr{token: tc.token}, `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
				readAll(t, resp)
				if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") != tc.want {
					t.Fatalf("%s: status %d WWW-Authenticate %q, want 401 %q", method, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), tc.want)
				}
			}
		})
	}
}

// TestGETStreamHeaders checks what proxies need to pass events through at
// once; TestNotifyToolsChanged shows each event arrives while the stream
// stays open (it is flushed per event).
func TestGETStreamHeaders(t *testing.T) {
	e := newEnv(t, nil)
	sid := e.initialize(tokAlice, Version20251125)
	resp, _ := openStream(t, e, tokAlice, sid)
	want := map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache, no-transform", "X-Accel-Buffering": "no"}
	for k, v := range want {
		if got := resp.Header.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
}

// TestSameOriginAllowed: a page served under the server's own (checked)
// name may call it without being listed in AllowedOrigins; a foreign origin
// may not, and without a Host check the same-origin rule is off (a rebound
// name would otherwise match itself).
func TestSameOriginAllowed(t *testing.T) {
	cases := []struct {
		note   string
		hosts  []string
		host   string
		origin string
		want   int
	}{
		{"same origin on loopback", []string{"127.0.0.1"}, "127.0.0.1:8080", "http://127.0.0.1:8080", http.StatusOK},
		{"foreign origin", []string{"127.0.0.1"}, "127.0.0.1:8080", "http://evil.example:8080", http.StatusForbidden},
		{"other port is another origin", []string{"127.0.0.1"}, "127.0.0.1:8080", "http://127.0.0.1:9999", http.StatusForbidden},
		{"no host check: rebound name refused", nil, "evil.example:8080", "http://evil.example:8080", http.StatusForbidden},
	}
	for _, c := range cases {
		t.Run(c.note, func(t *testing.T) {
			tr, err := NewHandler(Options{Authenticator: fakeAuth{}, Handler: &fakeHandler{}, AllowedHosts: c.hosts})
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			req := httptest.NewRequest(http.MethodPost, "http://"+c.host+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
			req.Host = c.host
			req.Header.Set("Origin", c.origin)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			rec := httptest.NewRecorder()
			tr.ServeHTTP(rec, req)
			if c.want == http.StatusForbidden && rec.Code != http.StatusForbidden {
				t.Fatalf("status %d, want 403", rec.Code)
			}
			if c.want == http.StatusOK && rec.Code == http.StatusForbidden {
				t.Fatalf("same-origin request refused: %s", rec.Body)
			}
		})
	}
}
