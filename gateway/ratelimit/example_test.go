package ratelimit_test

import (
	"fmt"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/ratelimit"
)

// An ops call of a task with an agent profile reserves three slots, in this
// order (docs/requirements.md#rate-limits), each in the window of its rate at the
// plan's instant.
func ExampleRules_Plan() {
	rules := ratelimit.NewRules(ratelimit.DefaultLimits())
	now := time.Date(2025, 3, 4, 13, 30, 0, 0, time.UTC)
	plan, err := rules.Plan(ratelimit.Subject{WorkspaceID: "ws-a", TaskID: "task-1", ProfileID: "ops-bot",
		Tool: "script.run", Tier: gateway.TierOps}, now)
	if err != nil {
		panic(err)
	}
	for _, s := range plan.Slots {
		fmt.Printf("%s: %d per %s, key %s, from %s\n", s.Bucket.Name, s.Bucket.Rate.Limit, s.Bucket.Scope, s.Key,
			s.Window.Format(time.RFC3339))
	}
	// Output:
	// task.ops: 10 per task, key task:ws-a/task-1:task.ops, from 1970-01-01T00:00:00Z
	// workspace_day.ops: 100 per workspace_day, key workspace:ws-a:workspace_day.ops, from 2025-03-04T00:00:00Z
	// profile_hour.ops: 30 per profile_hour, key profile:ws-a/ops-bot:profile_hour.ops, from 2025-03-04T13:00:00Z
}
