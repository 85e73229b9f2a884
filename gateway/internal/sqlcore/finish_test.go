package sqlcore

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
)

// fakeFlush records the batches it gets; each flush waits for release
// (when non-nil) and answers with answer (nil: every row found).
type fakeFlush struct {
	mu      sync.Mutex
	batches [][]int64
	started chan struct{} // a flush began (buffered)
	release chan struct{}
	answer  func(evs []*gateway.AuditEvent) ([]error, error)
}

func newFake() *fakeFlush {
	return &fakeFlush{started: make(chan struct{}, 100)}
}

func (f *fakeFlush) flush(ctx context.Context, evs []*gateway.AuditEvent) ([]error, error) {
	ids := make([]int64, len(evs))
	for i, ev := range evs {
		ids[i] = ev.ID
	}
	f.mu.Lock()
	f.batches = append(f.batches, ids)
	f.mu.Unlock()
	f.started <- struct{}{}
	if f.release != nil {
		<-f.release
	}
	if f.answer != nil {
		return f.answer(evs)
	}
	return make([]error, len(evs)), nil
}

func (f *fakeFlush) got() [][]int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.batches)
}

// queued waits until fin holds n queued finishes.
func queued(t *testing.T, fin *finisher, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		fin.mu.Lock()
		l := len(fin.queue)
		fin.mu.Unlock()
		if l == n {
			return
		}
	}
	t.Fatalf("queue did not reach %d finishes", n)
}

func TestFinisherLoneFinishGoesAtOnce(t *testing.T) {
	f := newFake()
	fin := newFinisher(f.flush)
	if err := fin.Do(context.Background(), &gateway.AuditEvent{ID: 1}); err != nil {
		t.Fatal(err)
	}
	if got := f.got(); !slices.EqualFunc(got, [][]int64{{1}}, slices.Equal) {
		t.Fatalf("batches %v, want [[1]]", got)
	}
}

// While one batch is being written, the finishes that arrive queue and go
// together in the next, and each caller waits for its own batch.
func TestFinisherGroupsWhileAFlushRuns(t *testing.T) {
	f := newFake()
	f.release = make(chan struct{})
	fin := newFinisher(f.flush)
	results := make(chan error, 10)
	go func() { results <- fin.Do(context.Background(), &gateway.AuditEvent{ID: 1}) }()
	<-f.started
	for i := 2; i <= 6; i++ {
		go func() { results <- fin.Do(context.Background(), &gateway.AuditEvent{ID: int64(i)}) }()
	}
	queued(t, fin, 5)
	select {
	case err := <-results:
		t.Fatalf("a finish returned (%v) before its batch was written", err)
	default:
	}
	f.release <- struct{}{} // the first batch commits
	if err := <-results; err != nil {
		t.Fatal(err)
	}
	<-f.started
	select {
	case err := <-results:
		t.Fatalf("a queued finish returned (%v) before its batch was written", err)
	case <-time.After(20 * time.Millisecond):
	}
	f.release <- struct{}{}
	for range 5 {
		if err := <-results; err != nil {
			t.Fatal(err)
		}
	}
	got := f.got()
	if len(got) != 2 || len(got[1]) != 5 {
		t.Fatalf("batches %v, want [[1] [the other five]]", got)
	}
	slices.Sort(got[1])
	if !slices.Equal(got[1], []int64{2, 3, 4, 5, 6}) {
		t.Fatalf("second batch %v", got[1])
	}
}

func TestFinisherBatchIsBounded(t *testing.T) {
	f := newFake()
	f.release = make(chan struct{})
	fin := newFinisher(f.flush)
	var wg sync.WaitGroup
	wg.Go(func() { _ = fin.Do(context.Background(), &gateway.AuditEvent{ID: 1}) })
	<-f.started
	n := MaxFinishBatch + 10
	for i := range n {
		wg.Go(func() { _ = fin.Do(context.Background(), &gateway.AuditEvent{ID: int64(i + 2)}) })
	}
	queued(t, fin, n)
	close(f.release)
	wg.Wait()
	got := f.got()
	if len(got) != 3 || len(got[1]) != MaxFinishBatch || len(got[2]) != 10 {
		t.Fatalf("batch sizes %d, want 1, %d, 10", len(got), MaxFinishBatch)
	}
}

