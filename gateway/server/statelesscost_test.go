package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/auth"
	"github.com/mcpgate/mcpgate/gateway/config"
	"github.com/mcpgate/mcpgate/gateway/server"
)

// opStore counts every store operation a tools/call can reach: the
// pipeline's (caller, task, audit row, reservation, idempotency), the
// session end records, API tokens and rate counters.
type opStore struct {
	server.FullStore
	mu  sync.Mutex
	ops map[string]int
}

func (s *opStore) count(op string) {
	s.mu.Lock()
	if s.ops == nil {
		s.ops = map[string]int{}
	}
	s.ops[op]++
	s.mu.Unlock()
}

func (s *opStore) snapshot() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.ops))
	for k, v := range s.ops {
		out[k] = v
	}
	return out
}

func (s *opStore) LoadCaller(ctx context.Context, p *gateway.Principal) (*gateway.Caller, error) {
	s.count("LoadCaller")
	return s.FullStore.LoadCaller(ctx, p)
}

func (s *opStore) LoadMemberships(ctx context.Context, p *gateway.Principal) (*gateway.Caller, error) {
	s.count("LoadMemberships")
	return s.FullStore.LoadMemberships(ctx, p)
}

func (s *opStore) EnsureTask(ctx context.Context, ws, task string) (*gateway.Task, error) {
	s.count("EnsureTask")
	return s.FullStore.EnsureTask(ctx, ws, task)
}

func (s *opStore) RecordAudit(ctx context.Context, ev *gateway.AuditEvent) error {
	s.count("RecordAudit")
	return s.FullStore.RecordAudit(ctx, ev)
}

func (s *opStore) FinishAudit(ctx context.Context, ev *gateway.AuditEvent) error {
	s.count("FinishAudit")
	return s.FullStore.FinishAudit(ctx, ev)
}

func (s *opStore) Reserve(ctx context.Context, r gateway.Reservation) (gateway.ReservationResult, error) {
	s.count("Reserve")
	return s.FullStore.Reserve(ctx, r)
}

func (s *opStore) SaveIdempotencyResult(ctx context.Context, rec *gateway.IdempotencyRecord) error {
	s.count("SaveIdempotencyResult")
	return s.FullStore.SaveIdempotencyResult(ctx, rec)
}

func (s *opStore) SessionEnded(ctx context.Context, id string, now time.Time) (bool, error) {
	s.count("SessionEnded")
	return s.FullStore.SessionEnded(ctx, id, now)
}

func (s *opStore) APITokenByHash(ctx context.Context, hash string) (*gateway.APIToken, error) {
	s.count("APITokenByHash")
	return s.FullStore.APITokenByHash(ctx, hash)
}

func (s *opStore) TouchAPIToken(ctx context.Context, fingerprint string, at time.Time) error {
	s.count("TouchAPIToken")
	return s.FullStore.TouchAPIToken(ctx, fingerprint, at)
}

func (s *opStore) AddRateCount(ctx context.Context, key string, window, expires time.Time, delta int64) (int64, error) {
	s.count("AddRateCount")
	return s.FullStore.AddRateCount(ctx, key, window, expires, delta)
}

func (s *opStore) RateCount(ctx context.Context, key string, window time.Time) (int64, error) {
	s.count("RateCount")
	return s.FullStore.RateCount(ctx, key, window)
}

// costClients and costCalls shape the load of TestStatelessCallsCostNoMore:
// concurrent clients, each making costCalls tools/call, as the comparison
// benchmark's c=16.
const costClients, costCalls = 16, 25

// costRun is what one protocol's load cost the gateway.
type costRun struct {
	ops        map[string]int // store operations during the calls
	conns      int64          // TCP connections the gateway accepted, from the first request on
	dispatched int64          // calls that reached the upstream
}

