package policy_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/policy"
	"github.com/mcpgate/mcpgate/gateway/policy/policystatus"
	"github.com/mcpgate/mcpgate/policies"
)

// tinyBundle is a bundle of revision rev (its .manifest) that allows
// every call (allow) or denies every call, with a test of its own that
// passes unless testsFail.
func tinyBundle(rev string, allow, testsFail bool) map[string]string {
	want := allow
	if testsFail {
		want = !allow
	}
	return map[string]string{
		".manifest": fmt.Sprintf(`{"revision": %q}`, rev),
		"supacloud/decision.rego": fmt.Sprintf(`package supacloud

allow := %t

decision := {"allow": allow, "visible": allow, "tier": "read", "reasons": reasons}

reasons := [] if allow

reasons := [{"code": "test.denied", "message": "denied by %s"}] if not allow

visible_tools := [t.name | some t in input.tools; allow]
`, allow, rev),
		"supacloud/decision_test.rego": fmt.Sprintf(`package supacloud_test

import data.supacloud

test_allow if supacloud.allow == %t
`, want),
	}
}

// writeBundle replaces the files of dir with files, each written to a
// temporary name and renamed, as a deploy would.
func writeBundle(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for _, sub := range []string{"supacloud"} {
		_ = os.RemoveAll(filepath.Join(dir, sub))
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		tmp := p + ".tmp"
		if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, p); err != nil {
			t.Fatal(err)
		}
	}
}

// countingObserver records what a Live reports.
type countingObserver struct {
	mu        sync.Mutex
	revisions []string
	ok, fail  int
	flips     map[string]int // tool + " " + direction
}

func (o *countingObserver) PolicyRevision(_, rev string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.revisions = append(o.revisions, rev)
}

func (o *countingObserver) PolicyReload(_ string, ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if ok {
		o.ok++
	} else {
		o.fail++
	}
}

func (o *countingObserver) ShadowFlip(tool, dir string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.flips == nil {
		o.flips = map[string]int{}
	}
	o.flips[tool+" "+dir]++
}

