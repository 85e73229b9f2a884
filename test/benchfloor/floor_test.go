package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestForward checks that the floor sends the client's exact bytes, method
// and MCP headers to the upstream (and no other header), and copies the
// upstream's status, MCP headers and body back.
func TestForward(t *testing.T) {
	const reqBody = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"n":9007199254740993}}}`
	const respBody = `{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`
	var got *http.Request
	var gotBody []byte
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		gotBody, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Mcp-Session-Id", "sess-from-upstream")
		w.Header().Set("X-Upstream-Only", "1")
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.WriteString(w, respBody)
	}))
	defer up.Close()
	fl := httptest.NewServer(newFloor(up.URL+"/mcp", nil))
	defer fl.Close()

	req, _ := http.NewRequest(http.MethodPost, fl.URL+"/anything", strings.NewReader(reqBody))
	for h, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Mcp-Session-Id": "sess-1", "MCP-Protocol-Version": "2025-11-25", "Mcp-Method": "tools/call", "Mcp-Name": "echo",
		"Authorization": "Bearer secret"} {
		req.Header.Set(h, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()

	if got == nil {
		t.Fatal("the upstream was not called")
	}
	if got.Method != http.MethodPost || got.URL.Path != "/mcp" || string(gotBody) != reqBody {
		t.Errorf("upstream got %s %s %q; want POST /mcp with the client's bytes", got.Method, got.URL.Path, gotBody)
	}
	for _, h := range forwardedHeaders {
		if got.Header.Get(h) != req.Header.Get(h) {
			t.Errorf("upstream header %s = %q; want %q", h, got.Header.Get(h), req.Header.Get(h))
		}
	}
	if v := got.Header.Get("Authorization"); v != "" {
		t.Errorf("Authorization reached the upstream: %q", v)
	}
	if resp.StatusCode != http.StatusAccepted || string(out) != respBody {
		t.Errorf("client got %d %q; want 202 and the upstream's bytes", resp.StatusCode, out)
	}
	if v := resp.Header.Get("Mcp-Session-Id"); v != "sess-from-upstream" {
		t.Errorf("client's Mcp-Session-Id = %q; want the upstream's", v)
	}
	if v := resp.Header.Get("X-Upstream-Only"); v != "" {
		t.Errorf("a header outside the MCP set came back: X-Upstream-Only %q", v)
	}
}

// fakeStore records begin and finish calls; failBegin makes begin fail.
type fakeStore struct {
	mu              sync.Mutex
	begun, finished []string
	failBegin       bool
}

func (s *fakeStore) begin(_ context.Context, session, name string) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failBegin {
		return 0, io.ErrUnexpectedEOF
	}
	s.begun = append(s.begun, session+"/"+name)
	return int64(len(s.begun)), nil
}

func (s *fakeStore) finish(_ context.Context, id int64, status string, _ time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.finished = append(s.finished, status)
	return nil
}

// seen is what the store has recorded so far.
func (s *fakeStore) seen() (begun, finished string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.begun, ","), strings.Join(s.finished, ",")
}

func (s *fakeStore) Close() error { return nil }

// TestRecordOnlyToolsCalls: only a POST of a tools/call writes; a failed
// begin answers 500 and the call is not forwarded; an upstream that
// answers 500 finishes the row as an error.
func TestRecordOnlyToolsCalls(t *testing.T) {
	var calls, upStatus atomic.Int64
	upStatus.Store(http.StatusOK)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(int(upStatus.Load()))
	}))
	defer up.Close()
	st := &fakeStore{}
	fl := httptest.NewServer(newFloor(up.URL, st))
	defer fl.Close()
	post := func(body string) int {
		req, _ := http.NewRequest(http.MethodPost, fl.URL, strings.NewReader(body))
		req.Header.Set("Mcp-Session-Id", "s")
		req.Header.Set("Mcp-Name", "echo")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)
	post(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if begun, _ := st.seen(); begun != "" {
		t.Fatalf("initialize and tools/list wrote rows: %v", begun)
	}
	post(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo"}}`)
	upStatus.Store(http.StatusInternalServerError)
	post(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo"}}`)
	if begun, finished := st.seen(); begun != "s/echo,s/echo" || finished != statusOK+","+statusError {
		t.Errorf("begun %v, finished %v; want two rows, finished ok then error", begun, finished)
	}
	st.mu.Lock()
	st.failBegin = true
	st.mu.Unlock()
	before := calls.Load()
	if code := post(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo"}}`); code != http.StatusInternalServerError || calls.Load() != before {
		t.Errorf("with a failing store: HTTP %d, upstream called %d more times; want 500 and no call", code, calls.Load()-before)
	}
}

