package mcp

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/mcp/jsonrpc"
)

func TestNewHandlerValidatesOptions(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"no authenticator", Options{Handler: &fakeHandler{}}, "Authenticator is nil"},
		{"no handler", Options{Authenticator: fakeAuth{}}, "Handler is nil"},
		{"negative page size", Options{Authenticator: fakeAuth{}, Handler: &fakeHandler{}, PageSize: -1}, "must not be negative"},
		{"negative body limit", Options{Authenticator: fakeAuth{}, Handler: &fakeHandler{}, MaxBodyBytes: -1}, "must not be negative"},
		{"negative batch limit", Options{Authenticator: fakeAuth{}, Handler: &fakeHandler{}, MaxBatchMessages: -1}, "must not be negative"},
		{"negative reply budget", Options{Authenticator: fakeAuth{}, Handler: &fakeHandler{}, MaxBatchReplyBytes: -1}, "must not be negative"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := NewHandler(tc.opts)
			if err == nil {
				tr.Close()
				t.Fatal("NewHandler accepted invalid options")
			}
			if gateway.ErrorCodeOf(err) != gateway.EInvalid || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want EInvalid containing %q", err, tc.want)
			}
		})
	}
}

func TestAuthenticationOnEveryMethod(t *testing.T) {
	e := newEnv(t, nil)
	sid := e.initialize(tokAlice, Version20251125)
	tests := []struct {
		name, method, token string
		wantStatus          int
		wantCode            int
		wantClass           string
		wantChallenge       bool
	}{
		{"POST without token", "POST", "", 401, -32600, "Unauthenticated", true},
		{"POST with unknown token", "POST", "nope", 401, -32600, "Unauthenticated", true},
		{"GET without token", "GET", "", 401, -32600, "Unauthenticated", true},
		{"DELETE without token", "DELETE", "", 401, -32600, "Unauthenticated", true},
		{"DELETE with unknown token", "DELETE", "nope", 401, -32600, "Unauthenticated", true},
		{"store down is not a 401", "POST", tokDown, 503, -32603, "Internal", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := e.do(tc.method, hdr{token: tc.token, session: sid, accept: "text/event-stream, application/json"},
				`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
			r := decodeResp(t, readAll(t, resp))
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status = %d, want %d", resp.StatusCode, tc.wantStatus)
			}
			ch := resp.Header.Get("WWW-Authenticate")
			if tc.wantChallenge != (ch != "") {
				t.Fatalf("WWW-Authenticate = %q, want present=%v", ch, tc.wantChallenge)
			}
			want := `Bearer realm="mcpgate"` // RFC 6750 §3.1: no error code without credentials
			if tc.token != "" {
				want += `, error="invalid_token", error_description="missing or invalid bearer token`
			}
			if tc.wantChallenge && !strings.HasPrefix(ch, want) {
				t.Fatalf("WWW-Authenticate = %q, want prefix %q", ch, want)
			}
			if r.Error == nil || r.Error.Code != tc.wantCode || r.Error.Data.Class != tc.wantClass || r.Error.Data.Status != tc.wantStatus {
				t.Fatalf("error = %+v, want code %d class %s status %d", r.Error, tc.wantCode, tc.wantClass, tc.wantStatus)
			}
			if string(r.ID) != "null" {
				t.Fatalf("id = %s, want null", r.ID)
			}
		})
	}
	for _, entry := range e.logs.All() {
		if s := fmt.Sprint(entry.Message, entry.ContextMap()); strings.Contains(s, "secret") {
			t.Fatalf("a credential reached the log: %s", s)
		}
	}
}

