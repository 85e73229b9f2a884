package pipeline

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestAuditText(t *testing.T) {
	// Printable text, any script, stays as it is; anything else is quoted
	// with Go's escapes: storable (no NUL, valid UTF-8), no raw control
	// bytes for a psql or sqlite3 dump to print, and two different inputs
	// never end as the same text.
	for in, want := range map[string]string{
		"app.pause":                  "app.pause",
		"Zoë-Ω":                      "Zoë-Ω",
		"app.pause\x00":              `"app.pause\x00"`,
		"bad\xffutf8":                `"bad\xffutf8"`,
		"bad\xfeutf8":                `"bad\xfeutf8"`,
		"ws-a\x00\x00evil":           `"ws-a\x00\x00evil"`,
		"eve\n\x1b[31mFAKE LOG LINE": `"eve\n\x1b[31mFAKE LOG LINE"`,
		`"x\n"`:                      `"\"x\\n\""`,
	} {
		if got := auditText(in); got != want || strings.IndexByte(got, 0) >= 0 || strings.ContainsAny(got, "\n\x1b") {
			t.Errorf("auditText(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLoggableArguments(t *testing.T) {
	cases := []struct {
		note, raw string
		want      string // "" means nothing is logged
	}{
		{"plain arguments are logged as sent", `{"app_id":"app-1"}`, `{"app_id":"app-1"}`},
		{"the confirmation token is never logged", `{"app_id":"app-1","confirmation_token":"mcpc1.secret","idempotency_key":"k"}`, `{"app_id":"app-1","idempotency_key":"k"}`},
		{"NUL in the JSON: only the hash is kept", `{"app_id":"app-1\u0000"}`, ""},
	}
	for _, c := range cases {
		t.Run(c.note, func(t *testing.T) {
			var args map[string]any
			if err := json.Unmarshal([]byte(c.raw), &args); err != nil {
				t.Fatal(err)
			}
			got := loggableArguments(args, json.RawMessage(c.raw))
			if string(got) != c.want {
				t.Fatalf("got %s, want %s", got, c.want)
			}
		})
	}
}
