package ratelimit_test

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/ratelimit"
)

// TestCCServerPrincipalMinute: a cc_server call has exactly one slot, its
// principal's minute, with the configured cap (the default when unset),
// keyed apart per subject and pinned workspace; its refusal says the cap.
func TestCCServerPrincipalMinute(t *testing.T) {
	now := time.Date(2025, 5, 6, 7, 8, 9, 0, time.UTC)
	sub := ratelimit.Subject{Surface: gateway.SurfaceCCServer, Actor: "ada", Tool: "list_tickets"}
	l := ratelimit.DefaultLimits()
	p, err := ratelimit.NewRules(l).Plan(sub, now)
	if err != nil {
		t.Fatal(err)
	}
	c := p.Counters()
	if len(c) != 1 || c[0].Bucket != "principal_minute.calls" || c[0].Limit != gateway.DefaultCCServerCallsPerMinute ||
		!c[0].Window.Equal(now.Truncate(time.Minute)) || !c[0].Expires.Equal(now.Truncate(time.Minute).Add(time.Minute)) {
		t.Fatalf("counters %+v, want one principal_minute.calls slot of %d in the minute of %v", c, gateway.DefaultCCServerCallsPerMinute, now)
	}
	l.CCServerCallsPerMinute = 7
	pinned := sub
	pinned.WorkspaceID = "ws-acme"
	p2, err := ratelimit.NewRules(l).Plan(pinned, now)
	if err != nil {
		t.Fatal(err)
	}
	c2 := p2.Counters()
	if c2[0].Limit != 7 || c2[0].Key == c[0].Key {
		t.Errorf("pinned agent's counter %+v: want limit 7 and a key apart from the user's %q", c2[0], c[0].Key)
	}
	err = p2.Refusal(gateway.ReservationResult{Full: 1, Used: 7})
	if gateway.ErrorCodeOf(err) != gateway.ERateLimited || !strings.Contains(err.Error(), "7/7") {
		t.Errorf("refusal %v, want rate limited with 7/7", err)
	}
}
