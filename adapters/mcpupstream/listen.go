package mcpupstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"mime"
	"net/http"
	"time"
)

// methodToolsChanged is the upstream's notice that its tools/list changed.
const methodToolsChanged = "notifications/tools/list_changed"

// Backoff between attempts to (re)open a session's GET stream.
const (
	listenRetryMin = time.Second
	listenRetryMax = 30 * time.Second
)

// listen keeps the standalone GET stream of session s open until the
// session is dropped or the adapter closed (s.stop), reopening it after
// it ends or fails (with a backoff from listenRetryMin to
// listenRetryMax), and calls a.onTools for each
// notifications/tools/list_changed on it. An upstream that answers the
// GET 405 offers no stream, and one that answers 404 no longer knows the
// session: listening ends (the next session listens anew). Called with
// a.mu held.
func (a *Adapter) listen(s *upSession) {
	ctx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	go func() {
		wait := listenRetryMin
		for {
			opened, again := a.listenOnce(ctx, s)
			if !again || ctx.Err() != nil {
				return
			}
			if opened {
				wait = listenRetryMin
			}
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			wait = min(2*wait, listenRetryMax)
		}
	}()
}

// listenOnce opens the GET stream once and reads it to its end: opened
// reports that the upstream served it, again whether to open it again.
// Messages other than notifications/tools/list_changed are not read: the
// gateway relays the upstream's messages of a call on that call's stream.
func (a *Adapter) listenOnce(ctx context.Context, s *upSession) (opened, again bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.url, nil)
	if err != nil {
		return false, false
	}
	req.Header["Accept"] = []string{"text/event-stream"}
	req.Header["Mcp-Session-Id"] = []string{s.id}
	req.Header["Mcp-Protocol-Version"] = []string{s.version}
	resp, err := a.http.Do(req)
	if err != nil {
		return false, true
	}
	defer func() { _ = resp.Body.Close() }() // never drained: a stream has no end to wait for
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusMethodNotAllowed, http.StatusNotFound:
		return false, false
	default:
		return false, true
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		return false, false
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 4096), a.limits.messageBytes+len("data: \n"))
	var data []byte
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			var m struct {
				Method string `json:"method"`
			}
			if len(data) > 0 && json.Unmarshal(data, &m) == nil && m.Method == methodToolsChanged {
				a.onTools()
			}
			data = data[:0]
		case bytes.HasPrefix(line, []byte("data:")):
			if len(data)+len(line) > a.limits.messageBytes {
				return true, true // past the bound: start a fresh stream
			}
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimPrefix(line[5:], []byte(" "))...)
		}
	}
	return true, true
}
