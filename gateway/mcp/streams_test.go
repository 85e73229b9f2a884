package mcp

import (
	"bufio"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// listenStream is an open subscriptions/listen stream read in the
// background: data holds its messages, ended closes when it ends.
type listenStream struct {
	mu    sync.Mutex
	data  []string
	ended chan struct{}
}

func (l *listenStream) last() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.data) == 0 {
		return ""
	}
	return l.data[len(l.data)-1]
}

func openListen(t *testing.T, url, token, id, filter string) *listenStream {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":"` + id + `","method":"subscriptions/listen","params":{"notifications":` + filter + `,` + modernMeta + `}}`
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(headerProtocolVersion, Version20260728)
	req.Header.Set(headerMethod, "subscriptions/listen")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("listen %s: %v %v", id, err, resp)
	}
	l := &listenStream{ended: make(chan struct{})}
	ack := make(chan struct{})
	go func() {
		defer close(l.ended)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				l.mu.Lock()
				l.data = append(l.data, d)
				if len(l.data) == 1 {
					close(ack)
				}
				l.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { resp.Body.Close() })
	select {
	case <-ack:
	case <-time.After(5 * time.Second):
		t.Fatalf("listen %s: no acknowledgement", id)
	}
	return l
}

func ended(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	case <-time.After(2 * time.Second):
		return false
	}
}

func stillOpen(c <-chan struct{}) bool {
	select {
	case <-c:
		return false
	default:
		return true
	}
}

// TestListenStreamsPerCredential: one credential holds at most
// MaxStreamsPerPrincipal long-lived streams of every kind together (HTTP+SSE,
// GET, subscriptions/listen); one more closes its oldest, so one token
// cannot take every connection of the listener (issue 22, item 1: 125
// listen streams of one read-only token took a listener capped at 120).
// Another credential's streams are not touched.
func TestListenStreamsPerCredential(t *testing.T) {
	e, srv := legacyEnv(t, func(o *Options) { o.KeepAlive = time.Hour })
	mcpURL := srv.URL + "/mcp"
	legacy := openLegacy(t, srv, tokAlice)
	legacyEnded := make(chan struct{})
	go func() {
		for range legacy.events {
		}
		close(legacyEnded)
	}()
	sid := e.initialize(tokAlice, Version20251125)
	req, _ := http.NewRequest("GET", mcpURL, nil)
	req.Header.Set("Authorization", "Bearer "+tokAlice)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(headerSessionID, sid)
	req.Header.Set(headerProtocolVersion, Version20251125)
	get, err := http.DefaultClient.Do(req)
	if err != nil || get.StatusCode != 200 {
		t.Fatalf("GET stream: %v %v", err, get)
	}
	defer get.Body.Close()
	getEnded := make(chan struct{})
	go func() {
		_, _ = bufio.NewReader(get.Body).ReadString(0) // until the stream ends
		close(getEnded)
	}()
	bob := openListen(t, mcpURL, tokBob, "bob", `{"toolsListChanged":true}`)

	var listens []*listenStream
	for i := range MaxStreamsPerPrincipal - 2 { // with the SSE and GET streams: the limit, nothing closed
		filter := `{"toolsListChanged":true}`
		if i%2 == 1 {
			filter = `{}` // streams that want no notifications count as well
		}
		listens = append(listens, openListen(t, mcpURL, tokAlice, fmt.Sprint("sub-", i), filter))
	}
	if !stillOpen(legacyEnded) || !stillOpen(getEnded) || !stillOpen(listens[0].ended) {
		t.Fatal("a stream closed within the limit")
	}
	listens = append(listens, openListen(t, mcpURL, tokAlice, "over-1", `{}`))
	if !ended(legacyEnded) {
		t.Fatal("one stream past the limit: the oldest (the SSE stream) is still open")
	}
	if !stillOpen(getEnded) {
		t.Fatal("the GET stream closed before the oldest")
	}
	listens = append(listens, openListen(t, mcpURL, tokAlice, "over-2", `{"toolsListChanged":true}`))
	if !ended(getEnded) {
		t.Fatal("two streams past the limit: the GET stream is still open")
	}
	if code, r := e.rpc(hdr{token: tokAlice, session: sid, version: Version20251125}, "tools/list", ""); code != 200 || r.Error != nil {
		t.Fatalf("the session of the closed GET stream: %d %+v, want it to stay usable", code, r.Error)
	}
	listens = append(listens, openListen(t, mcpURL, tokAlice, "over-3", `{}`))
	if !ended(listens[0].ended) {
		t.Fatal("three streams past the limit: the oldest listen stream is still open")
	}
	if end := listens[0].last(); !strings.Contains(end, `"id":"sub-0"`) || !strings.Contains(end, `"resultType":"complete"`) {
		t.Fatalf("the closed listen stream ended with %s, want its graceful-closure result", end)
	}
	for _, l := range listens[1:] {
		if !stillOpen(l.ended) {
			t.Fatal("a listen stream newer than the oldest closed")
		}
	}
	if !stillOpen(bob.ended) {
		t.Fatal("another credential's stream closed")
	}
}
