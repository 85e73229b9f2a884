package console_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway/policy/policystatus"
)

// TestPolicyPageShowsShadowFlips: the policy page shows the shadow
// candidate's revision and the admin API's flip counts per tool and
// direction, or says none flipped.
func TestPolicyPageShowsShadowFlips(t *testing.T) {
	g := newGateway(t)
	since := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	g.policy.mu.Lock()
	g.policy.status.Shadow = &policystatus.Shadow{Source: "/etc/mcpgate/shadow", Revision: "rev-shadow-7", FlipsSince: since}
	g.policy.mu.Unlock()
	v := g.signedIn(t)
	p := v.get("/console/policy")
	if p.status != http.StatusOK || !strings.Contains(p.text, `<code id="shadow-revision">rev-shadow-7</code>`) ||
		!strings.Contains(p.text, `<p id="shadow-flips">No call has flipped since 2026-03-01 08:00 UTC.</p>`) {
		t.Fatalf("policy page without flips: %d\n%s", p.status, p.text)
	}
	g.policy.mu.Lock()
	g.policy.status.Shadow.Flips = []policystatus.ShadowFlips{{Tool: "apps.deploy", Direction: "allow_to_deny", Count: 3}, {Tool: "project.get", Direction: "deny_to_allow", Count: 1}}
	g.policy.mu.Unlock()
	p = v.get("/console/policy")
	for _, want := range []string{
		`<tr data-tool="apps.deploy" data-direction="allow_to_deny"><th scope="row"><code>apps.deploy</code></th><td>allowed live, the shadow would deny <span class="hint">(allow_to_deny)</span></td><td class="count">3</td></tr>`,
		`<tr data-tool="project.get" data-direction="deny_to_allow">`,
		"Shadow flips since 2026-03-01 08:00 UTC",
	} {
		if !strings.Contains(p.text, want) {
			t.Errorf("policy page lacks %q\n%s", want, p.text)
		}
	}
}
