package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/mcpgate/mcpgate/gateway/config"
	"github.com/mcpgate/mcpgate/gateway/server"
	"github.com/mcpgate/mcpgate/test/upstreamtest"
)

const upstreamToken = "bridged-upstream-token-7c1d9e"

// bridgedUpstream is a go-sdk MCP server with one tool that answers only
// requests carrying upstreamToken.
func bridgedUpstream(t *testing.T) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "bridged", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "issues.list", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+upstreamToken {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		sdk.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// closedURL is an http URL of a loopback port nobody listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return "http://" + addr + "/mcp?key=" + upstreamToken
}

func upstreamsApp(t *testing.T, file string) (*server.App, *bytes.Buffer, error) {
	t.Helper()
	return upstreamsAppWith(t, file, nil)
}

// upstreamsAppWith is upstreamsApp with more variables set.
func upstreamsAppWith(t *testing.T, file string, more map[string]string) (*server.App, *bytes.Buffer, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "upstreams.json")
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{
		"MCPGATE_DATABASE_URL":     "sqlite:" + filepath.Join(t.TempDir(), "upstreams.db"),
		"MCPGATE_JWT_SECRET":       "upstreams-test-secret-0123456789abcdef0123",
		"MCPGATE_ADMIN_TOKEN":      "policy-admin-token",
		"MCPGATE_UPSTREAMS_FILE":   path,
		"MCPGATE_UPSTREAM_TIMEOUT": "5s",
	}
	maps.Copy(vars, more)
	cfg, err := config.Load(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	log := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(&logs), zap.DebugLevel))
	app, err := server.Open(context.Background(), cfg, log, "upstreams-test")
	if err == nil {
		t.Cleanup(func() { _ = app.Close() })
	}
	return app, &logs, err
}

// serve reads the upstreams file at start: an upstream that answers is ok,
// one that is down is degraded without stopping the start, /readyz names
// both by name only, and the token (header and URL query) reaches no log
// line, /readyz or /metrics.
func TestServeBridgesTheUpstreamsFile(t *testing.T) {
	t.Setenv("BRIDGED_TOKEN", upstreamToken)
	good, gone := bridgedUpstream(t), closedURL(t)
	app, logs, err := upstreamsApp(t, `{"upstreams":[
	  {"name":"forge","url":"`+good+`","tier":"read","headers":{"Authorization":"Bearer ${env:BRIDGED_TOKEN}"}},
	  {"name":"tracker","url":"`+gone+`","tier":"ops","headers":{"Authorization":"Bearer ${env:BRIDGED_TOKEN}"}}
	]}`)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := app.Bridges["supacloud"].Lookup("forge.issues.list"); !ok {
		t.Errorf("forge's tool is not bridged: %+v", app.Bridges["supacloud"].Tools())
	}
	code, ready := request(t, app, http.MethodGet, "/readyz")
	if code != http.StatusOK || !strings.Contains(ready, `"upstreams":{"supacloud":{"forge":"ok","tracker":"degraded"}}`) {
		t.Errorf("/readyz %d %s: want forge ok and tracker degraded", code, ready)
	}
	_, metrics := request(t, app, http.MethodGet, "/metrics")
	goneHost := strings.TrimPrefix(gone, "http://")
	goneHost = goneHost[:strings.IndexByte(goneHost, '/')]
	for what, s := range map[string]string{"/readyz": ready, "the log": logs.String(), "/metrics": metrics} {
		if strings.Contains(s, upstreamToken) {
			t.Errorf("%s holds the upstream token: %s", what, s)
		}
	}
	if strings.Contains(ready, goneHost) || strings.Contains(ready, "127.0.0.1") {
		t.Errorf("/readyz shows an upstream's address: %s", ready)
	}
	if !strings.Contains(logs.String(), `"upstream":"tracker"`) {
		t.Errorf("the log does not name the degraded upstream: %s", logs.String())
	}
}

