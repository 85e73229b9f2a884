package ratelimit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgate/mcpgate/gateway/postgres/pgtest"
	"github.com/mcpgate/mcpgate/tools"
)

// The tools of the flow race: a read of private data and an egress
// (policies/supacloud/flow.rego's flow_labels).
const (
	flowRead   = "app.files.get"
	flowEgress = "pr.create"
)

// flowUpstream serves flowRead and flowEgress. While hold is set, a read
// that reaches it reports on held and waits until hold is closed: the read
// is then reserved and recorded, but not answered.
type flowUpstream struct {
	srv   *httptest.Server
	reads atomic.Int64
	mu    sync.Mutex
	hold  chan struct{}
	held  chan struct{}
}

func startFlowUpstream(t *testing.T) *flowUpstream {
	t.Helper()
	u := &flowUpstream{}
	s := mcp.NewServer(&mcp.Implementation{Name: "flow-upstream", Version: "1"}, nil)
	schema := json.RawMessage(`{"type":"object"}`)
	done := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}
	s.AddTool(&mcp.Tool{Name: flowRead, InputSchema: schema}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		u.reads.Add(1)
		u.mu.Lock()
		hold, held := u.hold, u.held
		u.mu.Unlock()
		if hold != nil {
			held <- struct{}{}
			select {
			case <-hold:
			case <-ctx.Done():
			}
		}
		return done, nil
	})
	s.AddTool(&mcp.Tool{Name: flowEgress, InputSchema: schema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return done, nil
	})
	u.srv = httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(u.srv.Close)
	return u
}

// flowEvent is a tool-call audit row as the admin API lists it.
type flowEvent struct {
	ID          int64    `json:"id"`
	Tool        string   `json:"tool"`
	Status      string   `json:"status"`
	ReasonCodes []string `json:"reason_codes"`
}

// taskEvents lists task's tool-call audit rows of tool, through base's
// admin API.
func taskEvents(t *testing.T, base, task, tool string) []flowEvent {
	t.Helper()
	var list struct {
		Events []flowEvent `json:"events"`
	}
	body := admin(t, base, http.MethodGet, "/audit-events?kind=tool_call&workspace_id="+workspace+"&task_id="+task+"&tool="+tool, nil)
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatalf("audit listing: %v: %s", err, body)
	}
	return list.Events
}

// TestFlowOrderAcrossProcesses proves the order of docs/architecture.md,
// "Flow rules and their order", on two `mcpgate serve` processes on one
// PostgreSQL schema, with the workspace's flow rules switched on through
// the admin API. A read held at the upstream (recorded, not answered)
// taints the session for an egress on the other replica. Then, in rounds
// of one new task each, a read on one replica and an egress on the other
// are sent at once: the read is always allowed, and the egress either saw
// the taint (refused, its audit row flow.tainted: no person approves) or
// was reserved before the read was (its audit row is older than the
// read's, so it ran on a history the read had not reached, and before the
// read was answered).
func TestFlowOrderAcrossProcesses(t *testing.T) {
	dbURL := pgtest.SchemaURL(t)
	up := startFlowUpstream(t)
	env := baseEnv(dbURL, up.srv.URL)
	p1 := startProcess(t, env)
	p2 := startProcess(t, env)
	const rounds = 30
	tasks := []string{"held"}
	for i := range rounds {
		tasks = append(tasks, fmt.Sprintf("race-%d", i))
	}
	seed(t, p1.url, tasks...)
	admin(t, p2.url, http.MethodPut, "/workspaces/"+workspace+"/flow-rules", map[string]any{"enabled": true})
	cat, err := tools.Load()
	if err != nil {
		t.Fatal(err)
	}
	readArgs, _ := cat.ExampleArguments(flowRead)
	egressArgs, _ := cat.ExampleArguments(flowEgress)
	ctx := context.Background()

	// A read recorded but not answered taints the egress on the other
	// replica.
	up.mu.Lock()
	up.hold, up.held = make(chan struct{}), make(chan struct{}, 1)
	up.mu.Unlock()
	tok := agentToken(t, "u1", "held", "operator")
	readDone := make(chan reply, 1)
	go func() {
		r, err := connect(t, p1.url, tok).callTool(ctx, flowRead, readArgs)
		if err != nil {
			t.Error(err)
		}
		readDone <- r
	}()
	select {
	case <-up.held:
	case <-time.After(30 * time.Second):
		t.Fatal("the read did not reach the upstream within 30 s")
	}
	r, err := connect(t, p2.url, tok).callTool(ctx, flowEgress, egressArgs)
	if err != nil {
		t.Fatal(err)
	}
	read := taskEvents(t, p2.url, "held", flowRead)
	if r.refusal == nil || len(read) != 1 || !strings.Contains(r.refusal.Text, fmt.Sprintf("through %s (audit row %d", flowRead, read[0].ID)) {
		t.Fatalf("egress while the read is held on the other replica: %s (refusal %+v); want refused naming the read %+v", r.result, r.refusal, read)
	}
	up.mu.Lock()
	close(up.hold)
	up.hold = nil
	up.mu.Unlock()
	if r := <-readDone; r.err != nil || r.refusal != nil {
		t.Fatalf("the held read: %+v %+v", r.err, r.refusal)
	}

	// Races: a read on p1 and an egress on p2 at once, a new task each.
	var tainted, before int
	for i := range rounds {
		task := fmt.Sprintf("race-%d", i)
		tok := agentToken(t, "u1", task, "operator")
		rc, ec := connect(t, p1.url, tok), connect(t, p2.url, tok)
		var wg sync.WaitGroup
		var rr, er reply
		var rerr, eerr error
		wg.Add(2)
		go func() { defer wg.Done(); rr, rerr = rc.callTool(ctx, flowRead, readArgs) }()
		go func() { defer wg.Done(); er, eerr = ec.callTool(ctx, flowEgress, egressArgs) }()
		wg.Wait()
		if rerr != nil || eerr != nil || rr.err != nil || rr.refusal != nil {
			t.Fatalf("round %d: read %v %+v %+v, egress %v", i, rerr, rr.err, rr.refusal, eerr)
		}
		reads, egresses := taskEvents(t, p1.url, task, flowRead), taskEvents(t, p1.url, task, flowEgress)
		if len(reads) != 1 || len(egresses) != 1 {
			t.Fatalf("round %d: audit rows: reads %+v, egresses %+v; want one each", i, reads, egresses)
		}
		e := egresses[0]
		switch {
		case er.refusal == nil && e.Status == "allowed" && e.ID < reads[0].ID:
			before++
		case er.refusal != nil && e.Status != "allowed" && slices.Contains(e.ReasonCodes, "flow.tainted"):
			tainted++
		default:
			t.Fatalf("round %d: egress %+v (refusal %+v) beside read %+v: it neither saw the taint nor ran before the read was recorded", i, e, er.refusal, reads[0])
		}
	}
	t.Logf("%d rounds: the egress saw the taint in %d, ran first in %d", rounds, tainted, before)
}