func TestCustomChallenge(t *testing.T) {
	e := newEnv(t, func(o *Options) {
		o.Challenge = func(err error) string { return `Bearer realm="ext", resource_metadata="https://x/.well-known"` }
	})
	resp := e.do("POST", hdr{}, `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	readAll(t, resp)
	if got := resp.Header.Get("WWW-Authenticate"); got != `Bearer realm="ext", resource_metadata="https://x/.well-known"` {
		t.Fatalf("WWW-Authenticate = %q", got)
	}
}

func TestChallengeQuotesMessage(t *testing.T) {
	tr := &Transport{}
	r, _ := http.NewRequest("POST", "/", nil)
	r.Header.Set("Authorization", "Bearer x")
	got := tr.challenge(r, gateway.Errorf(gateway.EUnauthenticated, "bad \"token\"\r\nX-Evil: 1"))
	want := `Bearer realm="mcpgate", error="invalid_token", error_description="bad \"token\"  X-Evil: 1"`
	if got != want {
		t.Fatalf("challenge = %s, want %s", got, want)
	}
}

func TestOrigin(t *testing.T) {
	tests := []struct {
		name    string
		allowed []string
		origin  string
		want    int
	}{
		{"no origin header passes", nil, "", 200},
		{"browser refused by default", nil, "https://evil.example", 403},
		{"listed origin passes", []string{"https://app.example.com"}, "https://app.example.com", 200},
		{"listed origin, other case and trailing slash", []string{"https://app.example.com/"}, "HTTPS://APP.example.com", 200},
		{"unlisted origin refused", []string{"https://app.example.com"}, "https://evil.example", 403},
		{"null origin refused", []string{"https://app.example.com"}, "null", 403},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(o *Options) { o.AllowedOrigins = tc.allowed })
			resp := e.do("POST", hdr{token: tokAlice, origin: tc.origin}, initBody(Version20251125))
			r := decodeResp(t, readAll(t, resp))
			if resp.StatusCode != tc.want {
				t.Fatalf("status = %d, want %d", resp.StatusCode, tc.want)
			}
			if tc.want == 403 && (r.Error == nil || r.Error.Data.Class != "Forbidden") {
				t.Fatalf("403 body = %+v", r.Error)
			}
		})
	}
}

func TestPOSTEnvelopeErrors(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.MaxBodyBytes = 512 })
	sid := e.initialize(tokAlice, Version20251125)
	tests := []struct {
		name       string
		body       string
		wantStatus int
		wantCode   int
		wantID     string
	}{
		{"not JSON", `{"jsonrpc":`, 400, -32700, "null"},
		{"empty body", ``, 400, -32700, "null"},
		{"trailing garbage", `{"jsonrpc":"2.0","id":1,"method":"ping"} x`, 400, -32700, "null"},
		{"wrong jsonrpc version", `{"jsonrpc":"1.0","id":3,"method":"ping"}`, 400, -32600, "3"},
		{"jsonrpc as number", `{"jsonrpc":2.0,"id":"a","method":"ping"}`, 400, -32600, `"a"`},
		{"missing method", `{"jsonrpc":"2.0","id":4}`, 400, -32600, "4"},
		{"method not a string", `{"jsonrpc":"2.0","id":4,"method":12}`, 400, -32600, "4"},
		{"id is an object", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, 400, -32600, "null"},
		{"id is null", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, 400, -32600, "null"},
		{"id is a boolean", `{"jsonrpc":"2.0","id":true,"method":"ping"}`, 400, -32600, "null"},
		{"not an object", `42`, 400, -32600, "null"},
		{"empty batch", `[]`, 400, -32600, "null"},
		{"body too large", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 600) + `"}}`, 413, -32600, "null"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := e.do("POST", hdr{token: tokAlice, session: sid}, tc.body)
			r := decodeResp(t, readAll(t, resp))
			if resp.StatusCode != tc.wantStatus || r.Error == nil || r.Error.Code != tc.wantCode {
				t.Fatalf("status %d error %+v, want %d code %d", resp.StatusCode, r.Error, tc.wantStatus, tc.wantCode)
			}
			if string(r.ID) != tc.wantID {
				t.Fatalf("id = %s, want %s", r.ID, tc.wantID)
			}
			if r.Error.Data.Status != tc.wantStatus || r.Error.Message == "" {
				t.Fatalf("error data = %+v", r.Error)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Fatalf("Content-Type = %q", ct)
			}
		})
	}
}

func TestNotificationsAndResponsesAre202(t *testing.T) {
	e := newEnv(t, nil)
	sid := e.initialize(tokAlice, Version20250618)
	tests := []struct{ name, body string }{
		{"initialized", `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
		{"unknown notification", `{"jsonrpc":"2.0","method":"notifications/whatever","params":{}}`},
		{"cancel of nothing", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}`},
		{"client response", `{"jsonrpc":"2.0","id":5,"result":{}}`},
		{"client error response", `{"jsonrpc":"2.0","id":5,"error":{"code":-1,"message":"no"}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := e.do("POST", hdr{token: tokAlice, session: sid}, tc.body)
			if body := readAll(t, resp); resp.StatusCode != 202 || len(body) != 0 {
				t.Fatalf("status %d body %q, want 202 and no body", resp.StatusCode, body)
			}
		})
	}
}

func TestBatchRules(t *testing.T) {
	e := newEnv(t, nil)
	pingList := `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":"two","method":"tools/list"}]`
	tests := []struct {
		name, version, body, accept string
		wantStatus                  int
		wantIn                      string // substring of the body
	}{
		{"2025-03-26 batch answered as array", Version20250326, pingList, "", 200, `"id":"two"`},
		{"2025-03-26 batch over SSE", Version20250326, pingList, "text/event-stream", 200, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1"},
		{"2025-03-26 notifications only", Version20250326, `[{"jsonrpc":"2.0","method":"notifications/initialized"}]`, "", 202, ""},
		{"2025-03-26 invalid member answered in place", Version20250326, `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2}]`, "", 200, `"code":-32600`},
		{"2025-03-26 initialize in batch", Version20250326, `[` + initBody(Version20250326) + `]`, "", 400, "must not be part of a JSON-RPC batch"},
		{"2025-06-18 refuses batches", Version20250618, pingList, "", 400, "batching was removed in MCP 2025-06-18"},
		{"2025-11-25 refuses batches", Version20251125, pingList, "", 400, "batching was removed in MCP 2025-06-18"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sid := e.initialize(tokAlice, tc.version)
			resp := e.do("POST", hdr{token: tokAlice, session: sid, accept: tc.accept}, tc.body)
			body := string(readAll(t, resp))
			if resp.StatusCode != tc.wantStatus || !strings.Contains(body, tc.wantIn) {
				t.Fatalf("status %d body %s, want %d containing %q", resp.StatusCode, body, tc.wantStatus, tc.wantIn)
			}
			if tc.wantStatus == 200 && tc.accept == "" {
				var arr []wireResp
				if err := json.Unmarshal([]byte(body), &arr); err != nil || len(arr) != 2 {
					t.Fatalf("want a JSON array of 2 responses, got %s (%v)", body, err)
				}
			}
		})
	}
}

func TestInitializeNegotiatesVersion(t *testing.T) {
	e := newEnv(t, nil)
	tests := []struct{ name, asked, want string }{
		{"2025-11-25", Version20251125, Version20251125},
		{"2025-06-18", Version20250618, Version20250618},
		{"2025-03-26", Version20250326, Version20250326},
		{"older 2024-11-05 gets latest", "2024-11-05", LatestVersion},
		{"future version gets latest", "2026-07-28", LatestVersion},
		{"missing version gets latest", "", LatestVersion},
	}
	visible := regexp.MustCompile(`^[\x21-\x7e]{16,}$`)
	seen := map[string]bool{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := e.do("POST", hdr{token: tokAlice}, initBody(tc.asked))
			r := decodeResp(t, readAll(t, resp))
			var res struct {
				ProtocolVersion string         `json:"protocolVersion"`
				Capabilities    map[string]any `json:"capabilities"`
				ServerInfo      implementation `json:"serverInfo"`
				Instructions    string         `json:"instructions"`
			}
			if err := json.Unmarshal(r.Result, &res); err != nil || r.Error != nil {
				t.Fatalf("initialize failed: %s %+v", r.Result, r.Error)
			}
			if res.ProtocolVersion != tc.want {
				t.Fatalf("protocolVersion = %q, want %q", res.ProtocolVersion, tc.want)
			}
			caps, _ := json.Marshal(res.Capabilities)
			if string(caps) != `{"logging":{},"tools":{"listChanged":true}}` {
				t.Fatalf("capabilities = %s", caps)
			}
			if res.ServerInfo != (implementation{"mcpgate-test", "1.2.3"}) || res.Instructions != "use tools wisely" {
				t.Fatalf("serverInfo %+v instructions %q", res.ServerInfo, res.Instructions)
			}
			sid := resp.Header.Get(headerSessionID)
			if !visible.MatchString(sid) || seen[sid] {
				t.Fatalf("session id %q is not fresh visible ASCII", sid)
			}
			seen[sid] = true
		})
	}
}

