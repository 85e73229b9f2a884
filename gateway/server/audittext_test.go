package server

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestAuditText(t *testing.T) {
	for in, want := range map[string]string{
		"app.pause":        "app.pause",
		"app.pause\x00":    "app.pause\uFFFD",
		"bad\xffutf8":      "bad\uFFFDutf8",
		"ws-a\x00\x00evil": "ws-a\uFFFD\uFFFDevil",
	} {
		if got := auditText(in); got != want || strings.IndexByte(got, 0) >= 0 {
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