// A bad upstreams file stops the start with a message naming the upstream
// and the field (every problem of the file at once).
func TestServeRefusesABadUpstreamsFile(t *testing.T) {
	for note, tc := range map[string]struct{ file, want string }{
		"duplicate name, prefix collision, ftp URL": {`{"upstreams":[
		  {"name":"forge","url":"http://127.0.0.1:9/mcp","tier":"read"},
		  {"name":"forge","prefix":"forge2.","url":"http://127.0.0.1:9/mcp","tier":"read"},
		  {"name":"git","prefix":"forge.x.","url":"ftp://127.0.0.1/mcp","tier":"read"}]}`,
			`upstream "forge": name: is given to two upstreams` + "\n" +
				`upstream "git": prefix: "forge.x." collides with the prefix "forge." of upstream "forge"` + "\n" +
				`upstream "git": url: scheme "ftp"`},
		"unset variable":   {`{"upstreams":[{"name":"forge","url":"http://127.0.0.1:9/mcp","tier":"read","headers":{"Authorization":"Bearer ${env:MCPGATE_TEST_UNSET_VARIABLE}"}}]}`, `upstream "forge": headers.Authorization: ${env:MCPGATE_TEST_UNSET_VARIABLE}`},
		"catalog prefix":   {`{"upstreams":[{"name":"forge","prefix":"project.","url":"http://127.0.0.1:9/mcp","tier":"read"}]}`, `upstream "forge": prefix: "project." collides with the supacloud catalog's tool`},
		"ccserver catalog": {`{"upstreams":[{"name":"t","surface":"ccserver","prefix":"ticket","group":"tickets","url":"http://127.0.0.1:9/mcp"}]}`, `upstream "t": prefix: "ticket" collides with the ccserver catalog's tool`},
		"policy wildcard":  {`{"upstreams":[{"name":"read","url":"http://127.0.0.1:9/mcp","tier":"read"}]}`, `upstream "read": name: "read" is taken by the policy's grant supacloud.read.*`},
		"unknown field":    {`{"upstreams":[{"name":"forge","url":"http://127.0.0.1:9/mcp","tier":"read","trust":true}]}`, `upstream "forge": unknown field "trust"`},
	} {
		t.Run(note, func(t *testing.T) {
			t.Parallel() // each start fails in its own folder
			_, _, err := upstreamsApp(t, tc.file)
			if err == nil || !strings.Contains(err.Error(), "MCPGATE_UPSTREAMS_FILE") {
				t.Fatalf("start: %v; want it refused naming MCPGATE_UPSTREAMS_FILE", err)
			}
			for _, want := range strings.Split(tc.want, "\n") {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("start refused with %q\nwant it to say %q", err, want)
				}
			}
		})
	}
}

// MCPGATE_UPSTREAM_URL keeps working beside MCPGATE_UPSTREAMS_FILE: its
// one upstream's tools join the catalog (with MCPGATE_UPSTREAM_TIER), the
// file's upstreams are bridged beside them, a call of each reaches its own
// server, and a file prefix that would take one of that upstream's tool
// names is refused like a collision with the catalog.
func TestUpstreamURLBesideTheUpstreamsFile(t *testing.T) {
	_, singleURL := upstreamtest.Start(t, "wiki.page")
	_, forgeURL := upstreamtest.Start(t, "issues.list")
	single := map[string]string{"MCPGATE_UPSTREAM_URL": singleURL, "MCPGATE_UPSTREAM_TIER": "read"}
	app, _, err := upstreamsAppWith(t, `{"upstreams":[{"name":"forge","url":"`+forgeURL+`","tier":"read"}]}`, single)
	if err != nil {
		t.Fatal(err)
	}
	p := seedAgent(t, app, "wiki.page", "forge.issues.list")
	for tool, want := range map[string]string{"wiki.page": "wiki.page ran", "forge.issues.list": "issues.list ran"} {
		if text, code := callBridged(app, p, tool); code != "" || text != want {
			t.Errorf("call of %s: %q %s; want %q", tool, text, code, want)
		}
	}
	_, _, err = upstreamsAppWith(t, `{"upstreams":[{"name":"forge","prefix":"wiki.","url":"`+forgeURL+`","tier":"read"}]}`, single)
	if err == nil || !strings.Contains(err.Error(), `upstream "forge": prefix: "wiki." collides with the supacloud catalog's tool "wiki.page"`) {
		t.Fatalf("a prefix over MCPGATE_UPSTREAM_URL's tool: %v; want it refused naming the tool", err)
	}
}

// A mistake in the upstreams file stops the start before the store is
// reached: with a database nobody answers, the error is the file's.
func TestServeChecksTheUpstreamsFileFirst(t *testing.T) {
	start := time.Now()
	_, _, err := upstreamsAppWith(t, `{"upstreams":[{"name":"forge","url":"ftp://127.0.0.1/mcp","tier":"read"}]}`,
		map[string]string{"MCPGATE_DATABASE_URL": "postgres://nobody@127.0.0.1:9/nothing?connect_timeout=5"})
	if err == nil || !strings.Contains(err.Error(), `upstream "forge": url: scheme "ftp"`) {
		t.Fatalf("start: %v; want the upstreams file's mistake", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("the refusal took %v; want it before anything is opened", took)
	}
}