func TestInitializeRules(t *testing.T) {
	e := newEnv(t, nil)
	sid := e.initialize(tokAlice, Version20251125)
	tests := []struct {
		name       string
		session    string
		body       string
		wantStatus int
		wantCode   int
	}{
		{"initialize on an existing session", sid, initBody(Version20251125), 400, -32600},
		{"initialize with unknown session id", "nope", initBody(Version20251125), 400, -32600},
		{"params not an object", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":[1]}`, 200, -32602},
		{"protocolVersion not a string", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":5}}`, 200, -32602},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := e.sessionCount()
			resp := e.do("POST", hdr{token: tokAlice, session: tc.session}, tc.body)
			r := decodeResp(t, readAll(t, resp))
			if resp.StatusCode != tc.wantStatus || r.Error == nil || r.Error.Code != tc.wantCode {
				t.Fatalf("status %d error %+v, want %d code %d", resp.StatusCode, r.Error, tc.wantStatus, tc.wantCode)
			}
			if resp.Header.Get(headerSessionID) != "" || e.sessionCount() != before {
				t.Fatal("a failed initialize created a session")
			}
		})
	}
}

func TestSessionRules(t *testing.T) {
	e := newEnv(t, nil)
	alice := e.initialize(tokAlice, Version20251125)
	bob := e.initialize(tokBob, Version20251125)
	coord := e.initialize(tokCoord, Version20251125)
	ended := e.initialize(tokAlice, Version20251125)
	if resp := e.do("DELETE", hdr{token: tokAlice, session: ended}, ""); resp.StatusCode != 200 {
		t.Fatalf("DELETE: %d", resp.StatusCode)
	}
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	tests := []struct {
		name, method, token, session string
		want                         int
	}{
		{"POST without session", "POST", tokAlice, "", 400},
		{"GET without session", "GET", tokAlice, "", 400},
		{"DELETE without session", "DELETE", tokAlice, "", 400},
		{"POST unknown session", "POST", tokAlice, "no-such-session", 404},
		{"POST other principal's session", "POST", tokBob, alice, 404},
		{"coordinator cannot use agent session", "POST", tokCoord, bob, 404},
		{"agent cannot use coordinator session", "GET", tokAlice, coord, 404},
		{"POST ended session", "POST", tokAlice, ended, 404},
		{"DELETE ended session", "DELETE", tokAlice, ended, 404},
		{"DELETE other principal's session", "DELETE", tokBob, alice, 404},
		{"POST own session", "POST", tokAlice, alice, 200},
		{"POST own session as bob", "POST", tokBob, bob, 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := e.do(tc.method, hdr{token: tc.token, session: tc.session, accept: "text/event-stream, application/json"}, ping)
			body := readAll(t, resp)
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d body %s, want %d", resp.StatusCode, body, tc.want)
			}
			if tc.want != 200 && !strings.Contains(string(body), `"jsonrpc":"2.0"`) {
				t.Fatalf("error body is not JSON-RPC: %s", body)
			}
		})
	}
	// The refused attempts did not end Alice's session.
	if code, r := e.rpc(hdr{token: tokAlice, session: alice}, "ping", ""); code != 200 || r.Error != nil {
		t.Fatalf("alice's session broken: %d %+v", code, r.Error)
	}
}

func TestDeleteEndsSession(t *testing.T) {
	e := newEnv(t, nil)
	sid := e.initialize(tokAlice, Version20251125)
	resp := e.do("DELETE", hdr{token: tokAlice, session: sid, version: Version20251125}, "")
	readAll(t, resp)
	if resp.StatusCode != 200 || e.sessionCount() != 0 {
		t.Fatalf("DELETE: status %d, %d sessions left", resp.StatusCode, e.sessionCount())
	}
}

