package postgres

import (
	"testing"

	"github.com/mcpgate/mcpgate/gateway"
)

// An ended session's announcement (migration 00012) names the session,
// not a token: reading its "k" as a fingerprint would end that token's
// sessions instead.
func TestParseChangeEndedSession(t *testing.T) {
	for _, tc := range []struct {
		extra string
		want  gateway.Change
	}{
		{`{"s":"public","t":"mcp_ended_sessions","k":"sid-1"}`, gateway.Change{Table: EndedSessionsTable, SessionID: "sid-1"}},
		{`{"s":"public","t":"mcp_ended_sessions"}`, gateway.Change{Table: EndedSessionsTable}},
		{`{"s":"public","t":"api_tokens","w":"ws-a","k":"fp"}`, gateway.Change{Table: "api_tokens", WorkspaceID: "ws-a", TokenFingerprint: "fp"}},
	} {
		got, ok, _ := parseChange(tc.extra, "public")
		if !ok || got != tc.want {
			t.Errorf("parseChange(%s) = %+v, %v; want %+v", tc.extra, got, ok, tc.want)
		}
	}
}

// TestNotifyGarbageIgnoredAndCoalesced: a payload that is not JSON of the
// triggers' shape is no change at all (it used to be a change of every
// workspace, so each one rebuilt every open stream's tool list on every
// replica); the server's test of the same name checks the coalescing.
func TestNotifyGarbageIgnoredAndCoalesced(t *testing.T) {
	for _, extra := range []string{"not json", "", "[1,2]", `{"s":`, `"public"`} {
		if c, ok, readable := parseChange(extra, "public"); ok || readable {
			t.Errorf("parseChange(%q) = %+v, ok %v, readable %v; want ignored as unreadable", extra, c, ok, readable)
		}
	}
	if _, ok, readable := parseChange(`{"s":"public","t":"profiles"}`, "public"); !ok || !readable {
		t.Error("a trigger's payload without a workspace was not read")
	}
}
