// Package ratelimit enforces the tiered rate limits of seed 001 ("SupaCloud
// MCP tool surface", Rate limits; seed 000, "Ratenlimits"): per-task caps,
// workspace/day caps and profile/hour caps, reserved in that order.
//
// The limiter API is ulule/limiter/v3 (one limiter.Limiter per bucket); its
// limiter.Store is Store, which keeps the counters in the audit store's
// database through the Counters interface. The audit store runs Reserve
// inside the transaction that inserts the call's audit row, so counters and
// audit rows commit together (they survive restarts and are shared by every
// replica), and a refusal rolls every increment of the call back — the
// per-task slot refund of seed 001.
//
// Windows are calendar windows in UTC: a workspace day runs from 00:00 to
// 24:00 UTC, a profile hour from hh:00 to hh+1:00 UTC. Per-task caps have no
// window: they last as long as the task.
package ratelimit

import (
	"fmt"
	"net/url"
	"time"

	"github.com/ulule/limiter/v3"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/config"
	"github.com/mcpgate/mcpgate/tools"
)

// Scope says what a bucket counts per: a task, a workspace and UTC day, or
// an agent profile and UTC hour.
type Scope string

// The three scopes of seed 001, in the order a call reserves them.
const (
	ScopeTask         Scope = "task"
	ScopeWorkspaceDay Scope = "workspace_day"
	ScopeProfileHour  Scope = "profile_hour"
)

// Windows: calendar days and hours in UTC; per-task buckets have none.
const (
	day      = 24 * time.Hour
	noWindow = time.Duration(0)
)

// Cap classes of the workspace/day and profile/hour buckets: the ops tier
// (script.run included), the deploy tier, and the two halves of the
// scaffold tier (seed 001, "Workspace and profile caps").
const (
	classOps       = "ops"
	classDeploy    = "deploy"
	classProposal  = tools.LimitKindProposal
	classTaskSpawn = tools.LimitKindTaskSpawn
)

// Bucket names. Baseline and read share one per-task bucket (seed 001,
// "Per-task caps": "Baseline + Read 50 / task").
const (
	bucketTaskRead        = "task.read"
	bucketTaskOps         = "task.ops"
	bucketTaskScaffold    = "task.scaffold"
	bucketTaskDeploy      = "task.deploy"
	workspaceBucketPrefix = "workspace_day."
	profileBucketPrefix   = "profile_hour."
)

// The refusal messages, exactly as seed 001 ("Rate limits") words them.
const (
	taskMessage      = "Rate limit exceeded for tool '%s'"
	workspaceMessage = "Workspace daily limit reached for this MCP tool tier (%d/%d)"
	profileMessage   = "Profile hourly limit reached for this MCP tool tier (%d/%d)"
)

// Bucket is one rate-limit bucket: Name is what audit rows (column bucket)
// and the -32003 error (data.bucket) report, e.g. "task.ops",
// "workspace_day.proposal", "profile_hour.deploy". Rate.Limit is the cap in
// calls; Rate.Period is 24h (workspace/day), 1h (profile/hour) or 0 (per
// task: no window).
type Bucket struct {
	Name  string
	Scope Scope
	Rate  limiter.Rate
}

// Slot is one bucket a call must reserve, with the counter key it uses
// (the bucket name qualified by the workspace, task or profile it counts).
type Slot struct {
	Bucket Bucket
	Key    string
}

// Subject is what a call's buckets depend on. ProfileID must be the
// resolved profile recorded in the audit row (the requested profile, or the
// workspace default for a profile-less task); empty means the read-only
// fallback, which has no profile buckets. LimitKind is the tool's
// tools.LimitKind ("proposal" or "task_spawn" for scaffold tools).
type Subject struct {
	WorkspaceID string
	TaskID      string
	ProfileID   string
	Tool        string
	Tier        gateway.Tier
	LimitKind   string
}

// Rules map a call to its buckets. Build them with NewRules.
type Rules struct {
	perTask   map[gateway.Tier]Bucket
	workspace map[string]Bucket // by class: ops, deploy, proposal, task_spawn
	profile   map[string]Bucket
}

