package sqlcore

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
)

// groupReq is one call waiting for its batch.
type groupReq[T any] struct {
	item     T
	deadline time.Time // zero: none
	err      error
	done     chan struct{} // closed when err is final
}

// groupMsgs is what a group says when a call cannot wait for its batch;
// each gets the item's description (groupOf.what).
type groupMsgs struct {
	closed   string // the store is closed; nothing was written
	queued   string // the deadline passed in the queue; nothing was written
	inFlight string // the deadline passed during the commit; it may be written
}

// Group is a group commit: a caller queues its item; when no flush is
// running it becomes the flusher and applies the queue at once (a lone
// item waits for nothing), otherwise its item goes in the next batch,
// which is flushed as soon as the running one has committed. Each caller
// returns when the transaction holding its item has committed (or
// failed); the items that arrive while a commit is under way share the
// next commit instead of taking one each. The stores' FinishAudit
// (NewFinisher) and Reserve (NewReserver) use it.
type Group[T any] struct {
	// flush applies items in one transaction and returns each one's own
	// error, or the error of the whole batch.
	flush func(ctx context.Context, items []T) ([]error, error)
	// what describes an item for the messages of msgs.
	what func(T) string
	msgs groupMsgs
	// max is the most items one flush gets.
	max int
	// waitTaken makes a caller whose deadline passes after its item was
	// taken into a batch wait for that batch's outcome (bounded by the
	// latest deadline of the batch's callers) instead of returning at
	// once, so that it learns whether its item was written.
	waitTaken bool

	mu      sync.Mutex
	queue   []*groupReq[T]
	running bool       // a flusher owns the queue
	closed  bool       // close was called: no new items
	idle    *sync.Cond // signalled when running becomes false
}

func newGroup[T any](max int, flush func(ctx context.Context, items []T) ([]error, error), what func(T) string, msgs groupMsgs) *Group[T] {
	g := &Group[T]{flush: flush, what: what, msgs: msgs, max: max}
	g.idle = sync.NewCond(&g.mu)
	return g
}

// Do queues item and returns the outcome of the transaction that wrote
// it. When ctx ends first it returns EUnavailable: before the item was
// taken into a batch, nothing was written; after, the batch may still
// commit it (unless waitTaken).
func (g *Group[T]) Do(ctx context.Context, item T) error {
	req := &groupReq[T]{item: item, done: make(chan struct{})}
	req.deadline, _ = ctx.Deadline()
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return gateway.Errorf(gateway.EUnavailable, "%s", g.msgf(g.msgs.closed, item))
	}
	g.queue = append(g.queue, req)
	lead := !g.running
	g.running = true
	g.mu.Unlock()
	if lead {
		// This caller flushes the first batch itself (its own item is in
		// it); any items queued meanwhile are flushed by a goroutine, so
		// this caller returns as soon as its own batch has committed.
		if g.flushNext() {
			go func() {
				for g.flushNext() {
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
	g.mu.Lock()
	for i, r := range g.queue {
		if r == req {
			g.queue = append(g.queue[:i], g.queue[i+1:]...)
			g.mu.Unlock()
			return gateway.Wrap(gateway.EUnavailable, ctx.Err(), g.msgf(g.msgs.queued, item))
		}
	}
	g.mu.Unlock()
	if g.waitTaken {
		<-req.done
		return req.err
	}
	return gateway.Wrap(gateway.EUnavailable, ctx.Err(), g.msgf(g.msgs.inFlight, item))
}

func (g *Group[T]) msgf(format string, item T) string { return fmt.Sprintf(format, g.what(item)) }

// flushNext takes up to max queued items, applies them in one
// transaction and tells each caller its outcome. It reports whether items
// are queued still; when none are, the flusher's role ends (running is
// cleared) under the same lock, so a caller queuing after that leads.
func (g *Group[T]) flushNext() bool {
	g.mu.Lock()
	n := min(len(g.queue), g.max)
	batch := make([]*groupReq[T], n)
	copy(batch, g.queue)
	g.queue = append(g.queue[:0], g.queue[n:]...)
	g.mu.Unlock()

	if n > 0 {
		g.apply(batch)
	}

	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.queue) > 0 {
		return true
	}
	g.running = false
	g.idle.Broadcast()
	return false
}

// apply writes batch in one transaction and closes each request's done.
// When the batch fails for a reason other than an unreachable database,
// each item is tried again on its own, so that one item's error reaches
// its own caller only.
func (g *Group[T]) apply(batch []*groupReq[T]) {
	errs, err := g.write(batch)
	if err != nil && len(batch) > 1 && gateway.ErrorCodeOf(err) != gateway.EUnavailable {
		for _, r := range batch {
			errs, err := g.write([]*groupReq[T]{r})
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
// that no caller's item fails for another's shorter deadline (each
// caller still stops waiting at its own); a caller without a deadline
// leaves the bound to the store.
func (g *Group[T]) write(batch []*groupReq[T]) ([]error, error) {
	items := make([]T, len(batch))
	var deadline time.Time
	bounded := true
	for i, r := range batch {
		items[i] = r.item
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
	errs, err := g.flush(ctx, items)
	if err == nil && len(errs) != len(items) {
		err = gateway.Errorf(gateway.EInternal, "audit store wrote %d of a batch of %d", len(errs), len(items))
	}
	return errs, err
}

// Close refuses new items and waits until the queued ones have been
// flushed.
func (g *Group[T]) Close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	for g.running {
		g.idle.Wait()
	}
}
