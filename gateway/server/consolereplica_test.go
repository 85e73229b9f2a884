package server_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/auth"
	"github.com/mcpgate/mcpgate/gateway/config"
	"github.com/mcpgate/mcpgate/gateway/console"
	"github.com/mcpgate/mcpgate/gateway/console/consolesession"
	"github.com/mcpgate/mcpgate/gateway/server"
)

// browser is a console visitor that carries its cookies by hand, so the
// test decides which replica each request goes to (a load balancer with
// no stickiness).
type browser struct {
	t       *testing.T
	cookies map[string]string
}

type consolePage struct {
	status int
	header http.Header
	body   string
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func newBrowser(t *testing.T) *browser { return &browser{t: t, cookies: map[string]string{}} }

func (b *browser) do(method, base, path string, form url.Values) consolePage {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, base+path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range b.cookies {
		req.AddCookie(&http.Cookie{Name: k, Value: v})
	}
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	for _, c := range resp.Cookies() {
		if c.MaxAge < 0 {
			delete(b.cookies, c.Name)
		} else {
			b.cookies[c.Name] = c.Value
		}
	}
	if method == http.MethodPost && resp.StatusCode == http.StatusSeeOther && resp.Header.Get("Location") == "/console/shown" {
		// The console's POST/redirect/GET: the page the POST rendered,
		// as a browser shows it.
		return b.do(http.MethodGet, base, "/console/shown", nil)
	}
	return consolePage{status: resp.StatusCode, header: resp.Header, body: html.UnescapeString(string(raw))}
}

func (b *browser) csrf(base, path string) string {
	b.t.Helper()
	p := b.do(http.MethodGet, base, path, nil)
	m := csrfField.FindStringSubmatch(p.body)
	if m == nil {
		b.t.Fatalf("GET %s%s: %d, no csrf field\n%s", base, path, p.status, p.body)
	}
	return html.UnescapeString(m[1])
}

// signIn opens the sign-in form on formAt and submits it to postAt; a
// refused sign-in's redirect back to the sign-in page is followed on
// formAt (any replica shows it), so the page returned is the one shown.
func (b *browser) signIn(formAt, postAt, token, workspace string) consolePage {
	b.t.Helper()
	csrf := b.csrf(formAt, "/console/login")
	p := b.do(http.MethodPost, postAt, "/console/login", url.Values{"csrf": {csrf}, "token": {token}, "workspace": {workspace}})
	if p.status == http.StatusSeeOther && p.header.Get("Location") == "/console/login" {
		return b.do(http.MethodGet, formAt, "/console/login", nil)
	}
	return p
}

// storedSession reads the row of the browser's session cookie.
func storedSession(t *testing.T, s server.FullStore, cookie string) (*consolesession.Session, error) {
	t.Helper()
	sum := sha256.Sum256([]byte(cookie))
	return s.ConsoleSession(context.Background(), hex.EncodeToString(sum[:]), time.Now())
}

// TestConsoleSessionOnAnyReplica: a session signed in through one replica
// serves on another (two Apps on one PostgreSQL, no stickiness), the
// created token's value is shown once whichever replica shows it, the
// store holds neither the cookie nor the credential in clear, and sign-out
// through one replica ends the session on both.
func TestConsoleSessionOnAnyReplica(t *testing.T) {
	rs := openReplicas(t, 2)
	a, b := rs[0].url, rs[1].url
	v := newBrowser(t)
	// The sign-in form comes from A and is posted to B.
	if p := v.signIn(a, b, replicaAdminToken, ""); p.status != http.StatusSeeOther {
		t.Fatalf("sign-in through B with A's form: %d\n%s", p.status, p.body)
	}
	cookie := v.cookies[console.CookieName]
	row, err := storedSession(t, rs[0].app.Store, cookie)
	if err != nil {
		t.Fatalf("the session is not in the audit store: %v", err)
	}
	if row.Kind != consolesession.Admin || row.IDHash == cookie || bytes.Contains(row.SealedToken, []byte(replicaAdminToken)) {
		t.Errorf("stored session %+v: want kind admin, a hash of the cookie and the token sealed", row)
	}
	for _, base := range []string{a, b} {
		if p := v.do(http.MethodGet, base, "/console/workspaces", nil); p.status != http.StatusOK || !strings.Contains(p.body, "ws-a") {
			t.Fatalf("workspaces page on %s: %d\n%s", base, p.status, p.body)
		}
	}
	// Create a token through A; B shows its value once; A's reload does not.
	csrf := v.csrf(a, "/console/workspaces/ws-a/tokens")
	if p := v.do(http.MethodPost, a, "/console/workspaces/ws-a/tokens", url.Values{"csrf": {csrf}, "label": {"lb"}, "scope": {"mcp:read"}}); p.status != http.StatusSeeOther {
		t.Fatalf("create token through A: %d\n%s", p.status, p.body)
	}
	shown := regexp.MustCompile(`scmt_[A-Za-z0-9_-]{43}`)
	if p := v.do(http.MethodGet, b, "/console/workspaces/ws-a/tokens", nil); !shown.MatchString(p.body) {
		t.Fatalf("B's tokens page after A created one does not show the value\n%s", p.body)
	}
	if p := v.do(http.MethodGet, a, "/console/workspaces/ws-a/tokens", nil); shown.MatchString(p.body) {
		t.Error("the token value was shown a second time")
	}
	// Sign out through B: A no longer knows the session either.
	csrf = v.csrf(b, "/console/workspaces")
	if p := v.do(http.MethodPost, b, "/console/logout", url.Values{"csrf": {csrf}}); p.status != http.StatusSeeOther {
		t.Fatalf("sign-out through B: %d", p.status)
	}
	v.cookies[console.CookieName] = cookie
	if p := v.do(http.MethodGet, a, "/console/workspaces", nil); p.status != http.StatusSeeOther {
		t.Errorf("A after sign-out through B: %d, want a redirect to sign in", p.status)
	}
	if _, err := storedSession(t, rs[0].app.Store, cookie); gateway.ErrorCodeOf(err) != gateway.ENotFound {
		t.Errorf("the session row after sign-out: %v, want ENotFound", err)
	}
}

// openSQLite opens the real wiring on the SQLite file path.
func openSQLite(t *testing.T, path string) (*server.App, string, func()) {
	t.Helper()
	vars := map[string]string{
		"MCPGATE_DATABASE_URL": "sqlite:" + path,
		"MCPGATE_JWT_SECRET":   "console-test-jwt-secret-0123456789abcdef",
		"MCPGATE_ADMIN_TOKEN":  replicaAdminToken,
	}
	cfg, err := config.Load(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	app, err := server.Open(context.Background(), cfg, zap.NewNop(), "console-test")
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(app.Server)
	return app, hs.URL, func() { hs.Close(); _ = app.Close() }
}

// TestConsoleSessionSurvivesRestart: on SQLite the session is in the file,
// so a restarted gateway still serves the signed-in visitor.
func TestConsoleSessionSurvivesRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "console.db")
	_, base, stop := openSQLite(t, path)
	v := newBrowser(t)
	if p := v.signIn(base, base, replicaAdminToken, ""); p.status != http.StatusSeeOther {
		stop()
		t.Fatalf("sign-in: %d\n%s", p.status, p.body)
	}
	stop()
	_, base, stop = openSQLite(t, path)
	defer stop()
	if p := v.do(http.MethodGet, base, "/console/workspaces", nil); p.status != http.StatusOK {
		t.Fatalf("workspaces page after a restart: %d, want 200 (still signed in)\n%s", p.status, p.body)
	}
}

