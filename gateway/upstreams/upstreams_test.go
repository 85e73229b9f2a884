package upstreams_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/upstreams"
)

const secret = "s3cr3t-VALUE-9f8e7d"

func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

var catalogs = map[string][]string{
	gateway.SurfaceSupaCloud: {"project.get", "app.deploy"},
	gateway.SurfaceCCServer:  {"ticket_create"},
}

func parse(t *testing.T, file string, vars map[string]string) (*upstreams.File, error) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "empty"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return upstreams.Parse([]byte(file), upstreams.Options{LookupEnv: env(vars), Dir: dir, Catalogs: catalogs})
}

func TestParseDefaultsAndResolves(t *testing.T) {
	f, err := parse(t, `{"upstreams": [
	  {"name": "github", "url": "https://user:pw@mcp.example/mcp/KEY?k=v", "tier": "read",
	   "headers": {"authorization": "Bearer ${env:GH_TOKEN}", "X-Key": "${file:token}"}},
	  {"name": "tickets", "surface": "ccserver", "url": "http://127.0.0.1:9/mcp", "group": "tickets",
	   "prefix": "tix/", "new_tools": "allow",
	   "oauth": {"token_url": "https://idp.example/token", "client_id": "gw", "client_secret": "${env:GH_TOKEN}", "scopes": ["mcp:read"]}}
	]}`, map[string]string{"GH_TOKEN": secret})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Upstreams) != 2 {
		t.Fatalf("got %d upstreams", len(f.Upstreams))
	}
	gh, tix := f.Upstreams[0], f.Upstreams[1]
	if gh.Surface != gateway.SurfaceSupaCloud || gh.Prefix != "github." || gh.NewTools != upstreams.NewToolsQuarantine || gh.Tier != gateway.TierRead {
		t.Errorf("github defaults: %+v", gh)
	}
	if got := gh.Header().Get("Authorization"); got != "Bearer "+secret {
		t.Errorf("Authorization resolved to %q", got)
	}
	if got := gh.Header().Get("X-Key"); got != secret {
		t.Errorf("X-Key from the file resolved to %q (want the content without its line break)", got)
	}
	if gh.URL.Value() != "https://user:pw@mcp.example/mcp/KEY?k=v" || gh.URL.String() != "https://mcp.example" {
		t.Errorf("URL value %q shown %q", gh.URL.Value(), gh.URL)
	}
	if tix.Prefix != "tix/" || tix.Group != "tickets" || tix.NewTools != upstreams.NewToolsAllow || tix.OAuth == nil || tix.OAuth.ClientSecret.Value() != secret {
		t.Errorf("tickets: %+v", tix)
	}
	if got := f.For(gateway.SurfaceCCServer); len(got) != 1 || got[0].Name != "tickets" {
		t.Errorf("For(ccserver) = %v", got)
	}
}

