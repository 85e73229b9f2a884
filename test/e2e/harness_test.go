// Package e2e drives the real gateway wiring (server.Open, the same assembly
// `mcpgate serve` uses) over HTTP with the official Go MCP SDK client, on the
// embedded store and on PostgreSQL. Every test but the Chromium one, and
// each store's subtest, runs in parallel (t.Parallel, at most go test's
// -parallel at once): each starts its own gateway on its own database file
// or schema and loopback port, so none waits for another's gateway starts,
// approval expiries or polls.
package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/lib/pq"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/auth"
	"github.com/mcpgate/mcpgate/gateway/config"
	"github.com/mcpgate/mcpgate/gateway/server"
)

// protocolVersion pins the MCP protocol version the SDK client asks for.
const protocolVersion = "2025-06-18"

const jwtSecret = "e2e-secret-0123456789abcdef0123456789abcdef"

// gatewayUnderTest is one running gateway: the real App behind an httptest server.
type gatewayUnderTest struct {
	app *server.App
	srv *httptest.Server
}

// storeKinds names the stores every e2e test runs on. PostgreSQL needs
// MCPGATE_TEST_DATABASE_URL (the Makefile sets it).
func storeKinds(t *testing.T) map[string]func(t *testing.T) string {
	return map[string]func(t *testing.T) string{
		"sqlite": func(t *testing.T) string {
			return "sqlite:" + filepath.Join(t.TempDir(), "e2e.db")
		},
		"postgres": postgresURL,
	}
}

// schemaSeq numbers the schemas postgresURL makes in this process.
var schemaSeq atomic.Int64

// postgresURL creates a fresh schema for the test and returns a URL whose
// search_path points at it; the schema is dropped when the test ends.
func postgresURL(t *testing.T) string {
	base := os.Getenv("MCPGATE_TEST_DATABASE_URL")
	if base == "" {
		t.Skip("MCPGATE_TEST_DATABASE_URL is unset; run `make test` or set it to a PostgreSQL URL")
	}
	db, err := sql.Open("postgres", base)
	if err != nil {
		t.Fatal(err)
	}
	// The tests run in parallel: the sequence number keeps two schemas
	// made in the same nanosecond apart.
	schema := fmt.Sprintf("e2e_%d_%d", time.Now().UnixNano(), schemaSeq.Add(1))
	if _, err := db.Exec("CREATE SCHEMA " + schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		_, _ = db.Exec("DROP SCHEMA " + schema + " CASCADE")
		_ = db.Close()
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// startGateway opens the real App on dbURL with extra environment on top of
// the test defaults and serves it on a loopback httptest server.
func startGateway(t *testing.T, dbURL string, env map[string]string) *gatewayUnderTest {
	t.Helper()
	return startGatewayLogging(t, dbURL, env, zap.NewNop())
}

// startGatewayLogging is startGateway with the gateway's log going to log.
func startGatewayLogging(t *testing.T, dbURL string, env map[string]string, log *zap.Logger) *gatewayUnderTest {
	t.Helper()
	vars := map[string]string{
		"MCPGATE_DATABASE_URL": dbURL,
		"MCPGATE_JWT_SECRET":   jwtSecret,
		"MCPGATE_ADMIN_TOKEN":  "e2e-admin-token",
	}
	for k, v := range env {
		vars[k] = v
	}
	cfg, err := config.Load(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	app, err := server.Open(context.Background(), cfg, log, "e2e")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(app.Server)
	t.Cleanup(func() {
		srv.Close()
		_ = app.Close()
	})
	return &gatewayUnderTest{app: app, srv: srv}
}

// token issues an agent session JWT.
func (g *gatewayUnderTest) token(t *testing.T, ws, user, task, profile string) string {
	t.Helper()
	tok, err := g.app.JWT.Issue(auth.AgentClaims{Subject: user, WorkspaceID: ws, TaskID: task, ProfileID: profile}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// connect opens an MCP session on /mcp with the official Go SDK client.
func (g *gatewayUnderTest) connect(t *testing.T, token string) *mcp.ClientSession {
	t.Helper()
	return g.connectAt(t, "/mcp", token)
}

// connectAt opens an MCP session on path (/mcp or /api/mcp) with the
// official Go SDK client.
func (g *gatewayUnderTest) connectAt(t *testing.T, path, token string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{
		Endpoint:             g.srv.URL + path,
		HTTPClient:           &http.Client{Transport: bearer{token: token, next: http.DefaultTransport}},
		DisableStandaloneSSE: true,
		MaxRetries:           -1,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// listed returns the set of tool names tools/list shows, following cursors.
func listed(t *testing.T, cs *mcp.ClientSession) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		out[tool.Name] = true
	}
	return out
}

// lastAudit returns the newest audit row for (workspace, task, tool).
func (g *gatewayUnderTest) lastAudit(t *testing.T, ws, task, tool string) gateway.AuditEvent {
	t.Helper()
	evs, err := g.app.Store.ListAuditEvents(context.Background(), gateway.AuditFilter{WorkspaceID: ws, TaskID: task, Tool: tool, Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 {
		t.Fatalf("no audit row for %s/%s/%s", ws, task, tool)
	}
	return evs[0]
}

// countAudit returns how many audit rows match f.
func (g *gatewayUnderTest) countAudit(t *testing.T, f gateway.AuditFilter) int {
	t.Helper()
	f.Limit = 1000
	evs, err := g.app.Store.ListAuditEvents(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	return len(evs)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// demoIDs resolves placeholders such as "$app" in case arguments to real
// record ids of the demo backend in ws, so allowed calls return real results.
func (g *gatewayUnderTest) demoIDs(t *testing.T, ws string) map[string]any {
	t.Helper()
	first := func(tool, list, field string, args map[string]any) any {
		res, err := g.app.Pipeline.Adapter.CallTool(context.Background(), gateway.ToolCall{WorkspaceID: ws, Tool: tool, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("demo %s: %v %+v", tool, err, res)
		}
		items, _ := res.StructuredContent[list].([]any)
		if len(items) == 0 {
			t.Fatalf("demo %s returned no %s", tool, list)
		}
		return items[0].(map[string]any)[field]
	}
	ids := map[string]any{
		"$app":      first("apps.list", "apps", "id", nil),
		"$schedule": first("schedules.list", "schedules", "id", nil),
		"$project":  first("projects.list", "projects", "id", nil),
		"$script":   first("script.list", "scripts", "slug", nil),
		"$resource": "support-inbox",
	}
	ids["$conversation"] = first("conversation.list", "conversations", "id", map[string]any{"resource": "support-inbox"})
	return ids
}

// resolve replaces placeholder values in args with ids.
func resolve(args map[string]any, ids map[string]any) map[string]any {
	out := make(map[string]any, len(args))
	for k, v := range args {
		if s, ok := v.(string); ok {
			if id, ok := ids[s]; ok {
				v = id
			}
		}
		out[k] = v
	}
	return out
}