// runCostLoad serves the real server wiring (server.New over the pipeline,
// with the caller cache, on an embedded store counted by opStore) over
// loopback HTTP and has costClients clients make costCalls tools/call each:
// with a session each (2025-11-25) or statelessly (2026-07-28).
func runCostLoad(t *testing.T, stateless bool) costRun {
	t.Helper()
	sq := memoryStore(t)
	limits := config.DefaultLimits()
	limits.ToolPerTask = 1 << 20 // the calls are to be dispatched, not limited
	st := &opStore{FullStore: sq}
	// A cache lifetime longer than the test, so that an expiry during the
	// calls (the default is 1 s) does not count as a load per call.
	g := newCachedGatewayOn(t, st, time.Hour, limits)
	hs := httptest.NewUnstartedServer(g.srv)
	var conns atomic.Int64
	hs.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	hs.Start()
	t.Cleanup(hs.Close)
	jwt, err := auth.NewJWT(auth.JWTConfig{Secret: []byte(strings.Repeat("k", 32)), Audience: "mcpgate"})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Issue(auth.AgentClaims{Subject: g.p.Subject, WorkspaceID: g.p.WorkspaceID, TaskID: g.p.TaskID, ProfileID: g.p.ProfileID}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: costClients}}
	t.Cleanup(client.CloseIdleConnections)
	post := func(headers map[string]string, body string) (int, []byte, http.Header, error) {
		req, _ := http.NewRequest(http.MethodPost, hs.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, nil, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, b, resp.Header, err
	}

	// Sessions are opened before the count starts: once per session is
	// not per call.
	sessions := make([]string, costClients)
	if !stateless {
		for i := range sessions {
			code, b, h, err := post(nil, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"cost","version":"1"}}}`)
			if err != nil || code != http.StatusOK || h.Get("Mcp-Session-Id") == "" {
				t.Fatalf("initialize: HTTP %d %s %v", code, b, err)
			}
			sessions[i] = h.Get("Mcp-Session-Id")
			hdr := map[string]string{"Mcp-Session-Id": sessions[i], "MCP-Protocol-Version": "2025-11-25"}
			if code, b, _, err := post(hdr, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil || code != http.StatusAccepted {
				t.Fatalf("notifications/initialized: HTTP %d %s %v", code, b, err)
			}
		}
	}
	ops0, conns0 := st.snapshot(), conns.Load()

	errs := make(chan error, costClients)
	var wg sync.WaitGroup
	for i := range costClients {
		wg.Go(func() {
			for n := range costCalls {
				var hdr map[string]string
				var body string
				if stateless {
					hdr = map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "workspace.info"}
					body = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"workspace.info","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, n+1)
				} else {
					hdr = map[string]string{"Mcp-Session-Id": sessions[i], "MCP-Protocol-Version": "2025-11-25"}
					body = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"workspace.info","arguments":{}}}`, n+1)
				}
				code, b, _, err := post(hdr, body)
				var resp struct {
					Result *struct {
						IsError bool `json:"isError"`
					} `json:"result"`
				}
				if err == nil && (code != http.StatusOK || json.Unmarshal(b, &resp) != nil || resp.Result == nil || resp.Result.IsError) {
					err = fmt.Errorf("client %d call %d: HTTP %d %s", i, n, code, b)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	ops1 := st.snapshot()
	for k := range ops1 {
		ops1[k] -= ops0[k]
	}
	return costRun{ops: ops1, conns: conns.Load() - conns0, dispatched: g.adapter.calls.Load()}
}

// TestStatelessCallsCostNoMore: concurrent tools/call at 2026-07-28 cost
// the gateway no more than the same calls on 2025-11-25 sessions, in what
// only a real store and concurrency show: no store operation is made more
// often per call (the caller cache is shared by the stateless calls of one
// credential as by the calls of a session: at most one load per cache
// lifetime, not one per request), and the stateless replies keep their
// connections open.
func TestStatelessCallsCostNoMore(t *testing.T) {
	session := runCostLoad(t, false)
	stateless := runCostLoad(t, true)
	const calls = costClients * costCalls
	for _, r := range []costRun{session, stateless} {
		if r.dispatched != calls {
			t.Fatalf("%d calls reached the upstream, want %d", r.dispatched, calls)
		}
	}
	t.Logf("per %d calls: session %v, %d connections; stateless %v, %d connections", calls, session.ops, session.conns, stateless.ops, stateless.conns)
	for op, n := range stateless.ops {
		if n > session.ops[op] {
			t.Errorf("the stateless calls made %d store operations %s, the session calls %d: more per call", n, op, session.ops[op])
		}
	}
	if n := stateless.ops["LoadCaller"]; n > 1 {
		t.Errorf("%d stateless calls of one credential within one cache lifetime loaded the caller %d times, want at most 1", calls, n)
	}
	// Each client keeps one connection; a client may dial a second one
	// when its next request is sent before the reply's connection is back
	// in its pool. A reply that closed its connection would make one per
	// call.
	if stateless.conns > 2*costClients {
		t.Errorf("%d stateless calls of %d clients opened %d connections (the session calls: %d): replies close their connections", calls, costClients, stateless.conns, session.conns)
	}
}
