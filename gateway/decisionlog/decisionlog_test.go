package decisionlog

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/plugins/logs"

	"github.com/mcpgate/mcpgate/gateway"
)

var update = flag.Bool("update", false, "rewrite testdata/event.golden.json")

// stats counts what the logger reports, by reason or sink.
type stats struct {
	mu                    sync.Mutex
	dropped, sent, failed map[string]int
}

func newStats() *stats {
	return &stats{dropped: map[string]int{}, sent: map[string]int{}, failed: map[string]int{}}
}

func (s *stats) DecisionLogDropped(r string, n int) { s.mu.Lock(); s.dropped[r] += n; s.mu.Unlock() }
func (s *stats) DecisionLogSent(k string, n int)    { s.mu.Lock(); s.sent[k] += n; s.mu.Unlock() }
func (s *stats) DecisionLogFailed(k string)         { s.mu.Lock(); s.failed[k]++; s.mu.Unlock() }

func (s *stats) get(m *map[string]int, k string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return (*m)[k]
}

// maskFunc is a Masker from a function.
type maskFunc func(ctx context.Context, ev map[string]any) (any, error)

func (f maskFunc) Mask(ctx context.Context, ev map[string]any) (any, error) { return f(ctx, ev) }

// eraseToken erases /input/arguments/token, as a mask policy would.
var eraseToken = maskFunc(func(context.Context, map[string]any) (any, error) {
	return []any{"/input/arguments/token"}, nil
})

var when = time.Date(2026, 12, 1, 9, 30, 0, 123456000, time.UTC)

func decision() *gateway.Decision {
	return &gateway.Decision{ID: "4ca636c1", Allow: false, Visible: true, Tier: gateway.TierOps,
		Reasons:     []gateway.Reason{{Code: "tier.not_granted", Message: "tool project.delete needs supacloud.ops.*"}},
		Obligations: gateway.Obligations{Redact: []string{"budget_remaining"}}}
}

func input() map[string]any {
	return map[string]any{
		"principal": map[string]any{"kind": "agent", "sub": "alice", "workspace_id": "ws-1"},
		"tool":      map[string]any{"name": "project.delete", "tier": "ops", "carve_out": false},
		"arguments": map[string]any{"token": "eyJhbGciOiJIUzI1NiJ9.e30.sig", "id": json.Number("12345678901234567890")},
	}
}

func newLogger(t *testing.T, opts Options) (*Logger, *stats) {
	t.Helper()
	st := newStats()
	opts.Stats = st
	if opts.Masker == nil {
		opts.Masker = eraseToken
	}
	opts.Version = "test"
	opts.Now = func() time.Time { return when }
	l, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return l, st
}

