package decisionlog

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"
)

// LogsResource is the path below the service URL that OPA's decision log
// plugin uploads to (its decision_logs.resource default).
const LogsResource = "/logs"

// httpSink uploads events the way OPA's decision log plugin does: POST
// <service>/logs with a gzip-compressed JSON array of events
// (Content-Type: application/json, Content-Encoding: gzip), in batches of
// at most uploadBytes, at least every interval. A failed upload is retried
// with exponential backoff; meanwhile events wait in a buffer of at most
// maxBytes, which drops its oldest events to make room.
type httpSink struct {
	l           *Logger
	endpoint    string
	shown       string // endpoint without its password, for logs
	client      *http.Client
	userAgent   string
	uploadBytes int
	maxBytes    int64
	interval    time.Duration
	maxBackoff  time.Duration

	mu    sync.Mutex
	buf   [][]byte
	bytes int64

	kick   chan struct{} // a batch is full
	quit   chan struct{}
	done   chan struct{}
	ctx    context.Context // of the background uploads; cancelled by close
	cancel context.CancelFunc
}

func newHTTPSink(opts Options, l *Logger) (*httpSink, error) {
	u, err := url.Parse(opts.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("MCPGATE_DECISION_LOG_URL: want the http:// or https:// URL of an OPA-compatible decision log service (events go to its /logs)")
	}
	s := &httpSink{
		l: l, endpoint: u.JoinPath(LogsResource).String(), shown: u.JoinPath(LogsResource).Redacted(),
		client: opts.Client, userAgent: "mcpgate/" + opts.Version,
		uploadBytes: opts.UploadBytes, maxBytes: opts.BufferBytes, interval: opts.Interval, maxBackoff: opts.MaxBackoff,
		kick: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{}),
	}
	if s.client == nil {
		s.client = &http.Client{Timeout: 10 * time.Second}
	}
	if s.uploadBytes <= 0 {
		s.uploadBytes = DefaultUploadBytes
	}
	if s.maxBytes <= 0 {
		s.maxBytes = DefaultBufferBytes
	}
	if s.interval <= 0 {
		s.interval = DefaultInterval
	}
	if s.maxBackoff <= 0 {
		s.maxBackoff = 30 * time.Second
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	go s.run()
	return s, nil
}

// add buffers one encoded event, dropping the oldest when the buffer is
// full, and starts an upload once a batch is full.
func (s *httpSink) add(line []byte) {
	if int64(len(line)) > s.maxBytes {
		s.l.stats.DecisionLogDropped(DropTooLarge, 1)
		return
	}
	s.mu.Lock()
	dropped := s.trimFor(int64(len(line)))
	s.buf = append(s.buf, line)
	s.bytes += int64(len(line))
	full := s.bytes >= int64(s.uploadBytes)
	s.mu.Unlock()
	if dropped > 0 {
		s.l.stats.DecisionLogDropped(DropHTTPBufferFull, dropped)
	}
	if full {
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
}

// trimFor drops the oldest events until n more bytes fit; s.mu is held.
func (s *httpSink) trimFor(n int64) int {
	dropped := 0
	for len(s.buf) > 0 && s.bytes+n > s.maxBytes {
		s.bytes -= int64(len(s.buf[0]))
		s.buf[0] = nil
		s.buf = s.buf[1:]
		dropped++
	}
	return dropped
}

// run uploads what is buffered every interval, or as soon as a batch is
// full, until close.
func (s *httpSink) run() {
	defer close(s.done)
	timer := time.NewTimer(s.interval)
	defer timer.Stop()
	for {
		select {
		case <-s.quit:
			return
		case <-timer.C:
		case <-s.kick:
		}
		if !s.drain(s.ctx, s.quit) {
			return
		}
		timer.Reset(s.interval)
	}
}

// drain uploads batches until the buffer is empty, waiting with
// exponential backoff after each failure. It returns false when stop was
// closed or ctx ended first.
func (s *httpSink) drain(ctx context.Context, stop <-chan struct{}) bool {
	backoff := time.Duration(0)
	for {
		sent, empty := s.uploadOne(ctx)
		if empty {
			return true
		}
		if sent {
			backoff = 0
			continue
		}
		backoff = min(max(2*backoff, 100*time.Millisecond), s.maxBackoff)
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-stop:
			t.Stop()
			return false
		case <-ctx.Done():
			t.Stop()
			return false
		}
	}
}

