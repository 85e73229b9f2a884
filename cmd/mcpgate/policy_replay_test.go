package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/policies"
)

// candidateBundle writes the shipped bundle to a folder with the ops
// tier's wildcard renamed, so that every call granted by supacloud.ops.*
// flips to a denial.
func candidateBundle(t *testing.T) string {
	t.Helper()
	return bundleCopy(t, "supacloud/grants.rego", `"wildcard": "supacloud.ops.*"`, `"wildcard": "supacloud.operations.*"`)
}

// bundleCopy writes the shipped bundle to a folder, with old replaced by
// new in the file at edit, which must hold old once.
func bundleCopy(t *testing.T, edit, old, new string) string {
	t.Helper()
	dir := t.TempDir()
	err := fs.WalkDir(policies.FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(policies.FS, path)
		if err != nil {
			return err
		}
		if path == edit {
			if n := strings.Count(string(b), old); n != 1 {
				t.Fatalf("%s holds %s %d times, want 1", edit, old, n)
			}
			b = []byte(strings.Replace(string(b), old, new, 1))
		}
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(path)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, path), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

const replayLog = "testdata/replay/decisions.jsonl"

// TestPolicyReplay: the fixture log (OPA decision-log events) replayed
// against a candidate that renames the ops wildcard flips the ops calls,
// the script.run call whose slug the mask erased, and a denial recorded
// under an older bundle; a shadow flip event (custom.shadow) is skipped,
// not replayed; filters and thresholds decide the exit status.
func TestPolicyReplay(t *testing.T) {
	bundle := candidateBundle(t)
	tests := []struct {
		name string
		args []string
		code int // exit status: 0, 2 or 3
		want []string
		not  []string
	}{
		{"report", nil, 0, []string{
			"replayed 8 supacloud/decision decisions",
			"recorded under revision rev-0 (1), rev-1 (7)",
			"skipped: 1 of other paths, 1 shadow flip events, 0 outside the filters, 0 without a decision input or result, 1 unreadable",
			"first unreadable event: line 8:",
			"1 replayed inputs had masked or erased parts",
			"flips: 5 (allow_to_deny 4, deny_to_allow 1)",
			"workflow.trigger  2              0",
			"project.get       0              1",
			"agent           4              1",
			"1. 2026-11-30T10:02:00Z d-02 workflow.trigger: allow_to_deny by agent u-1 in ws-1 (task t-1)",
			"candidate: denied: allowlist.missing_grant: tool workflow.trigger needs supacloud.operations.*",
			"recorded:  denied: allowlist.missing_grant: tool project.get needs supacloud.read.*",
			"script.run: allow_to_deny by agent u-1 in ws-1 (task t-1) [masked input]",
		}, []string{"run.list"}},
		{"workspace filter", []string{"--workspace", "ws-1"}, 0, []string{"replayed 7 ", "1 outside the filters", "flips: 4 (allow_to_deny 3, deny_to_allow 1)"}, nil},
		{"time filter", []string{"--since", "2026-11-30T10:02:00Z", "--until", "2026-11-30T10:04:00Z"}, 0, []string{"replayed 2 ", "flips: 2 (allow_to_deny 2, deny_to_allow 0)"}, nil},
		{"examples", []string{"--examples", "1"}, 0, []string{"first 1 of 5 flips", "1. "}, []string{"2. "}},
		{"under the threshold", []string{"--fail-on-flips", "5"}, 0, []string{"flips: 5"}, nil},
		{"over the threshold", []string{"--fail-on-flips", "4"}, 3, []string{"5 decisions flip, more than --fail-on-flips 4 allows"}, nil},
		{"protected tool flips", []string{"--protected", "app.deploy,task.create"}, 3, []string{"protected tools: task.create"}, nil},
		{"protected tool without flips", []string{"--protected", "run.list"}, 0, nil, nil},
		{"bad time", []string{"--since", "soon"}, 2, []string{`--since "soon"`}, nil},
		{"bad flag", []string{"--frobnicate"}, 2, []string{"unknown flag"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"policy", "replay", "--bundle", bundle, "--log", replayLog}, tc.args...)
			out, err := runCmd(t, nil, args...)
			code := 0
			if err != nil {
				code = exitCode(err)
				out += err.Error()
			}
			if code != tc.code {
				t.Fatalf("exit status %d (err %v), want %d\n%s", code, err, tc.code, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(out, w) {
					t.Errorf("output has %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestPolicyReplayUsage: missing flags, a missing log and a bundle that is
// no folder are usage errors (exit 2); a bundle that does not compile is
// refused (exit 1).
func TestPolicyReplayUsage(t *testing.T) {
	broken := t.TempDir()
	if err := os.MkdirAll(filepath.Join(broken, "supacloud"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(broken, "supacloud", "x.rego"), []byte("package supacloud\nallow if {"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--log", replayLog}, 2, "--bundle and --log are required"},
		{[]string{"--bundle", "../../policies"}, 2, "--bundle and --log are required"},
		{[]string{"--bundle", "../../policies", "--log", "testdata/replay/none.jsonl"}, 2, "cannot read the decision log"},
		{[]string{"--bundle", replayLog, "--log", replayLog}, 2, "is not a folder"},
		{[]string{"--bundle", broken, "--log", replayLog}, 1, "the candidate bundle is refused"},
	}
	for _, tc := range tests {
		_, err := runCmd(t, nil, append([]string{"policy", "replay"}, tc.args...)...)
		if err == nil || exitCode(err) != tc.code || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v (exit %d), want exit %d with %q", tc.args, err, exitCode(err), tc.code, tc.want)
		}
	}
}

// TestPolicyReplayFlowRules: a log recorded with the flow rule set off
// (the session part in every input), replayed against the bundle with it
// on for ws-1, shows the egress after a private read now waiting for a
// person's approval, and nothing else changed.
func TestPolicyReplayFlowRules(t *testing.T) {
	dir := bundleCopy(t, "supacloud/flow.rego", `"workspaces": []}`, `"workspaces": ["ws-1"]}`)
	out, err := runCmd(t, nil, "policy", "replay", "--bundle", dir, "--log", "testdata/replay/flow.jsonl")
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, out)
	}
	for _, w := range []string{"replayed 3 ", "flips: 0 ", "1 now need a person's approval (allow_to_approval), 0 no longer do"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

// TestPolicyReplayCCServer: the cc_server surface's decisions
// (ccserver/decision events) are re-decided against the candidate's
// data.ccserver: a plan-mode call of run_playbook, refused when recorded,
// flips to allowed under a candidate whose plan mode lists the tool, and
// its recorded revision is read under bundles.ccserver.
func TestPolicyReplayCCServer(t *testing.T) {
	bundle := candidateBundle(t)
	modes := filepath.Join(bundle, "ccserver", "modes.rego")
	b, err := os.ReadFile(modes)
	if err != nil {
		t.Fatal(err)
	}
	old := `{"todo_read", "todo_write", "submit_plan", "exit_plan_mode"}`
	if strings.Count(string(b), old) != 1 {
		t.Fatalf("modes.rego no longer holds plan mode's own tools as %s", old)
	}
	edited := strings.Replace(string(b), old, `{"todo_read", "todo_write", "submit_plan", "exit_plan_mode", "run_playbook"}`, 1)
	if err := os.WriteFile(modes, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	event := `{"decision_id":"cc-1","path":"ccserver/decision","timestamp":"2026-11-30T10:00:00Z",` +
		`"bundles":{"ccserver":{"revision":"rev-cc"}},` +
		`"input":{"principal":{"kind":"user","sub":"u-ada","mode":"plan","workspace_id":"","ticket_id":""},"memberships":["ws-acme"],` +
		`"tool":{"name":"run_playbook","group":"plans_playbooks_artifacts","requires_approval":false,"action_classes":[]},` +
		`"arguments":{"workspace_id":"ws-acme"}},` +
		`"result":{"allow":false,"reasons":[{"code":"mode.tool_not_allowed","message":"not in plan mode"}]}}`
	log := filepath.Join(t.TempDir(), "cc.jsonl")
	if err := os.WriteFile(log, []byte(event+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runCmd(t, nil, "policy", "replay", "--bundle", bundle, "--log", log)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, w := range []string{"replayed 0 supacloud/decision and 1 ccserver/decision decisions", "recorded under revision rev-cc (1)",
		"flips: 1 (allow_to_deny 0, deny_to_allow 1)", "run_playbook: deny_to_allow by user u-ada"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}