func TestProtocolVersionHeader(t *testing.T) {
	e := newEnv(t, nil)
	sid := e.initialize(tokAlice, Version20250618)
	tests := []struct {
		name, header string
		want         int
		wantMsg      string
	}{
		{"absent means the negotiated version", "", 200, ""},
		{"negotiated version", Version20250618, 200, ""},
		{"supported but not negotiated", Version20250326, 400, "differs from the version 2025-06-18"},
		{"unsupported", "2024-11-05", 400, "unsupported MCP-Protocol-Version"},
		{"garbage", "latest", 400, "unsupported MCP-Protocol-Version"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, r := e.rpc(hdr{token: tokAlice, session: sid, version: tc.header}, "ping", "")
			if code != tc.want {
				t.Fatalf("status = %d, want %d", code, tc.want)
			}
			if tc.want == 400 && (r.Error == nil || r.Error.Code != -32600 || !strings.Contains(r.Error.Message, tc.wantMsg)) {
				t.Fatalf("error = %+v, want -32600 containing %q", r.Error, tc.wantMsg)
			}
		})
	}
	// The header is checked on GET and DELETE too.
	for _, m := range []string{"GET", "DELETE"} {
		resp := e.do(m, hdr{token: tokAlice, session: sid, version: Version20251125, accept: "text/event-stream"}, "")
		readAll(t, resp)
		if resp.StatusCode != 400 {
			t.Fatalf("%s with a mismatched version: status %d, want 400", m, resp.StatusCode)
		}
	}
}

func TestMethods(t *testing.T) {
	var mu sync.Mutex
	var refused []string // "subject method" of each RefusedMethod
	e := newEnv(t, func(o *Options) {
		o.RefusedMethod = func(_ context.Context, p *gateway.Principal, method string) {
			mu.Lock()
			defer mu.Unlock()
			refused = append(refused, p.Subject+" "+method)
		}
	})
	sid := e.initialize(tokAlice, Version20251125)
	tests := []struct {
		name, method, params string
		wantResult           string
		wantCode             int
	}{
		{"ping", "ping", "", `{}`, 0},
		{"ping with params", "ping", `{"_meta":{}}`, `{}`, 0},
		{"resources/list", "resources/list", "", "", -32601},
		{"resources/read", "resources/read", `{"uri":"x"}`, "", -32601},
		{"prompts/list", "prompts/list", "", "", -32601},
		{"completion/complete", "completion/complete", "", "", -32601},
		{"logging/setLevel", "logging/setLevel", `{"level":"info"}`, `{}`, 0}, // the level of relayed upstream log messages
		{"logging/setLevel bad level", "logging/setLevel", `{"level":"loud"}`, "", -32602},
		{"initialize inside a session", "initialize", `{"protocolVersion":"2025-11-25"}`, "", -32600},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := hdr{token: tokAlice, session: sid}
			code, r := e.rpc(h, tc.method, tc.params)
			if tc.wantCode == 0 {
				if code != 200 || r.Error != nil || string(r.Result) != tc.wantResult || string(r.ID) != "7" {
					t.Fatalf("status %d result %s error %+v", code, r.Result, r.Error)
				}
				return
			}
			if r.Error == nil || r.Error.Code != tc.wantCode {
				t.Fatalf("status %d error %+v, want code %d", code, r.Error, tc.wantCode)
			}
			if tc.wantCode == -32601 && (code != 200 || !strings.Contains(r.Error.Message, `"`+tc.method+`"`)) {
				t.Fatalf("-32601 must name the method and come with HTTP 200: %d %q", code, r.Error.Message)
			}
		})
	}
	// Options.RefusedMethod heard of each method refused as not served,
	// with its caller, and of nothing else.
	want := []string{"user-a resources/list", "user-a resources/read", "user-a prompts/list", "user-a completion/complete"}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(refused, want) {
		t.Errorf("RefusedMethod heard %q, want %q", refused, want)
	}
}

func TestToolsListPagination(t *testing.T) {
	e := newEnv(t, nil) // 120 tools, default page size
	sid := e.initialize(tokAlice, Version20251125)
	h := hdr{token: tokAlice, session: sid}
	var names []string
	var pages []int
	cursor := ""
	for range 10 {
		params := "{}"
		if cursor != "" {
			params = fmt.Sprintf(`{"cursor":%q}`, cursor)
		}
		_, r := e.rpc(h, "tools/list", params)
		var res struct {
			Tools      []Tool  `json:"tools"`
			NextCursor *string `json:"nextCursor"`
		}
		if err := json.Unmarshal(r.Result, &res); err != nil || r.Error != nil {
			t.Fatalf("tools/list: %s %+v", r.Result, r.Error)
		}
		pages = append(pages, len(res.Tools))
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
		}
		if res.NextCursor == nil {
			break
		}
		cursor = *res.NextCursor
	}
	if !slices.Equal(pages, []int{DefaultPageSize, 120 - DefaultPageSize}) {
		t.Fatalf("page sizes = %v, want [%d %d]", pages, DefaultPageSize, 120-DefaultPageSize)
	}
	for i, n := range names {
		if n != toolName(i) {
			t.Fatalf("tool %d = %s, want %s (order lost)", i, n, toolName(i))
		}
	}

	bad := []struct{ name, params string }{
		{"not base64", `{"cursor":"%%%"}`},
		{"wrong prefix", fmt.Sprintf(`{"cursor":%q}`, base64.RawURLEncoding.EncodeToString([]byte("x:3")))},
		{"negative offset", fmt.Sprintf(`{"cursor":%q}`, base64.RawURLEncoding.EncodeToString([]byte("tools:-1")))},
		{"past the end", fmt.Sprintf(`{"cursor":%q}`, base64.RawURLEncoding.EncodeToString([]byte("tools:121")))},
		{"cursor not a string", `{"cursor":3}`},
		{"params an array", `[1]`},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			code, r := e.rpc(h, "tools/list", tc.params)
			if code != 200 || r.Error == nil || r.Error.Code != -32602 {
				t.Fatalf("status %d error %+v, want -32602", code, r.Error)
			}
		})
	}
}