// NewRules builds the buckets of seed 001 from l (config.Limits, which
// reads each cap's environment variable and falls back to the seed's
// default): baseline and read share one per-task bucket
// (AGENT_MCP_TOOL_RATE_LIMIT, 50); ops including script.run 10, scaffold
// 10 and deploy 5 per task; workspace/day ops 100, deploy 20, scaffold
// proposals 10, scaffold task-spawns 3; profile/hour ops 30, deploy 10,
// proposals 10, task-spawns 3.
func NewRules(l config.Limits) Rules {
	read := bucket(bucketTaskRead, ScopeTask, l.ToolPerTask, noWindow)
	return Rules{
		perTask: map[gateway.Tier]Bucket{
			gateway.TierBaseline: read,
			gateway.TierRead:     read,
			gateway.TierOps:      bucket(bucketTaskOps, ScopeTask, l.OpsPerTask, noWindow),
			gateway.TierScaffold: bucket(bucketTaskScaffold, ScopeTask, l.ScaffoldPerTask, noWindow),
			gateway.TierDeploy:   bucket(bucketTaskDeploy, ScopeTask, l.DeployPerTask, noWindow),
		},
		workspace: map[string]Bucket{
			classOps:       bucket(workspaceBucketPrefix+classOps, ScopeWorkspaceDay, l.WorkspaceOpsDaily, day),
			classDeploy:    bucket(workspaceBucketPrefix+classDeploy, ScopeWorkspaceDay, l.WorkspaceDeployDaily, day),
			classProposal:  bucket(workspaceBucketPrefix+classProposal, ScopeWorkspaceDay, l.WorkspaceProposalDaily, day),
			classTaskSpawn: bucket(workspaceBucketPrefix+classTaskSpawn, ScopeWorkspaceDay, l.WorkspaceTaskSpawnDaily, day),
		},
		profile: map[string]Bucket{
			classOps:       bucket(profileBucketPrefix+classOps, ScopeProfileHour, l.ProfileOpsHourly, time.Hour),
			classDeploy:    bucket(profileBucketPrefix+classDeploy, ScopeProfileHour, l.ProfileDeployHourly, time.Hour),
			classProposal:  bucket(profileBucketPrefix+classProposal, ScopeProfileHour, l.ProfileProposalHourly, time.Hour),
			classTaskSpawn: bucket(profileBucketPrefix+classTaskSpawn, ScopeProfileHour, l.ProfileTaskSpawnHourly, time.Hour),
		},
	}
}

func bucket(name string, scope Scope, limit int, period time.Duration) Bucket {
	return Bucket{Name: name, Scope: scope, Rate: limiter.Rate{Limit: int64(limit), Period: period}}
}

// Plan returns the slots a call of s must reserve, in the order of seed
// 001: the per-task bucket first (when s has a task), then the
// workspace/day bucket, then the profile/hour bucket (when s has a
// profile). Baseline and read tools have only the per-task bucket. It
// fails with EInternal for a tier it does not know or a scaffold tool
// without a limit kind, so that a catalog mistake refuses calls instead of
// letting them through unlimited.
func (r Rules) Plan(s Subject) ([]Slot, error) {
	perTask, ok := r.perTask[s.Tier]
	if !ok {
		return nil, gateway.Errorf(gateway.EInternal, "tool %s has tier %q, which has no rate-limit bucket; the call was refused", s.Tool, s.Tier)
	}
	slots := make([]Slot, 0, 3)
	if s.TaskID != "" {
		slots = append(slots, Slot{perTask, key("task", perTask.Name, s.WorkspaceID, s.TaskID)})
	}
	class, err := classOf(s)
	if err != nil || class == "" {
		return slots, err
	}
	ws := r.workspace[class]
	slots = append(slots, Slot{ws, key("workspace", ws.Name, s.WorkspaceID)})
	if s.ProfileID != "" {
		p := r.profile[class]
		slots = append(slots, Slot{p, key("profile", p.Name, s.WorkspaceID, s.ProfileID)})
	}
	return slots, nil
}

// classOf names the workspace/profile cap class of a call; "" for the
// baseline and read tiers, which have none.
func classOf(s Subject) (string, error) {
	switch s.Tier {
	case gateway.TierOps:
		return classOps, nil
	case gateway.TierDeploy:
		return classDeploy, nil
	case gateway.TierScaffold:
		if s.LimitKind == classProposal || s.LimitKind == classTaskSpawn {
			return s.LimitKind, nil
		}
		return "", gateway.Errorf(gateway.EInternal, "scaffold tool %s has limit kind %q, want %q or %q; the call was refused",
			s.Tool, s.LimitKind, classProposal, classTaskSpawn)
	}
	return "", nil
}

// key builds a counter key such as "task:ws-a/task-1:task.ops". Ids are
// query-escaped so that ids containing ':' or '/' cannot make two buckets
// share a key.
func key(scope, bucket string, ids ...string) string {
	k := scope + ":"
	for i, id := range ids {
		if i > 0 {
			k += "/"
		}
		k += url.QueryEscape(id)
	}
	return k + ":" + bucket
}

// refusal is the error of seed 001 for a full slot: used is the count in
// the slot's window before this call.
func refusal(s Subject, slot Slot, used int64) *gateway.Error {
	var msg string
	switch slot.Bucket.Scope {
	case ScopeWorkspaceDay:
		msg = fmt.Sprintf(workspaceMessage, used, slot.Bucket.Rate.Limit)
	case ScopeProfileHour:
		msg = fmt.Sprintf(profileMessage, used, slot.Bucket.Rate.Limit)
	default:
		msg = fmt.Sprintf(taskMessage, s.Tool)
	}
	return &gateway.Error{Code: gateway.ERateLimited, Message: msg, Bucket: slot.Bucket.Name}
}
