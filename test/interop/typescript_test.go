package interop

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// tsReport is what ts/client.mjs prints.
type tsReport struct {
	Node    string `json:"node"`
	Allowed struct {
		tsSession
		Tools       []string `json:"tools"`
		Text        string   `json:"text"`
		ErrorResult struct {
			IsError bool   `json:"isError"`
			Text    string `json:"text"`
		} `json:"errorResult"`
	} `json:"allowed"`
	Denied struct {
		tsSession
		Result *struct {
			IsError bool   `json:"isError"`
			Blocks  int    `json:"blocks"`
			Text    string `json:"text"`
			Denial  *struct {
				Class  string `json:"class"`
				Status int    `json:"status"`
				Code   string `json:"code"`
			} `json:"denial"`
		} `json:"result"`
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
		ToolsAfter []string `json:"toolsAfter"`
	} `json:"denied"`
}

type tsSession struct {
	SessionID       string   `json:"sessionId"`
	ProtocolVersion string   `json:"protocolVersion"`
	Wire            []string `json:"wire"`
}

// TestTypeScriptSDKClient runs ts/client.mjs: the TypeScript SDK client
// connects with an Authorization header and nothing else configured, lists,
// calls, receives a policy denial as a tool execution error with the
// gateway's text verbatim and terminates its sessions with DELETE.
func TestTypeScriptSDKClient(t *testing.T) {
	s := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.node, "ts/client.mjs")
	token, readerToken := s.taskToken(t, upstreamProfile), s.taskToken(t, readerProfile)
	want := s.denial(t, readerToken)
	cmd.Env = append(cmd.Environ(), "GATEWAY_URL="+s.gatewayURL, "TOKEN="+token, "READER_TOKEN="+readerToken)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ts/client.mjs: %v\n%s\n%s", err, stderr.String(), s.logs())
	}
	var r tsReport
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("ts/client.mjs printed no report (%v): %s", err, out)
	}
	t.Logf("TypeScript SDK on Node %s, protocol %s", r.Node, r.Allowed.ProtocolVersion)

	a := r.Allowed
	if a.ProtocolVersion != "2025-11-25" {
		t.Errorf("negotiated %q, want 2025-11-25", a.ProtocolVersion)
	}
	if !slices.Contains(a.Tools, "test_simple_text") || !slices.Contains(a.Tools, "json_schema_2020_12_tool") {
		t.Errorf("tools/list = %v, want the fixture's tools", a.Tools)
	}
	if a.Text != simpleText {
		t.Errorf("test_simple_text = %q, want %q", a.Text, simpleText)
	}
	if !a.ErrorResult.IsError || a.ErrorResult.Text == "" {
		t.Errorf("test_error_handling = %+v, want isError with a message", a.ErrorResult)
	}

	d := r.Denied
	switch {
	case d.Error != nil:
		t.Fatalf("tools/call test_simple_text with the reader profile threw %+v; want a tool execution error (docs/http.md, Errors)", d.Error)
	case d.Result == nil:
		t.Fatal("tools/call test_simple_text with the reader profile: no result")
	}
	t.Logf("the TypeScript SDK shows the denial as: isError %v, text %q", d.Result.IsError, d.Result.Text)
	if !d.Result.IsError || d.Result.Blocks != 1 || d.Result.Text != want.Text {
		t.Errorf("denial = %+v; want isError and the gateway's text %q verbatim", d.Result, want.Text)
	}
	if dn := d.Result.Denial; dn == nil || dn.Class != "Forbidden" || dn.Status != 403 || dn.Code != want.Denial.Code {
		t.Errorf("denial _meta = %+v, want class Forbidden, status 403, code %s", dn, want.Denial.Code)
	}
	if len(d.ToolsAfter) == 0 || slices.Contains(d.ToolsAfter, "test_simple_text") {
		t.Errorf("tools/list after the denial = %v, want the reader's tools without test_simple_text", d.ToolsAfter)
	}

	for name, sess := range map[string]struct {
		tsSession
		token string
	}{"allowed": {a.tsSession, token}, "denied": {d.tsSession, readerToken}} {
		if !slices.Contains(sess.Wire, "POST initialize 200") || !hasPrefix(sess.Wire, "DELETE 2") {
			t.Errorf("%s session: wire %v, want initialize 200 and a DELETE answered 2xx", name, sess.Wire)
		}
		if got := sessionStatus(t, s.gatewayURL, sess.token, sess.SessionID, sess.ProtocolVersion); got != http.StatusNotFound {
			t.Errorf("%s session %s answers HTTP %d after DELETE; want 404", name, sess.SessionID, got)
		}
	}
}