// TestConsoleWorkspaceAdminSignIn: through the real wiring, an owner or
// admin of a workspace signs in with a console sign-in JWT (signed with
// the agent session key) and creates and revokes that workspace's API
// tokens; a member is refused with the admin API's message; the session
// reaches no other workspace, and a demotion ends its token rights at once.
func TestConsoleWorkspaceAdminSignIn(t *testing.T) {
	app, base, stop := openSQLite(t, filepath.Join(t.TempDir(), "wsadmin.db"))
	defer stop()
	ctx := context.Background()
	s := app.Store
	for _, err := range []error{
		s.PutWorkspace(ctx, &gateway.Workspace{ID: "ws-a", Name: "A"}),
		s.PutWorkspace(ctx, &gateway.Workspace{ID: "ws-b", Name: "B"}),
		s.PutMember(ctx, &gateway.Member{WorkspaceID: "ws-a", UserID: "ada", Role: gateway.RoleAdmin}),
		s.PutMember(ctx, &gateway.Member{WorkspaceID: "ws-a", UserID: "max", Role: gateway.RoleMember}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	signer, err := auth.NewSigner(auth.SignerConfig{Secret: []byte("console-test-jwt-secret-0123456789abcdef")})
	if err != nil {
		t.Fatal(err)
	}
	mint := func(ws, user string) string {
		tok, err := signer.SignConsole(ws, user, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}

	// A member: refused with the role in the message, no session.
	v := newBrowser(t)
	if p := v.signIn(base, base, mint("ws-a", "max"), ""); p.status != http.StatusForbidden || !strings.Contains(p.body, `has the role "member"`) {
		t.Fatalf("member sign-in: %d, want 403 naming the role\n%s", p.status, p.body)
	}
	if _, ok := v.cookies[console.CookieName]; ok {
		t.Fatal("a refused sign-in set a session cookie")
	}
	// An agent session JWT of the admin does not sign in.
	agent, err := app.JWT.Issue(auth.AgentClaims{Subject: "ada", WorkspaceID: "ws-a", TaskID: "t1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if p := v.signIn(base, base, agent, "ws-a"); p.status != http.StatusUnauthorized {
		t.Fatalf("agent session JWT at the console: %d, want 401", p.status)
	}

	// The admin: the workspace comes from the token; tokens can be created and revoked.
	if p := v.signIn(base, base, mint("ws-a", "ada"), ""); p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/workspaces/ws-a" {
		t.Fatalf("admin sign-in: %d %s\n%s", p.status, p.header.Get("Location"), p.body)
	}
	csrf := v.csrf(base, "/console/workspaces/ws-a/tokens")
	if p := v.do(http.MethodPost, base, "/console/workspaces/ws-a/tokens", url.Values{"csrf": {csrf}, "label": {"ci"}, "scope": {"mcp:read"}}); p.status != http.StatusSeeOther {
		t.Fatalf("workspace admin creates a token: %d\n%s", p.status, p.body)
	}
	tokens, err := s.ListAPITokens(ctx, "ws-a")
	if err != nil || len(tokens) != 1 {
		t.Fatalf("tokens of ws-a after create: %v %v", tokens, err)
	}
	fp := tokens[0].Fingerprint
	if p := v.do(http.MethodPost, base, "/console/workspaces/ws-a/tokens/revoke", url.Values{"csrf": {csrf}, "fingerprint": {fp}}); p.status != http.StatusSeeOther {
		t.Fatalf("workspace admin revokes: %d\n%s", p.status, p.body)
	}
	if tokens, _ := s.ListAPITokens(ctx, "ws-a"); tokens[0].Status != "revoked" {
		t.Errorf("token after revoke: %+v", tokens[0])
	}
	// The external limits are in the same tab (docs/requirements.md#external-gateway); other changes
	// and other workspaces are refused.
	if p := v.do(http.MethodPost, base, "/console/workspaces/ws-a/external-limits", url.Values{"csrf": {csrf}, "reads_per_tool_hourly": {"5"}}); p.status != http.StatusSeeOther {
		t.Errorf("workspace admin saves limits: %d, want 303", p.status)
	}
	if p := v.do(http.MethodPost, base, "/console/workspaces/ws-a/profiles", url.Values{"csrf": {csrf}, "id": {"p9"}}); p.status != http.StatusForbidden {
		t.Errorf("workspace admin creates a profile: %d, want 403", p.status)
	}
	if p := v.do(http.MethodGet, base, "/console/workspaces/ws-b/tokens", nil); p.status != http.StatusForbidden || !strings.Contains(p.body, `not of "ws-b"`) {
		t.Errorf("workspace admin opens ws-b's tokens: %d\n%s", p.status, p.body)
	}
	// Demoted: the next request is refused.
	if err := s.PutMember(ctx, &gateway.Member{WorkspaceID: "ws-a", UserID: "ada", Role: gateway.RoleViewer}); err != nil {
		t.Fatal(err)
	}
	if p := v.do(http.MethodGet, base, "/console/workspaces/ws-a/tokens", nil); p.status != http.StatusForbidden || !strings.Contains(p.body, `has the role "viewer"`) {
		t.Errorf("tokens page after the demotion: %d, want 403\n%s", p.status, p.body)
	}
}
