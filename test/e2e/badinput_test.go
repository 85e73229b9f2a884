package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/mcp/wire"
)

// rawSession speaks MCP over plain HTTP so tests can send what no SDK would.
type rawSession struct {
	t       *testing.T
	url     string
	token   string
	sid     string
	version string // the negotiated protocol version
}

type rpcReply struct {
	status int
	header http.Header
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
	Result json.RawMessage `json:"result"`
}

func (g *gatewayUnderTest) raw(t *testing.T, token string) *rawSession {
	return g.rawOn(t, "/mcp", token, protocolVersion)
}

// rawAt initializes a session on path over plain HTTP.
func (g *gatewayUnderTest) rawAt(t *testing.T, path, token string) *rawSession {
	return g.rawOn(t, path, token, protocolVersion)
}

// rawVersion initializes a session on /mcp at protocol version.
func (g *gatewayUnderTest) rawVersion(t *testing.T, token, version string) *rawSession {
	return g.rawOn(t, "/mcp", token, version)
}

// rawOn initializes a session on path at protocol version over plain HTTP.
func (g *gatewayUnderTest) rawOn(t *testing.T, path, token, version string) *rawSession {
	s := &rawSession{t: t, url: g.srv.URL + path, token: token, version: version}
	r := s.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + version + `","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if r.status != 200 || r.Error != nil {
		t.Fatalf("initialize: %d %+v", r.status, r.Error)
	}
	s.sid = r.header.Get("Mcp-Session-Id")
	s.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return s
}

func (s *rawSession) post(body string) rpcReply {
	s.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	if s.sid != "" {
		req.Header.Set("Mcp-Session-Id", s.sid)
		req.Header.Set("MCP-Protocol-Version", s.version)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := rpcReply{status: resp.StatusCode, header: resp.Header}
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			s.t.Fatalf("reply is not JSON (%d): %s", resp.StatusCode, raw)
		}
	}
	return out
}

// toolError is a tools/call result as the tests read a tool execution
// error: isError, the text of its one content block and its denial.
type toolError struct {
	IsError bool
	Text    string
	Denial  struct {
		Class      string           `json:"class"`
		Status     int              `json:"status"`
		Code       string           `json:"code"`
		DecisionID string           `json:"decision_id"`
		Reasons    []gateway.Reason `json:"reasons"`
		Bucket     string           `json:"bucket"`
	}
}

// toolErrorOf decodes r's result as a tool execution error; ok is false
// when r is not one (a JSON-RPC error, or a result without isError or with
// other than one text block).
func toolErrorOf(r rpcReply) (te toolError, ok bool) {
	var res struct {
		Content []struct{ Type, Text string } `json:"content"`
		IsError bool                          `json:"isError"`
		Meta    map[string]json.RawMessage    `json:"_meta"`
	}
	if r.Error != nil || json.Unmarshal(r.Result, &res) != nil || !res.IsError || len(res.Content) != 1 || res.Content[0].Type != "text" {
		return te, false
	}
	te.IsError, te.Text = true, res.Content[0].Text
	return te, json.Unmarshal(res.Meta["io.mcpgate/denial"], &te.Denial) == nil
}

func callBody(tool string, args string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, tool, args)
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	for kind, dbURL := range storeKinds(t) {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			g := startGateway(t, dbURL(t), map[string]string{"MCPGATE_MAX_BODY_BYTES": "4096"})
			seedFixtures(t, g)
			tok := g.token(t, "ws-a", "mia", "task-ws-a", "reader")
			s := g.raw(t, tok)
			// Tool-call rows; the refused method's own event (kind method)
			// is recorded in the background and checked at the end.
			all := gateway.AuditFilter{WorkspaceID: "ws-a", Kind: gateway.AuditKindToolCall}
			before := g.countAudit(t, all)
			methods := gateway.AuditFilter{WorkspaceID: "ws-a", Kind: "method"}
			methodsBefore := g.countAudit(t, methods)
			cases := []struct {
				note    string
				body    string
				status  int
				code    int // JSON-RPC error code; 0 with status 200: a tool execution error
				mention string
				audits  int // audit rows the request must add
			}{
				{"malformed JSON", `{"jsonrpc":"2.0","id":1,`, 400, wire.RPCParseError, "", 0},
				{"not an object", `42`, 400, wire.RPCInvalidRequest, "", 0},
				{"wrong jsonrpc version", `{"jsonrpc":"1.0","id":1,"method":"ping"}`, 400, wire.RPCInvalidRequest, "", 0},
				{"missing method", `{"jsonrpc":"2.0","id":1}`, 400, wire.RPCInvalidRequest, "", 0},
				{"batch on 2025-06-18", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, 400, wire.RPCInvalidRequest, "batch", 0},
				{"unknown method", `{"jsonrpc":"2.0","id":1,"method":"resources/list"}`, 200, wire.RPCMethodNotFound, "resources/list", 0},
				{"unknown tool", callBody("app.teleport", `{}`), 200, wire.RPCInvalidParams, "app.teleport", 1},
				{"missing required field", callBody("project.get", `{}`), 200, wire.RPCInvalidParams, "project_id", 1},
				{"wrong type", callBody("projects.list", `{"limit":"ten"}`), 200, wire.RPCInvalidParams, "limit", 1},
				{"unknown field", callBody("projects.list", `{"colour":"red"}`), 200, wire.RPCInvalidParams, "colour", 1},
				{"arguments not an object", callBody("projects.list", `[1,2]`), 200, wire.RPCInvalidParams, "object", 1},
				{"bad arguments to a tool the profile may not call: the denial, not its schema", callBody("app.deploy", `{"x":1}`), 200, 0, "app.deploy", 1},
				{"NUL in the tool name is still audited", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"app.pause\u0000","arguments":{}}}`, 200, wire.RPCInvalidParams, "app.pause", 1},
				{"tool name longer than any MCP tool name", callBody(strings.Repeat("b", 3000), `{}`), 200, wire.RPCInvalidParams, "3000 bytes long", 1},
				{"tools/call name not a string", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":5,"arguments":{}}}`, 200, wire.RPCInvalidParams, "name", 1},
				{"tools/call params an array", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":[1]}`, 200, wire.RPCInvalidParams, "", 1},
				{"oversized body", callBody("memory.search", `{"query":"`+strings.Repeat("x", 5000)+`"}`), 413, 0, "", 0},
			}
			for _, c := range cases {
				t.Run(c.note, func(t *testing.T) {
					n := g.countAudit(t, all)
					r := s.post(c.body)
					if r.status != c.status {
						t.Errorf("HTTP %d, want %d", r.status, c.status)
					}
					if c.code != 0 && (r.Error == nil || r.Error.Code != c.code) {
						t.Fatalf("error %+v, want code %d", r.Error, c.code)
					}
					msg := ""
					if r.Error != nil {
						msg = r.Error.Message
					}
					if c.code == 0 && c.status == 200 {
						te, ok := toolErrorOf(r)
						if !ok || te.Denial.Class != "Forbidden" {
							t.Fatalf("reply %s %+v, want a tool execution error with a Forbidden denial", r.Result, r.Error)
						}
						msg = te.Text
						if strings.Contains(msg, "accepted") {
							t.Errorf("a denial reveals the tool's schema: %q", msg)
						}
					}
					if c.mention != "" && !strings.Contains(msg, c.mention) {
						t.Errorf("message %q does not name %q", msg, c.mention)
					}
					if got := g.countAudit(t, all) - n; got != c.audits {
						t.Errorf("%d audit rows added, want %d", got, c.audits)
					}
				})
			}
			// The session still works after all of that.
			if r := s.post(`{"jsonrpc":"2.0","id":9,"method":"ping"}`); r.status != 200 || r.Error != nil {
				t.Fatalf("ping after bad input: %d %+v", r.status, r.Error)
			}
			if got := g.countAudit(t, all) - before; got != 10 {
				t.Errorf("audit rows added %d, want 10 (one per tools/call that reached the gateway's request path)", got)
			}
			eventually(t, 5*time.Second, "the unknown method's audit event (kind method)", func() bool {
				return g.countAudit(t, methods)-methodsBefore == 1
			})
			if ev := g.lastAudit(t, "ws-a", "task-ws-a", "app.deploy"); ev.Status != gateway.AuditDenied || len(ev.ReasonCodes) == 0 {
				t.Errorf("bad arguments to a denied tool audited as %q %v, want denied with reasons", ev.Status, ev.ReasonCodes)
			}
			// A huge name is audited by its first 128 bytes only.
			if ev := g.lastAudit(t, "ws-a", "task-ws-a", strings.Repeat("b", 128)+"…"); ev.ErrorClass != "Invalid" {
				t.Errorf("long tool name audited as %q/%q, want error/Invalid", ev.Status, ev.ErrorClass)
			}
			ev := g.lastAudit(t, "ws-a", "task-ws-a", "projects.list")
			if ev.Status != gateway.AuditError || ev.ErrorClass != "Invalid" {
				t.Errorf("schema failure audited as %q/%q, want error/Invalid", ev.Status, ev.ErrorClass)
			}
		})
	}
}

