package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/confirm"
	"github.com/mcpgate/mcpgate/gateway/pipeline"
	"github.com/mcpgate/mcpgate/gateway/ratelimit"
)

// summarizer is an adapter that also implements pipeline.ChangesSummarizer.
type summarizer struct{ *adapter }

func (summarizer) ChangesSummary(_ context.Context, c gateway.ToolCall) (string, error) {
	return "deploy " + c.Arguments["app_id"].(string), nil
}

func (f *fixture) deploy(t *testing.T, args map[string]any) (*gateway.ToolResult, error) {
	t.Helper()
	raw, _ := json.Marshal(args)
	return f.pl.CallTool(context.Background(), f.p, &gateway.CallRequest{Name: "app.deploy", Arguments: args, RawArguments: raw})
}

// deploySlots returns the task.deploy slots t1 used.
func (f *fixture) deploySlots(t *testing.T) int64 {
	t.Helper()
	for _, u := range f.usage(t, ratelimit.Subject{WorkspaceID: "ws-a", TaskID: "t1", ProfileID: "p1", Tool: "app.deploy", Tier: gateway.TierDeploy}) {
		if u.Slot.Bucket.Name == "task.deploy" {
			return u.Used
		}
	}
	return 0
}

// token runs step 1 for args and returns the token.
func (f *fixture) token(t *testing.T, args map[string]any) string {
	t.Helper()
	res, err := f.deploy(t, args)
	if err != nil {
		t.Fatalf("step 1: %v", err)
	}
	tok, _ := res.StructuredContent["confirmation_token"].(string)
	return tok
}