// TestEventFormat checks an event against OPA's own event type: every
// field mcpgate writes decodes into logs.EventV1 under the same name (no
// unknown field), and the result re-encodes to the same JSON. The golden
// file shows the whole event.
func TestEventFormat(t *testing.T) {
	l := &Logger{labels: map[string]string{"id": "1780d507-aea2-45cc-ae50-fa153c8e4a5a", "version": "v1.2.3", "app": "mcpgate"},
		now: func() time.Time { return when }}
	var got Event
	l.queue = make(chan Event, 1)
	l.stats = noStats{}
	ctx := gateway.WithRequestID(context.Background(), "req-7")
	l.LogDecision(ctx, decision(), input(), "project.delete", "sha256:abc", 1500*time.Microsecond)
	got = <-l.queue
	applyMask(&got, mustParse(t, []any{"/input/arguments/token", map[string]any{"op": "upsert", "path": "/input/principal/sub", "value": "[masked]"}}))
	raw, err := json.MarshalIndent(&got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "event.golden.json")
	if *update {
		if err := os.WriteFile(golden, append(raw, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bytes.TrimSpace(raw), bytes.TrimSpace(want)) {
		t.Errorf("event:\n%s\nwant (testdata/event.golden.json, go test -update to rewrite):\n%s", raw, want)
	}

	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	var opa logs.EventV1
	if err := dec.Decode(&opa); err != nil {
		t.Fatalf("not an OPA decision log event: %v", err)
	}
	again, err := json.Marshal(&opa)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	_ = json.Unmarshal(raw, &a)
	_ = json.Unmarshal(again, &b)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("OPA's EventV1 re-encodes the event differently:\nours %s\nOPA's %s", raw, again)
	}
	for _, field := range []string{"decision_id", "path", "input", "result", "bundles", "timestamp", "metrics", "labels", "erased", "masked"} {
		if _, ok := a.(map[string]any)[field]; !ok {
			t.Errorf("event lacks OPA's field %q", field)
		}
	}
}

func mustParse(t *testing.T, rules any) []maskOp {
	t.Helper()
	ops, err := parseMask(rules)
	if err != nil {
		t.Fatal(err)
	}
	return ops
}

func TestMaskSemantics(t *testing.T) {
	for _, tc := range []struct {
		note           string
		rules          any
		input          string // JSON
		want           string // JSON of the input after masking; "" for none
		erased, masked []string
	}{
		{note: "remove a member", rules: []any{"/input/a/b"}, input: `{"a":{"b":1,"c":2}}`, want: `{"a":{"c":2}}`, erased: []string{"/input/a/b"}},
		{note: "remove an array element", rules: []any{"/input/a/1"}, input: `{"a":[1,2,3]}`, want: `{"a":[1,3]}`, erased: []string{"/input/a/1"}},
		{note: "remove a nested array element", rules: []any{"/input/a/0/1"}, input: `{"a":[[1,2,3]]}`, want: `{"a":[[1,3]]}`, erased: []string{"/input/a/0/1"}},
		{note: "remove what is not there: skipped, not recorded", rules: []any{"/input/x/y", "/input/a/9"}, input: `{"a":[1]}`, want: `{"a":[1]}`},
		{note: "remove the whole input", rules: []any{"/input"}, input: `{"a":1}`, want: "", erased: []string{"/input"}},
		{note: "remove as an object", rules: []any{map[string]any{"op": "remove", "path": "/input/a"}}, input: `{"a":1,"b":2}`, want: `{"b":2}`, erased: []string{"/input/a"}},
		{note: "upsert creates the objects on the way", rules: []any{map[string]any{"op": "upsert", "path": "/input/x/y", "value": "v"}}, input: `{}`, want: `{"x":{"y":"v"}}`, masked: []string{"/input/x/y"}},
		{note: "upsert replaces a value", rules: []any{map[string]any{"op": "upsert", "path": "/input/a/0", "value": "***"}}, input: `{"a":["secret"]}`, want: `{"a":["***"]}`, masked: []string{"/input/a/0"}},
		{note: "upsert through a string: skipped", rules: []any{map[string]any{"op": "upsert", "path": "/input/a/b", "value": 1}}, input: `{"a":"s"}`, want: `{"a":"s"}`},
		{note: "percent-escaped key", rules: []any{"/input/a%2Fb"}, input: `{"a/b":1,"a":{"b":2}}`, want: `{"a":{"b":2}}`, erased: []string{"/input/a%2Fb"}},
		{note: "in order: remove then upsert", rules: []any{"/input/a", map[string]any{"op": "upsert", "path": "/input/a", "value": "v"}}, input: `{"a":1}`, want: `{"a":"v"}`, erased: []string{"/input/a"}, masked: []string{"/input/a"}},
	} {
		t.Run(tc.note, func(t *testing.T) {
			var in any
			if err := json.Unmarshal([]byte(tc.input), &in); err != nil {
				t.Fatal(err)
			}
			ev := Event{Input: in, Result: map[string]any{"allow": true}}
			applyMask(&ev, mustParse(t, tc.rules))
			if tc.want == "" {
				if ev.Input != nil {
					t.Errorf("input %v, want erased", ev.Input)
				}
			} else {
				var want any
				_ = json.Unmarshal([]byte(tc.want), &want)
				if !reflect.DeepEqual(ev.Input, want) {
					t.Errorf("input %v, want %v", ev.Input, want)
				}
			}
			if !reflect.DeepEqual(ev.Erased, tc.erased) || !reflect.DeepEqual(ev.Masked, tc.masked) {
				t.Errorf("erased %q masked %q, want %q and %q", ev.Erased, ev.Masked, tc.erased, tc.masked)
			}
		})
	}
	for _, bad := range []any{
		"/input/a", // not a set
		[]any{"input/a"},
		[]any{"/labels/id"},
		[]any{map[string]any{"op": "erase", "path": "/input/a"}},
		[]any{map[string]any{"path": "/input/a"}},
		[]any{map[string]any{"op": "upsert", "path": 7}},
		[]any{json.Number("1")},
		[]any{"/input/%zz"},
	} {
		if _, err := parseMask(bad); err == nil {
			t.Errorf("mask %v accepted; OPA refuses it", bad)
		}
	}
}

func readLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

func TestFileSink(t *testing.T) {
	path := filepath.Join(t.TempDir(), "decisions.jsonl")
	for round, n := range []int{3, 1} { // the second logger appends
		l, st := newLogger(t, Options{File: path})
		for range n {
			l.LogDecision(context.Background(), decision(), input(), "project.delete", "", time.Millisecond)
		}
		if err := l.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := st.get(&st.sent, SinkFile); got != n {
			t.Errorf("round %d: sent %d, want %d", round, got, n)
		}
	}
	lines := readLines(t, path)
	if len(lines) != 4 {
		t.Fatalf("%d lines, want 4 (3 + 1 appended)", len(lines))
	}
	for _, ev := range lines {
		args := ev["input"].(map[string]any)["arguments"].(map[string]any)
		if _, ok := args["token"]; ok {
			t.Errorf("the mask did not erase the token: %v", ev)
		}
		if args["id"] != 12345678901234567890.0 || !strings.Contains(ev["erased"].([]any)[0].(string), "token") {
			t.Errorf("event %v", ev)
		}
	}
	raw, _ := os.ReadFile(path)
	if !strings.Contains(string(raw), `"id":12345678901234567890`) {
		t.Errorf("a number lost digits: %s", raw)
	}
}

func TestMaskFailureDropsTheEvent(t *testing.T) {
	for name, m := range map[string]Masker{
		"error":     maskFunc(func(context.Context, map[string]any) (any, error) { return nil, errors.New("eval_conflict_error") }),
		"malformed": maskFunc(func(context.Context, map[string]any) (any, error) { return []any{"/secret"}, nil }),
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "d.jsonl")
			l, st := newLogger(t, Options{File: path, Masker: m})
			l.LogDecision(context.Background(), decision(), input(), "project.delete", "", 0)
			_ = l.Close(context.Background())
			raw, _ := os.ReadFile(path)
			if len(raw) != 0 || st.get(&st.dropped, DropMaskFailed) != 1 {
				t.Errorf("file %q, dropped %v; want nothing written, one mask_failed drop", raw, st.dropped)
			}
		})
	}
}