func TestToolsListEmptyAndSchemaDefault(t *testing.T) {
	e := newEnv(t, nil)
	e.h.nTools = 0
	sid := e.initialize(tokAlice, Version20251125)
	_, r := e.rpc(hdr{token: tokAlice, session: sid}, "tools/list", "")
	if string(r.Result) != `{"tools":[]}` {
		t.Fatalf("empty list = %s", r.Result)
	}
	b, _ := json.Marshal(Tool{Name: "x"})
	if string(b) != `{"name":"x","inputSchema":{"type":"object"}}` {
		t.Fatalf("tool without schema = %s", b)
	}
}

func TestToolsCall(t *testing.T) {
	e := newEnv(t, nil)
	sid := e.initialize(tokAlice, Version20251125)
	h := hdr{token: tokAlice, session: sid}
	tests := []struct {
		name, params string
		wantCode     int    // 0: success
		wantClass    string // error data class
		wantInResult string
		wantArgs     string // JSON of the arguments the handler saw
		wantRaw      string
		wantErrorLog bool
	}{
		{name: "no arguments", params: `{"name":"echo"}`, wantArgs: `{}`, wantRaw: `{}`},
		{name: "null arguments", params: `{"name":"echo","arguments":null}`, wantArgs: `{}`, wantRaw: `{}`},
		{name: "object arguments", params: `{"name":"echo","arguments":{"b":2,"a":"x"},"_meta":{"progressToken":1}}`, wantArgs: `{"a":"x","b":2}`, wantRaw: `{"b":2,"a":"x"}`, wantInResult: `"called echo"`},
		{name: "array arguments", params: `{"name":"echo","arguments":[1]}`, wantCode: -32602, wantClass: "Invalid"},
		{name: "string arguments", params: `{"name":"echo","arguments":"a=1"}`, wantCode: -32602, wantClass: "Invalid"},
		{name: "missing name", params: `{"arguments":{}}`, wantCode: -32602, wantClass: "Invalid"},
		{name: "name not a string", params: `{"name":5}`, wantCode: -32602, wantClass: "Invalid"},
		{name: "_meta not an object", params: `{"name":"echo","_meta":1}`, wantCode: -32602, wantClass: "Invalid"},
		{name: "no params", params: ``, wantCode: -32602, wantClass: "Invalid"},
		{name: "policy denial is a tool execution error", params: `{"name":"deny"}`, wantInResult: `"isError":true`},
		{name: "rate limit is a tool execution error", params: `{"name":"limit"}`, wantInResult: `"isError":true`},
		{name: "schema violation is a tool execution error at 2025-11-25", params: `{"name":"schema"}`, wantInResult: `"isError":true`},
		{name: "invalid arguments", params: `{"name":"invalid"}`, wantCode: -32602, wantClass: "Invalid"},
		{name: "unknown tool", params: `{"name":"unknown"}`, wantCode: -32601, wantClass: "MethodNotFound"},
		{name: "plain error is internal", params: `{"name":"boom"}`, wantCode: -32603, wantClass: "Internal", wantErrorLog: true},
		{name: "internal gateway error", params: `{"name":"internal"}`, wantCode: -32603, wantClass: "Internal", wantErrorLog: true},
		{name: "handler panic", params: `{"name":"panic"}`, wantCode: -32603, wantClass: "Internal", wantErrorLog: true},
		{name: "unencodable result", params: `{"name":"nan"}`, wantCode: -32603, wantClass: "Internal", wantErrorLog: true},
		{name: "no result", params: `{"name":"nil"}`, wantCode: -32603, wantClass: "Internal", wantErrorLog: true},
		{name: "structured only gets a text block", params: `{"name":"structured"}`, wantInResult: `"content":[{"text":"{\"ok\":true}","type":"text"}]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e.logs.TakeAll()
			code, r := e.rpc(h, "tools/call", tc.params)
			if code != 200 {
				t.Fatalf("status = %d; method-level errors travel with HTTP 200", code)
			}
			if got := len(e.errorLogs()) > 0; got != tc.wantErrorLog {
				t.Fatalf("error-level log = %v, want %v (%v)", got, tc.wantErrorLog, e.errorLogs())
			}
			if tc.wantCode != 0 {
				if r.Error == nil || r.Error.Code != tc.wantCode || r.Error.Data.Class != tc.wantClass {
					t.Fatalf("error = %+v, want code %d class %s", r.Error, tc.wantCode, tc.wantClass)
				}
				return
			}
			if r.Error != nil || !strings.Contains(string(r.Result), tc.wantInResult) {
				t.Fatalf("result %s error %+v, want result containing %s", r.Result, r.Error, tc.wantInResult)
			}
			if tc.wantArgs == "" {
				return
			}
			call := e.h.lastCall()
			if args, _ := json.Marshal(call.Arguments); call.Arguments == nil || string(args) != tc.wantArgs {
				t.Fatalf("handler arguments = %s, want %s", args, tc.wantArgs)
			}
			if string(call.RawArguments) != tc.wantRaw {
				t.Fatalf("raw arguments = %s, want %s", call.RawArguments, tc.wantRaw)
			}
		})
	}
}

func TestErrorData(t *testing.T) {
	e := newEnv(t, nil)
	sid := e.initialize(tokAlice, Version20251125)
	h := hdr{token: tokAlice, session: sid}
	tests := []struct {
		name, tool string
		want       string // JSON of the error object
	}{
		{"invalid params name the problem", "invalid",
			`{"code":-32602,"message":"argument project_id of tool invalid is required","data":{"class":"Invalid","status":400}}`},
		{"internal hides the cause", "boom",
			`{"code":-32603,"message":"internal error; the gateway logged the cause","data":{"class":"Internal","status":500}}`},
		{"internal gateway error keeps its message, hides its cause", "internal",
			`{"code":-32603,"message":"policy evaluation failed; the call was not dispatched","data":{"class":"Internal","status":500}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e.logs.TakeAll()
			_, r := e.rpc(h, "tools/call", fmt.Sprintf(`{"name":%q}`, tc.tool))
			got, _ := json.Marshal(r.Error)
			if string(got) != tc.want {
				t.Fatalf("error = %s\nwant    %s", got, tc.want)
			}
			for _, l := range e.errorLogs() {
				if !strings.Contains(fmt.Sprint(l.ContextMap()), "10.0.0.7") {
					t.Fatalf("internal error logged without its cause: %v", l.ContextMap())
				}
			}
		})
	}
}

