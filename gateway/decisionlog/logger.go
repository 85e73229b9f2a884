package decisionlog

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Stats counts what happens to events; *metrics.Metrics implements it
// (mcpgate_decision_log_dropped_total{reason}, _sent_total{sink},
// _failed_total{sink}). Its methods must be cheap and safe for concurrent
// use: DecisionLogDropped is called on the request path.
type Stats interface {
	// DecisionLogDropped counts n events dropped for reason (Drop…).
	DecisionLogDropped(reason string, n int)
	// DecisionLogSent counts n events a sink ("file", "http") delivered.
	DecisionLogSent(sink string, n int)
	// DecisionLogFailed counts one failed write or upload of a sink.
	DecisionLogFailed(sink string)
}

// Reasons an event is dropped (mcpgate_decision_log_dropped_total{reason}).
const (
	DropBufferFull     = "buffer_full"      // the event queue was full: the logger falls behind
	DropClosed         = "closed"           // logged after Close
	DropMaskFailed     = "mask_failed"      // the mask rule failed or is malformed: never logged unmasked
	DropEncodeFailed   = "encode_failed"    // the event is not JSON
	DropTooLarge       = "too_large"        // one event larger than the HTTP sink's buffer
	DropFileFailed     = "file_failed"      // the file sink could not write it
	DropHTTPBufferFull = "http_buffer_full" // the HTTP sink's buffer was full: the oldest event made room
	DropHTTPRejected   = "http_rejected"    // the service refused the batch (a 4xx other than 408 and 429)
	DropShutdown       = "shutdown"         // still buffered when Close's deadline passed
)

// Sinks, as they appear in the sent and failed counters.
const (
	SinkFile = "file"
	SinkHTTP = "http"
)

// Defaults of Options.
const (
	DefaultBufferEvents = 10000
	DefaultBufferBytes  = 32 << 20
	DefaultUploadBytes  = 32 << 10
	DefaultInterval     = 5 * time.Second
	maskTimeout         = time.Second
)

// Options configure New. At least one of File and URL must be set.
type Options struct {
	// File is the path of the JSONL sink (MCPGATE_DECISION_LOG_FILE),
	// opened for appending; "" turns it off.
	File string
	// URL is the OPA-compatible service (MCPGATE_DECISION_LOG_URL), as in
	// OPA's services[].url: events are POSTed to URL + "/logs"; "" turns
	// the HTTP sink off.
	URL string
	// Masker evaluates data.system.log.mask for every event (required).
	Masker Masker
	// Stats counts dropped, sent and failed events; nil counts nothing.
	Stats Stats
	// Log receives sink failures (rate-limited to one line per sink and
	// kind per minute); nil logs nothing.
	Log *zap.Logger
	// Version is the "version" label of every event.
	Version string
	// BufferEvents bounds the events waiting to be masked and written
	// (MCPGATE_DECISION_LOG_BUFFER_EVENTS, default DefaultBufferEvents);
	// beyond it Log drops (DropBufferFull).
	BufferEvents int
	// BufferBytes bounds the encoded events the HTTP sink holds for upload
	// (MCPGATE_DECISION_LOG_BUFFER_BYTES, default DefaultBufferBytes);
	// beyond it the oldest are dropped (DropHTTPBufferFull).
	BufferBytes int64
	// UploadBytes is the most bytes of events (uncompressed) in one POST
	// (default DefaultUploadBytes, OPA's upload_size_limit_bytes); a
	// batch goes as soon as this much is buffered.
	UploadBytes int
	// Interval is the longest an event waits for its upload
	// (MCPGATE_DECISION_LOG_INTERVAL, default DefaultInterval).
	Interval time.Duration
	// MaxBackoff bounds the wait between retries of a failed upload
	// (default 30 s); the first retry waits 100 ms, doubling.
	MaxBackoff time.Duration
	// Client uploads the batches; nil means a client with a 10 s timeout.
	Client *http.Client
	// Now is the clock of event timestamps; nil means time.Now.
	Now func() time.Time
}

// Logger masks and writes decision-log events in the background. Log never
// blocks: an event that finds the queue full is dropped and counted. It is
// safe for concurrent use.
type Logger struct {
	masker Masker
	stats  Stats
	log    *zap.Logger
	labels map[string]string
	now    func() time.Time

	mu     sync.RWMutex // guards closed against Log's send
	closed bool
	queue  chan Event
	quit   chan struct{} // closed by Close: drain the queue and stop
	abort  chan struct{} // closed when Close's deadline passed: stop draining
	done   chan struct{} // closed when run has returned

	warnMu   sync.Mutex
	lastWarn map[string]time.Time

	file *fileSink
	http *httpSink
}