// TestDenialOnTheWire: a policy denial is HTTP 200 with a tool execution
// error, not a JSON-RPC error: the text says what is missing and what to
// do, the denial in _meta carries class, status, the first reason's code,
// the decision and the reasons (docs/http.md, Errors).
func TestDenialOnTheWire(t *testing.T) {
	t.Parallel()
	g := startGateway(t, "sqlite:"+t.TempDir()+"/d.db", nil)
	seedFixtures(t, g)
	for _, version := range []string{"2025-03-26", protocolVersion, "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			s := g.rawVersion(t, g.token(t, "ws-a", "olivia", "task-ws-a", "reader"), version)
			r := s.post(callBody("app.pause", `{"app_id":"app-1"}`))
			te, ok := toolErrorOf(r)
			if r.status != 200 || !ok {
				t.Fatalf("HTTP %d result %s error %+v, want 200 with a tool execution error", r.status, r.Result, r.Error)
			}
			d := te.Denial
			if d.Class != "Forbidden" || d.Status != 403 || d.Code != "allowlist.missing_grant" || d.DecisionID == "" ||
				len(d.Reasons) == 0 || d.Reasons[0].Code != d.Code || d.Reasons[0].Message != te.Text {
				t.Fatalf("denial %+v for text %q", d, te.Text)
			}
			for _, want := range []string{"app.pause", "supacloud.deploy.*", "reader"} {
				if !strings.Contains(te.Text, want) {
					t.Errorf("text %q does not name %s", te.Text, want)
				}
			}
			ev := g.lastAudit(t, "ws-a", "task-ws-a", "app.pause")
			if ev.DecisionID != d.DecisionID || ev.Status != gateway.AuditDenied {
				t.Errorf("audit row %s decision %q, wire %q; want denied with the wire's decision", ev.Status, ev.DecisionID, d.DecisionID)
			}
			if strings.Contains(fmt.Sprint(ev), s.token) {
				t.Error("audit row contains the session token")
			}
		})
	}
}

