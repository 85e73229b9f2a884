package main

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/pipeline"
	"github.com/mcpgate/mcpgate/gateway/server"
	"github.com/mcpgate/mcpgate/tools"
)

// usage is one audited call of a suggest fixture.
type usage struct {
	tool, status, bucket string
	decided              bool
	n                    int
}

// seedSuggest creates workspace ws-s with the given profiles and records
// calls for each, an hour apart from 2026-11-01.
func seedSuggest(t *testing.T, profiles map[string][]string, calls map[string][]usage) string {
	t.Helper()
	url := "sqlite:" + filepath.Join(t.TempDir(), "suggest.db")
	s, err := server.OpenStore(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if err := s.PutWorkspace(ctx, &gateway.Workspace{ID: "ws-s", Name: "S"}); err != nil {
		t.Fatal(err)
	}
	cat, err := tools.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range slices.Sorted(maps.Keys(profiles)) {
		allow := profiles[id]
		at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
		if err := s.PutProfile(ctx, &gateway.Profile{WorkspaceID: "ws-s", ID: id, Name: id, Allowlist: allow}); err != nil {
			t.Fatal(err)
		}
		for _, u := range calls[id] {
			tool, _ := cat.Lookup(u.tool)
			for range max(u.n, 1) {
				at = at.Add(time.Hour)
				ev := &gateway.AuditEvent{Time: at, WorkspaceID: "ws-s", TaskID: "t-1", ProfileID: id, Actor: "u1",
					PrincipalKind: gateway.PrincipalAgent, Tool: u.tool, Tier: tool.Tier, Status: u.status, Bucket: u.bucket, ReasonCodes: []string{}}
				if u.decided {
					ev.DecisionID = fmt.Sprintf("d-%d", at.Unix())
				}
				if err := s.RecordAudit(ctx, ev); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	return url
}

func TestPolicySuggest(t *testing.T) {
	cat, err := tools.Load()
	if err != nil {
		t.Fatal(err)
	}
	var allReads []usage
	for _, tl := range cat.Tools() {
		if tl.Tier == gateway.TierRead {
			allReads = append(allReads, usage{tl.Name, gateway.AuditAllowed, "", true, 1})
		}
	}
	url := seedSuggest(t, map[string][]string{
		"p-ops":     {"supacloud.read.*", "supacloud.ops.*"},
		"p-reads":   {"supacloud.full"},
		"p-prefix":  {"supacloud.project.get", "supacloud.workflow.trigger"},
		"p-nothing": {"supacloud.read.*"},
	}, map[string][]usage{
		"p-ops": {
			{"conversation.get", gateway.AuditAllowed, "", true, 1},
			{"conversation.list", gateway.AuditAllowed, "", true, 2},
			{"project.get", gateway.AuditAllowed, "", true, 1},
			{"workflow.trigger", gateway.AuditError, "", true, 3}, // allowed, the upstream failed
			{"schedule.create", gateway.AuditRateLimited, "profile_hour", true, 1},
			{"memory.search", gateway.AuditAllowed, "", true, 1},
			{"app.deploy", gateway.AuditDenied, "", true, 2},
			{"task.create", gateway.AuditRateLimited, pipeline.RefusalBucket, true, 1},
			{"issue.get", gateway.AuditError, "", false, 1},
		},
		"p-reads":  allReads,
		"p-prefix": {{"project.get", gateway.AuditAllowed, "", true, 1}},
	})
	env := map[string]string{"MCPGATE_DATABASE_URL": url}
	tests := []struct {
		name string
		args []string
		want []string
		err  string
	}{
		{"exact names, a group wildcard, no baseline entry", []string{"--profile", "p-ops"}, []string{
			"profile p-ops (p-ops) of workspace ws-s: 13 audited calls, all history; 6 tools allowed, 2 denied, 1 calls refused before a decision",
			`suggested allowlist (4 entries): ["project.get","schedule.create","supacloud.conversation.*","workflow.trigger"]`,
			"supacloud.conversation.*         grants conversation.get, conversation.list",
			"memory.search      baseline (always on)",
			"denied calls (not in the suggestion):",
			"app.deploy   deploy  2",
			"task.create  ops",
			`current allowlist: ["supacloud.read.*","supacloud.ops.*"]`,
			"it grants 46 tools the profile never called:",
		}, ""},
		{"since drops older calls", []string{"--profile", "p-ops", "--since", "2026-11-01T06:30:00Z"}, []string{
			"since 2026-11-01T06:30:00Z",
			`suggested allowlist (2 entries): ["schedule.create","workflow.trigger"]`,
		}, ""},
		{"every read tool called: the tier wildcard", []string{"--profile", "p-reads"}, []string{
			`suggested allowlist (1 entries): ["supacloud.read.*"]`,
			"it grants ",
		}, ""},
		{"prefixed vocabulary", []string{"--profile", "p-prefix"}, []string{
			`suggested allowlist (1 entries): ["supacloud.project.get"]`,
			"it grants 1 tools the profile never called: workflow.trigger",
		}, ""},
		{"no calls", []string{"--profile", "p-nothing"}, []string{
			`suggested allowlist (0 entries): null`, "allowed calls: none", "it grants 31 tools",
		}, ""},
		{"unknown profile", []string{"--profile", "p-none"}, nil, "p-none"},
		{"bad since", []string{"--profile", "p-ops", "--since", "yesterday"}, nil, `--since "yesterday"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runCmd(t, env, append([]string{"policy", "suggest", "--workspace", "ws-s"}, tc.args...)...)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestPolicySuggestCCServer: the cc_server surface's modes have no
// allowlist, so suggest says there is nothing to suggest and why (no store
// needed); an unknown surface is refused.
func TestPolicySuggestCCServer(t *testing.T) {
	out, err := runCmd(t, nil, "policy", "suggest", "--surface", "ccserver")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, w := range []string{"nothing to suggest for the ccserver surface", "no allowlist", "policies/ccserver/modes.rego"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	if out, err := runCmd(t, nil, "policy", "suggest", "--surface", "gitlab", "--workspace", "w", "--profile", "p"); err == nil || !strings.Contains(err.Error(), `--surface "gitlab" is unknown`) {
		t.Errorf("unknown surface: %v\n%s", err, out)
	}
}
