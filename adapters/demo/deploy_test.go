package demo

import (
	"context"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/gateway"
)

func TestChangesSummary(t *testing.T) {
	b := newTestBackend()
	fx := fixtures(t, b, "ws-a")
	tests := []struct {
		name     string
		tool     string
		app      string
		wantCode gateway.ErrorCode
		want     []string
	}{
		{"deploy names the app and route", "app.deploy", fx.deployedApp, "", []string{"Deploy Customer Portal", "https://customer-portal--ws-a.apps.supacloud.dev", "1 pending migration"}},
		{"migrations lists the pending ones", "app.migration.apply", fx.deployedApp, "", []string{"Apply 1 pending migration", "0003_add_order_status_index.sql"}},
		{"app of another workspace", "app.deploy", fixtures(t, b, "ws-b").deployedApp, gateway.EInvalid, []string{"not found in this workspace"}},
		{"tool without a summary", "app.pause", fx.deployedApp, gateway.EInvalid, []string{"no changes summary"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := b.ChangesSummary(context.Background(), gateway.ToolCall{WorkspaceID: "ws-a", Tool: tc.tool, Arguments: map[string]any{"app_id": tc.app}})
			if gateway.ErrorCodeOf(err) != tc.wantCode {
				t.Fatalf("error %v, want code %q", err, tc.wantCode)
			}
			if err != nil {
				got = gateway.ErrorMessageOf(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("%q lacks %q", got, w)
				}
			}
		})
	}
	before := asJSON(t, mustOK(t, call(t, b, "ws-a", "", "app.get", map[string]any{"app_id": fx.deployedApp})))
	_, _ = b.ChangesSummary(context.Background(), gateway.ToolCall{WorkspaceID: "ws-a", Tool: "app.deploy", Arguments: map[string]any{"app_id": fx.deployedApp}})
	if after := asJSON(t, mustOK(t, call(t, b, "ws-a", "", "app.get", map[string]any{"app_id": fx.deployedApp}))); after != before {
		t.Error("ChangesSummary changed the app")
	}
}
