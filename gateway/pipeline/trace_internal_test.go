package pipeline

import "testing"

// Every step named in spannedSteps is a step of callSteps, so renaming a
// step cannot silently drop its span.
func TestSpannedStepsAreSteps(t *testing.T) {
	n := 0
	for _, on := range spanSteps() {
		if on {
			n++
		}
	}
	if n != len(spannedSteps) {
		t.Fatalf("%d of spannedSteps %v are steps of callSteps (%v); want all", n, spannedSteps, stepNames())
	}
}
