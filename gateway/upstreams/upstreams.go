// Package upstreams reads and validates the upstreams file
// (MCPGATE_UPSTREAMS_FILE, docs/configuration.md#bridged-upstreams): the
// MCP servers an operator bridges into a surface, each with its name,
// URL, prefix, tier or group, headers and optional OAuth client
// credentials. Every problem is a start-up error naming the upstream and
// the field; references to secrets (${env:VAR}, ${file:PATH}) are
// resolved here into Secret values, which never print their value.
package upstreams

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/mcpgate/mcpgate/gateway"
)

// NewTools says what happens to a tool an upstream lists after it was
// first reviewed.
type NewTools string

// The values of new_tools.
const (
	// NewToolsQuarantine (the default) holds a new tool back until an
	// operator approves it.
	NewToolsQuarantine NewTools = "quarantine"
	// NewToolsAllow lists a new tool at once (its definition is pinned).
	NewToolsAllow NewTools = "allow"
)

// File is a validated upstreams file.
type File struct {
	// Upstreams in the file's order.
	Upstreams []Upstream `json:"upstreams"`
}

// Upstream is one bridged MCP server.
type Upstream struct {
	// Name is [a-z0-9-]{1,32}, unique in the file: how messages, /readyz,
	// metrics and policy name the upstream (its URL is never shown).
	Name string `json:"name"`
	// Surface is gateway.SurfaceSupaCloud (the default) or
	// gateway.SurfaceCCServer.
	Surface string `json:"surface"`
	// URL is the upstream's Streamable HTTP endpoint (http or https),
	// shown as scheme, host and port.
	URL Secret `json:"url"`
	// Prefix goes before each upstream tool's name in the surface's
	// registry (default "<name>."); no prefix of the surface starts
	// another, and no catalog tool of the surface starts with one.
	Prefix string `json:"prefix"`
	// Tier (SupaCloud: baseline, read, ops or deploy) or Group (cc_server)
	// is what policy grants the bridged tools by; the other is empty.
	Tier  gateway.Tier `json:"tier,omitempty"`
	Group string       `json:"group,omitempty"`
	// Headers are sent with every request to the upstream, by canonical
	// header name, their ${env:…}/${file:…} references resolved.
	Headers map[string]Secret `json:"headers,omitempty"`
	// NewTools is NewToolsQuarantine (default) or NewToolsAllow.
	NewTools NewTools `json:"new_tools"`
	// OAuth, when not nil, gets the upstream's bearer token by the client
	// credentials grant (RFC 6749 §4.4).
	OAuth *OAuth `json:"oauth,omitempty"`
}

// Header returns the upstream's headers with their resolved values, for
// the requests sent to it.
func (u Upstream) Header() http.Header {
	if len(u.Headers) == 0 {
		return nil
	}
	h := make(http.Header, len(u.Headers))
	for k, v := range u.Headers {
		h[k] = []string{v.Value()}
	}
	return h
}

// OAuth are the client credentials of an upstream (RFC 6749 §4.4).
type OAuth struct {
	// TokenURL is the authorization server's token endpoint (http or https).
	TokenURL Secret `json:"token_url"`
	// ClientID and ClientSecret may reference ${env:…} or ${file:…}.
	ClientID     Secret   `json:"client_id"`
	ClientSecret Secret   `json:"client_secret"`
	Scopes       []string `json:"scopes,omitempty"`
}

// Options are what Parse checks the file against and reads references with.
type Options struct {
	// LookupEnv resolves ${env:VAR}; nil is os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// ReadFile resolves ${file:PATH}; nil is os.ReadFile. A relative PATH
	// is taken from Dir.
	ReadFile func(string) ([]byte, error)
	// Dir is the folder relative ${file:…} paths start from (Load: the
	// upstreams file's folder).
	Dir string
	// Catalogs are the names of each surface's catalog tools, by surface:
	// a prefix that starts one of them is refused.
	Catalogs map[string][]string
	// Reserved are names a SupaCloud upstream may not take: its upstream
	// wildcard supacloud.<name>.* would be one of the policy's own
	// grants (the tier and group wildcards: read, ops, conversation, …).
	Reserved []string
}

