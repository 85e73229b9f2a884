package pipeline_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
)

// decisionRecorder records what the pipeline tells the decision log.
type decisionRecorder struct {
	mu    sync.Mutex
	calls []loggedDecision
}

type loggedDecision struct {
	id, tool string
	allow    bool
	input    any
	reasons  []gateway.Reason
}

func (r *decisionRecorder) LogDecision(_ context.Context, d *gateway.Decision, input any, tool, _ string, _ time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, loggedDecision{id: d.ID, tool: tool, allow: d.Allow, input: input, reasons: d.Reasons})
}

// Every tools/call the policy decides is logged once, allowed or denied,
// with the decision id of its audit row; a call refused before the
// decision (unknown tool) has no decision to log.
func TestDecisionLogOncePerDecision(t *testing.T) {
	f := newFixture(t)
	rec := &decisionRecorder{}
	f.pl.DecisionLog = rec
	_ = f.call("t1", "schedule.pause", pause)
	first := f.last(t)
	_ = f.call("t1", "app.pause", map[string]any{"app_id": "a1"}) // denied by policy
	_ = f.call("t1", "no.such.tool", nil)
	if len(rec.calls) != 2 {
		t.Fatalf("logged %d decisions, want 2: %+v", len(rec.calls), rec.calls)
	}
	if c := rec.calls[0]; c.tool != "schedule.pause" || !c.allow || c.id == "" || c.id != first.DecisionID {
		t.Errorf("first logged %+v, want schedule.pause allowed with the audit row's decision id %q", c, first.DecisionID)
	}
	if c := rec.calls[1]; c.tool != "app.pause" || c.allow {
		t.Errorf("second logged %+v, want app.pause denied", c)
	}
}
