package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/mcpgate/mcpgate/gateway"
)

func TestValidate(t *testing.T) {
	c := mustLoad(t)
	tests := []struct {
		note string
		tool string
		args map[string]any
		want []string // substrings of the error; nil means valid
	}{
		{"valid", "project.get", map[string]any{"project_id": "p1"}, nil},
		{"workspace_id accepted", "project.get", map[string]any{"project_id": "p1", "workspace_id": "ws_1"}, nil},
		{"nil args for a tool without required arguments", "workspace.info", nil, nil},
		{"nil args for a tool with required arguments", "project.get", nil,
			[]string{"invalid arguments for tool project.get: /project_id: missing required property"}},
		{"missing required", "project.get", map[string]any{},
			[]string{"invalid arguments for tool project.get: /project_id: missing required property"}},
		{"wrong type", "project.get", map[string]any{"project_id": 42.0},
			[]string{"tool project.get: /project_id: expected string, got number"}},
		{"workspace_id wrong type", "project.get", map[string]any{"project_id": "p1", "workspace_id": 7.0},
			[]string{"/workspace_id: expected string, got number"}},
		{"extra property names accepted ones", "project.get", map[string]any{"project_id": "p1", "projectId": "p1"},
			[]string{"/projectId: unknown property; accepted: project_id, workspace_id"}},
		{"enum violation", "docs.search", map[string]any{"query": "deploy", "lang": "fr"},
			[]string{`tool docs.search: /lang: must be one of "en", "de", got "fr"`}},
		{"enum valid", "docs.search", map[string]any{"query": "deploy", "lang": "de", "limit": 50.0}, nil},
		{"docs.search limit above max", "docs.search", map[string]any{"query": "q", "limit": 51.0},
			[]string{"/limit: must be at most 50, got 51"}},
		{"spec.get unknown contract", "spec.get", map[string]any{"name": "management"},
			[]string{`/name: must be one of "openapi_public", "workflow_schema", "mcp_catalog", "command_catalog"`}},
		{"spec.get pointer", "spec.get", map[string]any{"name": "openapi_public", "pointer": "/paths"}, nil},
		{"spec.get pointer without slash", "spec.get", map[string]any{"name": "openapi_public", "pointer": "paths"},
			[]string{`/pointer: "paths" does not match the pattern`}},
		{"run.events full page", "run.events", map[string]any{"run_id": "r1", "after_sequence": 0.0, "limit": 500.0, "tail": true}, nil},
		{"run.events limit zero", "run.events", map[string]any{"run_id": "r1", "limit": 0.0},
			[]string{"/limit: must be at least 1, got 0"}},
		{"run.events negative sequence", "run.events", map[string]any{"run_id": "r1", "after_sequence": -1.0},
			[]string{"/after_sequence: must be at least 0, got -1"}},
		{"run.events fractional limit", "run.events", map[string]any{"run_id": "r1", "limit": 2.5},
			[]string{"/limit: expected integer, got number"}},
		{"json.Number accepted", "run.events", map[string]any{"run_id": "r1", "limit": json.Number("20")}, nil},
		{"several problems all named", "run.events", map[string]any{"limit": 900.0, "tail": "yes"},
			[]string{"/limit: must be at most 500, got 900", "/run_id: missing required property", "/tail: expected boolean, got string"}},
		{"approval.decide bad decision", "approval.decide", map[string]any{"approval_id": "a1", "decision": "maybe"},
			[]string{`/decision: must be one of "approve", "reject", got "maybe"`}},
		{"script.run free-form inputs", "script.run", map[string]any{"slug": "nightly", "inputs": map[string]any{"n": 3.0, "tags": []any{"a"}}}, nil},
		{"script.run inputs not object", "script.run", map[string]any{"slug": "nightly", "inputs": "n=3"},
			[]string{"/inputs: expected object, got string"}},
		{"deploy step 1", "app.deploy", map[string]any{"app_id": "app1"}, nil},
		{"deploy step 2", "app.migration.apply", map[string]any{"app_id": "app1", "confirmation_token": "t", "idempotency_key": "k"}, nil},
		{"deploy token without idempotency key", "app.deploy", map[string]any{"app_id": "app1", "confirmation_token": "t"},
			[]string{"/idempotency_key: missing property, required when confirmation_token is present"}},
		{"uuid format asserted", "memory.get", map[string]any{"memory_id": "not-a-uuid"},
			[]string{"/memory_id:", "uuid"}},
		{"docs.get needs a markdown path", "docs.get", map[string]any{"path": "user/index.html"},
			[]string{"/path:", "does not match the pattern"}},
		{"pointer escapes ~ and /", "workspace.info", map[string]any{"a/b~c": 1.0},
			[]string{"/a~1b~0c: unknown property"}},
		{"Go-typed values are re-encoded", "script.run", map[string]any{"slug": "s", "inputs": map[string]any{"ids": []string{"a"}, "n": 3}}, nil},
		{"Go-typed wrong value still reported", "run.events", map[string]any{"run_id": []string{"r1"}},
			[]string{"/run_id: expected string, got array"}},
		{"unknown tool", "supacloud.full", map[string]any{}, []string{"unknown tool supacloud.full"}},
	}
	for _, tc := range tests {
		t.Run(tc.note, func(t *testing.T) {
			err := c.Validate(tc.tool, tc.args)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			var ge *gateway.Error
			if !errors.As(err, &ge) || ge.Code != gateway.EInvalid {
				t.Fatalf("want *gateway.Error EInvalid, got %#v", err)
			}
			// Only a schema violation is an input validation error; an
			// unknown tool is not (docs/http.md, Errors).
			if wantInput := tc.tool != "supacloud.full"; ge.ToolInput != wantInput {
				t.Errorf("ToolInput = %v, want %v", ge.ToolInput, wantInput)
			}
			for _, w := range tc.want {
				if !strings.Contains(ge.Message, w) {
					t.Errorf("message %q does not contain %q", ge.Message, w)
				}
			}
		})
	}
}

