package decisionlog

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestDecisionLogMaskCoversDerivedResourceID: input.resource.id is a copy
// of the call argument the tool's catalog entry names (a cc_server
// ticket_id): it is logged only when that argument itself is, so a mask
// that erases the argument (or an input the policy never read it into)
// erases the copy too; an argument the operator opted in keeps it.
func TestDecisionLogMaskCoversDerivedResourceID(t *testing.T) {
	for _, tc := range []struct {
		note   string
		rules  []any
		input  string
		want   string
		erased []string
	}{
		{note: "the argument erased", rules: []any{"/input/arguments/ticket_id"},
			input:  `{"arguments":{"ticket_id":"T-secret"},"resource":{"kind":"ticket","id":"T-secret"}}`,
			want:   `{"arguments":{},"resource":{"kind":"ticket"}}`,
			erased: []string{"/input/arguments/ticket_id", "/input/resource/id"}},
		{note: "every argument erased", rules: []any{"/input/arguments"},
			input:  `{"arguments":{"ticket_id":"T-secret"},"resource":{"kind":"ticket","id":"T-secret"}}`,
			want:   `{"resource":{"kind":"ticket"}}`,
			erased: []string{"/input/arguments", "/input/resource/id"}},
		{note: "the argument never in the input", rules: []any{},
			input:  `{"arguments":{},"resource":{"kind":"ticket","id":"T-secret","gate_class":"g"}}`,
			want:   `{"arguments":{},"resource":{"kind":"ticket","gate_class":"g"}}`,
			erased: []string{"/input/resource/id"}},
		{note: "the argument masked, not erased", rules: []any{map[string]any{"op": "upsert", "path": "/input/arguments/ticket_id", "value": "[masked]"}},
			input:  `{"arguments":{"ticket_id":"T-secret"},"resource":{"kind":"ticket","id":"T-secret"}}`,
			want:   `{"arguments":{"ticket_id":"[masked]"},"resource":{"kind":"ticket"}}`,
			erased: []string{"/input/resource/id"}},
		{note: "the argument opted in", rules: []any{},
			input: `{"arguments":{"ticket_id":"T-1"},"resource":{"kind":"ticket","id":"T-1"}}`,
			want:  `{"arguments":{"ticket_id":"T-1"},"resource":{"kind":"ticket","id":"T-1"}}`},
	} {
		t.Run(tc.note, func(t *testing.T) {
			var in, want any
			if err := json.Unmarshal([]byte(tc.input), &in); err != nil {
				t.Fatal(err)
			}
			_ = json.Unmarshal([]byte(tc.want), &want)
			ev := Event{Input: in}
			applyMask(&ev, mustParse(t, tc.rules))
			if !reflect.DeepEqual(ev.Input, want) {
				t.Errorf("logged input %v, want %v", ev.Input, want)
			}
			if !reflect.DeepEqual(ev.Erased, tc.erased) {
				t.Errorf("erased %q, want %q", ev.Erased, tc.erased)
			}
		})
	}
}