// TestStores runs MCP sessions through the floor on each store (PostgreSQL
// when MCPGATE_TEST_DATABASE_URL is set, in a database of its own) and
// checks the rows: one per tools/call, finished ok with a latency.
func TestStores(t *testing.T) {
	t.Run(storeSQLite, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "floor.db")
		checkStore(t, storeSQLite, "", path, func() (*sql.DB, error) { return sql.Open("sqlite", path) })
	})
	t.Run(storePostgres, func(t *testing.T) {
		admin := os.Getenv("MCPGATE_TEST_DATABASE_URL")
		if admin == "" {
			t.Skip("MCPGATE_TEST_DATABASE_URL is not set")
		}
		dsn := freshDatabase(t, admin)
		checkStore(t, storePostgres, dsn, "", func() (*sql.DB, error) { return sql.Open("postgres", dsn) })
	})
}

func checkStore(t *testing.T, kind, dsn, path string, open func() (*sql.DB, error)) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	server := mcp.NewServer(&mcp.Implementation{Name: "floor-test", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hi"}}}, nil
		})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{JSONResponse: true}))
	defer up.Close()

	st, err := openStore(ctx, kind, dsn, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if kind == storeSQLite {
		// The gateway's write-connection settings: WAL, synchronous=NORMAL (1).
		var mode string
		var sync int
		db := st.(*sqlStore).db
		if err := db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
			t.Errorf("journal_mode %q (%v); want wal", mode, err)
		}
		if err := db.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync); err != nil || sync != 1 {
			t.Errorf("synchronous %d (%v); want 1 (NORMAL)", sync, err)
		}
	}
	fl := httptest.NewServer(newFloor(up.URL, st))
	defer fl.Close()

	client := mcp.NewClient(&mcp.Implementation{Name: "floor-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: fl.URL + "/mcp", DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect through the floor: %v", err)
	}
	defer cs.Close()
	if cs.ID() == "" {
		t.Error("the session has no id: Mcp-Session-Id did not come back through the floor")
	}
	for range 3 {
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{}}); err != nil {
			t.Fatalf("tools/call through the floor: %v", err)
		}
	}

	db, err := open()
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, "SELECT session_id, status, latency_us FROM "+floorTable+" ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var session, status string
		var latency int64
		if err := rows.Scan(&session, &status, &latency); err != nil {
			t.Fatal(err)
		}
		n++
		if session != cs.ID() || status != statusOK || latency <= 0 {
			t.Errorf("row %d: session %q, status %q, latency %d µs; want %q, %q and a latency", n, session, status, latency, cs.ID(), statusOK)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("%d rows for 3 tools/calls (and an initialize); want 3", n)
	}
}

// freshDatabase creates a database of its own on the server admin names
// and drops it when the test ends; it returns its URL.
func freshDatabase(t *testing.T, admin string) string {
	t.Helper()
	db, err := sql.Open("postgres", admin)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "bench_floor_test_" + hex.EncodeToString(b)
	if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
		_ = db.Close()
		t.Fatalf("create database (may the role create databases?): %v", err)
	}
	t.Cleanup(func() {
		if _, err := db.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
		_ = db.Close()
	})
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// TestOpenStoreErrors: a store without its location, or an unknown kind,
// is refused with a message naming the flag.
func TestOpenStoreErrors(t *testing.T) {
	for _, c := range []struct{ kind, want string }{
		{storePostgres, "-dsn"}, {storeSQLite, "-sqlite-path"}, {"mysql", "want none"},
	} {
		if _, err := openStore(context.Background(), c.kind, "", ""); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("openStore(%q) error %v; want one naming %s", c.kind, err, c.want)
		}
	}
	if st, err := openStore(context.Background(), storeNone, "", ""); st != nil || err != nil {
		t.Errorf("openStore(none) = %v, %v; want no store", st, err)
	}
}