func TestValidateCapsProblems(t *testing.T) {
	c := mustLoad(t)
	args := map[string]any{}
	for i := range 20 {
		args[fmt.Sprintf("junk%02d", i)] = true
	}
	err := c.Validate("workspace.info", args)
	if err == nil {
		t.Fatal("20 unknown properties accepted")
	}
	msg := err.Error()
	if got := strings.Count(msg, "unknown property"); got != maxProblems {
		t.Errorf("message lists %d problems, want %d: %s", got, maxProblems, msg)
	}
	if !strings.Contains(msg, "and 12 more") {
		t.Errorf("message does not say how many were left out: %s", msg)
	}
}

// TestValidateConcurrent runs Validate from many goroutines; run with -race.
func TestValidateConcurrent(t *testing.T) {
	c := mustLoad(t)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				good := map[string]any{"run_id": fmt.Sprintf("r%d-%d", g, i), "limit": 10.0}
				if err := c.Validate("run.events", good); err != nil {
					errs <- err
					return
				}
				if c.Validate("run.events", map[string]any{"limit": "x"}) == nil {
					errs <- errors.New("invalid arguments accepted")
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func BenchmarkValidate(b *testing.B) {
	c := mustLoad(b)
	cases := []struct {
		name string
		tool string
		args map[string]any
	}{
		{"valid/project.get", "project.get", map[string]any{"project_id": "p1", "workspace_id": "ws_1"}},
		{"valid/run.events", "run.events", map[string]any{"run_id": "r1", "after_sequence": 120.0, "limit": 100.0, "tail": false}},
		{"valid/app.deploy", "app.deploy", map[string]any{"app_id": "a1", "confirmation_token": "tok", "idempotency_key": "k1"}},
		{"invalid/run.events", "run.events", map[string]any{"limit": 900.0, "tail": "yes"}},
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = c.Validate(bc.tool, bc.args)
			}
		})
	}
	b.Run("parallel/run.events", func(b *testing.B) {
		args := cases[1].args
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_ = c.Validate("run.events", args)
			}
		})
	})
}
