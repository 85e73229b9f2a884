package pipeline_test

import (
	"context"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/policy"
)

// recordingDecider answers like decider and keeps the arguments of the
// last decision it was asked for.
type recordingDecider struct {
	decider
	seen map[string]any
}

func (d *recordingDecider) Decide(ctx context.Context, p *gateway.Principal, c *gateway.Caller, tool policy.ToolRef, args map[string]any) (*gateway.Decision, error) {
	d.seen = args
	return d.decider.Decide(ctx, p, c, tool, args)
}

// TestOversizedArgumentNeverReachesPolicy: the policy runs before the
// arguments are validated, but an argument longer than the tool's schema
// allows (here a 1 MiB script.run slug, maxLength 128) must not reach the
// policy input. A caller the policy denies gets the plain denial, which
// names no schema detail; a caller it allows gets the schema error.
func TestOversizedArgumentNeverReachesPolicy(t *testing.T) {
	huge := strings.Repeat("s", 1<<20)
	for _, tc := range []struct {
		note   string
		deny   bool
		code   gateway.ErrorCode
		status string
		msg    string
	}{
		{note: "denied caller gets the denial", deny: true, code: gateway.EForbidden, status: gateway.AuditDenied, msg: "no grant"},
		{note: "allowed caller gets the schema error", code: gateway.EInvalid, status: gateway.AuditError, msg: "/slug: must be at most 128 characters long"},
	} {
		t.Run(tc.note, func(t *testing.T) {
			f := newFixture(t)
			rec := &recordingDecider{decider: decider{deny: map[string]bool{"script.run": tc.deny}}}
			f.pl.Decider = rec
			args := map[string]any{"slug": huge, "inputs": map[string]any{"a": "b"}}
			err := f.call("t1", "script.run", args)
			if gateway.ErrorCodeOf(err) != tc.code || !strings.Contains(gateway.ErrorMessageOf(err), tc.msg) {
				t.Fatalf("error %v, want %s containing %q", err, tc.code, tc.msg)
			}
			if tc.deny && strings.Contains(gateway.ErrorMessageOf(err), "128") {
				t.Errorf("the denial names the schema's limit: %v", err)
			}
			if rec.seen == nil {
				t.Fatal("the policy was not asked")
			}
			if s, ok := rec.seen["slug"].(string); ok && len(s) > 128 {
				t.Errorf("the policy input held a %d-byte slug, longer than the schema's 128 characters", len(s))
			}
			if _, ok := rec.seen["inputs"]; !ok {
				t.Error("an argument within its schema's bounds was dropped from the policy input")
			}
			if len(args["slug"].(string)) != len(huge) {
				t.Error("the caller's arguments were changed")
			}
			if ev := f.last(t); ev.Status != tc.status {
				t.Errorf("audit status %q, want %q", ev.Status, tc.status)
			}
			if f.up.calls.Load() != 0 {
				t.Error("the call was dispatched")
			}
		})
	}
}