// Load reads the upstreams file at path and parses it (Parse); relative
// ${file:…} paths start from the file's folder. A file named *.yaml or
// *.yml is YAML: the same document, read as JSON once sigs.k8s.io/yaml
// has converted it (so the same fields and checks apply). Errors name
// the file.
func Load(path string, opts Options) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("MCPGATE_UPSTREAMS_FILE=%s: cannot read it: %w", path, err)
	}
	if ext := strings.ToLower(filepath.Ext(path)); ext == ".yaml" || ext == ".yml" {
		if data, err = yaml.YAMLToJSON(data); err != nil {
			return nil, fmt.Errorf("MCPGATE_UPSTREAMS_FILE=%s: not valid YAML (%s); fix the file, or write it as JSON named *.json", path, yamlProblem(err))
		}
	}
	if opts.Dir == "" {
		opts.Dir = filepath.Dir(path)
	}
	f, err := Parse(data, opts)
	if err != nil {
		return nil, fmt.Errorf("MCPGATE_UPSTREAMS_FILE=%s: %w", path, err)
	}
	return f, nil
}

// yamlProblem is where a YAML error is and what it is ("line 3: did not
// find expected ',' or '}'"), without quoting the file: a parser message
// that quotes something (a value, which may be a secret written into the
// file) is left out, and only its line is said.
func yamlProblem(err error) string {
	m := yamlLineRE.FindStringSubmatch(err.Error())
	switch {
	case m == nil:
		return "the YAML parser cannot read it"
	case strings.ContainsAny(m[2], "`\""):
		return "line " + m[1]
	}
	return "line " + m[1] + ": " + m[2]
}

var yamlLineRE = regexp.MustCompile(`line (\d+): (.*)$`)

// Field names of an upstream entry, for the message of an unknown one.
const (
	upstreamFields = "name, surface, url, prefix, tier, group, headers, new_tools, oauth"
	oauthFields    = "token_url, client_id, client_secret, scopes"
)

type rawFile struct {
	Upstreams []json.RawMessage `json:"upstreams"`
}

type rawUpstream struct {
	Name     string            `json:"name"`
	Surface  string            `json:"surface"`
	URL      string            `json:"url"`
	Prefix   *string           `json:"prefix"`
	Tier     string            `json:"tier"`
	Group    string            `json:"group"`
	Headers  map[string]string `json:"headers"`
	NewTools string            `json:"new_tools"`
	OAuth    *rawOAuth         `json:"oauth"`
}

type rawOAuth struct {
	TokenURL     string   `json:"token_url"`
	ClientID     string   `json:"client_id"`
	ClientSecret string   `json:"client_secret"`
	Scopes       []string `json:"scopes"`
}

var (
	nameRE   = regexp.MustCompile(`^[a-z0-9-]{1,32}$`)
	prefixRE = regexp.MustCompile(`^[A-Za-z0-9_./-]{1,64}$`)
	groupRE  = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)
	tokenRE  = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
	envRE    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// managedHeaders are set by the MCP client on every request; a header of
// the file must not replace them.
var managedHeaders = []string{"Accept", "Content-Type", "Content-Length", "Host", "Mcp-Session-Id", "Mcp-Protocol-Version", "Mcp-Method", "Mcp-Name", "Last-Event-Id"}

// Parse reads an upstreams file, {"upstreams": [...]} (JSON; unknown
// fields refused), applies the defaults, resolves the references and
// checks every rule. It returns every problem at once, one per line, each
// naming the upstream and the field; no resolved value appears in them.
func Parse(data []byte, opts Options) (*File, error) {
	p := parser{opts: opts}
	if p.opts.LookupEnv == nil {
		p.opts.LookupEnv = os.LookupEnv
	}
	if p.opts.ReadFile == nil {
		p.opts.ReadFile = os.ReadFile
	}
	var raw rawFile
	if err := strictDecode(data, &raw); err != nil {
		return nil, fmt.Errorf(`not an upstreams file {"upstreams": [...]}: %s`, decodeProblem(err, "upstreams"))
	}
	// An upstream with other problems still takes part in the checks of
	// names and prefixes (when those two are well-formed), so that a
	// clash is reported with them, not after they are fixed; any problem
	// returns no File.
	f := &File{}
	for i, entry := range raw.Upstreams {
		if u, ok := p.upstream(i, entry); ok {
			f.Upstreams = append(f.Upstreams, u)
		}
	}
	p.checkNames(f)
	p.checkPrefixes(f)
	if len(p.errs) > 0 {
		return nil, errors.New(strings.Join(p.errs, "\n  "))
	}
	return f, nil
}

