package sqlcore

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
)

// MaxFinishBatch is the most audit rows one group commit of FinishAudit
// completes (Dialect.FinishBatch gets at most this many).
const MaxFinishBatch = 64

// finishReq is one FinishAudit call waiting for its batch.
type finishReq struct {
	ev       *gateway.AuditEvent
	deadline time.Time // zero: none
	err      error
	done     chan struct{} // closed when err is final
}

// finisher is the group commit of FinishAudit. A caller queues its row;
// when no flush is running it becomes the flusher and applies the queue
// at once (a lone finish waits for nothing), otherwise its row goes in
// the next batch, which is flushed as soon as the running one has
// committed. Each caller returns when the transaction holding its row has
// committed (or failed), so the final status is written before the call's
// reply, as before; what changes is that the finishes that arrive while a
// commit is under way share the next commit instead of taking one each.
type finisher struct {
	flush func(ctx context.Context, evs []*gateway.AuditEvent) ([]error, error)

	mu      sync.Mutex
	queue   []*finishReq
	running bool       // a flusher owns the queue
	closed  bool       // Close was called: no new finishes
	idle    *sync.Cond // signalled when running becomes false
}

func newFinisher(flush func(ctx context.Context, evs []*gateway.AuditEvent) ([]error, error)) *finisher {
	f := &finisher{flush: flush}
	f.idle = sync.NewCond(&f.mu)
	return f
}

// finish queues ev and returns the outcome of the transaction that wrote
// it. When ctx ends first it returns EUnavailable: before the row was
// taken into a batch, nothing was written; after, the batch may still
// commit it.
func (f *finisher) finish(ctx context.Context, ev *gateway.AuditEvent) error {
	req := &finishReq{ev: ev, done: make(chan struct{})}
	req.deadline, _ = ctx.Deadline()
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return gateway.Errorf(gateway.EUnavailable, "audit store closed; audit event %d was not finished", ev.ID)
	}
	f.queue = append(f.queue, req)
	lead := !f.running
	f.running = true
	f.mu.Unlock()
	if lead {
		// This caller flushes the first batch itself (its own row is in
		// it); any rows queued meanwhile are flushed by a goroutine, so
		// this caller returns as soon as its own batch has committed.
		if f.flushNext() {
			go func() {
				for f.flushNext() {
				}
			}()
		}
		<-req.done
		return req.err
	}
	select {
	case <-req.done:
		return req.err
	case <-ctx.Done():
	}
	f.mu.Lock()
	for i, r := range f.queue {
		if r == req {
			f.queue = append(f.queue[:i], f.queue[i+1:]...)
			f.mu.Unlock()
			return gateway.Wrap(gateway.EUnavailable, ctx.Err(),
				"audit store busy: audit event "+strconv.FormatInt(ev.ID, 10)+" was not finished before the deadline")
		}
	}
	f.mu.Unlock()
	return gateway.Wrap(gateway.EUnavailable, ctx.Err(),
		"audit store slow: the commit finishing audit event "+strconv.FormatInt(ev.ID, 10)+
			" did not end before the deadline; it may still be written")
}

// flushNext takes up to MaxFinishBatch queued rows, applies them in one
// transaction and tells each caller its outcome. It reports whether rows
// are queued still; when none are, the flusher's role ends (running is
// cleared) under the same lock, so a caller queuing after that leads.
func (f *finisher) flushNext() bool {
	f.mu.Lock()
	n := min(len(f.queue), MaxFinishBatch)
	batch := make([]*finishReq, n)
	copy(batch, f.queue)
	f.queue = append(f.queue[:0], f.queue[n:]...)
	f.mu.Unlock()

	if n > 0 {
		f.apply(batch)
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.queue) > 0 {
		return true
	}
	f.running = false
	f.idle.Broadcast()
	return false
}

// apply writes batch in one transaction and closes each request's done.
// When the batch fails for a reason other than an unreachable database,
// each row is tried again on its own, so that one row's error reaches its
// own caller only.
func (f *finisher) apply(batch []*finishReq) {
	errs, err := f.write(batch)
	if err != nil && len(batch) > 1 && gateway.ErrorCodeOf(err) != gateway.EUnavailable {
		for _, r := range batch {
			errs, err := f.write([]*finishReq{r})
			r.err = err
			if err == nil {
				r.err = errs[0]
			}
			close(r.done)
		}
		return
	}
	for i, r := range batch {
		r.err = err
		if err == nil {
			r.err = errs[i]
		}
		close(r.done)
	}
}

// write runs flush for batch until the latest deadline of its callers, so
// that no caller's finish fails for another's shorter deadline (each
// caller still stops waiting at its own); a caller without a deadline
// leaves the bound to the store.
func (f *finisher) write(batch []*finishReq) ([]error, error) {
	evs := make([]*gateway.AuditEvent, len(batch))
	var deadline time.Time
	bounded := true
	for i, r := range batch {
		evs[i] = r.ev
		bounded = bounded && !r.deadline.IsZero()
		if r.deadline.After(deadline) {
			deadline = r.deadline
		}
	}
	ctx := context.Background()
	if bounded {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	errs, err := f.flush(ctx, evs)
	if err == nil && len(errs) != len(evs) {
		err = gateway.Errorf(gateway.EInternal, "audit store finished %d of a batch of %d audit events", len(errs), len(evs))
	}
	return errs, err
}

// close refuses new finishes and waits until the queued ones have been
// flushed.
func (f *finisher) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	for f.running {
		f.idle.Wait()
	}
}
