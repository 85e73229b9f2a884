package confirm_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/confirm"
)

const secret = "0123456789abcdef0123456789abcdef"

// clock is a settable clock.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func hash(t *testing.T, args map[string]any) string {
	t.Helper()
	h, err := confirm.InputHash(args)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestVerify(t *testing.T) {
	start := time.Date(2025, 3, 4, 12, 0, 0, 0, time.UTC)
	args := map[string]any{"app_id": "app-1"}
	claims := confirm.Claims{WorkspaceID: "ws-a", TaskID: "t1", Tool: "app.deploy", InputHash: hash(t, args)}
	other := func(f func(c *confirm.Claims)) confirm.Claims { c := claims; f(&c); return c }
	for _, tc := range []struct {
		note   string
		after  time.Duration
		tamper func(tok string) string
		want   confirm.Claims
		err    error
		reason string
	}{
		{note: "fresh token for the same call", after: time.Minute, want: claims},
		{note: "just before expiry", after: confirm.TTL - time.Second, want: claims},
		{note: "at expiry", after: confirm.TTL, want: claims, err: confirm.ErrExpired, reason: "confirmation.expired"},
		{note: "long expired", after: time.Hour, want: claims, err: confirm.ErrExpired, reason: "confirmation.expired"},
		{note: "other arguments", want: other(func(c *confirm.Claims) { c.InputHash = hash(t, map[string]any{"app_id": "app-2"}) }),
			err: confirm.ErrArguments, reason: "confirmation.other_arguments"},
		{note: "other tool", want: other(func(c *confirm.Claims) { c.Tool = "app.migration.apply" }), err: confirm.ErrScope, reason: "confirmation.other_scope"},
		{note: "other task", want: other(func(c *confirm.Claims) { c.TaskID = "t2" }), err: confirm.ErrScope, reason: "confirmation.other_scope"},
		{note: "other principal", want: other(func(c *confirm.Claims) { c.Principal = "agent\x00u2\x00" }), err: confirm.ErrPrincipal, reason: "confirmation.other_principal"},
		{note: "other workspace", want: other(func(c *confirm.Claims) { c.WorkspaceID = "ws-b" }), err: confirm.ErrScope, reason: "confirmation.other_scope"},
		{note: "payload changed", want: claims, err: confirm.ErrSignature, reason: "confirmation.bad_signature",
			tamper: func(tok string) string {
				parts := strings.Split(tok, ".")
				parts[1] = parts[1][:len(parts[1])-2] + "AA"
				return strings.Join(parts, ".")
			}},
		{note: "signature changed", want: claims, err: confirm.ErrSignature, reason: "confirmation.bad_signature",
			tamper: func(tok string) string { return tok[:len(tok)-2] + "AA" }},
		{note: "signed with another key", want: claims, err: confirm.ErrSignature, reason: "confirmation.bad_signature",
			tamper: func(string) string {
				s, _ := confirm.NewSigner([]byte(strings.Repeat("x", 32)), nil)
				tok, _, _ := s.Issue(claims)
				return tok
			}},
		{note: "not a token", want: claims, err: confirm.ErrMalformed, reason: "confirmation.malformed",
			tamper: func(string) string { return "hello" }},
		{note: "bad base64 signature", want: claims, err: confirm.ErrMalformed, reason: "confirmation.malformed",
			tamper: func(tok string) string { return tok + "!" }},
	} {
		t.Run(tc.note, func(t *testing.T) {
			c := &clock{t: start}
			s, err := confirm.NewSigner([]byte(secret), c.now)
			if err != nil {
				t.Fatal(err)
			}
			tok, exp, err := s.Issue(claims)
			if err != nil {
				t.Fatal(err)
			}
			if !exp.Equal(start.Add(confirm.TTL)) {
				t.Errorf("expires at %v, want %v", exp, start.Add(confirm.TTL))
			}
			if tc.tamper != nil {
				tok = tc.tamper(tok)
			}
			c.t = start.Add(tc.after)
			err = s.Verify(tok, tc.want)
			if !errors.Is(err, tc.err) || (err == nil) != (tc.err == nil) {
				t.Fatalf("Verify: %v, want %v", err, tc.err)
			}
			if err == nil {
				return
			}
			var ge *gateway.Error
			if !errors.As(err, &ge) || ge.Code != gateway.EInvalid || len(ge.Reasons) != 1 || ge.Reasons[0].Code != tc.reason {
				t.Fatalf("error %#v, want EInvalid with reason %s", err, tc.reason)
			}
			if !strings.Contains(ge.Message, "without confirmation_token") {
				t.Errorf("message %q does not say what to do", ge.Message)
			}
		})
	}
}

func TestInputHash(t *testing.T) {
	base := hash(t, map[string]any{"app_id": "a", "n": 1.0, "nested": map[string]any{"x": 1.0, "y": "z"}})
	for _, tc := range []struct {
		note string
		args map[string]any
		same bool
	}{
		{"protocol arguments are ignored", map[string]any{"app_id": "a", "n": 1.0, "nested": map[string]any{"y": "z", "x": 1.0},
			"confirmation_token": "tok", "idempotency_key": "k"}, true},
		{"other value", map[string]any{"app_id": "b", "n": 1.0, "nested": map[string]any{"x": 1.0, "y": "z"}}, false},
		{"nested value", map[string]any{"app_id": "a", "n": 1.0, "nested": map[string]any{"x": 2.0, "y": "z"}}, false},
		{"extra argument", map[string]any{"app_id": "a", "n": 1.0, "nested": map[string]any{"x": 1.0, "y": "z"}, "workspace_id": "ws-a"}, false},
	} {
		t.Run(tc.note, func(t *testing.T) {
			if got := hash(t, tc.args); (got == base) != tc.same {
				t.Errorf("hash %s vs %s, want same=%v", got, base, tc.same)
			}
		})
	}
}

func TestNewSignerRefusesShortSecrets(t *testing.T) {
	for _, n := range []int{0, 31} {
		_, err := confirm.NewSigner([]byte(strings.Repeat("k", n)), nil)
		if gateway.ErrorCodeOf(err) != gateway.EInvalid || !strings.Contains(err.Error(), "SUPACLOUD_MCP_CONFIRMATION_SECRET") {
			t.Errorf("%d bytes: %v, want EInvalid naming the variable", n, err)
		}
	}
}
