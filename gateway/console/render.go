package console

import (
	"bytes"
	"embed"
	"html/template"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate/gateway/approvals"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticRoot embed.FS

// staticFS holds the console's stylesheet, served under Prefix/static/.
var staticFS fs.FS = staticRoot

// view is what every page template receives: the page's own data in Data,
// and what the layout needs.
type view struct {
	Prefix   string
	CSRF     string // the session's CSRF token, for every form
	SignedIn bool
	// Reader is the workspace of a read-only API token session ("" for
	// the admin token): pages then show no change forms.
	Reader string
	// TokenAdmin is set for a workspace owner or admin session: the API
	// tokens page shows its create and revoke forms (docs/requirements.md#external-gateway).
	TokenAdmin bool
	Data       any
}

var funcs = template.FuncMap{
	"when": func(t *time.Time) string {
		if t == nil || t.IsZero() {
			return "never"
		}
		return t.UTC().Format("2006-01-02 15:04 UTC")
	},
	"date": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") },
	"path": esc,
	// pretty shows an approval's arguments whole, indented, every number
	// with its digits and invisible format characters (bidi overrides,
	// zero-width spaces) as \u escapes: what the elicitation shows. The
	// template escapes it as HTML.
	"pretty": approvals.Pretty,
	"short":  short,
}

// short cuts a long identifier (a policy revision's "sha256:" and 64 hex
// digits, an approval id) to what tells rows apart at a glance, ending in
// "…", so a table of them fits a 1280 px window; the templates give the
// whole value as the element's title, shown on hover.
func short(s string) string {
	const keep = 12 // characters after a "scheme:" prefix such as sha256:
	prefix, rest, ok := strings.Cut(s, ":")
	if !ok || len(prefix) > 8 {
		prefix, rest = "", s
	} else {
		prefix += ":"
	}
	if len([]rune(rest)) <= keep+4 {
		return s
	}
	return prefix + string([]rune(rest)[:keep]) + "…"
}

// pages are the page templates, each parsed with the layout.
var pages = func() map[string]*template.Template {
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		panic(err)
	}
	out := map[string]*template.Template{}
	for _, n := range names {
		if n == "templates/layout.html" {
			continue
		}
		out[n[len("templates/"):]] = template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", n))
	}
	return out
}()

// render writes page with data for the session's visitor (sess may be
// nil), with status. The page is rendered to a buffer first, so a template
// failure is a clean 500.
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, page string, sess *session, data any) {
	v := view{Prefix: Prefix, Data: data}
	if sess != nil {
		v.CSRF, v.SignedIn, v.Reader, v.TokenAdmin = sess.csrf, sess.token != "", sess.reader, sess.tokenAdmin()
	}
	var buf bytes.Buffer
	if err := pages[page].Execute(&buf, v); err != nil {
		http.Error(w, "the console could not render this page; the gateway's templates are broken — report it", http.StatusInternalServerError)
		return
	}
	if r.Method == http.MethodPost && c.redirectPage(w, r, sess, status, buf.Bytes()) {
		return
	}
	writePage(w, status, buf.Bytes())
}

// writePage writes a rendered page with its status.
func writePage(w http.ResponseWriter, status int, page []byte) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(page)))
	w.WriteHeader(status)
	_, _ = w.Write(page)
}

// shownPath is where a POST's page is shown: every POST a signed-in
// session makes is answered with a redirect (POST/redirect/GET), so that a
// browser's refresh shows the page again and never posts the form twice.
const shownPath = Prefix + "/shown"

// redirectPage keeps the page a POST rendered for the POST's signed-in
// session and answers 303 to shownPath; it reports false, and the page is
// written as the POST's reply, when there is no such session (a sign-in
// form, an expired session) or the session store fails.
func (c *Console) redirectPage(w http.ResponseWriter, r *http.Request, sess *session, status int, page []byte) bool {
	if sess == nil || sess.id == "" {
		// An error page rendered without the session (forbidden, …):
		// the POST's own session, when it has one.
		if s, err := c.current(r); err == nil && s != nil {
			sess = s
		}
	}
	if sess == nil || sess.id == "" {
		return false
	}
	if c.setFlash(r.Context(), sess, flash{Page: &shownPage{Status: status, HTML: page}}) != nil {
		return false
	}
	http.Redirect(w, r, shownPath, http.StatusSeeOther)
	return true
}

// shown is GET shownPath: the page the session's last POST rendered, kept
// for a refresh until another page replaces it; without one, the
// visitor's home.
func (c *Console) shown(w http.ResponseWriter, r *http.Request, sess *session) {
	f := c.takeFlash(r.Context(), sess)
	if f.Page == nil {
		http.Redirect(w, r, c.home(sess), http.StatusSeeOther)
		return
	}
	_ = c.setFlash(r.Context(), sess, f) // a refresh shows it again
	w.Header().Set("Cache-Control", "no-store")
	writePage(w, f.Page.Status, f.Page.HTML)
}

// intText shows an optional number in a form field ("" for nil).
func intText(v *int) string {
	if v == nil {
		return ""
	}
	return strconv.Itoa(*v)
}