func TestAcceptNegotiation(t *testing.T) {
	e := newEnv(t, nil)
	sid := e.initialize(tokAlice, Version20251125)
	tests := []struct {
		name, accept string
		wantStatus   int
		wantType     string
	}{
		{"both, as clients send", "application/json, text/event-stream", 200, "application/json"},
		{"missing header", "-", 200, "application/json"},
		{"wildcard", "*/*", 200, "application/json"},
		{"json only", "application/json", 200, "application/json"},
		{"application wildcard", "application/*", 200, "application/json"},
		{"event stream only", "text/event-stream", 200, "text/event-stream"},
		{"json refused with q=0", "application/json;q=0, text/event-stream", 200, "text/event-stream"},
		{"neither", "text/html", 406, "application/json"},
		{"everything refused", "*/*;q=0", 406, "application/json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := e.do("POST", hdr{token: tokAlice, session: sid, accept: tc.accept}, `{"jsonrpc":"2.0","id":9,"method":"ping"}`)
			body := string(readAll(t, resp))
			if resp.StatusCode != tc.wantStatus || resp.Header.Get("Content-Type") != tc.wantType {
				t.Fatalf("status %d type %q, want %d %q (%s)", resp.StatusCode, resp.Header.Get("Content-Type"), tc.wantStatus, tc.wantType, body)
			}
			if tc.wantType != "text/event-stream" {
				return
			}
			if body != "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{}}\n\n" {
				t.Fatalf("SSE body = %q", body)
			}
			if resp.Header.Get("Cache-Control") != "no-cache, no-transform" || resp.Header.Get("X-Accel-Buffering") != "no" {
				t.Fatalf("SSE headers = %v", resp.Header)
			}
		})
	}
}

func TestSSEInitializeCarriesSession(t *testing.T) {
	e := newEnv(t, nil)
	resp := e.do("POST", hdr{token: tokAlice, accept: "text/event-stream"}, initBody(Version20250618))
	body := string(readAll(t, resp))
	if resp.Header.Get(headerSessionID) == "" || !strings.Contains(body, `"protocolVersion":"2025-06-18"`) {
		t.Fatalf("SSE initialize: session %q body %q", resp.Header.Get(headerSessionID), body)
	}
}

func TestRequestIDInContext(t *testing.T) {
	e := newEnv(t, nil)
	sid := e.initialize(tokAlice, Version20251125)
	h := hdr{token: tokAlice, session: sid}
	e.rpc(h, "tools/list", "")
	e.rpc(h, "tools/call", `{"name":"echo"}`)
	e.rpc(h, "tools/call", `{"name":"echo"}`)
	ids := e.h.requestIDs
	hex16 := regexp.MustCompile(`^[0-9a-f]{16}$`)
	if len(ids) != 3 {
		t.Fatalf("handler saw %d requests, want 3", len(ids))
	}
	for _, id := range ids {
		if !hex16.MatchString(id) {
			t.Fatalf("request id %q is not 16 hex characters", id)
		}
	}
	if ids[0] == ids[1] || ids[1] == ids[2] || ids[0] == ids[2] {
		t.Fatalf("request ids repeat: %v", ids)
	}
}

