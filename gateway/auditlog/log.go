// Package auditlog writes the audit events besides tool calls (docs/operations.md,
// "Audit trail": refused credentials, methods refused before policy, admin and
// console writes, API tokens, approval, upstream and policy decisions)
// off the request path, through a bounded queue, and bounds a flood of
// refused credentials per source and minute.
//
// Recording never blocks and never fails its caller: Record puts the
// event on a bounded queue and returns; Run writes the queue in batches
// (store.AuditLog.RecordEvents, one transaction each). What a crash can
// lose is what was queued and not committed yet (at most one flush
// interval's worth, FlushEvery); nothing committed is lost, and every
// committed row is sealed into the chain like a call's. Events that find
// the queue full are counted, and the count is written as one row of the
// kind they had (tool "audit.dropped"), so a loss shows in the trail.
package auditlog

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/mcpgate/mcpgate/gateway"
)

// Writer is what the log needs of a store (store.AuditLog).
type Writer interface {
	// RecordEvents inserts evs in one transaction, all or none.
	RecordEvents(ctx context.Context, evs []*gateway.AuditEvent) error
}

// Defaults of Options.
const (
	// DefaultQueue is how many events wait for Run at most.
	DefaultQueue = 4096
	// DefaultBatch is how many events one transaction writes at most.
	DefaultBatch = 256
	// FlushEvery is how often Run writes what is queued.
	FlushEvery = 100 * time.Millisecond
	// DefaultPerSource is how many refused credentials of one source a
	// minute are written one row each; the rest of that minute is one
	// aggregated row per source.
	DefaultPerSource = 10
	// DefaultSources is how many sources a minute are tracked one by one;
	// beyond, refusals count in one row for all other sources.
	DefaultSources = 1000
)

// Options tune a Log; zero fields take the defaults above.
type Options struct {
	Queue, Batch, PerSource, Sources int
	// Failed is told each failed write (the batch is tried again at the
	// next flush); nil ignores them.
	Failed func(error)
	// Now is the clock (tests); nil is time.Now.
	Now func() time.Time
	// Tracer, when traces are on, records each refusal the Log is told
	// of before a call's span exists (a refused credential, a method not
	// served) as a server span of its own, whose trace the refusal's row
	// names (refusalSpan); nil: no spans.
	Tracer trace.Tracer
}

// Log is the bounded, asynchronous writer of audit events. Its methods
// are safe for concurrent use; Run must be running for events to reach
// the store.
type Log struct {
	w    Writer
	opt  Options
	q    chan *gateway.AuditEvent
	mu   sync.Mutex
	drop map[string]int64 // kind -> events the full queue refused
	fl   flood
}

// New returns a Log writing to w.
func New(w Writer, opt Options) *Log {
	if opt.Queue <= 0 {
		opt.Queue = DefaultQueue
	}
	if opt.Batch <= 0 {
		opt.Batch = DefaultBatch
	}
	if opt.PerSource <= 0 {
		opt.PerSource = DefaultPerSource
	}
	if opt.Sources <= 0 {
		opt.Sources = DefaultSources
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Failed == nil {
		opt.Failed = func(error) {}
	}
	return &Log{w: w, opt: opt, q: make(chan *gateway.AuditEvent, opt.Queue), drop: map[string]int64{}}
}

// Record queues ev (of a kind other than tool_call) and returns at once;
// a zero Time is set to now. When the queue is full, ev is counted, not
// queued (see the package doc). Record is nil-safe, so that a surface
// without a log records nothing.
func (l *Log) Record(ev *gateway.AuditEvent) {
	if l == nil {
		return
	}
	if ev.Time.IsZero() {
		ev.Time = l.opt.Now()
	}
	select {
	case l.q <- ev:
	default:
		l.mu.Lock()
		l.drop[ev.Kind]++
		l.mu.Unlock()
	}
}

// writeTimeout bounds one flush's writes.
const writeTimeout = 5 * time.Second

// Run writes the queued events every FlushEvery, and the aggregated rows
// of each minute of refused credentials once it is over, until ctx ends;
// then it writes what is left (with a bounded wait) and returns.
func (l *Log) Run(ctx context.Context) {
	tick := time.NewTicker(FlushEvery)
	defer tick.Stop()
	var pending []*gateway.AuditEvent
	for {
		select {
		case <-ctx.Done():
			end, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			pending = l.collect(pending, true)
			l.write(end, pending)
			cancel()
			return
		case <-tick.C:
			// Bounded: a database that stops answering must not hold the
			// writer (and what it holds) forever; the events stay pending.
			wctx, cancel := context.WithTimeout(ctx, writeTimeout)
			pending = l.write(wctx, l.collect(pending, false))
			cancel()
		}
	}
}

// collect appends to pending the queued events, the drop counts and the
// aggregated rows of the minutes that ended (all of them when final).
func (l *Log) collect(pending []*gateway.AuditEvent, final bool) []*gateway.AuditEvent {
	for len(pending) < l.opt.Queue {
		select {
		case ev := <-l.q:
			pending = append(pending, ev)
			continue
		default:
		}
		break
	}
	now := l.opt.Now()
	l.mu.Lock()
	for kind, n := range l.drop {
		args, _ := json.Marshal(map[string]int64{"dropped": n})
		pending = append(pending, &gateway.AuditEvent{Kind: kind, Tool: "audit.dropped", Time: now,
			Status: gateway.AuditError, ReasonCodes: []string{"audit.queue_full"}, Arguments: args})
	}
	clear(l.drop)
	l.mu.Unlock()
	return append(pending, l.fl.ended(now, final)...)
}

// write writes pending in batches and returns what it could not write
// (kept for the next flush, at most a queue's worth: the oldest beyond
// are counted as dropped).
func (l *Log) write(ctx context.Context, pending []*gateway.AuditEvent) []*gateway.AuditEvent {
	for len(pending) > 0 {
		n := min(len(pending), l.opt.Batch)
		if err := l.w.RecordEvents(ctx, pending[:n]); err != nil {
			l.opt.Failed(err)
			if over := len(pending) - l.opt.Queue; over > 0 {
				l.mu.Lock()
				for _, ev := range pending[:over] {
					l.drop[ev.Kind]++
				}
				l.mu.Unlock()
				pending = pending[over:]
			}
			return pending
		}
		pending = pending[n:]
	}
	return pending[:0]
}