type parser struct {
	opts Options
	errs []string
}

func (p *parser) fail(who, field, format string, args ...any) {
	p.errs = append(p.errs, fmt.Sprintf("upstream %s: %s: %s", who, field, fmt.Sprintf(format, args...)))
}

// strictDecode decodes one JSON value into v, refusing unknown fields and
// anything after the value.
func strictDecode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("more than one JSON value")
	}
	return nil
}

// decodeProblem says what a decoding error means without quoting values
// of the file: the unknown field's name, or the field of the wrong type.
func decodeProblem(err error, fields string) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		return fmt.Sprintf("field %q must be a JSON %s, not %s", te.Field, kindOf(te.Type.Kind().String()), te.Value)
	case errors.As(err, &se):
		return fmt.Sprintf("not valid JSON at byte %d", se.Offset)
	}
	if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fmt.Sprintf("unknown field %s; the fields are %s", f, fields)
	}
	return err.Error()
}

func kindOf(k string) string {
	switch k {
	case "map", "struct", "ptr":
		return "object"
	case "slice":
		return "array"
	}
	return k
}

// upstream checks and resolves entry i; false when it could not be
// decoded or its name or prefix is malformed (it then takes no part in
// the checks of names and prefixes).
func (p *parser) upstream(i int, entry json.RawMessage) (Upstream, bool) {
	var named struct {
		Name any `json:"name"`
	}
	_ = json.Unmarshal(entry, &named)
	who := fmt.Sprintf("#%d", i+1)
	if s, ok := named.Name.(string); ok && nameRE.MatchString(s) {
		who = fmt.Sprintf("%q", s)
	}
	var r rawUpstream
	if err := strictDecode(entry, &r); err != nil {
		p.errs = append(p.errs, fmt.Sprintf("upstream %s: %s", who, decodeProblem(err, upstreamFields)))
		return Upstream{}, false
	}
	u := Upstream{Name: r.Name, Surface: r.Surface, Prefix: r.Name + ".", NewTools: NewTools(r.NewTools)}
	wellFormed := nameRE.MatchString(r.Name)
	if !wellFormed {
		p.fail(who, "name", "must be 1 to 32 of a-z, 0-9 and -")
	}
	if u.Surface == "" {
		u.Surface = gateway.SurfaceSupaCloud
	}
	if u.Surface == gateway.SurfaceSupaCloud && slices.Contains(p.opts.Reserved, u.Name) {
		p.fail(who, "name", "%q is taken by the policy's grant supacloud.%s.*, which would then grant this upstream's tools too; choose another name", u.Name, u.Name)
	}
	if u.NewTools == "" {
		u.NewTools = NewToolsQuarantine
	}
	if r.Prefix != nil {
		u.Prefix = *r.Prefix
	}
	if !prefixRE.MatchString(u.Prefix) {
		wellFormed = false
		p.fail(who, "prefix", "%q must be 1 to 64 of A-Z, a-z, 0-9, _, ., / and - (default: the name and a dot)", u.Prefix)
	}
	for _, sf := range []string{gateway.SurfaceSupaCloud, gateway.SurfaceCCServer} {
		if strings.HasPrefix(u.Prefix, sf+".") {
			p.fail(who, "prefix", "%q starts with %q, which policy reads as a surface's grant of a tool; choose another prefix", u.Prefix, sf+".")
		}
	}
	switch u.Surface {
	case gateway.SurfaceSupaCloud:
		u.Tier = gateway.Tier(r.Tier)
		switch u.Tier {
		case gateway.TierBaseline, gateway.TierRead, gateway.TierOps, gateway.TierDeploy:
		case "":
			p.fail(who, "tier", "is required on the supacloud surface: read, ops, deploy or baseline (what policy grants the upstream's tools by)")
		default:
			p.fail(who, "tier", "%q: want read, ops, deploy or baseline (scaffold needs a rate-limit kind an upstream cannot declare)", r.Tier)
		}
		if r.Group != "" {
			p.fail(who, "group", "is for the ccserver surface; a supacloud upstream has a tier")
		}
	case gateway.SurfaceCCServer:
		u.Group = r.Group
		if !groupRE.MatchString(r.Group) {
			p.fail(who, "group", "%q: the ccserver surface needs a group (a-z, 0-9 and _, starting with a letter) that policy grants the upstream's tools by", r.Group)
		}
		if r.Tier != "" {
			p.fail(who, "tier", "is for the supacloud surface; a ccserver upstream has a group")
		}
	default:
		p.fail(who, "surface", "%q: want supacloud (the default) or ccserver", r.Surface)
	}
	if problem := checkURL(r.URL); problem != "" {
		p.fail(who, "url", "%s", problem)
	}
	u.URL = NewURLSecret(r.URL)
	switch u.NewTools {
	case NewToolsQuarantine, NewToolsAllow:
	default:
		p.fail(who, "new_tools", "%q: want quarantine (the default) or allow", r.NewTools)
	}
	u.Headers = p.headers(who, r.Headers)
	if r.OAuth != nil {
		u.OAuth = p.oauth(who, r.OAuth)
	}
	return u, wellFormed
}