// Each bad file is refused with a message naming the upstream and the
// field, and never the secret.
func TestParseRefuses(t *testing.T) {
	vars := map[string]string{"GH_TOKEN": secret}
	for _, tc := range []struct {
		note, file string
		want       []string
	}{
		{"unknown field", `{"upstreams":[{"name":"gh","url":"https://x","tier":"read","teir":"ops"}]}`, []string{`upstream "gh"`, `unknown field "teir"`}},
		{"unknown oauth field", `{"upstreams":[{"name":"gh","url":"https://x","tier":"read","oauth":{"token_url":"https://t","client_id":"a","client_secret":"b","audience":"x"}}]}`, []string{`upstream "gh"`, `unknown field "audience"`}},
		{"unknown top-level field", `{"upstreams":[],"servers":[]}`, []string{`unknown field "servers"`}},
		{"wrong type", `{"upstreams":[{"name":"gh","url":"https://x","tier":3}]}`, []string{`upstream "gh"`, `field "tier"`}},
		{"not JSON", `{"upstreams":[`, []string{"not an upstreams file"}},
		{"duplicate name", `{"upstreams":[{"name":"gh","url":"https://x","tier":"read","prefix":"a."},{"name":"gh","url":"https://y","tier":"read","prefix":"b."}]}`, []string{`upstream "gh": name: is given to two upstreams`}},
		{"bad name", `{"upstreams":[{"name":"GitHub","url":"https://x","tier":"read"}]}`, []string{"upstream #1: name:"}},
		{"prefix collision", `{"upstreams":[{"name":"git","url":"https://x","tier":"read"},{"name":"b","prefix":"git.hub.","url":"https://y","tier":"read"}]}`, []string{`upstream "b": prefix: "git.hub." collides with the prefix "git." of upstream "git"`}},
		{"prefix with the catalog", `{"upstreams":[{"name":"p","prefix":"project.","url":"https://x","tier":"read"}]}`, []string{`upstream "p": prefix: "project." collides with the supacloud catalog's tool "project.get"`}},
		{"prefix with the ccserver catalog", `{"upstreams":[{"name":"t","surface":"ccserver","prefix":"ticket","group":"tickets","url":"https://x"}]}`, []string{`upstream "t": prefix:`, `"ticket_create"`}},
		{"surface prefix", `{"upstreams":[{"name":"p","prefix":"supacloud.p.","url":"https://x","tier":"read"}]}`, []string{`upstream "p": prefix:`, "surface's grant"}},
		{"unset variable", `{"upstreams":[{"name":"gh","url":"https://x","tier":"read","headers":{"Authorization":"Bearer ${env:NOPE}"}}]}`, []string{`upstream "gh": headers.Authorization: ${env:NOPE}: the variable is not set`}},
		{"unreadable file", `{"upstreams":[{"name":"gh","url":"https://x","tier":"read","headers":{"X-Key":"${file:missing}"}}]}`, []string{`upstream "gh": headers.X-Key: ${file:missing}: cannot read the file`}},
		{"empty file", `{"upstreams":[{"name":"gh","url":"https://x","tier":"read","headers":{"X-Key":"${file:empty}"}}]}`, []string{`upstream "gh": headers.X-Key: ${file:empty}: the file is empty`}},
		{"unknown reference", `{"upstreams":[{"name":"gh","url":"https://x","tier":"read","headers":{"X-Key":"${vault:k}"}}]}`, []string{`upstream "gh": headers.X-Key: ${vault:k}: unknown reference`}},
		{"managed header", `{"upstreams":[{"name":"gh","url":"https://x","tier":"read","headers":{"mcp-session-id":"${env:GH_TOKEN}"}}]}`, []string{`upstream "gh": headers.mcp-session-id: is set by the gateway`}},
		{"ftp URL", `{"upstreams":[{"name":"gh","url":"ftp://` + secret + `@x/","tier":"read"}]}`, []string{`upstream "gh": url: scheme "ftp"`}},
		{"relative URL", `{"upstreams":[{"name":"gh","url":"/mcp/` + secret + `","tier":"read"}]}`, []string{`upstream "gh": url: has no scheme`}},
		{"no host", `{"upstreams":[{"name":"gh","url":"https:///mcp","tier":"read"}]}`, []string{`upstream "gh": url: has no host`}},
		{"no URL", `{"upstreams":[{"name":"gh","tier":"read"}]}`, []string{`upstream "gh": url: is required`}},
		{"no tier", `{"upstreams":[{"name":"gh","url":"https://x"}]}`, []string{`upstream "gh": tier: is required`}},
		{"scaffold tier", `{"upstreams":[{"name":"gh","url":"https://x","tier":"scaffold"}]}`, []string{`upstream "gh": tier: "scaffold"`}},
		{"group on supacloud", `{"upstreams":[{"name":"gh","url":"https://x","tier":"read","group":"g"}]}`, []string{`upstream "gh": group:`}},
		{"tier on ccserver", `{"upstreams":[{"name":"gh","surface":"ccserver","url":"https://x","tier":"read","group":"g"}]}`, []string{`upstream "gh": tier:`}},
		{"bad surface", `{"upstreams":[{"name":"gh","surface":"other","url":"https://x"}]}`, []string{`upstream "gh": surface: "other"`}},
		{"bad new_tools", `{"upstreams":[{"name":"gh","url":"https://x","tier":"read","new_tools":"trust"}]}`, []string{`upstream "gh": new_tools: "trust"`}},
		{"oauth without secret", `{"upstreams":[{"name":"gh","url":"https://x","tier":"read","oauth":{"token_url":"https://t","client_id":"a"}}]}`, []string{`upstream "gh": oauth.client_secret: is required`}},
		{"oauth bad token URL", `{"upstreams":[{"name":"gh","url":"https://x","tier":"read","oauth":{"token_url":"file:///etc/passwd","client_id":"a","client_secret":"${env:GH_TOKEN}"}}]}`, []string{`upstream "gh": oauth.token_url: scheme "file"`}},
		{"line break in a header", `{"upstreams":[{"name":"gh","url":"https://x","tier":"read","headers":{"X-Key":"a\r\nX-Evil: ${env:GH_TOKEN}"}}]}`, []string{`upstream "gh": headers.X-Key: its value holds a control character`}},
	} {
		t.Run(tc.note, func(t *testing.T) {
			f, err := parse(t, tc.file, vars)
			if err == nil {
				t.Fatalf("accepted: %+v", f)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nwant it to say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error %q holds the secret", err)
			}
		})
	}
}

