package mcp

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// batchOf joins n members made by member(i) into a JSON-RPC batch.
func batchOf(n int, member func(i int) string) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = member(i)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func echoCall(i int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo"}}`, i+1)
}

// A batch with more members than the limit is refused whole, before any
// member runs, with an error that names the limit and the variable that
// raises it; a batch at the limit is served.
func TestBatchOverTheLimitIsRefused(t *testing.T) {
	e := newEnv(t, nil)
	sid := e.initialize(tokAlice, Version20250326)
	h := hdr{token: tokAlice, session: sid}

	resp := e.do("POST", h, batchOf(101, echoCall))
	body := readAll(t, resp)
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("batch of 101: status %d, want 413 (%.200s…)", resp.StatusCode, body)
	}
	r := decodeResp(t, body)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || r.Error == nil || r.Error.Code != -32600 ||
		!strings.Contains(r.Error.Message, "at most 100") || !strings.Contains(r.Error.Message, "MCPGATE_MAX_BATCH_MESSAGES") {
		t.Fatalf("batch of 101: status %d error %+v, want 413 and -32600 naming the limit of 100 and MCPGATE_MAX_BATCH_MESSAGES", resp.StatusCode, r.Error)
	}
	if c := e.h.lastCall(); c != nil {
		t.Fatalf("a member of the refused batch ran: %+v", c)
	}

	resp = e.do("POST", h, batchOf(100, echoCall))
	var arr []wireResp
	if body := readAll(t, resp); resp.StatusCode != 200 || json.Unmarshal(body, &arr) != nil || len(arr) != 100 {
		t.Fatalf("batch of 100: status %d, %d responses, want 200 and 100", resp.StatusCode, len(arr))
	}
}

// Once the replies of one batch reach the reply budget, the members after
// are answered with an error naming the budget, without running; the
// members before keep their results.
func TestBatchReplyBudgetCutsOffLaterMembers(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.PageSize = 1000 })
	e.h.setTools(1000, nil) // one tools/list reply is about 75 kB
	sid := e.initialize(tokAlice, Version20250326)
	list := func(i int) string { return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, i+1) }

	resp := e.do("POST", hdr{token: tokAlice, session: sid}, batchOf(100, list))
	body := readAll(t, resp)
	var arr []wireResp
	if err := json.Unmarshal(body, &arr); resp.StatusCode != 200 || err != nil || len(arr) != 100 {
		t.Fatalf("status %d, %d responses (%v), want 200 and one response per member", resp.StatusCode, len(arr), err)
	}
	answered := 0
	for answered < len(arr) && arr[answered].Error == nil {
		answered++
	}
	if answered == 0 || answered == len(arr) {
		t.Fatalf("%d of %d members answered with a result; want the budget to cut off the later ones", answered, len(arr))
	}
	for _, r := range arr[answered:] {
		if r.Error == nil || !strings.Contains(r.Error.Message, "MCPGATE_MAX_BATCH_REPLY_BYTES") {
			t.Fatalf("member %s after the budget: %+v, want an error naming MCPGATE_MAX_BATCH_REPLY_BYTES", r.ID, r.Error)
		}
	}
	if n := e.h.listCalls(); n != answered {
		t.Fatalf("tools/list ran %d times, want %d: members past the budget must not run", n, answered)
	}
	if len(body) > DefaultMaxBatchReplyBytes+200_000 {
		t.Fatalf("reply is %d bytes, want about the 4 MiB budget", len(body))
	}
}

// The reply budget only cuts off later members: the first request of a
// POST always runs, however small the budget, and a notification after the
// budget is spent still takes effect.
func TestBatchReplyBudgetNeverRefusesTheFirstRequest(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.MaxBatchReplyBytes = 1 })
	sid := e.initialize(tokAlice, Version20250326)
	h := hdr{token: tokAlice, session: sid}
	if code, r := e.rpc(h, "tools/list", ""); code != 200 || r.Error != nil {
		t.Fatalf("single tools/list with a 1-byte budget: %d %+v, want its result", code, r.Error)
	}
	e.h.started = make(chan struct{})
	got := make(chan wireResp, 1)
	go func() {
		got <- decodeResp(t, readAll(t, e.do("POST", h, `{"jsonrpc":"2.0","id":"slow","method":"tools/call","params":{"name":"slow"}}`)))
	}()
	<-e.h.started
	resp := e.do("POST", h, `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"},`+
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"slow"}}]`)
	var arr []wireResp
	if err := json.Unmarshal(readAll(t, resp), &arr); err != nil || len(arr) != 2 {
		t.Fatalf("batch: %d responses (%v), want 2", len(arr), err)
	}
	if arr[0].Error != nil || arr[1].Error == nil || arr[1].Error.Data.Status != http.StatusRequestEntityTooLarge ||
		!strings.Contains(arr[1].Error.Message, "send this request again in a new POST") {
		t.Fatalf("batch answered %+v / %+v, want the first ping's result and the second refused by the budget", arr[0].Error, arr[1].Error)
	}
	if r := <-got; r.Error == nil {
		t.Fatalf("the notification after the budget did not cancel the call: %+v", r)
	}
}

// sseEvents reads the data lines of an SSE body in the background.
func sseEvents(resp *http.Response) <-chan string {
	ch := make(chan string, 100)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				ch <- data
			}
		}
	}()
	return ch
}

// A batch answered over SSE sends each member's response as soon as the
// member finishes: the first event arrives while the second member still
// runs.
func TestSSEBatchSendsEachResponseWhenReady(t *testing.T) {
	e := newEnv(t, nil)
	sid := e.initialize(tokAlice, Version20250326)
	body := `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait","arguments":{"gate":"a"}}},` +
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"wait","arguments":{"gate":"b"}}}]`
	req, _ := http.NewRequest("POST", e.srv.URL, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tokAlice)
	req.Header.Set(headerSessionID, sid)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Content-Type", "application/json")
	type result struct {
		resp *http.Response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := e.srv.Client().Do(req)
		done <- result{resp, err}
	}()
	e.h.release("a")
	var resp *http.Response
	select {
	case res := <-done:
		if res.err != nil {
			t.Fatal(res.err)
		}
		resp = res.resp
	case <-time.After(5 * time.Second):
		e.h.release("b")
		t.Fatal("no reply while the second member runs: the batch's responses are held until its last member finishes")
	}
	defer resp.Body.Close()
	events := sseEvents(resp)
	select {
	case data := <-events:
		if r := decodeResp(t, []byte(data)); string(r.ID) != "1" || r.Error != nil {
			t.Fatalf("first event %s, want the result of member 1", data)
		}
	case <-time.After(5 * time.Second):
		e.h.release("b")
		t.Fatal("member 1 finished but its event did not arrive while member 2 runs")
	}
	e.h.release("b")
	if data := <-events; !strings.Contains(data, `"id":2`) {
		t.Fatalf("second event %s, want the result of member 2", data)
	}
	if data, more := <-events; more {
		t.Fatalf("unexpected event %s after the last member", data)
	}
}
