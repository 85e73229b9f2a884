package ratelimit_test

import (
	"context"
	"encoding/json"
	"net/url"
	"testing"
	"time"
)

// Issue 3, points 1-3 over the wire: the env overrides reach the buckets,
// refusals are tool execution errors whose text is the seed message and
// whose denial has class Forbidden, status 403 and the bucket, the audit
// row says rate_limited and which bucket, and calls denied by policy take
// no slot. On both stores.
func TestRefusalsOnTheWire(t *testing.T) {
	type step struct {
		note           string
		task, profile  string
		tool           string
		args           map[string]any
		refused        bool   // false: dispatched
		msg, bucket    string // of a rate-limit refusal
		auditStatus    string
		auditBucketCol string
	}
	const opsFull = "Profile hourly limit reached for this MCP tool tier (2/2)"
	const wsFull = "Workspace daily limit reached for this MCP tool tier (3/3)"
	steps := []step{
		{note: "read 1/2", task: "t-read", tool: "projects.list", auditStatus: "allowed"},
		{note: "read 2/2", task: "t-read", tool: "projects.list", auditStatus: "allowed"},
		{note: "read over AGENT_MCP_TOOL_RATE_LIMIT=2", task: "t-read", tool: "projects.list", refused: true,
			msg: "Rate limit exceeded for tool 'projects.list'", bucket: "task.read", auditStatus: "rate_limited", auditBucketCol: "task.read"},
		{note: "ops: workspace 1/3, operator 1/2", task: "t-ops-1", profile: "operator", tool: opsTool, args: opsArgs, auditStatus: "allowed"},
		{note: "denied by policy (read-only fallback): takes no slot", task: "t-ops-1", tool: opsTool, args: opsArgs,
			refused: true, auditStatus: "denied"},
		{note: "ops: workspace 2/3, operator 2/2", task: "t-ops-2", profile: "operator", tool: opsTool, args: opsArgs, auditStatus: "allowed"},
		{note: "operator's hour is full (AGENT_MCP_PROFILE_OPS_HOURLY_LIMIT=2); workspace slot refunded", task: "t-ops-3", profile: "operator",
			tool: opsTool, args: opsArgs, refused: true, msg: opsFull, bucket: "profile_hour.ops",
			auditStatus: "rate_limited", auditBucketCol: "profile_hour.ops"},
		{note: "ops: workspace 3/3 (the refund made room), operator2 1/2", task: "t-ops-3", profile: "operator2", tool: opsTool, args: opsArgs,
			auditStatus: "allowed"},
		{note: "workspace day full (AGENT_MCP_WORKSPACE_OPS_DAILY_LIMIT=3)", task: "t-ops-3", profile: "operator2", tool: opsTool, args: opsArgs,
			refused: true, msg: wsFull, bucket: "workspace_day.ops", auditStatus: "rate_limited", auditBucketCol: "workspace_day.ops"},
	}
	for name, dbURL := range storeURLs() {
		t.Run(name, func(t *testing.T) {
			up := startUpstream(t)
			env := baseEnv(dbURL(t), up.url())
			env["AGENT_MCP_TOOL_RATE_LIMIT"] = "2"
			env["AGENT_MCP_PROFILE_OPS_HOURLY_LIMIT"] = "2"
			env["AGENT_MCP_WORKSPACE_OPS_DAILY_LIMIT"] = "3"
			base, _ := inProcess(t, env)
			seed(t, base, "t-read", "t-ops-1", "t-ops-2", "t-ops-3")
			var dispatched int64
			for _, st := range steps {
				c := connect(t, base, agentToken(t, "u1", st.task, st.profile))
				r, err := c.callTool(context.Background(), st.tool, st.args)
				if err != nil {
					t.Fatalf("%s: %v", st.note, err)
				}
				if r.err != nil {
					t.Fatalf("%s: JSON-RPC error %+v, want a result", st.note, r.err)
				}
				if !st.refused {
					if r.refusal != nil {
						t.Fatalf("%s: refused %+v, want a result", st.note, *r.refusal)
					}
					dispatched++
				} else if r.refusal == nil || r.refusal.Class != "Forbidden" || r.refusal.Status != 403 {
					t.Fatalf("%s: %s, want a tool execution error with a Forbidden denial", st.note, r.result)
				}
				if st.msg != "" && (r.refusal.Text != st.msg || r.refusal.Bucket != st.bucket || r.refusal.Code != "rate_limit.exceeded") {
					t.Errorf("%s: %+v, want the text %q verbatim and bucket %s", st.note, *r.refusal, st.msg, st.bucket)
				}
				if up.calls.Load() != dispatched {
					t.Errorf("%s: upstream saw %d calls, want %d", st.note, up.calls.Load(), dispatched)
				}
				wantLastAudit(t, base, st.task, st.auditStatus, st.auditBucketCol)
			}
		})
	}
}

// wantLastAudit checks the newest audit row of task.
func wantLastAudit(t *testing.T, base, task, status, bucket string) {
	t.Helper()
	var list struct {
		Events []struct {
			Status, Bucket string
			Time           time.Time
		}
	}
	body := admin(t, base, "GET", "/audit-events?workspace_id="+workspace+"&task_id="+url.QueryEscape(task)+"&limit=1", nil)
	if err := json.Unmarshal(body, &list); err != nil || len(list.Events) != 1 {
		t.Fatalf("audit of %s: %v %s", task, err, body)
	}
	if ev := list.Events[0]; ev.Status != status || ev.Bucket != bucket {
		t.Errorf("audit row of %s: status %q bucket %q, want %q %q", task, ev.Status, ev.Bucket, status, bucket)
	}
}