// collector is an OPA-style decision log service.
type collector struct {
	mu      sync.Mutex
	events  []map[string]any
	batches int
	fail    atomic.Int32 // answer this many requests 503 first
	status  atomic.Int32 // when non-zero, answer every request with it
	bad     []string
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.Method != http.MethodPost || r.URL.Path != "/v1/logs" || r.Header.Get("Content-Encoding") != "gzip" || r.Header.Get("Content-Type") != "application/json" {
		c.bad = append(c.bad, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Encoding")+" "+r.Header.Get("Content-Type"))
	}
	if s := c.status.Load(); s != 0 {
		w.WriteHeader(int(s))
		return
	}
	if c.fail.Load() > 0 {
		c.fail.Add(-1)
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	zr, err := gzip.NewReader(r.Body)
	if err != nil {
		c.bad = append(c.bad, "not gzip: "+err.Error())
		w.WriteHeader(400)
		return
	}
	raw, _ := io.ReadAll(zr)
	var batch []map[string]any
	if err := json.Unmarshal(raw, &batch); err != nil {
		c.bad = append(c.bad, "not a JSON array: "+err.Error())
		w.WriteHeader(400)
		return
	}
	c.events = append(c.events, batch...)
	c.batches++
	w.WriteHeader(http.StatusNoContent)
}

func (c *collector) count() (events, batches int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.events), c.batches
}

func logN(l *Logger, n int) {
	for i := range n {
		d := decision()
		d.ID = fmt.Sprintf("d%04d", i)
		l.LogDecision(context.Background(), d, input(), "project.delete", "", 0)
	}
}

func TestHTTPSinkBatchesGzip(t *testing.T) {
	c := &collector{}
	srv := httptest.NewServer(c)
	defer srv.Close()
	l, st := newLogger(t, Options{URL: srv.URL + "/v1", UploadBytes: 2048, Interval: time.Hour})
	logN(l, 40)
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	events, batches := c.count()
	if events != 40 || st.get(&st.sent, SinkHTTP) != 40 {
		t.Fatalf("collector got %d events, sent %d; want 40", events, st.get(&st.sent, SinkHTTP))
	}
	if batches < 5 {
		t.Errorf("%d batches of at most 2 KiB for 40 events of ~500 bytes; want several", batches)
	}
	if len(c.bad) > 0 {
		t.Errorf("requests not as OPA sends them: %q", c.bad)
	}
	for _, ev := range c.events {
		if _, ok := ev["input"].(map[string]any)["arguments"].(map[string]any)["token"]; ok {
			t.Fatalf("unmasked event uploaded: %v", ev)
		}
	}
}

func TestHTTPSinkInterval(t *testing.T) {
	c := &collector{}
	srv := httptest.NewServer(c)
	defer srv.Close()
	l, _ := newLogger(t, Options{URL: srv.URL + "/v1", Interval: 20 * time.Millisecond})
	defer l.Close(context.Background())
	logN(l, 2)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if n, _ := c.count(); n == 2 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("events not uploaded within the interval")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestHTTPSinkRetries(t *testing.T) {
	c := &collector{}
	c.fail.Store(3)
	srv := httptest.NewServer(c)
	defer srv.Close()
	l, st := newLogger(t, Options{URL: srv.URL + "/v1", Interval: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
	logN(l, 5)
	deadline := time.Now().Add(5 * time.Second)
	for n, _ := c.count(); n < 5 && time.Now().Before(deadline); n, _ = c.count() {
		time.Sleep(5 * time.Millisecond)
	}
	_ = l.Close(context.Background())
	if n, _ := c.count(); n != 5 {
		t.Fatalf("collector got %d events after 3 failures, want all 5", n)
	}
	if f := st.get(&st.failed, SinkHTTP); f != 3 {
		t.Errorf("failed uploads %d, want 3", f)
	}
}

func TestHTTPSinkRejectedBatchIsDropped(t *testing.T) {
	c := &collector{}
	c.status.Store(http.StatusBadRequest)
	srv := httptest.NewServer(c)
	defer srv.Close()
	l, st := newLogger(t, Options{URL: srv.URL + "/v1", Interval: time.Hour})
	logN(l, 3)
	if err := l.Close(context.Background()); err != nil {
		t.Fatalf("close: %v (a refused batch is dropped, not retried until the deadline)", err)
	}
	if st.get(&st.dropped, DropHTTPRejected) != 3 {
		t.Errorf("dropped %v, want 3 http_rejected", st.dropped)
	}
}

// TestHTTPSinkDownDropsOldest: with the service down, the buffer keeps the
// newest events within its bytes and drops the oldest; every Log returns
// at once; once the service is back, the newest arrive.
func TestHTTPSinkDownDropsOldest(t *testing.T) {
	c := &collector{}
	c.status.Store(http.StatusServiceUnavailable)
	srv := httptest.NewServer(c)
	defer srv.Close()
	l, st := newLogger(t, Options{URL: srv.URL + "/v1", BufferBytes: 4096, UploadBytes: 1024, Interval: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond})
	start := time.Now()
	logN(l, 100)
	if took := time.Since(start); took > time.Second {
		t.Errorf("100 Log calls under a dead sink took %v; Log must not wait for the sink", took)
	}
	deadline := time.Now().Add(5 * time.Second)
	for st.get(&st.dropped, DropHTTPBufferFull) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	c.status.Store(0)
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, _ := c.count()
	dropped := st.get(&st.dropped, DropHTTPBufferFull)
	if dropped == 0 || got+dropped != 100 || got == 0 {
		t.Fatalf("uploaded %d, dropped %d; want the buffer to drop the oldest and keep the rest (sum 100)", got, dropped)
	}
	if last := c.events[len(c.events)-1]["decision_id"]; last != "d0099" {
		t.Errorf("last event uploaded %v, want the newest, d0099", last)
	}
	if first := c.events[0]["decision_id"]; first == "d0000" {
		t.Errorf("the oldest event survived; the buffer must drop the oldest")
	}
}

// TestLogNeverBlocks: a worker stuck on its mask never holds up Log; the
// events over the queue are dropped and counted.
func TestLogNeverBlocks(t *testing.T) {
	release := make(chan struct{})
	stuck := maskFunc(func(ctx context.Context, _ map[string]any) (any, error) {
		<-release
		return []any{}, nil
	})
	l, st := newLogger(t, Options{File: filepath.Join(t.TempDir(), "d.jsonl"), Masker: stuck, BufferEvents: 10})
	start := time.Now()
	logN(l, 1000)
	if took := time.Since(start); took > time.Second {
		t.Errorf("1000 Log calls with a stuck worker took %v", took)
	}
	if d := st.get(&st.dropped, DropBufferFull); d < 1000-11 {
		t.Errorf("dropped %d, want all but the queue (10) and the one in the worker", d)
	}
	close(release)
	_ = l.Close(context.Background())
	l.Log(Event{})
	if st.get(&st.dropped, DropClosed) != 1 {
		t.Errorf("an event logged after Close is not counted dropped")
	}
}

// TestCloseDeadline: with the service down, Close gives up at its
// deadline and counts what it could not send.
func TestCloseDeadline(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(503) }))
	defer srv.Close()
	l, st := newLogger(t, Options{URL: srv.URL, Interval: time.Hour})
	logN(l, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := l.Close(ctx)
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Close took %v with a 300ms deadline", took)
	}
	if err == nil || st.get(&st.dropped, DropShutdown) != 4 {
		t.Errorf("close: %v, dropped %v; want an error and 4 shutdown drops", err, st.dropped)
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	for _, o := range []Options{
		{},
		{File: "x", Masker: nil},
		{URL: "ftp://x", Masker: eraseToken},
		{File: filepath.Join(t.TempDir(), "no", "such", "dir", "f"), Masker: eraseToken},
	} {
		if l, err := New(o); err == nil {
			_ = l.Close(context.Background())
			t.Errorf("New(%+v) accepted", o)
		}
	}
}

// TestFileSinkFailure: events the file cannot take are counted dropped,
// not retried forever, and the failure is counted.
func TestFileSinkFailure(t *testing.T) {
	l, st := newLogger(t, Options{File: filepath.Join(t.TempDir(), "d.jsonl")})
	_ = l.file.f.Close() // the disk goes away
	logN(l, 3)
	_ = l.Close(context.Background())
	if st.get(&st.failed, SinkFile) == 0 || st.get(&st.dropped, DropFileFailed) != 3 || st.get(&st.sent, SinkFile) != 0 {
		t.Errorf("failed %v dropped %v sent %v; want failures counted and 3 file_failed drops", st.failed, st.dropped, st.sent)
	}
}

// TestFlipEvent: a shadow flip is an OPA event of its own (EventV1 decodes
// it with no unknown field): the candidate's decision id, result and
// revision, the same input, and custom.shadow with the direction, the
// live decision's id and both revisions; the file sink masks it like any
// event.
func TestFlipEvent(t *testing.T) {
	raw := flipEvent(t, func(l *Logger, live, shadow *gateway.Decision) {
		l.LogFlip(gateway.WithRequestID(context.Background(), "req-9"), live, shadow, "project.delete", "allow_to_deny")
	})
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var opa logs.EventV1
	if err := dec.Decode(&opa); err != nil {
		t.Fatalf("not an OPA decision log event: %v\n%s", err, raw)
	}
	if opa.DecisionID != "5db747d2" || opa.Path != DecisionPath || opa.Bundles[Bundle].Revision != "rev-shadow" {
		t.Errorf("decision_id %q, path %q, bundles %v; want the candidate's id and revision on %s", opa.DecisionID, opa.Path, opa.Bundles, DecisionPath)
	}
	if res, _ := (*opa.Result).(map[string]any); res["allow"] != false {
		t.Errorf("result %v, want the candidate's denial", *opa.Result)
	}
	want := map[string]any{"direction": "allow_to_deny", "live_decision_id": "4ca636c1", "live_revision": "rev-live", "shadow_revision": "rev-shadow"}
	if !reflect.DeepEqual(opa.Custom["shadow"], want) || opa.Custom["request_id"] != "req-9" || opa.Custom["tool"] != "project.delete" {
		t.Errorf("custom %v, want tool, request_id and shadow %v", opa.Custom, want)
	}
	if bytes.Contains(raw, []byte("eyJhbGciOiJIUzI1NiJ9")) || !slices.Equal(opa.Erased, []string{"/input/arguments/token"}) {
		t.Errorf("the flip event was not masked: erased %v\n%s", opa.Erased, raw)
	}
}

// TestSurfaceFlipEvent: a flip of another surface's shadow candidate
// (cc_server's) names that surface's query and revision, as its
// decisions do, so replay and collectors tell the surfaces apart.
func TestSurfaceFlipEvent(t *testing.T) {
	raw := flipEvent(t, func(l *Logger, live, shadow *gateway.Decision) {
		l.ForSurface("ccserver").LogFlip(context.Background(), live, shadow, "browser_use", "allow_to_deny")
	})
	var opa logs.EventV1
	if err := json.Unmarshal(raw, &opa); err != nil {
		t.Fatalf("not an OPA decision log event: %v\n%s", err, raw)
	}
	if opa.Path != "ccserver/decision" || opa.Bundles["ccserver"].Revision != "rev-shadow" || len(opa.Bundles) != 1 || opa.Custom["shadow"] == nil {
		t.Errorf("path %q, bundles %v, custom %v; want ccserver/decision, the candidate's revision under ccserver, custom.shadow", opa.Path, opa.Bundles, opa.Custom)
	}
}

// flipEvent logs one flip with log (the live decision allowed under
// rev-live, the candidate 5db747d2 denied under rev-shadow) to a file
// sink and returns what the file holds.
func flipEvent(t *testing.T, log func(l *Logger, live, shadow *gateway.Decision)) []byte {
	t.Helper()
	file := filepath.Join(t.TempDir(), "d.jsonl")
	l, _ := newLogger(t, Options{File: file})
	live := decision()
	live.Allow, live.Reasons, live.Revision = true, nil, "rev-live"
	shadow := decision()
	shadow.ID, shadow.Revision, shadow.Input = "5db747d2", "rev-shadow", input()
	log(l, live, shadow)
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
