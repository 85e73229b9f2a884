package confirm_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/confirm"
)

// FuzzConfirmToken mutates tokens issued for three calls (two tasks of one
// workspace, and another workspace and tool) and verifies them against
// fuzzed claims. A token verifies only if its signed part is byte for byte
// that of an issued token, its signature decodes to that token's MAC, and
// the claims asked for are exactly the ones it was issued for: never for
// another workspace, task, tool or input hash. A correctly signed token for
// other claims is refused as other_scope (workspace, task or tool differ)
// or else other_arguments; every refusal is EInvalid with one reason.
func FuzzConfirmToken(f *testing.F) {
	start := time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)
	clk := &clock{t: start}
	s, err := confirm.NewSigner([]byte(secret), clk.now)
	if err != nil {
		f.Fatal(err)
	}
	h1, _ := confirm.InputHash(map[string]any{"app_id": "app-1"})
	h2, _ := confirm.InputHash(map[string]any{"app_id": "app-1", "env": "prod"})
	issued := []confirm.Claims{
		{WorkspaceID: "ws-a", TaskID: "t1", Tool: "app.deploy", InputHash: h1},
		{WorkspaceID: "ws-a", TaskID: "t2", Tool: "app.deploy", InputHash: h1},
		{WorkspaceID: "ws-b", TaskID: "t1", Tool: "app.migration.apply", InputHash: h2},
	}
	toks := make([]string, len(issued))
	for i, c := range issued {
		if toks[i], _, err = s.Issue(c); err != nil {
			f.Fatal(err)
		}
	}
	clk.t = start.Add(time.Minute)
	for _, tok := range toks {
		for _, c := range issued {
			f.Add(tok, c.WorkspaceID, c.TaskID, c.Tool, c.InputHash)
		}
		f.Add(tok, "ws-a", "t1", "app.deploy", "sha256:"+strings.Repeat("0", 64))
		f.Add(tok[:len(tok)-1], "ws-a", "t1", "app.deploy", h1)
		f.Add(tok+"=", "ws-a", "t1", "app.deploy", h1)
	}
	f.Add("mcpc1..", "", "", "", "")
	f.Add("mcpc1.e30."+strings.Repeat("A", 43), "", "", "", "")
	reasons := map[string]error{"confirmation.malformed": confirm.ErrMalformed, "confirmation.bad_signature": confirm.ErrSignature,
		"confirmation.other_scope": confirm.ErrScope, "confirmation.other_arguments": confirm.ErrArguments, "confirmation.expired": confirm.ErrExpired}
	f.Fuzz(func(t *testing.T, tok, ws, task, tool, ih string) {
		want := confirm.Claims{WorkspaceID: ws, TaskID: task, Tool: tool, InputHash: ih}
		err := s.Verify(tok, want)
		// The issued token whose signed part and signature tok carries.
		orig := -1
		if i := strings.LastIndexByte(tok, '.'); i >= 0 {
			sig, serr := base64.RawURLEncoding.DecodeString(tok[i+1:])
			for k, o := range toks {
				j := strings.LastIndexByte(o, '.')
				osig, _ := base64.RawURLEncoding.DecodeString(o[j+1:])
				if tok[:i] == o[:j] && serr == nil && string(sig) == string(osig) {
					orig = k
				}
			}
		}
		if err == nil {
			if orig < 0 {
				t.Fatalf("token %q verified but is not one the signer issued", tok)
			}
			if issued[orig] != want {
				t.Fatalf("token for %+v verified for %+v", issued[orig], want)
			}
			return
		}
		var ge *gateway.Error
		if !errors.As(err, &ge) || ge.Code != gateway.EInvalid || len(ge.Reasons) != 1 || !errors.Is(err, reasons[ge.Reasons[0].Code]) {
			t.Fatalf("refusal %#v is not EInvalid with one known reason", err)
		}
		if orig >= 0 {
			c := issued[orig]
			wantErr := confirm.ErrArguments
			if c.WorkspaceID != ws || c.TaskID != task || c.Tool != tool {
				wantErr = confirm.ErrScope
			} else if c.InputHash == ih {
				t.Fatalf("token issued for %+v refused for the same claims: %v", c, err)
			}
			if !errors.Is(err, wantErr) {
				t.Fatalf("token for %+v asked for %+v: %v, want %v", c, want, err, wantErr)
			}
		}
	})
}

var hashFormat = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// FuzzInputHash checks the input hash a confirmation token binds: it
// ignores confirmation_token and idempotency_key and nothing else (adding
// any other argument changes it), and it is the same for the arguments
// re-encoded and read back, which is how the second call of the protocol
// arrives.
func FuzzInputHash(f *testing.F) {
	for _, s := range []string{`{"app_id":"app-1"}`, `{}`, `{"app_id":"app-1","env":"prod","replicas":3,"tags":["a","b"],"opts":{"force":false,"x":null}}`,
		`{"n":1.5e300,"m":-0.0,"u":"\u00e9\ud83d\ude00"}`, `{"confirmation_token":"mcpc1.x.y","idempotency_key":"k"}`, `{"a":1,"a":2}`} {
		f.Add([]byte(s), "mcpc1.abc.def", "idem-1", "extra")
	}
	f.Fuzz(func(t *testing.T, raw []byte, tok, key, extra string) {
		var args map[string]any
		if json.Unmarshal(raw, &args) != nil || args == nil {
			return
		}
		h, err := confirm.InputHash(args)
		if err != nil || !hashFormat.MatchString(h) {
			t.Fatalf("InputHash(%s) = %q, %v", raw, h, err)
		}
		with := confirm.WithoutProtocolArgs(args)
		with[confirm.ArgToken], with[confirm.ArgIdempotencyKey] = tok, key
		if h2, _ := confirm.InputHash(with); h2 != h {
			t.Fatalf("protocol arguments changed the hash of %s", raw)
		}
		if _, taken := args[extra]; !taken && extra != confirm.ArgToken && extra != confirm.ArgIdempotencyKey {
			more := confirm.WithoutProtocolArgs(args)
			more[extra] = tok
			if h3, _ := confirm.InputHash(more); h3 == h {
				t.Fatalf("argument %q did not change the hash of %s", extra, raw)
			}
		}
		enc, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		var back map[string]any
		if err := json.Unmarshal(enc, &back); err != nil {
			t.Fatalf("arguments %s do not read back: %v", enc, err)
		}
		if h4, _ := confirm.InputHash(back); h4 != h {
			t.Fatalf("re-encoded arguments %s hash to %s, not %s (equal: %v)", enc, h4, h, reflect.DeepEqual(back, args))
		}
	})
}