func TestUnsupportedHTTPMethod(t *testing.T) {
	e := newEnv(t, nil)
	for _, m := range []string{"PUT", "PATCH", "OPTIONS"} {
		t.Run(m, func(t *testing.T) {
			resp := e.do(m, hdr{token: tokAlice}, "")
			readAll(t, resp)
			if resp.StatusCode != 405 || resp.Header.Get("Allow") != "GET, POST, DELETE" {
				t.Fatalf("status %d Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
			}
		})
	}
}

// sseReader reads events from an open GET stream in the background.
type sseReader struct {
	lines chan string
	done  chan struct{}
}

func openStream(t *testing.T, e *env, token, sid string) (*http.Response, *sseReader) {
	t.Helper()
	resp := e.do("GET", hdr{token: token, session: sid, accept: "text/event-stream"}, "")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET: status %d type %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), readAll(t, resp))
	}
	r := &sseReader{lines: make(chan string, 100), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			r.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() { resp.Body.Close() })
	return resp, r
}

// next returns the next non-empty line, or "" after timeout.
func (r *sseReader) next(timeout time.Duration) string {
	deadline := time.After(timeout)
	for {
		select {
		case l := <-r.lines:
			if l != "" {
				return l
			}
		case <-deadline:
			return ""
		case <-r.done:
			select {
			case l := <-r.lines:
				if l != "" {
					return l
				}
			default:
				return ""
			}
		}
	}
}

func (r *sseReader) ended(timeout time.Duration) bool {
	select {
	case <-r.done:
		return true
	case <-time.After(timeout):
		return false
	}
}

func TestGETStreamRules(t *testing.T) {
	e := newEnv(t, nil)
	sid := e.initialize(tokAlice, Version20251125)
	tests := []struct {
		name, accept string
		want         int
	}{
		{"no Accept", "-", 405},
		{"json only", "application/json", 405},
		{"html", "text/html", 405},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := e.do("GET", hdr{token: tokAlice, session: sid, accept: tc.accept}, "")
			readAll(t, resp)
			if resp.StatusCode != tc.want || resp.Header.Get("Allow") == "" {
				t.Fatalf("status %d Allow %q, want %d with Allow", resp.StatusCode, resp.Header.Get("Allow"), tc.want)
			}
		})
	}
	t.Run("second stream is a conflict", func(t *testing.T) {
		openStream(t, e, tokAlice, sid)
		resp := e.do("GET", hdr{token: tokAlice, session: sid, accept: "text/event-stream"}, "")
		if body := readAll(t, resp); resp.StatusCode != 409 {
			t.Fatalf("second GET: %d %s", resp.StatusCode, body)
		}
	})
}

func TestNotifyToolsChanged(t *testing.T) {
	e := newEnv(t, nil)
	alice := e.initialize(tokAlice, Version20251125)
	bob := e.initialize(tokBob, Version20250326)
	_, ra := openStream(t, e, tokAlice, alice)
	_, rb := openStream(t, e, tokBob, bob)
	waitFor(t, "streams", func() bool { return e.streamOpen(alice) && e.streamOpen(bob) })

	e.tr.NotifyToolsChanged(func(p *gateway.Principal) bool { return p.Subject == "user-a" })
	if l := ra.next(2 * time.Second); l != "event: message" {
		t.Fatalf("alice's stream: %q, want an event", l)
	}
	if l := ra.next(time.Second); l != `data: {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}` {
		t.Fatalf("alice's stream data: %q", l)
	}
	if l := rb.next(200 * time.Millisecond); l != "" {
		t.Fatalf("bob's stream got %q; the notification was for alice only", l)
	}
	e.tr.NotifyToolsChanged(func(p *gateway.Principal) bool { return p.WorkspaceID == "ws-1" })
	if ra.next(time.Second) != "event: message" || rb.next(time.Second) != "event: message" {
		t.Fatal("workspace-wide notification did not reach both streams")
	}
}

func TestStreamKeepAliveAndEnd(t *testing.T) {
	tests := []struct {
		name string
		end  func(e *env, sid string)
	}{
		{"DELETE", func(e *env, sid string) {
			readAll(e.t, e.do("DELETE", hdr{token: tokAlice, session: sid}, ""))
		}},
		{"Close", func(e *env, sid string) { e.tr.Close() }},
		{"idle", func(e *env, sid string) {}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(o *Options) {
				o.KeepAlive = 20 * time.Millisecond
				if tc.name == "idle" {
					o.SessionIdle = 150 * time.Millisecond
				}
			})
			sid := e.initialize(tokAlice, Version20251125)
			_, r := openStream(t, e, tokAlice, sid)
			if l := r.next(2 * time.Second); l != ": keep-alive" {
				t.Fatalf("first line %q, want a keep-alive comment", l)
			}
			tc.end(e, sid)
			if !r.ended(5 * time.Second) {
				t.Fatalf("stream still open after %s", tc.name)
			}
			code, _ := e.rpc(hdr{token: tokAlice, session: sid}, "ping", "")
			want := 404
			switch tc.name {
			case "Close":
				want = 503
			case "idle": // only this replica's state was dropped: the id still holds
				want = 200
			}
			if code != want {
				t.Fatalf("request after %s: status %d, want %d", tc.name, code, want)
			}
		})
	}
}