// checkURL is what is wrong with raw as an upstream URL, "" when nothing.
// The value is not quoted: its user, path or query may hold a key.
func checkURL(raw string) string {
	if raw == "" {
		return "is required: the upstream's MCP endpoint, e.g. https://tools.internal/mcp"
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return "does not parse as a URL"
	case u.Scheme == "":
		return "has no scheme: want an absolute http:// or https:// URL"
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Sprintf("scheme %q: want an http:// or https:// URL", u.Scheme)
	case u.Host == "":
		return "has no host: want an absolute http:// or https:// URL"
	}
	return ""
}

// headers checks the header names and resolves their values.
func (p *parser) headers(who string, raw map[string]string) map[string]Secret {
	if len(raw) == 0 {
		return nil
	}
	out := make(map[string]Secret, len(raw))
	names := make([]string, 0, len(raw))
	for k := range raw {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		field := "headers." + k
		if !tokenRE.MatchString(k) {
			p.fail(who, "headers", "%q is not an HTTP header name", k)
			continue
		}
		ck := http.CanonicalHeaderKey(k)
		if slices.Contains(managedHeaders, ck) || strings.HasPrefix(ck, "Mcp-Param-") {
			p.fail(who, field, "is set by the gateway's MCP client on every request; remove it")
			continue
		}
		if _, dup := out[ck]; dup {
			p.fail(who, field, "is given twice (header names are case-insensitive)")
			continue
		}
		v, ok := p.resolve(who, field, raw[k])
		if !ok {
			continue
		}
		if strings.ContainsFunc(v, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) {
			p.fail(who, field, "its value holds a control character (a line break?) once resolved; a header value is one line")
			continue
		}
		out[ck] = NewSecret(v)
	}
	return out
}

// oauth checks the client credentials.
func (p *parser) oauth(who string, r *rawOAuth) *OAuth {
	o := &OAuth{TokenURL: NewURLSecret(r.TokenURL), Scopes: r.Scopes}
	if problem := checkURL(r.TokenURL); problem != "" {
		p.fail(who, "oauth.token_url", "%s", problem)
	}
	for _, f := range []struct {
		name string
		raw  string
		dst  *Secret
	}{{"oauth.client_id", r.ClientID, &o.ClientID}, {"oauth.client_secret", r.ClientSecret, &o.ClientSecret}} {
		if f.raw == "" {
			p.fail(who, f.name, "is required (a value, ${env:VAR} or ${file:PATH})")
			continue
		}
		if v, ok := p.resolve(who, f.name, f.raw); ok {
			*f.dst = NewSecret(v)
		}
	}
	for i, s := range r.Scopes {
		if s == "" || strings.ContainsAny(s, " \t\r\n\"\\") {
			p.fail(who, fmt.Sprintf("oauth.scopes[%d]", i), "a scope is one word of printable characters without quotes or backslashes")
		}
	}
	return o
}

