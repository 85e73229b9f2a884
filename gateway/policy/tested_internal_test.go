package policy

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestTestedBundlesRunOnceAtATime: loads of one content hash at once run
// its tests once and share the pass; a failure is shared too and not
// kept; a run whose context ended is run again by the next; the set
// forgets its oldest pass past its bound. Run with -race.
func TestTestedBundlesRunOnceAtATime(t *testing.T) {
	tb := NewTestedBundles(2)
	var runs atomic.Int32
	release := make(chan struct{})
	slow := func() (int, error) { runs.Add(1); <-release; return 5, nil }
	var wg sync.WaitGroup
	results := make([]int, 8)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, _, err := tb.run(context.Background(), "h1", slow)
			if err != nil {
				t.Error(err)
			}
			results[i] = n
		}()
	}
	time.Sleep(50 * time.Millisecond)
	close(release)
	wg.Wait()
	if runs.Load() != 1 {
		t.Errorf("%d runs of one bundle's tests, want 1", runs.Load())
	}
	for i, n := range results {
		if n != 5 {
			t.Errorf("load %d: %d tests, want 5", i, n)
		}
	}
	if n, cached, err := tb.run(context.Background(), "h1", slow); n != 5 || !cached || err != nil || runs.Load() != 1 {
		t.Errorf("h1 again: %d %v %v after %d runs, want the pass cached", n, cached, err, runs.Load())
	}

	fail := errors.New("test_x: FAIL")
	if _, _, err := tb.run(context.Background(), "h2", func() (int, error) { return 0, fail }); !errors.Is(err, fail) {
		t.Errorf("failing run: %v", err)
	}
	if _, ok := tb.Passed("h2"); ok {
		t.Error("a failed bundle is kept as passed")
	}

	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	go func() {
		_, _, _ = tb.run(ctx, "h3", func() (int, error) { close(started); <-ctx.Done(); return 0, ctx.Err() })
	}()
	<-started
	done := make(chan error, 1)
	go func() {
		_, _, err := tb.run(context.Background(), "h3", func() (int, error) { return 3, nil })
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Errorf("after a cancelled run of the same bundle: %v, want its own run to pass", err)
	}
	if _, _, err := tb.run(context.Background(), "h4", func() (int, error) { return 1, nil }); err != nil {
		t.Fatal(err)
	}
	if _, ok := tb.Passed("h1"); ok {
		t.Error("h1 still kept after two newer passes (h3, h4) in a set of 2")
	}
	if _, ok := tb.Passed("h3"); !ok {
		t.Error("h3 not kept")
	}
}
