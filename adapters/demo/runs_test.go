package demo

import (
	"testing"
)

func sequences(t *testing.T, out map[string]any) []int {
	t.Helper()
	var seqs []int
	for _, e := range out["events"].([]any) {
		seqs = append(seqs, int(e.(map[string]any)["sequence"].(float64)))
	}
	return seqs
}

// TestRunEventsPagination pages through a run's log (run.events, docs/requirements.md#tiers:
// after_sequence / limit / tail).
func TestRunEventsPagination(t *testing.T) {
	b := newTestBackend()
	fx := fixtures(t, b, "ws-a")
	total := int(get(mustOK(t, call(t, b, "ws-a", "", "run.get", map[string]any{"run_id": fx.longRun})), "run", "event_count").(float64))
	if total < 200 {
		t.Fatalf("long run has %d events; the test needs more than 200", total)
	}
	tests := []struct {
		name             string
		args             map[string]any
		wantFirst, wantN int
		wantNext         int
		wantMore         bool
	}{
		{"default page", map[string]any{}, 1, 100, 100, true},
		{"second page", map[string]any{"after_sequence": 100.0}, 101, 100, 200, true},
		{"small limit", map[string]any{"after_sequence": 7.0, "limit": 3.0}, 8, 3, 10, true},
		{"last page", map[string]any{"after_sequence": 200.0, "limit": 500.0}, 201, total - 200, total, false},
		{"tail", map[string]any{"tail": true, "limit": 5.0}, total - 4, 5, total, false},
		{"tail after sequence", map[string]any{"tail": true, "after_sequence": float64(total - 2), "limit": 5.0}, total - 1, 2, total, false},
		{"past the end", map[string]any{"after_sequence": float64(total + 10)}, 0, 0, total + 10, false},
		{"limit clamped to 500", map[string]any{"limit": 10000.0}, 1, min(total, 500), min(total, 500), total > 500},
		{"limit clamped to 1", map[string]any{"limit": 0.0}, 1, 1, 1, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := map[string]any{"run_id": fx.longRun}
			for k, v := range tc.args {
				args[k] = v
			}
			out := mustOK(t, call(t, b, "ws-a", "", "run.events", args))
			seqs := sequences(t, out)
			if len(seqs) != tc.wantN {
				t.Fatalf("got %d events, want %d", len(seqs), tc.wantN)
			}
			for i, s := range seqs {
				if s != tc.wantFirst+i {
					t.Fatalf("events %v are not consecutive from %d", seqs, tc.wantFirst)
				}
			}
			if got := int(out["next_after_sequence"].(float64)); got != tc.wantNext {
				t.Errorf("next_after_sequence = %d, want %d", got, tc.wantNext)
			}
			if out["has_more"] != tc.wantMore {
				t.Errorf("has_more = %v, want %v", out["has_more"], tc.wantMore)
			}
		})
	}
}

// TestRunEventsWalk follows next_after_sequence until has_more is false and
// sees every event exactly once.
func TestRunEventsWalk(t *testing.T) {
	b := newTestBackend()
	fx := fixtures(t, b, "ws-a")
	var all []int
	after := 0.0
	for page := 0; ; page++ {
		if page > 100 {
			t.Fatal("pagination does not end")
		}
		out := mustOK(t, call(t, b, "ws-a", "", "run.events", map[string]any{"run_id": fx.longRun, "after_sequence": after, "limit": 37.0}))
		all = append(all, sequences(t, out)...)
		after = out["next_after_sequence"].(float64)
		if out["has_more"] == false {
			break
		}
	}
	for i, s := range all {
		if s != i+1 {
			t.Fatalf("walk saw %v; want 1..%d once each", all, len(all))
		}
	}
}

// TestWorkflowRunTimeline checks the per-node step timeline of a failed
// run and the rerun of its failed stop-policy node.
func TestWorkflowRunTimeline(t *testing.T) {
	b := newTestBackend()
	fx := fixtures(t, b, "ws-a")
	out := mustOK(t, call(t, b, "ws-a", "", "run.events", map[string]any{"run_id": fx.failedRun}))
	types := map[string]bool{}
	for _, e := range out["events"].([]any) {
		types[e.(map[string]any)["type"].(string)] = true
	}
	for _, want := range []string{"workflow_node_started", "workflow_node_completed", "workflow_node_failed", "workflow_node_skipped"} {
		if !types[want] {
			t.Errorf("failed run's timeline lacks %s (has %v)", want, types)
		}
	}
	rerun := mustOK(t, call(t, b, "ws-a", "", "run.rerun_node", map[string]any{"run_id": fx.failedRun, "node_id": fx.failedNode}))
	if rerun["run_status"] != "running" || rerun["superseded_run_id"] == "" {
		t.Errorf("rerun answered %v", rerun)
	}
	tree := mustOK(t, call(t, b, "ws-a", "", "run.get", map[string]any{"run_id": fx.failedRun}))
	superseded := false
	for _, d := range tree["descendants"].([]any) {
		if d.(map[string]any)["superseded_by"] == rerun["node_run_id"] {
			superseded = true
		}
	}
	if !superseded {
		t.Error("the failed node run is not marked superseded by the rerun")
	}
	mustRefuse(t, call(t, b, "ws-a", "", "run.rerun_node", map[string]any{"run_id": fx.failedRun, "node_id": fx.failedNode}),
		"only a failed or cancelled node can be re-run")
}

func TestRunRerunNodeRefusals(t *testing.T) {
	b := newTestBackend()
	fx := fixtures(t, b, "ws-a")
	w := b.workspace("ws-a")
	loopRun := find(w.runs, func(rn *run) bool { return rn.WorkflowID == w.workflows[2].ID && rn.ParentRunID == "" })
	tests := []struct {
		name string
		args map[string]any
		want string
	}{
		{"agent run", map[string]any{"run_id": fx.longRun, "node_id": "n1"}, "not a top-level workflow run"},
		{"unknown node", map[string]any{"run_id": fx.failedRun, "node_id": "n99"}, "has no node n99"},
		{"continue-policy node", map[string]any{"run_id": fx.failedRun, "node_id": "n4"}, "continue failure policy"},
		{"loop frame", map[string]any{"run_id": loopRun.ID, "node_id": "n2"}, "loop frame"},
		{"node inside a loop", map[string]any{"run_id": loopRun.ID, "node_id": "n3"}, "inside loop n2"},
		{"completed node", map[string]any{"run_id": fx.failedRun, "node_id": "n1"}, "is completed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mustRefuse(t, call(t, b, "ws-a", "", "run.rerun_node", tc.args), tc.want)
		})
	}
}