// uploadOne takes the oldest batch out of the buffer and POSTs it. On a
// failure worth retrying the batch goes back to the front (sent false); a
// batch the service refuses for good is dropped (DropHTTPRejected).
func (s *httpSink) uploadOne(ctx context.Context) (sent, empty bool) {
	s.mu.Lock()
	if len(s.buf) == 0 {
		s.mu.Unlock()
		return true, true
	}
	n, size := 0, 2
	for n < len(s.buf) && (n == 0 || size+len(s.buf[n])+1 <= s.uploadBytes) {
		size += len(s.buf[n]) + 1
		n++
	}
	batch := slices.Clone(s.buf[:n])
	var batchBytes int64
	for i := range n {
		batchBytes += int64(len(s.buf[i]))
		s.buf[i] = nil
	}
	s.buf = s.buf[n:]
	s.bytes -= batchBytes
	s.mu.Unlock()

	status, err := s.post(ctx, batch)
	switch {
	case err == nil && status/100 == 2:
		s.l.stats.DecisionLogSent(SinkHTTP, len(batch))
		return true, false
	case err == nil && status/100 == 4 && status != http.StatusRequestTimeout && status != http.StatusTooManyRequests:
		s.l.stats.DecisionLogFailed(SinkHTTP)
		s.l.stats.DecisionLogDropped(DropHTTPRejected, len(batch))
		s.l.warn("http-rejected", "decision log batch dropped: the service refused it", zap.String("url", s.shown), zap.Int("status", status), zap.Int("events", len(batch)))
		return true, false
	}
	s.l.stats.DecisionLogFailed(SinkHTTP)
	if err == nil {
		err = fmt.Errorf("HTTP status %d", status)
	}
	s.l.warn("http", "decision log upload failed; retrying with backoff, events stay buffered up to MCPGATE_DECISION_LOG_BUFFER_BYTES", zap.String("url", s.shown), zap.Error(err))
	s.requeue(batch)
	return false, false
}

// requeue puts a batch that failed back at the front of the buffer,
// dropping the oldest events when it no longer fits.
func (s *httpSink) requeue(batch [][]byte) {
	s.mu.Lock()
	var n int64
	for _, b := range batch {
		n += int64(len(b))
	}
	s.buf = append(batch, s.buf...)
	s.bytes += n
	dropped := s.trimFor(0)
	s.mu.Unlock()
	if dropped > 0 {
		s.l.stats.DecisionLogDropped(DropHTTPBufferFull, dropped)
	}
}

// post sends one batch as a gzip-compressed JSON array.
func (s *httpSink) post(ctx context.Context, batch [][]byte) (int, error) {
	var body bytes.Buffer
	zw := gzip.NewWriter(&body)
	_, _ = zw.Write([]byte{'['})
	for i, ev := range batch {
		if i > 0 {
			_, _ = zw.Write([]byte{','})
		}
		_, _ = zw.Write(ev)
	}
	_, _ = zw.Write([]byte{']'})
	if err := zw.Close(); err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.endpoint, &body)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Content-Encoding", "gzip")
	req.Header.Set("User-Agent", s.userAgent)
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// close stops the background uploads and sends what is buffered, until
// ctx ends; what is left then is dropped (DropShutdown).
func (s *httpSink) close(ctx context.Context) error {
	close(s.quit)
	select {
	case <-s.done:
	case <-ctx.Done():
		s.cancel()
		<-s.done
	}
	defer s.cancel()
	s.drain(ctx, nil)
	s.mu.Lock()
	left := len(s.buf)
	s.buf, s.bytes = nil, 0
	s.mu.Unlock()
	if left > 0 {
		s.l.stats.DecisionLogDropped(DropShutdown, left)
		return fmt.Errorf("decision log: %d events not uploaded to %s before the shutdown deadline", left, s.shown)
	}
	return nil
}
