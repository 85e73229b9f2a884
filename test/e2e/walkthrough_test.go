package e2e

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/policies"
)

// walkthroughEdit is the candidate of the walkthrough of
// docs/policy.md#walkthrough-changing-policy-while-the-gateway-runs (step 2): the scaffold tier needs the
// workspace role owner or admin, and the three tests that pinned the old
// grant follow. Each edit must match exactly once, so a change to the
// files that breaks the walkthrough's sed lines fails here.
var walkthroughEdit = map[string][][2]string{
	"supacloud/grants.rego": {{
		`"scaffold": {"wildcard": "supacloud.scaffold.*", "always_on": false, "roles": null}`,
		`"scaffold": {"wildcard": "supacloud.scaffold.*", "always_on": false, "roles": ["owner", "admin"]}`,
	}},
	"supacloud/deploy_test.rego":   {{`, "scaffold": "scaffold.app.propose"`, ``}, {"count(names) == 66\n", "count(names) == 60\n"}},
	"supacloud/decision_test.rego": {{`"member"}}), 66],` + "\n", `"member"}}), 60],` + "\n"}, {"39, 66, 71}\n", "39, 60, 71}\n"}},
}

// walkthroughBroken is step 6's edit: every profile would get the ops
// tools, which the bundle's own tests refuse.
var walkthroughBroken = [2]string{
	`"ops": {"wildcard": "supacloud.ops.*", "always_on": false`,
	`"ops": {"wildcard": "supacloud.ops.*", "always_on": true`,
}

func editFile(t *testing.T, path string, edits ...[2]string) {
	t.Helper()
	b, err := os.ReadFile(path)
	must(t, err)
	s := string(b)
	for _, e := range edits {
		if n := strings.Count(s, e[0]); n != 1 {
			t.Fatalf("%s holds %q %d times, want 1 (update the README walkthrough with it)", path, e[0], n)
		}
		s = strings.Replace(s, e[0], e[1], 1)
	}
	must(t, os.WriteFile(path, []byte(s), 0o644))
}

