package policy_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/policy"
	"github.com/mcpgate/mcpgate/gateway/policy/policystatus"
	"github.com/mcpgate/mcpgate/policies"
)

// contentOf is the content hash of the folder dir.
func contentOf(t *testing.T, dir string) string {
	t.Helper()
	h, err := policy.ContentHash(os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestTestsRunOncePerContent: a bundle's tests run once per content
// hash in a process: the shadow folder holding the same bytes, a second
// surface on the same folder, an unchanged shadow folder at each reload
// and a revision switched back to are not tested again (TestsFrom
// cached), while every other change of bytes is.
func TestTestsRunOncePerContent(t *testing.T) {
	dir, shadow := t.TempDir(), t.TempDir()
	writeBundle(t, dir, tinyBundle("rev-1", true, false))
	writeBundle(t, shadow, tinyBundle("rev-1", true, false))
	tested := policy.NewTestedBundles(0)
	open := func(shadowDir string) *policy.Live {
		l, err := policy.NewLive(context.Background(), policy.LiveOptions{
			Engine: policy.Options{Edition: gateway.EditionCommunity, Tools: []policy.ToolRef{projectsList}},
			Dir:    dir, ShadowDir: shadowDir, Embedded: policies.FS, Revision: policies.Revision, Tested: tested,
		})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	l := open(shadow)
	st := l.Status()
	if st.LastAttempt.TestsFrom != policystatus.TestsRun || st.LastAttempt.Tests != 1 || st.LastAttempt.Content != contentOf(t, dir) {
		t.Errorf("start: %+v, want the tests run, one passed, the folder's content hash", st.LastAttempt)
	}
	if at := st.Shadow.LastAttempt; at.TestsFrom != policystatus.TestsCached || at.Tests != 1 {
		t.Errorf("shadow folder of the same bytes: %+v, want its tests taken from the live folder's run", at)
	}
	if at := open("").Status().LastAttempt; at.TestsFrom != policystatus.TestsCached {
		t.Errorf("second surface on the same folder: %+v, want cached", at)
	}

	ctx := context.Background()
	writeBundle(t, dir, tinyBundle("rev-2", false, false))
	at, err := l.Reload(ctx, policy.TriggerAdmin)
	if err != nil || at.Outcome != policystatus.Live || at.TestsFrom != policystatus.TestsRun {
		t.Fatalf("rev-2: %+v %v, want live with its tests run", at, err)
	}
	if sh := l.Status().Shadow.LastAttempt; sh.TestsFrom != policystatus.TestsCached {
		t.Errorf("unchanged shadow folder at a reload: %+v, want cached", sh)
	}
	writeBundle(t, dir, tinyBundle("rev-1", true, false))
	if at, err = l.Reload(ctx, policy.TriggerAdmin); err != nil || at.Outcome != policystatus.Live || at.TestsFrom != policystatus.TestsCached || l.Engine().Revision() != "rev-1" {
		t.Errorf("back to rev-1: %+v %v, want live without running its tests again", at, err)
	}
	// Another byte under the same .manifest revision: another content
	// hash, so its tests run (and fail here).
	writeBundle(t, dir, tinyBundle("rev-1", true, true))
	if at, err = l.Reload(ctx, policy.TriggerAdmin); err == nil || at.Outcome != policystatus.Refused || at.Revision != "rev-1" {
		t.Errorf("changed bytes under rev-1 with a failing test: %+v %v, want refused", at, err)
	}
}

// TestVouchSkipsTestsOfTheSameBytesOnly: a reload announced by another
// replica with the content hash it tested takes a candidate of exactly
// those bytes without running its tests (shown by a bundle whose own
// test fails going live); a candidate of other bytes is tested in full
// and refused.
func TestVouchSkipsTestsOfTheSameBytesOnly(t *testing.T) {
	dir := t.TempDir()
	writeBundle(t, dir, tinyBundle("rev-1", true, false))
	l := newLive(t, dir, "", &countingObserver{})
	ctx := context.Background()
	writeBundle(t, dir, tinyBundle("rev-2", false, true))
	other := policy.Vouch{Content: "sha256:0000", Tests: 7}
	if at, err := l.ReloadIfChanged(ctx, policy.TriggerReplica, &other); err == nil || at.Outcome != policystatus.Refused || l.Engine().Revision() != "rev-1" {
		t.Fatalf("vouched for other bytes: %+v %v live %s; want the candidate tested and refused", at, err, l.Engine().Revision())
	}
	same := policy.Vouch{Content: contentOf(t, dir), Tests: 7}
	at, err := l.ReloadIfChanged(ctx, policy.TriggerReplica, &same)
	if err != nil || at.Outcome != policystatus.Live || at.TestsFrom != policystatus.TestsReplica || at.Tests != 7 || l.Engine().Revision() != "rev-2" {
		t.Fatalf("vouched for these bytes: %+v %v live %s; want rev-2 live on the replica's tests", at, err, l.Engine().Revision())
	}
	if at, err := l.ReloadIfChanged(ctx, policy.TriggerReplica, &same); at != nil || err != nil {
		t.Errorf("the live bytes again: %+v %v, want no attempt", at, err)
	}
	if at, err := l.Reload(ctx, policy.TriggerAdmin); err != nil || at.Outcome != policystatus.Unchanged || at.TestsFrom != policystatus.TestsReplica {
		t.Errorf("reload of the live bytes taken on another replica's tests: %+v %v, want unchanged, still tests_from replica", at, err)
	}
}

// TestUnchangedShadowFolderIsNotTestedAgain: a reload reads the shadow
// folder and tests it only when its bytes changed since its last attempt:
// a refused shadow candidate (its own test fails, which no cache of passes
// remembers) keeps its attempt through reloads of the live folder, and a
// change of its bytes is tested (and here goes into shadow).
func TestUnchangedShadowFolderIsNotTestedAgain(t *testing.T) {
	dir, shadow := t.TempDir(), t.TempDir()
	writeBundle(t, dir, tinyBundle("rev-1", true, false))
	writeBundle(t, shadow, tinyBundle("shadow-1", false, true))
	l := newLive(t, dir, shadow, &countingObserver{})
	ctx := context.Background()
	first := l.Status().Shadow.LastAttempt
	if first == nil || first.Outcome != policystatus.Refused || first.Content != contentOf(t, shadow) {
		t.Fatalf("start: shadow attempt %+v, want refused with the folder's content hash", first)
	}
	for i, rev := range []string{"rev-2", "rev-3"} {
		writeBundle(t, dir, tinyBundle(rev, true, false))
		if at, err := l.Reload(ctx, policy.TriggerAdmin); err != nil || at.Outcome != policystatus.Live {
			t.Fatalf("reload %d: %+v %v, want %s live", i+1, at, err, rev)
		}
		if at := l.Status().Shadow.LastAttempt; at != first {
			t.Fatalf("reload %d with the shadow folder unchanged: shadow attempt %+v, want the first one kept (%+v), its tests not run again", i+1, at, first)
		}
	}
	writeBundle(t, shadow, tinyBundle("shadow-2", false, false))
	if _, err := l.Reload(ctx, policy.TriggerAdmin); err != nil {
		t.Fatal(err)
	}
	st := l.Status().Shadow
	if at := st.LastAttempt; at == first || at.Outcome != policystatus.Live || at.TestsFrom != policystatus.TestsRun || st.Revision != "shadow-2" {
		t.Errorf("changed shadow folder: %+v (revision %s), want its tests run and shadow-2 loaded", at, st.Revision)
	}
	second := st.LastAttempt
	if _, err := l.Reload(ctx, policy.TriggerAdmin); err != nil {
		t.Fatal(err)
	}
	if at := l.Status().Shadow.LastAttempt; at != second {
		t.Errorf("passed shadow folder unchanged: %+v, want its attempt kept", at)
	}
}

// TestShadowCutOffByTheBudgetIsTestedAgain: a shadow candidate refused
// because its tests ran past LiveOptions.TestBudget says more of the
// machine's load than of its bytes, so the next reload tests the same
// bytes again (a new attempt) rather than keeping the refusal.
func TestShadowCutOffByTheBudgetIsTestedAgain(t *testing.T) {
	dir, shadow := t.TempDir(), t.TempDir()
	writeBundle(t, dir, tinyBundle("rev-1", true, false))
	writeBundle(t, shadow, slowBundle("shadow-slow"))
	l, err := policy.NewLive(context.Background(), policy.LiveOptions{
		Engine: policy.Options{Edition: gateway.EditionCommunity, Tools: []policy.ToolRef{projectsList}},
		Dir:    dir, ShadowDir: shadow, Embedded: policies.FS, Revision: policies.Revision, TestBudget: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	first := l.Status().Shadow.LastAttempt
	if first == nil || first.Outcome != policystatus.Refused || !strings.Contains(first.Error, "did not finish") {
		t.Fatalf("start: shadow attempt %+v, want refused for its tests' time", first)
	}
	writeBundle(t, dir, tinyBundle("rev-2", true, false))
	if _, err := l.Reload(context.Background(), policy.TriggerAdmin); err != nil {
		t.Fatal(err)
	}
	if at := l.Status().Shadow.LastAttempt; at == first || at.Outcome != policystatus.Refused || at.Trigger != policy.TriggerAdmin {
		t.Errorf("reload after a shadow cut off by the budget: attempt %+v, want a new attempt of the same bytes", at)
	}
}