// TestSchemaViolationByVersion: arguments that fail the tool's input
// schema are -32602 naming the field before protocol 2025-11-25, and a
// tool execution error naming the field from it on (SEP-1303); the audit
// row says error/Invalid either way.
func TestSchemaViolationByVersion(t *testing.T) {
	t.Parallel()
	g := startGateway(t, "sqlite:"+t.TempDir()+"/s.db", nil)
	seedFixtures(t, g)
	tok := g.token(t, "ws-a", "mia", "task-ws-a", "reader")
	for _, tc := range []struct {
		version string
		result  bool
	}{{"2025-03-26", false}, {"2025-06-18", false}, {"2025-11-25", true}} {
		t.Run(tc.version, func(t *testing.T) {
			s := g.rawVersion(t, tok, tc.version)
			r := s.post(callBody("projects.list", `{"limit":"ten"}`))
			var msg string
			if tc.result {
				te, ok := toolErrorOf(r)
				if !ok || te.Denial.Class != "Invalid" || te.Denial.Status != 400 || te.Denial.Code != "arguments.invalid" || te.Denial.DecisionID == "" {
					t.Fatalf("reply %s %+v, want a tool execution error with class Invalid", r.Result, r.Error)
				}
				msg = te.Text
			} else {
				if r.Error == nil || r.Error.Code != wire.RPCInvalidParams {
					t.Fatalf("reply %s %+v, want -32602", r.Result, r.Error)
				}
				msg = r.Error.Message
			}
			if r.status != 200 || !strings.Contains(msg, "/limit") || !strings.Contains(msg, "projects.list") {
				t.Errorf("HTTP %d message %q, want 200 naming the tool and the field", r.status, msg)
			}
			if ev := g.lastAudit(t, "ws-a", "task-ws-a", "projects.list"); ev.Status != gateway.AuditError || ev.ErrorClass != "Invalid" {
				t.Errorf("audited as %s/%s, want error/Invalid", ev.Status, ev.ErrorClass)
			}
		})
	}
}

