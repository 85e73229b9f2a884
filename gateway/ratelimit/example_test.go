package ratelimit_test

import (
	"fmt"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/config"
	"github.com/mcpgate/mcpgate/gateway/ratelimit"
)

// An ops call of a task with an agent profile reserves three slots, in this
// order (seed 001, Rate limits).
func ExampleRules_Plan() {
	rules := ratelimit.NewRules(config.DefaultLimits())
	slots, err := rules.Plan(ratelimit.Subject{WorkspaceID: "ws-a", TaskID: "task-1", ProfileID: "ops-bot",
		Tool: "script.run", Tier: gateway.TierOps})
	if err != nil {
		panic(err)
	}
	for _, s := range slots {
		fmt.Printf("%s: %d per %s, key %s\n", s.Bucket.Name, s.Bucket.Rate.Limit, s.Bucket.Scope, s.Key)
	}
	// Output:
	// task.ops: 10 per task, key task:ws-a/task-1:task.ops
	// workspace_day.ops: 100 per workspace_day, key workspace:ws-a:workspace_day.ops
	// profile_hour.ops: 30 per profile_hour, key profile:ws-a/ops-bot:profile_hour.ops
}