func newLive(t testing.TB, dir, shadow string, obs *countingObserver) *policy.Live {
	t.Helper()
	l, err := policy.NewLive(context.Background(), policy.LiveOptions{
		Engine: policy.Options{Edition: gateway.EditionCommunity, Tools: []policy.ToolRef{{Name: "projects.list", Tier: gateway.TierRead}}},
		Dir:    dir, ShadowDir: shadow, Embedded: policies.FS, Revision: policies.Revision, Observer: obs,
		Debounce: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

var projectsList = policy.ToolRef{Name: "projects.list", Tier: gateway.TierRead}

// TestReloadSwapsUnderConcurrentCalls: while calls are decided without a
// pause, the bundle is swapped back and forth between a revision that
// allows everything and one that denies everything. Every decision names
// exactly one of the two revisions, and its answer is that revision's.
// Run with -race.
func TestReloadSwapsUnderConcurrentCalls(t *testing.T) {
	dir := t.TempDir()
	writeBundle(t, dir, tinyBundle("rev-allow", true, false))
	obs := &countingObserver{}
	l := newLive(t, dir, "", obs)
	var stop atomic.Bool
	var decided [2]atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 4 {
		wg.Go(func() {
			p, c := agent("p-1"), caller(nil, "member")
			p.TaskID = fmt.Sprintf("t-%d", g)
			for n := 0; !stop.Load() || n < 50; n++ {
				d, err := l.Decide(context.Background(), p, c, projectsList, map[string]any{"n": n})
				switch {
				case err != nil:
					errs <- err
					return
				case d.Revision == "rev-allow" && d.Allow:
					decided[0].Add(1)
				case d.Revision == "rev-deny" && !d.Allow && len(d.Reasons) == 1 && d.Reasons[0].Message == "denied by rev-deny":
					decided[1].Add(1)
				default:
					errs <- fmt.Errorf("decision %+v is not the answer of the revision it names", d)
					return
				}
			}
		})
	}
	swaps := 0
	for i := range 6 {
		rev, allow := "rev-deny", false
		if i%2 == 1 {
			rev, allow = "rev-allow", true
		}
		writeBundle(t, dir, tinyBundle(rev, allow, false))
		at, err := l.Reload(context.Background(), policy.TriggerAdmin)
		if err != nil {
			t.Fatalf("reload %d: %v", i, err)
		}
		if at.Outcome != policystatus.Live || at.Revision != rev || at.Tests != 1 {
			t.Fatalf("reload %d: attempt %+v, want %s live with its 1 test passed", i, at, rev)
		}
		swaps++
		time.Sleep(5 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if decided[0].Load() == 0 || decided[1].Load() == 0 {
		t.Errorf("decided %d by rev-allow and %d by rev-deny; want both revisions to have decided calls", decided[0].Load(), decided[1].Load())
	}
	if st := l.Status(); st.Revision != "rev-allow" || obs.ok != swaps || obs.fail != 0 || len(obs.revisions) != swaps+1 {
		t.Errorf("status %+v, observer %+v after %d swaps", st, obs, swaps)
	}
}

// TestRefusedCandidatesNeverGoLive: a candidate whose own tests fail, that
// does not compile, or that lacks a decision query is refused; the
// running revision keeps deciding, and the failure, with OPA's message,
// is in the status and the failure counter.
func TestRefusedCandidatesNeverGoLive(t *testing.T) {
	broken := tinyBundle("rev-broken", false, false)
	broken["supacloud/decision.rego"] = "package supacloud\n\nallow if {\n"
	noVisible := tinyBundle("rev-novisible", false, false)
	noVisible["supacloud/decision.rego"] = strings.Split(noVisible["supacloud/decision.rego"], "visible_tools")[0]
	for _, tc := range []struct {
		note  string
		files map[string]string
		want  string // in the error
	}{
		{"its tests fail", tinyBundle("rev-failing", false, true), "data.supacloud_test.test_allow: FAIL"},
		{"it does not compile", broken, "rego_parse_error"},
		{"it lacks the visible_tools query", noVisible, "data.supacloud.visible_tools"},
	} {
		t.Run(tc.note, func(t *testing.T) {
			dir := t.TempDir()
			writeBundle(t, dir, tinyBundle("rev-good", true, false))
			obs := &countingObserver{}
			l := newLive(t, dir, "", obs)
			writeBundle(t, dir, tc.files)
			at, err := l.Reload(context.Background(), policy.TriggerAdmin)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Reload: %v, want an error with %q", err, tc.want)
			}
			if at.Outcome != policystatus.Refused || !strings.Contains(at.Error, tc.want) {
				t.Errorf("attempt %+v, want refused with %q", at, tc.want)
			}
			st := l.Status()
			if st.Revision != "rev-good" || st.LastFailure == nil || st.LastFailure.Error != at.Error {
				t.Errorf("status %+v: want rev-good live and the failure shown", st)
			}
			if obs.fail != 1 || obs.ok != 0 {
				t.Errorf("observer counted %d failures and %d successes, want 1 and 0", obs.fail, obs.ok)
			}
			d, err := l.Decide(context.Background(), agent(""), caller(nil, "member"), projectsList, nil)
			if err != nil || !d.Allow || d.Revision != "rev-good" {
				t.Errorf("after the refusal: decision %+v err %v, want rev-good's allow", d, err)
			}
		})
	}
}

// TestStartRefusesAFailingBundle: a folder whose tests fail does not start
// the gateway either.
func TestStartRefusesAFailingBundle(t *testing.T) {
	dir := t.TempDir()
	writeBundle(t, dir, tinyBundle("rev-failing", true, true))
	_, err := policy.NewLive(context.Background(), policy.LiveOptions{Dir: dir, Revision: policies.Revision,
		Engine: policy.Options{Edition: gateway.EditionCommunity}})
	if err == nil || !strings.Contains(err.Error(), "test_allow: FAIL") {
		t.Fatalf("NewLive: %v, want the failing test named", err)
	}
}

// TestUnchangedRevisionKeepsTheEngine: a reload of the same revision
// swaps nothing, so the decision cache stays warm.
func TestUnchangedRevisionKeepsTheEngine(t *testing.T) {
	dir := t.TempDir()
	writeBundle(t, dir, tinyBundle("rev-1", true, false))
	l := newLive(t, dir, "", &countingObserver{})
	before := l.Engine()
	at, err := l.Reload(context.Background(), policy.TriggerAdmin)
	if err != nil || at.Outcome != policystatus.Unchanged || l.Engine() != before {
		t.Fatalf("attempt %+v err %v, engine swapped %v; want unchanged and the same engine", at, err, l.Engine() != before)
	}
}

// TestReloadIfChangedSkipsTheLiveRevision: a reload asked for by another
// replica runs no tests (and is no attempt) while the folder holds the
// live revision; a new revision, or a refused candidate's folder fixed
// under the same revision, is loaded with every check.
func TestReloadIfChangedSkipsTheLiveRevision(t *testing.T) {
	dir := t.TempDir()
	writeBundle(t, dir, tinyBundle("rev-1", true, false))
	obs := &countingObserver{}
	l := newLive(t, dir, "", obs)
	ctx := context.Background()
	if at, err := l.ReloadIfChanged(ctx, policy.TriggerReplica, nil); at != nil || err != nil || obs.ok+obs.fail != 0 {
		t.Fatalf("unchanged folder: attempt %+v err %v, %d attempts counted; want none", at, err, obs.ok+obs.fail)
	}
	writeBundle(t, dir, tinyBundle("rev-2", false, true))
	if at, err := l.ReloadIfChanged(ctx, policy.TriggerReplica, nil); at == nil || err == nil || at.Outcome != policystatus.Refused || l.Engine().Revision() != "rev-1" {
		t.Fatalf("failing rev-2: attempt %+v err %v live %s; want refused, rev-1 kept", at, err, l.Engine().Revision())
	}
	writeBundle(t, dir, tinyBundle("rev-2", false, false))
	if at, err := l.ReloadIfChanged(ctx, policy.TriggerResync, nil); err != nil || at.Outcome != policystatus.Live || at.Trigger != policy.TriggerResync || l.Engine().Revision() != "rev-2" {
		t.Fatalf("fixed rev-2: attempt %+v err %v live %s; want rev-2 live", at, err, l.Engine().Revision())
	}
}

// TestWatchFollowsASymlinkedFolder: MCPGATE_POLICY_DIR may be a symbolic
// link to the bundle's folder; a change inside that folder goes live by
// itself as for a plain folder.
func TestWatchFollowsASymlinkedFolder(t *testing.T) {
	root := t.TempDir()
	real, dir := filepath.Join(root, "release-1"), filepath.Join(root, "current")
	writeBundle(t, real, tinyBundle("rev-1", true, false))
	if err := os.Symlink(real, dir); err != nil {
		t.Fatal(err)
	}
	l := newLive(t, dir, "", &countingObserver{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := l.Watch(ctx); err != nil {
		t.Fatal(err)
	}
	writeBundle(t, real, tinyBundle("rev-2", false, false))
	deadline := time.Now().Add(20 * time.Second)
	for l.Status().Revision != "rev-2" {
		if time.Now().After(deadline) {
			t.Fatalf("a change in the linked folder did not go live: status %+v", l.Status())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWatchReloads: a change in the watched folder goes live by itself.
func TestWatchReloads(t *testing.T) {
	dir := t.TempDir()
	writeBundle(t, dir, tinyBundle("rev-1", true, false))
	l := newLive(t, dir, "", &countingObserver{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := l.Watch(ctx); err != nil {
		t.Fatal(err)
	}
	writeBundle(t, dir, tinyBundle("rev-2", false, false))
	deadline := time.Now().Add(20 * time.Second)
	for l.Status().Revision != "rev-2" {
		if time.Now().After(deadline) {
			t.Fatalf("the watched folder's change did not go live: status %+v", l.Status())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if at := l.Status().LastAttempt; at.Trigger != policy.TriggerWatch {
		t.Errorf("last attempt %+v, want trigger watch", at)
	}
	d, err := l.Decide(ctx, agent(""), caller(nil, "member"), projectsList, nil)
	if err != nil || d.Allow || d.Revision != "rev-2" {
		t.Errorf("decision %+v err %v, want rev-2's deny", d, err)
	}
}

// TestEmbeddedBundleNeverReloads: without a folder there is nothing to
// reload, and the admin API is told so (EConflict).
func TestEmbeddedBundleNeverReloads(t *testing.T) {
	l := newLive(t, "", "", &countingObserver{})
	if _, err := l.Reload(context.Background(), policy.TriggerAdmin); gateway.ErrorCodeOf(err) != gateway.EConflict {
		t.Fatalf("Reload of the embedded bundle: %v, want EConflict", err)
	}
	if st := l.Status(); st.Source != "embedded" || st.Watched || st.Revision != policies.EmbeddedRevision() {
		t.Errorf("status %+v, want the embedded revision, unwatched", st)
	}
	if err := l.Watch(context.Background()); err != nil {
		t.Errorf("Watch of the embedded bundle: %v, want nil (nothing to watch)", err)
	}
}

// TestShadowFlipsAreCountedNeverEnforced: a shadow candidate that denies
// what the live bundle allows is counted and reported with both
// revisions; the call keeps the live decision. A shadow that errs changes
// nothing.
func TestShadowFlipsAreCountedNeverEnforced(t *testing.T) {
	l, shadowDir, obs, flips := shadowLive(t, tinyBundle("rev-live", true, false), tinyBundle("rev-shadow", false, false))
	d, err := l.Decide(context.Background(), agent(""), caller(nil, "member"), projectsList, nil)
	if err != nil || !d.Allow || d.Revision != "rev-live" {
		t.Fatalf("decision %+v err %v, want the live allow", d, err)
	}
	if obs.flips["projects.list allow_to_deny"] != 1 || len(*flips) != 1 {
		t.Fatalf("flips counted %v, reported %d; want one allow_to_deny", obs.flips, len(*flips))
	}
	if f := (*flips)[0]; f.LiveRevision != "rev-live" || f.ShadowRevision != "rev-shadow" || f.Live != d || f.Shadow.Allow {
		t.Errorf("flip %+v, want both revisions and both decisions", f)
	}
	if sh := l.Status().Shadow; sh == nil || sh.Revision != "rev-shadow" || sh.Source != shadowDir {
		t.Errorf("shadow status %+v", sh)
	}
	if _, err := l.Decide(context.Background(), agent(""), caller(nil, "member"), projectsList, nil); err != nil {
		t.Fatal(err)
	}
	if sh := l.Status().Shadow; len(sh.Flips) != 1 || sh.Flips[0] != (policystatus.ShadowFlips{Tool: "projects.list", Direction: policy.FlipAllowToDeny, Count: 2}) || sh.FlipsSince.IsZero() {
		t.Errorf("Status counts flips %+v since %v; want projects.list allow_to_deny 2", sh.Flips, sh.FlipsSince)
	}

	erring := tinyBundle("rev-erring", false, false)
	erring["supacloud/decision.rego"] = "package supacloud\n\ndecision := {\"allow\": to_number(\"x\") == 1, \"visible\": true}\n\nvisible_tools := []\n"
	// a test that passes: a candidate without one is refused (issue 22)
	erring["supacloud/decision_test.rego"] = "package supacloud_test\n\nimport data.supacloud\n\ntest_no_visible_tools if count(supacloud.visible_tools) == 0\n"
	writeBundle(t, shadowDir, erring)
	if _, err := l.Reload(context.Background(), policy.TriggerAdmin); err != nil {
		t.Fatal(err)
	}
	if got := l.Status().Shadow.Revision; got != "rev-erring" {
		t.Fatalf("shadow revision %s after reload, want rev-erring", got)
	}
	d, err = l.Decide(context.Background(), agent(""), caller(nil, "member"), projectsList, nil)
	if err != nil || !d.Allow || len(*flips) != 2 {
		t.Errorf("with an erring shadow: decision %+v err %v, %d flips; want the live allow and no new flip", d, err, len(*flips))
	}
	if got := l.Status().Shadow.Flips; len(got) != 1 || got[0].Count != 2 {
		t.Errorf("flips after a reload of the shadow = %+v; want the count since start kept (2)", got)
	}
}

// shadowLive is a Live of bundle live with bundle shadow as its shadow
// candidate (in shadowDir), an observer counting its flips, and the flips
// it reports, in order.
func shadowLive(t *testing.T, live, shadow map[string]string) (l *policy.Live, shadowDir string, obs *countingObserver, flips *[]policy.Flip) {
	t.Helper()
	dir, shadowDir := t.TempDir(), t.TempDir()
	writeBundle(t, dir, live)
	writeBundle(t, shadowDir, shadow)
	obs, flips = &countingObserver{}, &[]policy.Flip{}
	l, err := policy.NewLive(context.Background(), policy.LiveOptions{
		Engine: policy.Options{Edition: gateway.EditionCommunity}, Dir: dir, ShadowDir: shadowDir,
		Revision: policies.Revision, Observer: obs, OnFlip: func(_ context.Context, f policy.Flip) { *flips = append(*flips, f) },
	})
	if err != nil {
		t.Fatal(err)
	}
	return l, shadowDir, obs, flips
}

// TestShadowApprovalFlips: a candidate that allows a call the live
// bundle allows, but only with a person's approval (the flow rule set
// switched on, say), is a flip too, allow_to_approval, and the other way
// approval_to_allow; the same answer is none.
func TestShadowApprovalFlips(t *testing.T) {
	approving := func(rev string, approval bool) map[string]string {
		b := tinyBundle(rev, true, false)
		b["supacloud/decision.rego"] = strings.Replace(b["supacloud/decision.rego"], `"reasons": reasons}`,
			fmt.Sprintf(`"reasons": reasons, "obligations": {"approval_required": %t}}`, approval), 1)
		return b
	}
	for _, tc := range []struct {
		live, shadow bool
		want         string
	}{
		{false, true, policy.FlipAllowToApproval},
		{true, false, policy.FlipApprovalToAllow},
		{true, true, ""},
	} {
		l, _, obs, flips := shadowLive(t, approving("rev-live", tc.live), approving("rev-shadow", tc.shadow))
		d, err := l.Decide(context.Background(), agent(""), caller(nil, "member"), projectsList, nil)
		if err != nil || !d.Allow || d.Obligations.ApprovalRequired != tc.live {
			t.Fatalf("live decision %+v, %v; want allowed, approval %v", d, err, tc.live)
		}
		var got []string
		for _, f := range *flips {
			got = append(got, f.Direction)
		}
		if want := []string{tc.want}; (tc.want == "" && len(got) != 0) || (tc.want != "" && !slices.Equal(got, want)) {
			t.Errorf("live approval %v, shadow %v: flips %v; want %q", tc.live, tc.shadow, got, tc.want)
		}
		if tc.want != "" && obs.flips["projects.list "+tc.want] != 1 {
			t.Errorf("flips counted %v; want one projects.list %s", obs.flips, tc.want)
		}
	}
}

// TestSnapshotIsStable: a snapshot taken before a swap keeps deciding by
// its revision (one call, one revision), while new snapshots take the new
// one.
func TestSnapshotIsStable(t *testing.T) {
	dir := t.TempDir()
	writeBundle(t, dir, tinyBundle("rev-1", true, false))
	l := newLive(t, dir, "", &countingObserver{})
	snap := l.Snapshot()
	writeBundle(t, dir, tinyBundle("rev-2", false, false))
	if _, err := l.Reload(context.Background(), policy.TriggerAdmin); err != nil {
		t.Fatal(err)
	}
	old, err1 := snap.Decide(context.Background(), agent(""), caller(nil, "member"), projectsList, nil)
	cur, err2 := l.Snapshot().Decide(context.Background(), agent(""), caller(nil, "member"), projectsList, nil)
	if err1 != nil || err2 != nil || old.Revision != "rev-1" || !old.Allow || cur.Revision != "rev-2" || cur.Allow {
		t.Errorf("old snapshot %+v (%v), new %+v (%v)", old, err1, cur, err2)
	}
}

// BenchmarkDecideShadow measures a tools/call decision of the shipped
// bundle alone (shadow=off) and with a shadow candidate (a copy of the
// same bundle under another revision) decided beside it (shadow=on), with
// the decision cache on as in production, and without it (uncached: every
// decision a full evaluation of both bundles).
//
//	go test ./gateway/policy/ -run '^$' -bench BenchmarkDecideShadow -benchmem
func BenchmarkDecideShadow(b *testing.B) {
	shadowDir := b.TempDir()
	copyBundle(b, shadowDir)
	refs := catalogRefs(b)
	tool := ref(refs, "workflow.trigger")
	p, c := agent("p-1"), caller([]string{"supacloud.read.*", "supacloud.ops.*"}, "member")
	args := map[string]any{"workflow_id": "wfl-1"}
	for _, cache := range []struct {
		name string
		size int
	}{{"cached", 0}, {"uncached", -1}} {
		for _, sh := range []struct{ name, dir string }{{"off", ""}, {"on", shadowDir}} {
			b.Run(cache.name+"/shadow="+sh.name, func(b *testing.B) {
				l, err := policy.NewLive(context.Background(), policy.LiveOptions{
					Engine:   policy.Options{Edition: gateway.EditionCommunity, Tools: refs, CacheSize: cache.size},
					Embedded: policies.FS, ShadowDir: sh.dir, Revision: policies.Revision,
				})
				if err != nil {
					b.Fatal(err)
				}
				if sh.dir != "" && l.Status().Shadow.Revision == "" {
					b.Fatalf("shadow not loaded: %+v", l.Status().Shadow.LastAttempt)
				}
				b.ReportAllocs()
				for b.Loop() {
					if d, err := l.Decide(context.Background(), p, c, tool, args); err != nil || !d.Allow {
						b.Fatal(err, d)
					}
				}
			})
		}
	}
}

// copyBundle writes the shipped bundle, tests included, to dir with a
// .manifest of its own revision.
func copyBundle(tb testing.TB, dir string) {
	tb.Helper()
	files := map[string]string{".manifest": `{"revision": "shadow-copy"}`}
	entries, err := policies.FS.ReadDir("supacloud")
	if err != nil {
		tb.Fatal(err)
	}
	for _, e := range entries {
		b, err := policies.FS.ReadFile("supacloud/" + e.Name())
		if err != nil {
			tb.Fatal(err)
		}
		files["supacloud/"+e.Name()] = string(b)
	}
	writeBundle(tb, dir, files)
}

// slowBundle is tinyBundle(rev, true, false) with 20 more tests, each
// well under OPA's per-test timeout and all together far over a test
// budget of a few hundred milliseconds.
func slowBundle(rev string) map[string]string {
	slow := tinyBundle(rev, true, false)
	var tests strings.Builder
	tests.WriteString("package supacloud_test\n\n")
	for i := range 20 {
		fmt.Fprintf(&tests, "test_slow_%d if count([1 | some x in numbers.range(1, 1500); some y in numbers.range(1, 1500); x == y + 5000]) == 0\n\n", i)
	}
	slow["supacloud/slow_test.rego"] = tests.String()
	return slow
}

// TestSlowCandidateTestsAreCutOff: a candidate whose own tests would take
// far longer than LiveOptions.TestBudget (each under OPA's per-test
// timeout, so only the total is out of bounds) is refused once the budget
// is spent, and the running revision stays; the reload lock is free again
// for the next candidate.
func TestSlowCandidateTestsAreCutOff(t *testing.T) {
	dir := t.TempDir()
	writeBundle(t, dir, tinyBundle("rev-good", true, false))
	l, err := policy.NewLive(context.Background(), policy.LiveOptions{
		Engine: policy.Options{Edition: gateway.EditionCommunity, Tools: []policy.ToolRef{{Name: "projects.list", Tier: gateway.TierRead}}},
		Dir:    dir, Embedded: policies.FS, Revision: policies.Revision, TestBudget: 300 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	writeBundle(t, dir, slowBundle("rev-slow"))
	start := time.Now()
	at, err := l.Reload(context.Background(), policy.TriggerAdmin)
	if took := time.Since(start); err == nil || took > 10*time.Second {
		t.Fatalf("Reload of a candidate with slow tests: %+v, %v after %v; want a refusal within about 300ms", at, err, took)
	}
	if !strings.Contains(err.Error(), "did not finish") {
		t.Errorf("refusal %q does not say the tests did not finish", err)
	}
	if st := l.Status(); st.Revision != "rev-good" {
		t.Errorf("live revision %q after the refusal, want rev-good", st.Revision)
	}
}

// TestReloadIfChangedCoalesces: reload requests of other replicas that
// come while one already waits for the running reload are answered by
// that one, which reads the folder once it runs: a flood of announcements
// on the policy channel (anyone who may connect to the database can send
// them) runs the candidate's tests once, not once per announcement.
func TestReloadIfChangedCoalesces(t *testing.T) {
	dir := t.TempDir()
	writeBundle(t, dir, tinyBundle("rev-1", true, false))
	entered, release := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	attempts := map[string]int{}
	l, err := policy.NewLive(context.Background(), policy.LiveOptions{
		Engine: policy.Options{Edition: gateway.EditionCommunity, Tools: []policy.ToolRef{projectsList}},
		Dir:    dir, Embedded: policies.FS, Revision: policies.Revision,
		OnAttempt: func(trigger string, _ *policystatus.Attempt, _ error) {
			mu.Lock()
			attempts[trigger]++
			mu.Unlock()
			if trigger == policy.TriggerAdmin {
				close(entered)
				<-release // the reload holds on, as one running slow tests would
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	writeBundle(t, dir, tinyBundle("rev-2", false, true)) // refused: never skipped as live
	ctx := context.Background()
	go func() { _, _ = l.Reload(ctx, policy.TriggerAdmin) }()
	<-entered
	const asks = 10
	var returned atomic.Int32
	var wg sync.WaitGroup
	for range asks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = l.ReloadIfChanged(ctx, policy.TriggerReplica, nil)
			returned.Add(1)
		}()
	}
	for deadline := time.Now().Add(3 * time.Second); returned.Load() < asks-1 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	early := returned.Load()
	close(release)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if early != asks-1 || attempts[policy.TriggerReplica] != 1 {
		t.Fatalf("%d requests during a running reload: %d returned at once, %d reloads ran; want %d at once and 1 reload",
			asks, early, attempts[policy.TriggerReplica], asks-1)
	}
}

// BenchmarkReloadLatency measures edit → live: the shipped bundle (every
// folder, tests included) is served from a watched folder; each iteration
// makes a one-rule edit to it and waits for the first decision under the
// new revision. Every edit is new content, so each reload runs the
// candidate's whole test gate (no cached pass) after the watch's default
// debounce (300 ms); ms/edit is the figure docs/benchmarks.md reports.
//
//	go test ./gateway/policy/ -run '^$' -bench BenchmarkReloadLatency -benchtime 5x
func BenchmarkReloadLatency(b *testing.B) {
	dir := b.TempDir()
	files := map[string]string{}
	err := fs.WalkDir(policies.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(policies.FS, p)
		files[p] = string(data)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	writeBundle(b, dir, files)
	refs := catalogRefs(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l, err := policy.NewLive(ctx, policy.LiveOptions{
		Engine: policy.Options{Edition: gateway.EditionCommunity, Tools: refs},
		Dir:    dir, Embedded: policies.FS, Revision: policies.Revision,
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := l.Watch(ctx); err != nil {
		b.Fatal(err)
	}
	tool := ref(refs, "projects.list")
	p, c := agent("p-1"), caller([]string{"supacloud.read.*"}, "member")
	edited := filepath.Join(dir, "supacloud", "decision.rego")
	var took time.Duration
	cpu0 := cpuTime(b)
	for i := 0; b.Loop(); i++ {
		before := l.Engine().Revision()
		start := time.Now()
		edit := fmt.Sprintf("%s\n# one-rule edit %d of BenchmarkReloadLatency\nbench_edit := %d\n", files["supacloud/decision.rego"], i, i)
		if err := os.WriteFile(edited, []byte(edit), 0o644); err != nil {
			b.Fatal(err)
		}
		for {
			d, err := l.Decide(ctx, p, c, tool, nil)
			if err != nil || !d.Allow {
				b.Fatal(err, d)
			}
			if d.Revision != before {
				break
			}
			if time.Since(start) > time.Minute {
				b.Fatalf("edit %d not live after a minute: %+v", i, l.Status().LastAttempt)
			}
			time.Sleep(time.Millisecond)
		}
		took += time.Since(start)
	}
	b.ReportMetric(float64(took.Milliseconds())/float64(b.N), "ms/edit")
	b.ReportMetric(float64((cpuTime(b)-cpu0).Milliseconds())/float64(b.N), "cpu-ms/edit")
}

// cpuTime is the CPU time (user and system) this process has used: on a
// shared machine a steadier figure than the wall clock.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