func TestBadTokens(t *testing.T) {
	t.Parallel()
	g := startGateway(t, "sqlite:"+t.TempDir()+"/t.db", nil)
	seedFixtures(t, g)
	sign := func(alg jwt.SigningMethod, key any, claims jwt.MapClaims) string {
		tok, err := jwt.NewWithClaims(alg, claims).SignedString(key)
		must(t, err)
		return tok
	}
	good := jwt.MapClaims{"sub": "mia", "workspace_id": "ws-a", "task_id": "task-ws-a", "aud": "mcpgate", "exp": time.Now().Add(time.Hour).Unix()}
	with := func(k string, v any) jwt.MapClaims {
		c := jwt.MapClaims{}
		for kk, vv := range good {
			c[kk] = vv
		}
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		return c
	}
	cases := map[string]string{
		"no token":        "",
		"garbage":         "not-a-jwt",
		"alg none":        sign(jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, good),
		"wrong key":       sign(jwt.SigningMethodHS256, []byte("another-secret-0123456789abcdef0123"), good),
		"HS512":           sign(jwt.SigningMethodHS512, []byte(jwtSecret), good),
		"expired":         sign(jwt.SigningMethodHS256, []byte(jwtSecret), with("exp", time.Now().Add(-time.Hour).Unix())),
		"no exp":          sign(jwt.SigningMethodHS256, []byte(jwtSecret), with("exp", nil)),
		"wrong audience":  sign(jwt.SigningMethodHS256, []byte(jwtSecret), with("aud", "someone-else")),
		"no workspace_id": sign(jwt.SigningMethodHS256, []byte(jwtSecret), with("workspace_id", nil)),
		"api token":       "scmt_abcdef",
	}
	calls := gateway.AuditFilter{Kind: gateway.AuditKindToolCall}
	refusals := gateway.AuditFilter{Kind: "auth"}
	n, nAuth := g.countAudit(t, calls), g.countAudit(t, refusals)
	for note, tok := range cases {
		t.Run(note, func(t *testing.T) {
			s := &rawSession{t: t, url: g.srv.URL + "/mcp", token: tok}
			r := s.post(callBody("projects.list", `{}`))
			if r.status != 401 || !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
				t.Fatalf("HTTP %d WWW-Authenticate %q, want 401 Bearer", r.status, r.header.Get("WWW-Authenticate"))
			}
			if r.Error == nil || r.Error.Message == "" {
				t.Fatalf("401 without a JSON-RPC error body")
			}
			if tok != "" && len(tok) > 12 && strings.Contains(r.Error.Message, tok) {
				t.Error("error echoes the token")
			}
		})
	}
	if got := g.countAudit(t, calls); got != n {
		t.Errorf("unauthenticated requests wrote %d tool-call audit rows", got-n)
	}
	// Each refusal is an audit event of kind auth (written off the request
	// path, within a moment), and none holds the token it refused.
	deadline := time.Now().Add(10 * time.Second)
	for g.countAudit(t, refusals) < nAuth+len(cases) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	evs, err := g.app.Store.ListAuditEvents(context.Background(), gateway.AuditFilter{Kind: "auth", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) < nAuth+len(cases) {
		t.Errorf("%d refused credentials recorded, want %d", len(evs)-nAuth, len(cases))
	}
	for _, ev := range evs {
		b, _ := json.Marshal(ev)
		for note, tok := range cases {
			if len(tok) > 12 && strings.Contains(string(b), tok) {
				t.Errorf("the auth audit event of %q holds the token: %s", note, b)
			}
		}
	}
}