func with(args map[string]any, kv ...string) map[string]any {
	out := map[string]any{}
	for k, v := range args {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

func newConfirmFixture(t *testing.T, secret bool) *fixture {
	f := newFixture(t)
	f.pl.Adapter = summarizer{f.up}
	if secret {
		s, err := confirm.NewSigner([]byte(strings.Repeat("s", 32)), nil)
		if err != nil {
			t.Fatal(err)
		}
		f.pl.Confirmer = s
	}
	return f
}

func TestConfirmationSteps(t *testing.T) {
	app1 := map[string]any{"app_id": "app-1"}
	type want struct {
		code       gateway.ErrorCode
		msg        string // substring of the error message
		status     string // newest audit row
		reason     string // in the newest audit row's reason codes
		dispatched int64
		slots      int64
	}
	for _, tc := range []struct {
		note   string
		secret bool
		run    func(t *testing.T, f *fixture) (*gateway.ToolResult, error)
		check  func(t *testing.T, res *gateway.ToolResult)
		want   want
	}{
		{note: "secret unset: fail closed", run: func(t *testing.T, f *fixture) (*gateway.ToolResult, error) { return f.deploy(t, app1) },
			want: want{code: gateway.EInternal, msg: "SUPACLOUD_MCP_CONFIRMATION_SECRET", status: "error", reason: "confirmation.secret_unset"}},
		{note: "secret unset: a token changes nothing", run: func(t *testing.T, f *fixture) (*gateway.ToolResult, error) {
			return f.deploy(t, with(app1, "confirmation_token", "x", "idempotency_key", "k"))
		}, want: want{code: gateway.EInternal, msg: "SUPACLOUD_MCP_CONFIRMATION_SECRET", status: "error", reason: "confirmation.secret_unset"}},
		{note: "step 1: summary and token, nothing dispatched, no slot", secret: true,
			run: func(t *testing.T, f *fixture) (*gateway.ToolResult, error) { return f.deploy(t, app1) },
			check: func(t *testing.T, res *gateway.ToolResult) {
				sc := res.StructuredContent
				if sc["confirmation_required"] != true || sc["changes_summary"] != "deploy app-1" || sc["confirmation_token"] == "" || sc["expires_at"] == "" {
					t.Errorf("step 1 result %v", sc)
				}
				if len(res.Content) != 1 || !strings.Contains(res.Content[0]["text"].(string), "confirmation_token") {
					t.Errorf("step 1 text content %v", res.Content)
				}
			},
			want: want{status: "confirmation_required", reason: "confirmation.required"}},
		{note: "step 2: dispatched once, one slot", secret: true, run: func(t *testing.T, f *fixture) (*gateway.ToolResult, error) {
			return f.deploy(t, with(app1, "confirmation_token", f.token(t, app1), "idempotency_key", "k1"))
		}, want: want{status: "allowed", dispatched: 1, slots: 1}},
		{note: "replay: stored result, no dispatch, no slot", secret: true, run: func(t *testing.T, f *fixture) (*gateway.ToolResult, error) {
			args := with(app1, "confirmation_token", f.token(t, app1), "idempotency_key", "k1")
			if _, err := f.deploy(t, args); err != nil {
				t.Fatal(err)
			}
			return f.deploy(t, args)
		}, check: func(t *testing.T, res *gateway.ToolResult) {
			if res.StructuredContent["ok"] != true {
				t.Errorf("replayed result %v", res.StructuredContent)
			}
		}, want: want{status: "allowed", reason: "idempotency.replayed", dispatched: 1, slots: 1}},
		{note: "old token, changed arguments", secret: true, run: func(t *testing.T, f *fixture) (*gateway.ToolResult, error) {
			return f.deploy(t, map[string]any{"app_id": "app-2", "confirmation_token": f.token(t, app1), "idempotency_key": "k1"})
		}, want: want{code: gateway.EInvalid, msg: "other arguments", status: "error", reason: "confirmation.other_arguments"}},
		{note: "forged token", secret: true, run: func(t *testing.T, f *fixture) (*gateway.ToolResult, error) {
			tok := f.token(t, app1)
			return f.deploy(t, with(app1, "confirmation_token", tok[:len(tok)-3]+"AAA", "idempotency_key", "k1"))
		}, want: want{code: gateway.EInvalid, msg: "not signed by this gateway", status: "error", reason: "confirmation.bad_signature"}},
		{note: "same key, other arguments", secret: true, run: func(t *testing.T, f *fixture) (*gateway.ToolResult, error) {
			if _, err := f.deploy(t, with(app1, "confirmation_token", f.token(t, app1), "idempotency_key", "k1")); err != nil {
				t.Fatal(err)
			}
			app2 := map[string]any{"app_id": "app-2"}
			return f.deploy(t, with(app2, "confirmation_token", f.token(t, app2), "idempotency_key", "k1"))
		}, want: want{code: gateway.EConflict, msg: "other arguments", status: "error", reason: "idempotency.key_reused", dispatched: 1, slots: 1}},
		{note: "control characters in the key: invalid, nothing claimed", secret: true, run: func(t *testing.T, f *fixture) (*gateway.ToolResult, error) {
			return f.deploy(t, with(app1, "confirmation_token", f.token(t, app1), "idempotency_key", "k\x00"))
		}, want: want{code: gateway.EInvalid, msg: "without control or format characters", status: "error"}},
		{note: "a zero-width space in the key: invalid", secret: true, run: func(t *testing.T, f *fixture) (*gateway.ToolResult, error) {
			return f.deploy(t, with(app1, "confirmation_token", f.token(t, app1), "idempotency_key", "k\u200b1"))
		}, want: want{code: gateway.EInvalid, msg: "without control or format characters", status: "error"}},
		{note: "a call that never reached the tool releases the key", secret: true, run: func(t *testing.T, f *fixture) (*gateway.ToolResult, error) {
			args := with(app1, "confirmation_token", f.token(t, app1), "idempotency_key", "k1")
			f.up.err = gateway.Wrap(gateway.EUnavailable, gateway.ErrNotDispatched, "upstream down")
			if _, err := f.deploy(t, args); gateway.ErrorCodeOf(err) != gateway.EUnavailable || gateway.ErrorMessageOf(err) != "upstream down" {
				t.Fatalf("first try: %v", err)
			}
			f.up.err = nil
			return f.deploy(t, args)
		}, want: want{status: "allowed", dispatched: 2, slots: 2}},
		{note: "a call with an unknown outcome keeps the key: no second deploy", secret: true, run: func(t *testing.T, f *fixture) (*gateway.ToolResult, error) {
			args := with(app1, "confirmation_token", f.token(t, app1), "idempotency_key", "k1")
			f.up.err = gateway.Errorf(gateway.EUnavailable, "upstream did not answer in time")
			_, err := f.deploy(t, args)
			if gateway.ErrorCodeOf(err) != gateway.EUnavailable || !strings.Contains(gateway.ErrorMessageOf(err), `idempotency_key "k1" will not run app.deploy again`) {
				t.Fatalf("first try: %v", err)
			}
			f.up.err = nil
			return f.deploy(t, args)
		}, check: func(t *testing.T, res *gateway.ToolResult) {
			if !res.IsError || len(res.Content) != 1 || !strings.Contains(res.Content[0]["text"].(string), "may or may not have run") {
				t.Errorf("retry with the key = %+v, want the stored unknown-outcome error", res)
			}
		}, want: want{status: "allowed", reason: "idempotency.replayed", dispatched: 1, slots: 1}},
	} {
		t.Run(tc.note, func(t *testing.T) {
			f := newConfirmFixture(t, tc.secret)
			res, err := tc.run(t, f)
			if gateway.ErrorCodeOf(err) != tc.want.code || (err != nil && !strings.Contains(gateway.ErrorMessageOf(err), tc.want.msg)) {
				t.Fatalf("error %v, want code %q with %q", err, tc.want.code, tc.want.msg)
			}
			if err == nil && tc.check != nil {
				tc.check(t, res)
			}
			ev := f.last(t)
			if ev.Status != tc.want.status || (tc.want.reason != "" && !contains(ev.ReasonCodes, tc.want.reason)) {
				t.Errorf("audit row %s %v, want %s with %s", ev.Status, ev.ReasonCodes, tc.want.status, tc.want.reason)
			}
			if strings.Contains(string(ev.Arguments)+ev.ArgumentsHash, "mcpc1.") {
				t.Error("the audit row holds a confirmation token")
			}
			if n := f.up.calls.Load(); n != tc.want.dispatched {
				t.Errorf("dispatched %d, want %d", n, tc.want.dispatched)
			}
			if n := f.deploySlots(t); n != tc.want.slots {
				t.Errorf("task.deploy slots %d, want %d", n, tc.want.slots)
			}
		})
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// Step 1 hands out a confirmation token only once the call's audit row is
// written: a store that cannot write it refuses the call (fail closed).
func TestConfirmationTokenNeedsItsAuditRow(t *testing.T) {
	f := newConfirmFixture(t, true)
	f.pl.Store = failingAudit{f.store}
	res, err := f.deploy(t, map[string]any{"app_id": "app-1"})
	if gateway.ErrorCodeOf(err) != gateway.EInternal || res != nil {
		t.Fatalf("result %+v, error %v; want an Internal error and no token", res, err)
	}
	if !strings.Contains(gateway.ErrorMessageOf(err), "no confirmation token was issued") {
		t.Errorf("message %q does not say that no token was issued", gateway.ErrorMessageOf(err))
	}
}

// TestConfirmationTokenBoundToPrincipal: a token issued to one user of a
// task does not confirm the same call for another user of that task
// (issue 22, item 17): the token's MAC covers the principal.
func TestConfirmationTokenBoundToPrincipal(t *testing.T) {
	f := newConfirmFixture(t, true)
	app1 := map[string]any{"app_id": "app-1"}
	tok := f.token(t, app1)
	if tok == "" {
		t.Fatal("step 1 issued no token")
	}
	other := *f.p
	other.Subject = "u2"
	args := with(app1, "confirmation_token", tok, "idempotency_key", "k1")
	raw, _ := json.Marshal(args)
	_, err := f.pl.CallTool(context.Background(), &other, &gateway.CallRequest{Name: "app.deploy", Arguments: args, RawArguments: raw})
	if gateway.ErrorCodeOf(err) != gateway.EInvalid || !strings.Contains(gateway.ErrorMessageOf(err), "another user") {
		t.Fatalf("u2 with u1's token: %v, want EInvalid naming another user", err)
	}
	if n := f.up.calls.Load(); n != 0 {
		t.Fatalf("dispatched %d times with another user's token", n)
	}
	// The user it was issued to can still use it.
	if _, err := f.deploy(t, args); err != nil {
		t.Fatalf("u1 with its own token: %v", err)
	}
}

// TestDeployStepOneBudget: step 1 of the deploy confirmation (no token)
// writes an audit row and issues a token without taking a rate-limit slot,
// so it counts against the principal's refused-call budget (issue 22, item
// 16): past the burst it is answered as rate limited in bucket
// principal.refusals, with no row and no token.
func TestDeployStepOneBudget(t *testing.T) {
	f := newConfirmFixture(t, true)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f.pl.Now = func() time.Time { return now }
	f.pl.Refusals = pipeline.NewRefusalLimiter(2) // 2 a second, burst 8
	tokens, limited := 0, 0
	for i := range 50 {
		res, err := f.deploy(t, map[string]any{"app_id": fmt.Sprintf("app-%d", i)})
		var ge *gateway.Error
		switch {
		case errors.As(err, &ge) && ge.Code == gateway.ERateLimited && ge.Bucket == pipeline.RefusalBucket:
			limited++
		case err != nil:
			t.Fatalf("step 1: %v", err)
		case res.StructuredContent["confirmation_token"] != nil:
			tokens++
		}
	}
	evs, err := f.store.ListAuditEvents(context.Background(), gateway.AuditFilter{WorkspaceID: "ws-a", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if tokens != 8 || limited != 42 || len(evs) != 8 {
		t.Fatalf("50 step-1 calls at once: %d tokens, %d limited, %d audit rows; want 8 (the burst), 42 and 8", tokens, limited, len(evs))
	}
	// Step 2 takes a rate-limit slot and is not limited by it.
	now = now.Add(time.Second)
	tok := f.token(t, map[string]any{"app_id": "app-x"})
	if _, err := f.deploy(t, map[string]any{"app_id": "app-x", "confirmation_token": tok, "idempotency_key": "k1"}); err != nil {
		t.Fatalf("step 2 after the budget refilled: %v", err)
	}
}
