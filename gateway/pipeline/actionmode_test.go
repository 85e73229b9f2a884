package pipeline_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/tools"
)

// TestActionClassFallbackFailsClosed: a cc_server bundle that forgets the
// action guard (here one that allows everything) ran computer_use in plan
// mode. The catalog's action classes are a second, fail-closed source, as
// its requiresApproval flag is: an action-class tool runs in chat mode
// only (a credential without a mode is in chat), whatever the policy said,
// and a tool without action classes is not held back.
func TestActionClassFallbackFailsClosed(t *testing.T) {
	cat, err := tools.LoadCCServer()
	if err != nil {
		t.Fatal(err)
	}
	const raw = `{"workspace_id":"ws-a","action":"screenshot"}`
	call := func(f *fixture, mode, tool string) error {
		p := *f.p
		p.Mode = mode
		var args map[string]any
		_ = json.Unmarshal([]byte(raw), &args)
		_, err := f.pl.CallTool(context.Background(), &p, &gateway.CallRequest{Name: tool, Arguments: args, RawArguments: json.RawMessage(raw)})
		return err
	}
	for _, mode := range []string{"plan", "review", "orchestrate", "Chat", "weird"} {
		t.Run(mode, func(t *testing.T) {
			f := newFixture(t)
			f.pl.Catalog, f.pl.Decider, f.pl.RateLimits = cat, decider{}, nil // allows every tool; cc_server limits are not under test
			err := call(f, mode, "computer_use")
			if gateway.ErrorCodeOf(err) != gateway.EForbidden || !hasReason(err, "action.read_only_mode") {
				t.Fatalf("computer_use in %s mode under an allow-all bundle: %v, want refused (action.read_only_mode)", mode, err)
			}
			if n := f.up.calls.Load(); n != 0 {
				t.Fatalf("the upstream got %d calls, want none", n)
			}
			if ev := lastAudit(t, f); ev.Status == gateway.AuditAllowed {
				t.Errorf("audit row %+v, want a refusal", ev)
			}
		})
	}
	for _, mode := range []string{"chat", ""} {
		f := newFixture(t)
		f.pl.Catalog, f.pl.Decider, f.pl.RateLimits = cat, decider{}, nil
		if err := call(f, mode, "computer_use"); err != nil || f.up.calls.Load() != 1 {
			t.Errorf("computer_use in mode %q: %v after %d calls, want it run once", mode, err, f.up.calls.Load())
		}
	}
}
