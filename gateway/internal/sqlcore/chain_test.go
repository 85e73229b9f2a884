package sqlcore

import (
	"slices"
	"testing"
	"time"
)

// TestOpenLooks: the sealer looks at the open rows on its first round,
// then once per quarter of the open bound, and a row seen open on looks
// a bound apart is stale; with a bound shorter than a round every round
// looks (the store tests' SetSealOpenAfter(time.Nanosecond)).
func TestOpenLooks(t *testing.T) {
	var st sealState
	t0 := time.Date(2026, 12, 5, 8, 0, 0, 0, time.UTC)
	if !st.lookDue(t0) {
		t.Fatal("the first round does not look at the open rows")
	}
	if stale := st.saw([]int64{1, 2}, t0); len(stale) != 0 {
		t.Fatalf("rows seen open for the first time are stale: %v", stale)
	}
	if st.lookDue(t0.Add(time.Second)) {
		t.Error("a round a second after a look looks again (the default bound is an hour)")
	}
	quarter := DefaultSealOpenAfter / openLooks
	if !st.lookDue(t0.Add(quarter)) {
		t.Errorf("no look %v after the last one", quarter)
	}
	if stale := st.saw([]int64{2, 3}, t0.Add(quarter)); len(stale) != 0 {
		t.Fatalf("stale after a quarter of the bound: %v", stale)
	}
	// Row 1 finished (not seen again); row 2 is still open a bound after
	// it was first seen, row 3 only a bound less a quarter.
	if stale := st.saw([]int64{2, 3}, t0.Add(DefaultSealOpenAfter)); !slices.Equal(stale, []int64{2}) {
		t.Fatalf("stale = %v, want [2]", stale)
	}

	st.openAfter = time.Nanosecond
	now := t0.Add(DefaultSealOpenAfter)
	if !st.lookDue(now) {
		t.Fatal("with a bound of 1ns a round right after a look does not look")
	}
	if stale := st.saw([]int64{3}, now.Add(time.Millisecond)); !slices.Equal(stale, []int64{3}) {
		t.Fatalf("stale = %v with a bound of 1ns, want [3]", stale)
	}
}
