package console_test

import (
	"context"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway/admin"
	"github.com/mcpgate/mcpgate/gateway/console"
	"github.com/mcpgate/mcpgate/gateway/policy/policystatus"
	"github.com/mcpgate/mcpgate/gateway/sqlite"
)

// adminToken is the admin token of every test gateway; tests check it
// never shows up in a page.
const adminToken = "test-admin-token-4f1c9e2b7a"

// clock is a settable time source for session expiry.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) add(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.t = c.t.Add(d) }

// gatewayUnderTest is the admin API over an in-memory SQLite store with
// the console in front of it, served like the main listener serves them.
type gatewayUnderTest struct {
	srv       *httptest.Server
	admin     http.Handler
	clock     *clock
	store     *sqlite.Store
	explainer *fakeExplainer
	approvals *fakeApprovals
	gates     *fakeGates
	policy    *fakePolicy
}

func newGateway(t *testing.T) *gatewayUnderTest {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	g := &gatewayUnderTest{clock: &clock{t: time.Now()}, store: st,
		explainer: &fakeExplainer{chains: map[string][]map[string]any{}, fail: map[string]error{}},
		approvals: &fakeApprovals{},
		gates:     newFakeGates(),
		policy: &fakePolicy{status: policystatus.Status{Surface: "supacloud", Revision: "rev-test-1", Source: "/etc/mcpgate/policy",
			LiveSince: time.Now().Add(-time.Hour)}}}
	g.admin = admin.NewHandler(st, admin.Options{Token: adminToken, ValidateGrant: func(e string) error {
		if strings.HasPrefix(e, "nope.") {
			return errString("grants no tool of the catalog")
		}
		return nil
	}, TokenReader: tokenReader(st), WorkspaceAdmin: workspaceAdminHook, Explain: g.explainer.explain, Approvals: g.approvals, Policy: g.policy, Gates: g.gates,
		Upstreams: fakeUpstreams{st}, Chain: st})
	mux := http.NewServeMux()
	mux.Handle(admin.Prefix+"/", g.admin)
	// The approvals page reloads itself every 5 s by default; the browser
	// test types into its forms, so here it waits a minute.
	c := console.New(console.Options{Admin: g.admin, AdminPrefix: admin.Prefix, Now: g.clock.now,
		Approvers: g.approvals, ApprovalsRefresh: time.Minute})
	mux.Handle(console.Prefix, c)
	mux.Handle(console.Prefix+"/", c)
	g.srv = httptest.NewServer(mux)
	t.Cleanup(g.srv.Close)
	g.api(t, http.MethodPut, "/workspaces/ws-1", `{"name":"Acme","slug":"acme","org_plan":"team"}`, http.StatusOK)
	g.api(t, http.MethodPut, "/workspaces/ws-1/members/alice", `{"role":"owner","seat_type":"developer"}`, http.StatusOK)
	g.api(t, http.MethodPut, "/workspaces/ws-1/members/bob", `{"role":"viewer"}`, http.StatusOK)
	return g
}

type errString string

func (e errString) Error() string { return string(e) }

// api calls the admin API directly (as curl would) and returns the body.
func (g *gatewayUnderTest) api(t *testing.T, method, path, body string, want int) string {
	t.Helper()
	req, err := http.NewRequest(method, g.srv.URL+admin.Prefix+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: status %d, want %d: %s", method, path, resp.StatusCode, want, b)
	}
	return string(b)
}

// tokens returns the workspace's API tokens as the admin API lists them.
func (g *gatewayUnderTest) tokens(t *testing.T, ws string) []map[string]any {
	t.Helper()
	var out struct {
		Tokens []map[string]any `json:"tokens"`
	}
	if err := json.Unmarshal([]byte(g.api(t, http.MethodGet, "/workspaces/"+ws+"/api-tokens", "", http.StatusOK)), &out); err != nil {
		t.Fatal(err)
	}
	return out.Tokens
}

// visitor is one browser: a cookie jar, redirects not followed.
type visitor struct {
	t      *testing.T
	g      *gatewayUnderTest
	client *http.Client
}

func (g *gatewayUnderTest) visitor(t *testing.T) *visitor {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &visitor{t: t, g: g, client: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

// page is one reply: status, headers and the body as text (entities
// decoded, so assertions read like the page does).
type page struct {
	status int
	header http.Header
	raw    string
	text   string
}

func (v *visitor) do(req *http.Request) page {
	v.t.Helper()
	resp, err := v.client.Do(req)
	if err != nil {
		v.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return page{status: resp.StatusCode, header: resp.Header, raw: string(b), text: html.UnescapeString(string(b))}
}

func (v *visitor) get(path string) page {
	v.t.Helper()
	req, err := http.NewRequest(http.MethodGet, v.g.srv.URL+path, nil)
	if err != nil {
		v.t.Fatal(err)
	}
	return v.do(req)
}

// post posts form to path and returns the reply; a reply that is the
// console's POST/redirect/GET of a page (303 to /console/shown, or a
// refused sign-in's 303 back to /console/login) is followed, so the page
// returned is the one a browser shows.
func (v *visitor) post(path string, form url.Values) page {
	v.t.Helper()
	p := v.postOnly(path, form)
	if loc := p.header.Get("Location"); p.status == http.StatusSeeOther && (loc == "/console/shown" || path == "/console/login" && loc == path) {
		return v.get(loc)
	}
	return p
}

// postOnly posts form to path and returns the reply itself.
func (v *visitor) postOnly(path string, form url.Values) page {
	v.t.Helper()
	req, err := http.NewRequest(http.MethodPost, v.g.srv.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		v.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return v.do(req)
}

var csrfPattern = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf returns the CSRF token the forms of the page at path carry.
func (v *visitor) csrf(path string) string {
	v.t.Helper()
	p := v.get(path)
	m := csrfPattern.FindStringSubmatch(p.raw)
	if m == nil {
		v.t.Fatalf("GET %s (%d) has no CSRF field:\n%s", path, p.status, p.raw)
	}
	return m[1]
}

// signIn signs in with token and returns the reply to the POST.
func (v *visitor) signIn(token string) page {
	v.t.Helper()
	return v.post("/console/login", url.Values{"csrf": {v.csrf("/console/login")}, "token": {token}})
}

// signInAs signs in with token, the operator name and the workspace field
// of the sign-in form, and returns the reply to the POST.
func (v *visitor) signInAs(token, operator, workspace string) page {
	v.t.Helper()
	return v.post("/console/login", url.Values{"csrf": {v.csrf("/console/login")}, "token": {token},
		"operator": {operator}, "workspace": {workspace}})
}

// signedIn returns a visitor signed in with the admin token.
func (g *gatewayUnderTest) signedIn(t *testing.T) *visitor {
	t.Helper()
	v := g.visitor(t)
	if p := v.signIn(adminToken); p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/workspaces" {
		t.Fatalf("sign-in: %d %s\n%s", p.status, p.header.Get("Location"), p.text)
	}
	return v
}

// htmlText decodes the entities of a fragment of a page.
func htmlText(s string) string { return html.UnescapeString(s) }
