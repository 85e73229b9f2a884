package policy_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/policy"
	"github.com/mcpgate/mcpgate/gateway/policy/policystatus"
	"github.com/mcpgate/mcpgate/policies"
)

// maskFiles is a decision log mask that erases every argument.
var maskFiles = map[string]string{
	"system/log/mask.rego": "package system.log\n\nmask contains \"/input/arguments\"\n",
}

func withFiles(base map[string]string, more map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range more {
		out[k] = v
	}
	return out
}

// reloadRefused starts a Live on good (with opts' RequireMask), writes
// candidate and checks that the reload is refused with want in its
// error while good's revision stays live.
func reloadRefused(t *testing.T, requireMask bool, good, candidate map[string]string, want string) {
	t.Helper()
	dir := t.TempDir()
	writeBundle(t, dir, good)
	_ = removeAll(dir, "system")
	writeBundle(t, dir, good)
	l, err := policy.NewLive(context.Background(), policy.LiveOptions{
		Engine: policy.Options{Edition: gateway.EditionCommunity, Tools: []policy.ToolRef{projectsList}},
		Dir:    dir, Revision: policies.Revision, RequireMask: requireMask,
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = removeAll(dir, "system")
	writeBundle(t, dir, candidate)
	at, err := l.Reload(context.Background(), policy.TriggerAdmin)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Reload: %v, want a refusal with %q", err, want)
	}
	if at.Outcome != policystatus.Refused || l.Status().Revision != "rev-good" {
		t.Errorf("attempt %+v, live %s: want refused, rev-good live", at, l.Status().Revision)
	}
}

// TestReloadRefusesRemovedMask: while a decision log is on, a candidate
// without data.system.log.mask is refused as the start refuses it (live,
// every event would be dropped).
func TestReloadRefusesRemovedMask(t *testing.T) {
	reloadRefused(t, true, withFiles(tinyBundle("rev-good", true, false), maskFiles),
		tinyBundle("rev-nomask", true, false), "defines no data.system.log.mask")
}

// TestReloadRefusesZeroTests: a candidate without a test of its own is
// refused by the test gate (it used to pass with 0 tests), at start too.
func TestReloadRefusesZeroTests(t *testing.T) {
	untested := tinyBundle("rev-untested", true, false)
	delete(untested, "supacloud/decision_test.rego")
	reloadRefused(t, false, tinyBundle("rev-good", true, false), untested, "no tests of its own")
	dir := t.TempDir()
	writeBundle(t, dir, untested)
	if _, err := policy.NewLive(context.Background(), policy.LiveOptions{Dir: dir, Revision: policies.Revision,
		Engine: policy.Options{Edition: gateway.EditionCommunity}}); err == nil || !strings.Contains(err.Error(), "no tests of its own") {
		t.Fatalf("NewLive on an untested folder: %v, want refused", err)
	}
}

// TestPolicyNetworkBuiltinsRefused: a policy that calls http.send (or
// another builtin that reaches the network or the environment) does not
// compile for any engine: reload candidates, the shadow candidate, its
// own tests, and New itself; the error names the builtin.
func TestPolicyNetworkBuiltinsRefused(t *testing.T) {
	for _, call := range []string{
		`http.send({"method": "GET", "url": "http://127.0.0.1:9/x"})`,
		`net.lookup_ip_addr("example.com")`,
		`opa.runtime()`,
	} {
		name := strings.Split(call, "(")[0]
		t.Run(name, func(t *testing.T) {
			bad := tinyBundle("rev-net", true, false)
			bad["supacloud/leak.rego"] = "package supacloud\n\nleak := " + call + "\n"
			reloadRefused(t, false, tinyBundle("rev-good", true, false), bad, "calls "+name)

			// only in a test file: the candidate's tests are compiled
			// with the same capabilities.
			inTest := tinyBundle("rev-nettest", true, false)
			inTest["supacloud/leak_test.rego"] = "package supacloud_test\n\ntest_leak if " + call + "\n"
			reloadRefused(t, false, tinyBundle("rev-good", true, false), inTest, "calls "+name)

			// the compiler itself, past the early check: capabilities.
			caps := policy.Capabilities()
			for _, b := range caps.Builtins {
				if b.Name == name {
					t.Errorf("Capabilities() holds %s", name)
				}
			}
		})
	}
}

func removeAll(dir, sub string) error { return os.RemoveAll(filepath.Join(dir, sub)) }