// TestIdleSessionStateDropped: SessionIdle frees this replica's state of an
// idle session (the janitor drops it) without ending the session, which
// another replica may be serving; its next request rebuilds the state from
// the signed id. SessionMaxAge is what ends an unused session.
func TestIdleSessionStateDropped(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.SessionIdle = 100 * time.Millisecond })
	active := e.initialize(tokAlice, Version20251125)
	idle := e.initialize(tokAlice, Version20251125)
	for range 6 { // keep one session busy across more than one idle period
		time.Sleep(40 * time.Millisecond)
		if code, _ := e.rpc(hdr{token: tokAlice, session: active}, "ping", ""); code != 200 {
			t.Fatalf("active session expired: %d", code)
		}
	}
	waitFor(t, "janitor to drop the idle session's state", func() bool { return e.sessionCount() == 1 })
	if code, _ := e.rpc(hdr{token: tokAlice, session: idle}, "ping", ""); code != 200 {
		t.Fatalf("idle session after its state was dropped: status %d, want 200", code)
	}
	if e.sessionCount() != 2 {
		t.Fatalf("%d sessions held, want the rebuilt one back", e.sessionCount())
	}
}

// TestSessionMaxAge: an id older than SessionMaxAge is refused (404) on
// every replica, whether or not it holds the session's state.
func TestSessionMaxAge(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.SessionMaxAge = 150 * time.Millisecond })
	sid := e.initialize(tokAlice, Version20251125)
	if code, _ := e.rpc(hdr{token: tokAlice, session: sid}, "ping", ""); code != 200 {
		t.Fatalf("fresh session: status %d", code)
	}
	time.Sleep(300 * time.Millisecond)
	if code, r := e.rpc(hdr{token: tokAlice, session: sid}, "ping", ""); code != 404 || !strings.Contains(r.Error.Message, "initialize again") {
		t.Fatalf("session past its age: status %d %+v, want 404 telling to initialize again", code, r.Error)
	}
}

func TestCancelledNotificationCancelsCall(t *testing.T) {
	e := newEnv(t, nil)
	e.h.started = make(chan struct{})
	sid := e.initialize(tokAlice, Version20251125)
	h := hdr{token: tokAlice, session: sid}
	got := make(chan wireResp, 1)
	go func() {
		resp := e.do("POST", h, `{"jsonrpc":"2.0","id":"call-1","method":"tools/call","params":{"name":"slow"}}`)
		got <- decodeResp(t, readAll(t, resp))
	}()
	<-e.h.started
	resp := e.do("POST", h, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"call-1","reason":"user"}}`)
	readAll(t, resp)
	select {
	case r := <-got:
		if r.Error == nil || string(r.ID) != `"call-1"` {
			t.Fatalf("cancelled call answered %+v", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("notifications/cancelled did not cancel the running call")
	}
	e.h.mu.Lock()
	defer e.h.mu.Unlock()
	if e.h.ctxErr == nil {
		t.Fatal("handler context was not cancelled")
	}
}

func TestCloseRefusesNewSessions(t *testing.T) {
	e := newEnv(t, nil)
	e.tr.Close()
	e.tr.Close() // idempotent
	resp := e.do("POST", hdr{token: tokAlice}, initBody(Version20251125))
	r := decodeResp(t, readAll(t, resp))
	if resp.StatusCode != 503 || r.Error == nil || r.Error.Code != -32603 {
		t.Fatalf("after Close: status %d error %+v", resp.StatusCode, r.Error)
	}
}

func TestConcurrentUse(t *testing.T) {
	e := newEnv(t, nil)
	var wg sync.WaitGroup
	errs := make(chan string, 100)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tok := []string{tokAlice, tokBob}[i%2]
			sid := e.initialize(tok, Version20251125)
			for j := range 20 {
				code, r := e.rpc(hdr{token: tok, session: sid}, "tools/call", fmt.Sprintf(`{"name":"echo","arguments":{"j":%d}}`, j))
				if code != 200 || r.Error != nil {
					errs <- fmt.Sprintf("call %d: %d %+v", j, code, r.Error)
					return
				}
			}
			readAll(t, e.do("DELETE", hdr{token: tok, session: sid}, ""))
		}()
	}
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
				e.tr.NotifyToolsChanged(func(*gateway.Principal) bool { return true })
				e.tr.sweep(time.Now())
			}
		}
	}()
	wg.Wait()
	close(stop)
	close(errs)
	for msg := range errs {
		t.Error(msg)
	}
	if n := e.sessionCount(); n != 0 {
		t.Fatalf("%d sessions left after every client deleted its own", n)
	}
}

// Error messages name the problem in JSON terms, never Go's.
func TestErrorMessagesNameTheProblem(t *testing.T) {
	e := newEnv(t, nil)
	sid := e.initialize(tokAlice, Version20251125)
	h := hdr{token: tokAlice, session: sid}
	deep := strings.Repeat("[", jsonrpc.MaxJSONDepth+1) + strings.Repeat("]", jsonrpc.MaxJSONDepth+1)
	for _, tc := range []struct {
		name, body string
		code       int
		want       string
	}{
		{"name not a string", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}`, -32602, `"name" is a number`},
		{"params an array", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1]}`, -32602, `got an array`},
		{"valid JSON nested too deep", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":` + deep + `}}`, -32700, "deeper than 10000 levels"},
		{"syntax error", `{"jsonrpc":"2.0","id":1,,}`, -32700, "at byte 25"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := decodeResp(t, readAll(t, e.do("POST", h, tc.body)))
			if r.Error == nil || r.Error.Code != tc.code || !strings.Contains(r.Error.Message, tc.want) {
				t.Fatalf("error %+v, want code %d with %q", r.Error, tc.code, tc.want)
			}
			if strings.Contains(r.Error.Message, "Go ") || strings.Contains(r.Error.Message, "struct") {
				t.Errorf("message %q speaks Go", r.Error.Message)
			}
		})
	}
}
