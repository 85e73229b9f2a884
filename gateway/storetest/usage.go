package storetest

import (
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
)

// usageTests check ProfileToolUsage, the audit query of `mcpgate policy
// suggest`.
var usageTests = []test{
	{"GroupsAProfilesCalls", func(t *testing.T, s Store) {
		type row struct {
			i                   int
			ws, profile, tool   string
			status, bucket, dec string
		}
		for _, r := range []row{
			{1, "ws-a", "p1", "app.list", gateway.AuditAllowed, "", "d"},
			{2, "ws-a", "p1", "app.list", gateway.AuditAllowed, "", "d"},
			{3, "ws-a", "p1", "app.list", gateway.AuditDenied, "", "d"},
			{4, "ws-a", "p1", "app.deploy", gateway.AuditRateLimited, "workspace_day", "d"},
			{5, "ws-a", "p1", "app.get", gateway.AuditError, "", ""},      // refused before the decision
			{6, "ws-a", "p2", "app.list", gateway.AuditAllowed, "", "d"},  // another profile
			{7, "ws-b", "p1", "app.list", gateway.AuditAllowed, "", "d"},  // another workspace
			{0, "ws-a", "p1", "issue.get", gateway.AuditAllowed, "", "d"}, // before since
		} {
			ev := event(r.i*10, r.ws, "t1", r.tool, r.status)
			ev.ProfileID, ev.Bucket = r.profile, r.bucket
			if r.dec == "" {
				ev.DecisionID = ""
			}
			must(t, s.RecordAudit(ctx(t), ev), "RecordAudit")
		}
		got, err := s.ProfileToolUsage(ctx(t), "ws-a", "p1", base.Add(5*time.Second))
		must(t, err, "ProfileToolUsage")
		at := func(i int) time.Time { return base.Add(time.Duration(i*10) * time.Second) }
		want := []gateway.ToolUsage{
			{Tool: "app.deploy", Tier: gateway.TierRead, Status: gateway.AuditRateLimited, Bucket: "workspace_day", Decided: true, Calls: 1, Last: at(4)},
			{Tool: "app.get", Tier: gateway.TierRead, Status: gateway.AuditError, Decided: false, Calls: 1, Last: at(5)},
			{Tool: "app.list", Tier: gateway.TierRead, Status: gateway.AuditAllowed, Decided: true, Calls: 2, Last: at(2)},
			{Tool: "app.list", Tier: gateway.TierRead, Status: gateway.AuditDenied, Decided: true, Calls: 1, Last: at(3)},
		}
		if len(got) != len(want) {
			t.Fatalf("got %d groups %+v, want %d %+v", len(got), got, len(want), want)
		}
		for i := range want {
			if got[i] != want[i] && !(got[i].Last.Equal(want[i].Last) && sameUsage(got[i], want[i])) {
				t.Errorf("group %d: %+v, want %+v", i, got[i], want[i])
			}
		}
		all, err := s.ProfileToolUsage(ctx(t), "ws-a", "p1", time.Time{})
		must(t, err, "ProfileToolUsage without since")
		if len(all) != 5 || all[4].Tool != "issue.get" {
			t.Errorf("without since: %+v, want issue.get too", all)
		}
		none, err := s.ProfileToolUsage(ctx(t), "ws-z", "p1", time.Time{})
		must(t, err, "ProfileToolUsage of an unknown workspace")
		if len(none) != 0 {
			t.Errorf("unknown workspace: %+v, want none", none)
		}
	}},
}

func sameUsage(a, b gateway.ToolUsage) bool {
	a.Last, b.Last = time.Time{}, time.Time{}
	return a == b
}
