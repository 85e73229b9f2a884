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
		got, ok := parseChange(tc.extra, "public")
		if !ok || got != tc.want {
			t.Errorf("parseChange(%s) = %+v, %v; want %+v", tc.extra, got, ok, tc.want)
		}
	}
}