func hasPrefix(entries []string, prefix string) bool {
	return slices.ContainsFunc(entries, func(e string) bool { return strings.HasPrefix(e, prefix) })
}

// tsOutcome is one tools/call of ts/coordinator.mjs: the result, or the
// error callTool threw.
type tsOutcome struct {
	Result *struct {
		IsError bool           `json:"isError"`
		Blocks  int            `json:"blocks"`
		Text    string         `json:"text"`
		Denial  map[string]any `json:"denial"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// TestTypeScriptSDKClientCoordinator runs ts/coordinator.mjs: the
// TypeScript SDK client against /api/mcp with an scmt_ token (mcp:read and
// mcp:ops) created through the admin API: exactly the two levels listed,
// an allowed read, -32601 for a tool outside the scopes and for a deploy
// tool, a policy denial as a tool execution error with the gateway's text
// verbatim, and the session ended with DELETE.
func TestTypeScriptSDKClientCoordinator(t *testing.T) {
	s := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := s.coordinatorCase(t)
	cmd := exec.CommandContext(ctx, s.node, "ts/coordinator.mjs")
	cmd.Env = append(cmd.Environ(), "API_URL="+c.endpoint, "API_TOKEN="+c.token, "GATE="+c.gate, "HIDDEN="+strings.Join(hiddenTools, ","))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ts/coordinator.mjs: %v\n%s\n%s", err, stderr.String(), s.logs())
	}
	var r struct {
		tsSession
		Tools      []string             `json:"tools"`
		Allowed    tsOutcome            `json:"allowed"`
		Decide     tsOutcome            `json:"decide"`
		Hidden     map[string]tsOutcome `json:"hidden"`
		ToolsAfter []string             `json:"toolsAfter"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("ts/coordinator.mjs printed no report (%v): %s", err, out)
	}
	if r.ProtocolVersion != "2025-11-25" {
		t.Errorf("negotiated %q, want 2025-11-25", r.ProtocolVersion)
	}
	c.checkTools(t, r.Tools)
	c.checkTools(t, r.ToolsAfter)
	if a := r.Allowed; a.Error != nil || a.Result == nil {
		t.Errorf("approvals.list: %+v, want a result", a)
	} else {
		c.checkAllowed(t, a.Result.IsError, a.Result.Text)
	}
	for _, tool := range hiddenTools {
		h := r.Hidden[tool]
		if h.Error == nil {
			t.Errorf("%s: %+v, want a thrown -32601", tool, h.Result)
			continue
		}
		c.checkHidden(t, tool, h.Error.Code == -32601, h.Error.Message)
	}
	switch d := r.Decide; {
	case d.Error != nil:
		t.Errorf("approval.decide of a tool gate threw %+v; want a tool execution error", d.Error)
	case d.Result == nil:
		t.Error("approval.decide of a tool gate: no result")
	default:
		t.Logf("the TypeScript SDK shows the coordinator's denial as: isError %v, text %q", d.Result.IsError, d.Result.Text)
		c.checkDenial(t, d.Result.IsError, d.Result.Blocks, d.Result.Text, d.Result.Denial)
	}
	if !slices.Contains(r.Wire, "POST initialize 200") || !hasPrefix(r.Wire, "DELETE 2") {
		t.Errorf("wire %v, want initialize 200 and a DELETE answered 2xx", r.Wire)
	}
	if got := sessionStatus(t, c.endpoint, c.token, r.SessionID, r.ProtocolVersion); got != http.StatusNotFound {
		t.Errorf("session %s answers HTTP %d after DELETE; want 404", r.SessionID, got)
	}
}