// A row's own error reaches its caller only; an error of the whole batch
// (an unreachable database) reaches every caller of the batch; another
// batch error makes each row be tried alone.
func TestFinisherErrors(t *testing.T) {
	notFound := gateway.Errorf(gateway.ENotFound, "no row")
	down := gateway.Errorf(gateway.EUnavailable, "down")
	broken := gateway.Errorf(gateway.EInternal, "broken")
	for _, tc := range []struct {
		name   string
		answer func(evs []*gateway.AuditEvent) ([]error, error)
		want   map[int64]gateway.ErrorCode
	}{
		{"row", func(evs []*gateway.AuditEvent) ([]error, error) {
			errs := make([]error, len(evs))
			for i, ev := range evs {
				if ev.ID == 3 {
					errs[i] = notFound
				}
			}
			return errs, nil
		}, map[int64]gateway.ErrorCode{1: "", 2: "", 3: gateway.ENotFound, 4: ""}},
		{"unavailable", func(evs []*gateway.AuditEvent) ([]error, error) {
			if len(evs) == 1 && evs[0].ID == 1 {
				return []error{nil}, nil
			}
			return nil, down
		}, map[int64]gateway.ErrorCode{1: "", 2: gateway.EUnavailable, 3: gateway.EUnavailable, 4: gateway.EUnavailable}},
		{"one bad row fails the batch", func(evs []*gateway.AuditEvent) ([]error, error) {
			for _, ev := range evs {
				if ev.ID == 2 {
					return nil, broken
				}
			}
			return make([]error, len(evs)), nil
		}, map[int64]gateway.ErrorCode{1: "", 2: gateway.EInternal, 3: "", 4: ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			f.release = make(chan struct{})
			f.answer = tc.answer
			fin := newFinisher(f.flush)
			var mu sync.Mutex
			got := map[int64]gateway.ErrorCode{}
			var wg sync.WaitGroup
			run := func(id int64) {
				err := fin.Do(context.Background(), &gateway.AuditEvent{ID: id})
				mu.Lock()
				got[id] = gateway.ErrorCodeOf(err)
				mu.Unlock()
			}
			wg.Go(func() { run(1) })
			<-f.started
			for id := int64(2); id <= 4; id++ {
				wg.Go(func() { run(id) })
			}
			queued(t, fin, 3)
			close(f.release)
			wg.Wait()
			for id, code := range tc.want {
				if got[id] != code {
					t.Errorf("finish %d: %q, want %q (all: %v)", id, got[id], code, got)
				}
			}
		})
	}
}

// A caller whose deadline passes while its row is still queued gets
// EUnavailable, and its row is not written.
func TestFinisherDeadlineWhileQueued(t *testing.T) {
	f := newFake()
	f.release = make(chan struct{})
	fin := newFinisher(f.flush)
	first := make(chan error, 1)
	go func() { first <- fin.Do(context.Background(), &gateway.AuditEvent{ID: 1}) }()
	<-f.started
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := fin.Do(ctx, &gateway.AuditEvent{ID: 2})
	if gateway.ErrorCodeOf(err) != gateway.EUnavailable {
		t.Fatalf("finish past its deadline: %v, want EUnavailable", err)
	}
	close(f.release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	fin.Close()
	if got := f.got(); len(got) != 1 {
		t.Fatalf("batches %v: the abandoned row must not be written", got)
	}
}

// Close waits for the batch being written and for the queued finishes,
// then refuses new ones.
func TestFinisherCloseDrains(t *testing.T) {
	f := newFake()
	f.release = make(chan struct{})
	fin := newFinisher(f.flush)
	results := make(chan error, 4)
	go func() { results <- fin.Do(context.Background(), &gateway.AuditEvent{ID: 1}) }()
	<-f.started
	for id := int64(2); id <= 4; id++ {
		go func() { results <- fin.Do(context.Background(), &gateway.AuditEvent{ID: id}) }()
	}
	queued(t, fin, 3)
	closed := make(chan struct{})
	go func() { fin.Close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("close returned while a batch was being written")
	case <-time.After(20 * time.Millisecond):
	}
	close(f.release)
	<-closed
	for range 4 {
		if err := <-results; err != nil {
			t.Fatalf("a finish queued before close: %v", err)
		}
	}
	if got := f.got(); len(got) != 2 || len(got[1]) != 3 {
		t.Fatalf("batches %v, want the queued three written before close returned", got)
	}
	if err := fin.Do(context.Background(), &gateway.AuditEvent{ID: 5}); gateway.ErrorCodeOf(err) != gateway.EUnavailable {
		t.Fatalf("finish after close: %v, want EUnavailable", err)
	}
}

// With waitTaken (Reserve's group), a caller whose deadline passes while
// its batch is being written waits for the batch and gets its outcome, so
// that it knows whether its row was written; without it, it returns
// EUnavailable at once.
func TestGroupWaitTaken(t *testing.T) {
	for _, wait := range []bool{false, true} {
		f := newFake()
		f.release = make(chan struct{})
		g := newFinisher(f.flush)
		g.waitTaken = wait
		first := make(chan error, 1)
		go func() { first <- g.Do(context.Background(), &gateway.AuditEvent{ID: 1}) }()
		<-f.started
		// The caller's context ends only once its batch is being written:
		// a timer could expire before it is queued on a loaded machine.
		ctx, cancel := context.WithCancel(context.Background())
		second := make(chan error, 1)
		go func() { second <- g.Do(ctx, &gateway.AuditEvent{ID: 2}) }()
		queued(t, g, 1)
		f.release <- struct{}{} // batch [1] commits; [2] is taken next
		<-f.started
		cancel()   // its context ends while [2] is being written
		if !wait { // returns at once, while its batch is still being written
			if err := <-second; gateway.ErrorCodeOf(err) != gateway.EUnavailable {
				t.Fatalf("without waitTaken: %v during its batch, want EUnavailable", err)
			}
		} else {
			time.Sleep(40 * time.Millisecond)
			select {
			case err := <-second:
				t.Fatalf("waitTaken: returned %v before its batch was written", err)
			default:
			}
		}
		close(f.release)
		if wait {
			if err := <-second; err != nil {
				t.Fatalf("waitTaken: %v, want the batch's outcome (nil)", err)
			}
		}
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		g.Close()
	}
}
