package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Once a body is read in full, its deadline is lifted: a handler that
// runs on long after it keeps its context (net/http's pending read would
// otherwise hit the deadline and cancel it), with a Content-Length and
// with a chunked body alike.
func TestBodyDeadlineLiftedOnceBodyIsRead(t *testing.T) {
	const timeout = 100 * time.Millisecond
	srv := httptest.NewServer(withBodyDeadline(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		select {
		case <-r.Context().Done():
			_, _ = io.WriteString(w, "cancelled")
		case <-time.After(4 * timeout): // a long call, well past the body deadline
			_, _ = io.WriteString(w, "done")
		}
	}), timeout, 0))
	t.Cleanup(srv.Close)
	cases := []struct {
		note string
		body io.Reader
	}{
		{"content length", strings.NewReader(`{"jsonrpc":"2.0"}`)},
		{"chunked", io.MultiReader(strings.NewReader(`{"jsonrpc":"2.0"}`))}, // no Len: sent chunked
	}
	for _, c := range cases {
		t.Run(c.note, func(t *testing.T) {
			resp, err := srv.Client().Post(srv.URL, "application/json", c.body)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = resp.Body.Close() }()
			got, _ := io.ReadAll(resp.Body)
			if string(got) != "done" {
				t.Errorf("handler says %q, want done: its context was cancelled after the body deadline", got)
			}
		})
	}
}