// resolve replaces each ${env:VAR} and ${file:PATH} of v by the
// variable's value or the file's content (without its final line break).
// An unset or empty variable, an unreadable or empty file and any other
// ${…} are errors naming the reference, never a value.
func (p *parser) resolve(who, field, v string) (string, bool) {
	var b strings.Builder
	ok := true
	for {
		i := strings.Index(v, "${")
		if i < 0 {
			b.WriteString(v)
			return b.String(), ok
		}
		b.WriteString(v[:i])
		j := strings.IndexByte(v[i:], '}')
		if j < 0 {
			p.fail(who, field, "a ${ without its closing }; references are ${env:VAR} and ${file:PATH}")
			return "", false
		}
		ref := v[i+2 : i+j]
		v = v[i+j+1:]
		kind, arg, _ := strings.Cut(ref, ":")
		switch kind {
		case "env":
			if !envRE.MatchString(arg) {
				p.fail(who, field, "${env:%s}: %q is not an environment variable name", arg, arg)
				ok = false
				continue
			}
			val, set := p.opts.LookupEnv(arg)
			if !set || val == "" {
				p.fail(who, field, "${env:%s}: the variable is not set (or empty) in the gateway's environment; set it, or change the reference", arg)
				ok = false
				continue
			}
			b.WriteString(val)
		case "file":
			path := arg
			if path == "" {
				p.fail(who, field, "${file:}: the reference names no file")
				ok = false
				continue
			}
			if !filepath.IsAbs(path) && p.opts.Dir != "" {
				path = filepath.Join(p.opts.Dir, path)
			}
			data, err := p.opts.ReadFile(path)
			if err != nil {
				p.fail(who, field, "${file:%s}: cannot read the file (%s); make it readable by the gateway, or change the reference", arg, fileProblem(err))
				ok = false
				continue
			}
			val := strings.TrimRight(string(data), "\r\n")
			if val == "" {
				p.fail(who, field, "${file:%s}: the file is empty", arg)
				ok = false
				continue
			}
			b.WriteString(val)
		default:
			p.fail(who, field, "${%s}: unknown reference; use ${env:VAR} or ${file:PATH}", ref)
			ok = false
		}
	}
}

// fileProblem is the reason a file could not be read, without its path
// twice.
func fileProblem(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// checkNames refuses a name given twice.
func (p *parser) checkNames(f *File) {
	seen := map[string]bool{}
	for _, u := range f.Upstreams {
		if seen[u.Name] {
			p.fail(fmt.Sprintf("%q", u.Name), "name", "is given to two upstreams; names are unique")
		}
		seen[u.Name] = true
	}
}

// checkPrefixes refuses, per surface, two upstreams one of whose prefixes
// starts the other (their tools could get the same name: "git." + "hub.x"
// and "git.hub." + "x"), and a prefix that starts a catalog tool's name.
func (p *parser) checkPrefixes(f *File) {
	for i, a := range f.Upstreams {
		for _, b := range f.Upstreams[i+1:] {
			if a.Surface != b.Surface || a.Name == b.Name {
				continue
			}
			if strings.HasPrefix(a.Prefix, b.Prefix) || strings.HasPrefix(b.Prefix, a.Prefix) {
				p.fail(fmt.Sprintf("%q", b.Name), "prefix", "%q collides with the prefix %q of upstream %q on the %s surface (one starts the other, so their tools could get the same name); give them prefixes neither of which starts the other",
					b.Prefix, a.Prefix, a.Name, a.Surface)
			}
		}
		for _, name := range p.opts.Catalogs[a.Surface] {
			if strings.HasPrefix(name, a.Prefix) {
				p.fail(fmt.Sprintf("%q", a.Name), "prefix", "%q collides with the %s catalog's tool %q (a bridged tool could take its name); choose a prefix no catalog tool starts with",
					a.Prefix, a.Surface, name)
				break
			}
		}
	}
}

// For returns the upstreams of surface, in the file's order.
func (f *File) For(surface string) []Upstream {
	if f == nil {
		return nil
	}
	var out []Upstream
	for _, u := range f.Upstreams {
		if u.Surface == surface {
			out = append(out, u)
		}
	}
	return out
}