// Every problem of a file is reported at once, a clash of names or
// prefixes too when an upstream in it has another problem.
func TestParseReportsEveryProblem(t *testing.T) {
	_, err := parse(t, `{"upstreams":[{"name":"a","url":"ftp://x","tier":"read"},{"name":"b","url":"https://x","tier":"nope"},
	  {"name":"a","prefix":"a2.","url":"https://x","tier":"read","headers":{"X-Key":"${env:NOPE}"}},
	  {"name":"c","prefix":"b.x.","url":"https://x","tier":"ops","new_tools":"trust"}]}`, nil)
	for _, want := range []string{`upstream "a": url`, `upstream "b": tier`, `upstream "a": headers.X-Key`, `upstream "c": new_tools`,
		`upstream "a": name: is given to two upstreams`, `upstream "c": prefix: "b.x." collides with the prefix "b." of upstream "b"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v: want it to say %q", err, want)
		}
	}
}

func TestLoadNamesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "upstreams.json")
	if _, err := upstreams.Load(path, upstreams.Options{}); err == nil || !strings.Contains(err.Error(), "MCPGATE_UPSTREAMS_FILE="+path) {
		t.Fatalf("missing file: %v", err)
	}
	if err := os.WriteFile(path, []byte(`{"upstreams":[{"name":"gh","url":"https://x","tier":"read","headers":{"X-Key":"${file:key}"}}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(path), "key"), []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := upstreams.Load(path, upstreams.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Upstreams[0].Header().Get("X-Key"); got != secret {
		t.Errorf("${file:key} beside the upstreams file resolved to %q", got)
	}
}

// A *.yaml (or *.yml) upstreams file is the same document in YAML: the
// same fields, defaults, references and checks; a YAML syntax error names
// its line and no value of the file.
func TestLoadYAML(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "key"), []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) string {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	f, err := upstreams.Load(write("upstreams.yaml", `upstreams:
  - name: github
    url: https://mcp.example/mcp
    tier: read
    headers:
      X-Key: ${file:key}
  - name: tickets
    surface: ccserver
    url: http://127.0.0.1:9/mcp
    group: tickets
    new_tools: allow
`), upstreams.Options{Catalogs: catalogs})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Upstreams) != 2 || f.Upstreams[0].Prefix != "github." || f.Upstreams[0].Header().Get("X-Key") != secret ||
		f.Upstreams[1].Surface != gateway.SurfaceCCServer || f.Upstreams[1].NewTools != upstreams.NewToolsAllow {
		t.Fatalf("YAML file read as %+v", f.Upstreams)
	}
	_, err = upstreams.Load(write("unknown.yml", "upstreams:\n  - name: gh\n    url: https://x\n    tier: read\n    colour: blue\n"), upstreams.Options{})
	if err == nil || !strings.Contains(err.Error(), `"colour"`) {
		t.Errorf("unknown field in YAML: %v; want it named", err)
	}
	_, err = upstreams.Load(write("broken.yaml", "upstreams:\n  - name: gh\n    headers: {X-Key: "+secret+"\n"), upstreams.Options{})
	if err == nil || !strings.Contains(err.Error(), "not valid YAML (line ") || strings.Contains(err.Error(), secret) {
		t.Errorf("broken YAML: %v; want its line, without the file's values", err)
	}
}

// The resolved secrets (header values, OAuth client secret, the URL's
// user, path and query) never appear when the configuration is printed,
// marshalled or logged.
func TestSecretsNeverPrinted(t *testing.T) {
	f, err := parse(t, `{"upstreams": [
	  {"name": "github", "url": "https://u:`+secret+`@mcp.example/`+secret+`?key=`+secret+`", "tier": "read",
	   "headers": {"Authorization": "Bearer ${env:GH_TOKEN}", "X-Key": "${file:token}", "X-Literal": "`+secret+`"},
	   "oauth": {"token_url": "https://idp.example/`+secret+`", "client_id": "${env:GH_TOKEN}", "client_secret": "${env:GH_TOKEN}"}}
	]}`, map[string]string{"GH_TOKEN": secret})
	if err != nil {
		t.Fatal(err)
	}
	u := f.Upstreams[0]
	if u.Header().Get("X-Literal") != secret || u.OAuth.ClientSecret.Value() != secret {
		t.Fatal("the secrets did not resolve; the test would prove nothing")
	}
	var forms []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q"} {
		forms = append(forms, fmt.Sprintf(verb, f), fmt.Sprintf(verb, *f), fmt.Sprintf(verb, u), fmt.Sprintf(verb, u.Headers), fmt.Sprintf(verb, u.OAuth))
	}
	forms = append(forms, u.URL.String(), u.Headers["Authorization"].String())
	js, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	forms = append(forms, string(js))
	var zbuf bytes.Buffer
	log := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(&zbuf), zap.DebugLevel))
	log.Info("config", zap.Any("file", f), zap.Any("upstream", u), zap.Stringer("url", u.URL), zap.Reflect("headers", u.Headers), zap.Any("oauth", u.OAuth))
	_ = log.Sync()
	var sbuf bytes.Buffer
	slog.New(slog.NewJSONHandler(&sbuf, nil)).Info("config", "file", f, "secret", u.OAuth.ClientSecret)
	forms = append(forms, zbuf.String(), sbuf.String(), errors.New(fmt.Sprint(u)).Error())
	for _, s := range forms {
		if strings.Contains(s, secret) {
			t.Errorf("a printed form holds the secret: %s", s)
		}
	}
	if !strings.Contains(zbuf.String(), "https://mcp.example") || !strings.Contains(zbuf.String(), upstreams.Redacted) {
		t.Errorf("zap line %s: want the shown URL and %s", zbuf.String(), upstreams.Redacted)
	}
}