// New opens the sinks opts names and starts the logger.
func New(opts Options) (*Logger, error) {
	if opts.File == "" && opts.URL == "" {
		return nil, errors.New("decision log: neither a file nor a URL is configured")
	}
	if opts.Masker == nil {
		return nil, errors.New("decision log: no mask policy given; events are never logged unmasked")
	}
	if opts.BufferEvents <= 0 {
		opts.BufferEvents = DefaultBufferEvents
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Log == nil {
		opts.Log = zap.NewNop()
	}
	l := &Logger{
		masker: opts.Masker, stats: opts.Stats, log: opts.Log, now: opts.Now,
		labels: map[string]string{"id": instanceID(), "version": opts.Version, "app": "mcpgate"},
		queue:  make(chan Event, opts.BufferEvents), quit: make(chan struct{}), abort: make(chan struct{}), done: make(chan struct{}),
		lastWarn: map[string]time.Time{},
	}
	if l.stats == nil {
		l.stats = noStats{}
	}
	if opts.File != "" {
		f, err := openFileSink(opts.File, l)
		if err != nil {
			return nil, err
		}
		l.file = f
	}
	if opts.URL != "" {
		h, err := newHTTPSink(opts, l)
		if err != nil {
			if l.file != nil {
				_ = l.file.close()
			}
			return nil, err
		}
		l.http = h
	}
	go l.run()
	return l, nil
}

// Log queues ev for masking and writing and returns at once; when the
// queue is full, or the logger closed, ev is dropped and counted.
func (l *Logger) Log(ev Event) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		l.stats.DecisionLogDropped(DropClosed, 1)
		return
	}
	select {
	case l.queue <- ev:
	default:
		l.stats.DecisionLogDropped(DropBufferFull, 1)
	}
}

// run masks, encodes and hands every queued event to the sinks; the file
// is flushed whenever the queue runs empty.
func (l *Logger) run() {
	defer close(l.done)
	for {
		select {
		case ev := <-l.queue:
			l.process(ev)
			if len(l.queue) == 0 && l.file != nil {
				l.file.flush()
			}
		case <-l.quit:
			for {
				select {
				case <-l.abort:
					if n := len(l.queue); n > 0 {
						l.stats.DecisionLogDropped(DropShutdown, n)
					}
					return
				default:
				}
				select {
				case ev := <-l.queue:
					l.process(ev)
				default:
					if l.file != nil {
						l.file.flush()
					}
					return
				}
			}
		}
	}
}

// process masks ev with the policy and writes it to every sink. An event
// whose mask fails is dropped: it is never written unmasked.
func (l *Logger) process(ev Event) {
	ctx, cancel := context.WithTimeout(context.Background(), maskTimeout)
	rules, err := l.masker.Mask(ctx, ev.maskInput())
	cancel()
	var ops []maskOp
	if err == nil {
		ops, err = parseMask(rules)
	}
	if err != nil {
		l.stats.DecisionLogDropped(DropMaskFailed, 1)
		l.warn("mask", "decision log event dropped: the mask policy (data.system.log.mask) failed, and events are never logged unmasked; fix the rule (opa test policies/system)",
			zap.String("decision_id", ev.DecisionID), zap.Error(err))
		return
	}
	applyMask(&ev, ops)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&ev); err != nil {
		l.stats.DecisionLogDropped(DropEncodeFailed, 1)
		l.warn("encode", "decision log event dropped: it cannot be encoded as JSON", zap.String("decision_id", ev.DecisionID), zap.Error(err))
		return
	}
	line := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if l.file != nil {
		l.file.write(line)
	}
	if l.http != nil {
		l.http.add(line)
	}
}

// Close stops taking events, masks and writes those queued, and flushes
// the sinks, giving up at ctx's deadline: events still buffered then are
// dropped (DropShutdown) and Close returns an error saying how many.
func (l *Logger) Close(ctx context.Context) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.mu.Unlock()
	close(l.quit)
	var errs []error
	select {
	case <-l.done:
	case <-ctx.Done():
		// The worker finishes the event it holds; what is queued is dropped.
		close(l.abort)
		<-l.done
	}
	if l.http != nil {
		errs = append(errs, l.http.close(ctx))
	}
	if l.file != nil {
		errs = append(errs, l.file.close())
	}
	return errors.Join(errs...)
}

// warn logs a sink problem at most once a minute per kind.
func (l *Logger) warn(kind, msg string, fields ...zap.Field) {
	l.warnMu.Lock()
	last, now := l.lastWarn[kind], time.Now()
	if now.Sub(last) < time.Minute {
		l.warnMu.Unlock()
		return
	}
	l.lastWarn[kind] = now
	l.warnMu.Unlock()
	l.log.Warn(msg, fields...)
}

func instanceID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return fmt.Sprintf("%s-%s-%s-%s-%s", h[:8], h[8:12], h[12:16], h[16:20], h[20:])
}

type noStats struct{}

func (noStats) DecisionLogDropped(string, int) {}
func (noStats) DecisionLogSent(string, int)    {}
func (noStats) DecisionLogFailed(string)       {}