// TestPolicyWalkthrough runs the docs/policy.md walkthrough in-process: a
// watched copy of the policies with the decision log on and the candidate
// as shadow; a member's scaffold call flips (counted in /metrics, one
// decision log event with custom.shadow and both revisions) while the
// owner's does not; the candidate copied over the watched folder goes live
// (GET /admin/v1/policy, /readyz, mcpgate_policy_revision_info, the audit
// row and the decision log name its revision, and the member is now
// denied); a broken edit is refused and the revision stays.
func TestPolicyWalkthrough(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	live, candidate := filepath.Join(work, "live"), filepath.Join(work, "candidate")
	must(t, os.CopyFS(live, policies.FS))
	must(t, os.CopyFS(candidate, policies.FS))
	for file, edits := range walkthroughEdit {
		editFile(t, filepath.Join(candidate, file), edits...)
	}
	oldRev, err := policies.Revision(os.DirFS(live))
	must(t, err)
	newRev, err := policies.Revision(os.DirFS(candidate))
	must(t, err)
	logFile := filepath.Join(work, "decisions.jsonl")
	g := startGateway(t, "sqlite:"+filepath.Join(work, "walk.db"), map[string]string{
		"MCPGATE_POLICY_DIR":        live,
		"MCPGATE_SHADOW_POLICY_DIR": candidate,
		"MCPGATE_DECISION_LOG_FILE": logFile,
	})
	seedFixtures(t, g)
	member := g.connect(t, g.token(t, "ws-a", "mia", "task-ws-a", "scaffolder"))
	owner := g.connect(t, g.token(t, "ws-a", "olivia", "task-ws-a", "scaffolder"))
	// propose calls scaffold.app.propose on cs; it returns the denial's
	// text, "" when the call was allowed.
	propose := func(cs *mcp.ClientSession, name string) string {
		t.Helper()
		res, err := call(cs, "scaffold.app.propose", map[string]any{"name": name})
		must(t, err)
		if res.IsError {
			return textOf(res)
		}
		return ""
	}
	if d := propose(member, "walk-1"); d != "" {
		t.Fatalf("the member's call was denied under the live bundle: %s", d)
	}
	if d := propose(owner, "walk-2"); d != "" {
		t.Fatalf("the owner's call was denied: %s", d)
	}

	// Shadow: one flip, the member's, in /metrics and in the decision log.
	metrics := get(t, g.srv.URL+"/metrics", "")
	if !strings.Contains(metrics, `mcpgate_policy_shadow_flips_total{direction="allow_to_deny",tool="scaffold.app.propose"} 1`) {
		t.Errorf("no single scaffold.app.propose flip in /metrics:\n%s", grepLines(metrics, "shadow_flips"))
	}
	events := waitEvents(t, logFile, 3) // two decisions, one flip
	var flips []map[string]any
	for _, ev := range events {
		if c, _ := ev["custom"].(map[string]any); c["shadow"] != nil {
			flips = append(flips, ev)
		}
	}
	if len(flips) != 1 {
		t.Fatalf("%d shadow flip events in the decision log, want 1: %v", len(flips), events)
	}
	f := flips[0]
	sh := f["custom"].(map[string]any)["shadow"].(map[string]any)
	if sh["direction"] != "allow_to_deny" || sh["live_revision"] != oldRev || sh["shadow_revision"] != newRev {
		t.Errorf("flip event's custom.shadow %v, want allow_to_deny from %s to %s", sh, oldRev, newRev)
	}
	if f["path"] != "supacloud/decision" || bundleRevision(f) != newRev || f["result"].(map[string]any)["allow"] != false {
		t.Errorf("flip event %v: want path supacloud/decision, the candidate's revision and its denial", f)
	}
	// The flip is logged while the call is decided, so just before the
	// live decision's own event: the member's call.
	if events[0]["decision_id"] != f["decision_id"] || sh["live_decision_id"] != events[1]["decision_id"] || bundleRevision(events[1]) != oldRev {
		t.Errorf("flip event %v (live decision %v) first, then the member's decision %v under %v; want the flip, then the decision it names under %s",
			f["decision_id"], sh["live_decision_id"], events[1]["decision_id"], bundleRevision(events[1]), oldRev)
	}

	// The watched folder takes the candidate live.
	// cp -r candidate/. live/: the edited files are the only difference.
	for file := range walkthroughEdit {
		b, err := os.ReadFile(filepath.Join(candidate, file))
		must(t, err)
		must(t, os.WriteFile(filepath.Join(live, file), b, 0o644))
	}
	waitFor(t, "the candidate to go live", func() bool { return g.app.Policy.Status().Revision == newRev })
	st := get(t, g.srv.URL+"/admin/v1/policy", "e2e-admin-token")
	if !strings.Contains(st, `"revision":"`+newRev+`"`) || !strings.Contains(st, `"outcome":"live"`) {
		t.Errorf("GET /admin/v1/policy after the swap: %s", st)
	}
	if r := get(t, g.srv.URL+"/readyz", ""); !strings.Contains(r, newRev) {
		t.Errorf("/readyz after the swap: %s", r)
	}
	metrics = get(t, g.srv.URL+"/metrics", "")
	if !strings.Contains(metrics, `mcpgate_policy_revision_info{revision="`+newRev+`",surface="supacloud"} 1`) || strings.Contains(metrics, oldRev) {
		t.Errorf("revision info after the swap:\n%s", grepLines(metrics, "revision_info"))
	}
	if d := propose(member, "walk-3"); !strings.Contains(d, "owner or admin") {
		t.Fatalf("the member's call after the swap: %q, want the role denial", d)
	}
	row := g.lastAudit(t, "ws-a", "task-ws-a", "scaffold.app.propose")
	if row.Status != gateway.AuditDenied || row.PolicyRevision != newRev {
		t.Errorf("audit row after the swap: status %s, revision %s; want denied under %s", row.Status, row.PolicyRevision, newRev)
	}
	events = waitEvents(t, logFile, 4)
	if last := events[len(events)-1]; bundleRevision(last) != newRev || last["decision_id"] != row.DecisionID {
		t.Errorf("last decision log event %v, want decision %s under %s", last, row.DecisionID, newRev)
	}

	// A broken edit is refused; the revision stays.
	editFile(t, filepath.Join(live, "supacloud", "grants.rego"), walkthroughBroken)
	waitFor(t, "the broken edit to be refused", func() bool { return g.app.Policy.Status().LastFailure != nil })
	st2 := g.app.Policy.Status()
	if st2.Revision != newRev || !strings.Contains(st2.LastFailure.Error, "of the bundle's own tests fail") {
		t.Errorf("after the broken edit: revision %s, failure %+v; want %s and the failing tests", st2.Revision, st2.LastFailure, newRev)
	}
	if d := propose(owner, "walk-4"); d != "" {
		t.Errorf("the owner's call after the refused edit: %s", d)
	}
}

// get fetches url (with an admin bearer token when set) and returns the body.
func get(t *testing.T, url, token string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must(t, err)
	return string(b)
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func bundleRevision(ev map[string]any) any {
	b, _ := ev["bundles"].(map[string]any)
	s, _ := b["supacloud"].(map[string]any)
	return s["revision"]
}

// waitEvents waits until the decision log file holds n events (it is
// written in the background) and returns them.
func waitEvents(t *testing.T, file string, n int) []map[string]any {
	t.Helper()
	var raw []byte
	waitFor(t, "the decision log events", func() bool {
		raw, _ = os.ReadFile(file)
		return bytes.Count(raw, []byte("\n")) >= n
	})
	return decisionEvents(t, raw)
}

// waitFor polls cond for up to three minutes: a reload runs the bundle's
// tests twice (the folder's and the shadow's), slow under -race on a busy
// machine.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
