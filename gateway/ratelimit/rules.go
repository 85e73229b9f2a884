// Package ratelimit enforces the tiered rate limits
// (docs/requirements.md#rate-limits): per-task caps,
// workspace/day caps and profile/hour caps, reserved in that order.
//
// Rules.Plan turns a call into its slots, as plain values: bucket, counter
// key, window (at one instant), limit and task. The request path hands
// them to the audit store, which takes them all or none in the transaction
// that inserts the call's audit row (gateway.Reservation), so counters and
// audit rows commit together (they survive restarts and are shared by
// every replica), and a full bucket gives back what the call took — the
// per-task slot refund (docs/requirements.md#limit-order). Plan.Refusal words the store's answer
// as the seed's refusal.
//
// The counters live in the audit store (gateway/store.Counters): Sweep
// deletes the ended ones, ReadUsage reads a plan's.
//
// Windows are calendar windows in UTC: a workspace day runs from 00:00 to
// 24:00 UTC, a profile hour from hh:00 to hh+1:00 UTC. Per-task caps have no
// window: they last as long as the task.
package ratelimit

import (
	"fmt"
	"net/url"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
)

// Limits are the caps (docs/requirements.md#rate-limits) in calls (gateway.RateLimits, the one
// definition the configuration fills from the environment).
type Limits = gateway.RateLimits

// DefaultLimits returns the defaults of docs/requirements.md#rate-limits.
func DefaultLimits() Limits { return gateway.DefaultRateLimits() }

// The two limit kinds of scaffold tools (Subject.LimitKind), spelled as
// the tool catalog's limit_kind: each has its own workspace/day and
// profile/hour caps.
const (
	LimitKindProposal  = "proposal"
	LimitKindTaskSpawn = "task_spawn"
)

// Scope says what a bucket counts per: a task, a workspace and UTC day, or
// an agent profile and UTC hour.
type Scope string

// The three scopes (docs/requirements.md#limit-order), in the order a call reserves them, and the
// per-token hour of external coordinators (docs/requirements.md#external-limits), which takes
// the place of the per-task scope.
const (
	ScopeTask         Scope = "task"
	ScopeWorkspaceDay Scope = "workspace_day"
	ScopeProfileHour  Scope = "profile_hour"
	ScopeTokenHour    Scope = "token_hour"
	// ScopePrincipalMinute counts one cc_server principal's calls per UTC
	// minute (gateway.RateLimits.CCServerCallsPerMinute).
	ScopePrincipalMinute Scope = "principal_minute"
)

// The per-token hourly defaults of external coordinators (docs/requirements.md#external-limits:
// "Lesezugriffe pro Tool und Stunde (Vorgabe 50) und Ops-Aufrufe pro
// Token und Stunde (Vorgabe 30)"); a workspace changes them through its
// external limits (gateway.ExternalLimits, null keeps these).
const (
	DefaultTokenReadsPerToolHourly = 50
	DefaultTokenOpsHourly          = 30
)

// Windows: calendar days and hours in UTC; per-task buckets have none.
const (
	day      = 24 * time.Hour
	noWindow = time.Duration(0)
)

// Cap classes of the workspace/day and profile/hour buckets: the ops tier
// (script.run included), the deploy tier, and the two halves of the
// scaffold tier (docs/requirements.md#workspace-profile-caps).
const (
	classOps       = "ops"
	classDeploy    = "deploy"
	classProposal  = LimitKindProposal
	classTaskSpawn = LimitKindTaskSpawn
)

// Bucket names. Baseline and read share one per-task bucket (docs/requirements.md#rate-limits:
// "Baseline + Read 50 / task").
const (
	bucketTaskRead        = "task.read"
	bucketTaskOps         = "task.ops"
	bucketTaskScaffold    = "task.scaffold"
	bucketTaskDeploy      = "task.deploy"
	workspaceBucketPrefix = "workspace_day."
	profileBucketPrefix   = "profile_hour."
	bucketTokenRead       = "token_hour.read"
	bucketTokenOps        = "token_hour.ops"
	bucketPrincipalCalls  = "principal_minute.calls"
)

// The refusal messages, exactly as docs/requirements.md#limit-messages words them.
const (
	taskMessage      = "Rate limit exceeded for tool '%s'"
	workspaceMessage = "Workspace daily limit reached for this MCP tool tier (%d/%d)"
	profileMessage   = "Profile hourly limit reached for this MCP tool tier (%d/%d)"
	// docs/requirements.md#external-limits names the per-token limits but words no refusal;
	// these follow docs/requirements.md#limit-messages: which limit, and <used>/<limit>.
	tokenReadMessage = "Token hourly limit reached for MCP tool '%s' (%d/%d)"
	tokenOpsMessage  = "Token hourly limit reached for this MCP tool tier (%d/%d)"
	// The cc_server rules (docs/requirements.md#cc-registry) name no limit; its refusal follows the same
	// shape.
	principalMessage = "Rate limit reached: at most %[2]d cc_server tool calls per minute for this caller (%[1]d/%[2]d); wait for the next minute"
)

// Bucket is one rate-limit bucket: Name is what audit rows (column bucket)
// and a refusal's denial (bucket) report, e.g. "task.ops",
// "workspace_day.proposal", "profile_hour.deploy". Rate.Limit is the cap in
// calls; Rate.Period is 24h (workspace/day), 1h (profile/hour) or 0 (per
// task: no window).
type Bucket struct {
	Name  string
	Scope Scope
	Rate  Rate
}

// Slot is one bucket a call must reserve, with the counter key it uses
// (the bucket name qualified by the workspace, task or profile it counts;
// the store's key is KeyPrefix + ":" + Key) and the window of the bucket's
// rate that held the plan's instant: from Window to Expires, in UTC; a
// per-task bucket has Window the Unix epoch and Expires zero (no end).
type Slot struct {
	Bucket  Bucket
	Key     string
	Window  time.Time
	Expires time.Time
}

// KeyPrefix qualifies every counter key of the request path ("mcpgate:"
// + Slot.Key), so that two users of one database cannot share counters by
// accident.
const KeyPrefix = "mcpgate"

// Subject is what a call's buckets depend on. ProfileID must be the
// resolved profile recorded in the audit row (the requested profile, or the
// workspace default for a profile-less task); empty means the read-only
// fallback, which has no profile buckets. LimitKind is the tool's limit
// kind (LimitKindProposal or LimitKindTaskSpawn for scaffold tools).
//
// Token is the fingerprint of an external coordinator's scmt_ token
// (empty for agents): such a call has per-token hourly buckets instead of
// a per-task one, reads per tool and ops per token, with the workspace's
// External limits (nil, or a nil field, keeps the default).
type Subject struct {
	WorkspaceID string
	TaskID      string
	ProfileID   string
	Tool        string
	Tier        gateway.Tier
	LimitKind   string
	Token       string
	External    *gateway.ExternalLimits
	// Surface is the call's surface; a cc_server call (SurfaceCCServer)
	// has one bucket instead of the tiers': its principal's calls per UTC
	// minute, keyed by Actor (the subject) and WorkspaceID (the pinned
	// workspace, "" for a user).
	Surface string
	Actor   string
}

// Rules map a call to its buckets. Build them with NewRules.
type Rules struct {
	principal Bucket
	perTask   map[gateway.Tier]Bucket
	workspace map[string]Bucket // by class: ops, deploy, proposal, task_spawn
	profile   map[string]Bucket
}

// NewRules builds the buckets of docs/requirements.md#rate-limits from l (each cap as the
// configuration read it from its environment variable, or the seed's
// default; DefaultLimits): baseline and read share one per-task bucket
// (AGENT_MCP_TOOL_RATE_LIMIT, 50); ops including script.run 10, scaffold
// 10 and deploy 5 per task; workspace/day ops 100, deploy 20, scaffold
// proposals 10, scaffold task-spawns 3; profile/hour ops 30, deploy 10,
// proposals 10, task-spawns 3.
func NewRules(l Limits) Rules {
	read := bucket(bucketTaskRead, ScopeTask, l.ToolPerTask, noWindow)
	perMinute := l.CCServerCallsPerMinute
	if perMinute <= 0 {
		perMinute = gateway.DefaultCCServerCallsPerMinute
	}
	return Rules{
		principal: bucket(bucketPrincipalCalls, ScopePrincipalMinute, perMinute, time.Minute),
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
	return Bucket{Name: name, Scope: scope, Rate: Rate{Limit: int64(limit), Period: period}}
}

// Plan is the reservation of one call: its Subject and the Slots it must
// take, in order, with their windows fixed at one instant, so that a
// reservation never straddles two windows of one bucket.
type Plan struct {
	Subject Subject
	Slots   []Slot
}

// Plan returns the slots a call of s must reserve at now, in the order of
// docs/requirements.md#limit-order: the per-task bucket first (when s has a task; for a
// coordinator's token its per-token hourly bucket instead, docs/requirements.md#external-limits),
// then the
// workspace/day bucket, then the profile/hour bucket (when s has a
// profile). Baseline and read tools have only the per-task bucket. It
// fails with EInternal for a tier it does not know or a scaffold tool
// without a limit kind, so that a catalog mistake refuses calls instead of
// letting them through unlimited.
func (r Rules) Plan(s Subject, now time.Time) (Plan, error) {
	p := Plan{Subject: s}
	if s.Surface == gateway.SurfaceCCServer {
		p.Slots = []Slot{slotAt(r.principal, now, "principal", s.Actor, s.WorkspaceID)}
		return p, nil
	}
	perTask, ok := r.perTask[s.Tier]
	if !ok {
		return p, gateway.Errorf(gateway.EInternal, "tool %s has tier %q, which has no rate-limit bucket; the call was refused", s.Tool, s.Tier)
	}
	p.Slots = make([]Slot, 0, 3)
	if s.Token != "" {
		if tok, ok := tokenBucket(s); ok {
			ids := []string{s.WorkspaceID, s.Token}
			if tok.Name == bucketTokenRead {
				ids = append(ids, s.Tool)
			}
			p.Slots = append(p.Slots, slotAt(tok, now, "token", ids...))
		}
	} else if s.TaskID != "" {
		p.Slots = append(p.Slots, slotAt(perTask, now, "task", s.WorkspaceID, s.TaskID))
	}
	class, err := classOf(s)
	if err != nil || class == "" {
		return p, err
	}
	p.Slots = append(p.Slots, slotAt(r.workspace[class], now, "workspace", s.WorkspaceID))
	if s.ProfileID != "" {
		p.Slots = append(p.Slots, slotAt(r.profile[class], now, "profile", s.WorkspaceID, s.ProfileID))
	}
	return p, nil
}

// tokenBucket is the per-token hourly bucket of a coordinator's call:
// reads per tool for the baseline and read tiers, ops per token for the ops
// tier; false for the other tiers, which no scope reaches (the policy keeps
// them away; the workspace/day caps still apply).
func tokenBucket(s Subject) (Bucket, bool) {
	var l gateway.ExternalLimits
	if s.External != nil {
		l = *s.External
	}
	switch s.Tier {
	case gateway.TierBaseline, gateway.TierRead:
		return bucket(bucketTokenRead, ScopeTokenHour, orDefault(l.ReadsPerToolHourly, DefaultTokenReadsPerToolHourly), time.Hour), true
	case gateway.TierOps:
		return bucket(bucketTokenOps, ScopeTokenHour, orDefault(l.OpsPerTokenHourly, DefaultTokenOpsHourly), time.Hour), true
	}
	return Bucket{}, false
}

func orDefault(v *int, def int) int {
	if v == nil {
		return def
	}
	return *v
}

// slotAt is b's slot for the ids at instant now.
func slotAt(b Bucket, now time.Time, scope string, ids ...string) Slot {
	w := windowAt(b.Rate, now)
	return Slot{Bucket: b, Key: key(scope, b.Name, ids...), Window: w.start, Expires: w.end}
}

// Counters returns p's slots as the audit store takes them
// (gateway.Reservation.Slots), in the same order: keys qualified by
// KeyPrefix, the bucket's limit, and the task of a per-task slot.
func (p Plan) Counters() []gateway.Slot {
	if len(p.Slots) == 0 {
		return nil
	}
	out := make([]gateway.Slot, len(p.Slots))
	for i, s := range p.Slots {
		out[i] = gateway.Slot{Bucket: s.Bucket.Name, Key: KeyPrefix + ":" + s.Key, Window: s.Window, Expires: s.Expires,
			Limit: s.Bucket.Rate.Limit}
		if s.Bucket.Scope == ScopeTask {
			out[i].WorkspaceID, out[i].TaskID = p.Subject.WorkspaceID, p.Subject.TaskID
		}
	}
	return out
}

// Refusal returns the refusal of docs/requirements.md#limit-messages for a reservation of p's
// Counters that the store answered with res: nil when res names no full
// slot, else an ERateLimited *gateway.Error whose Message is the seed's
// text (with res.Used for the workspace and profile caps) and whose Bucket
// names the full bucket. A Full outside p's slots is the store's mistake,
// EInternal.
func (p Plan) Refusal(res gateway.ReservationResult) error {
	if res.Full == 0 {
		return nil
	}
	if res.Full < 0 || res.Full > len(p.Slots) {
		return gateway.Errorf(gateway.EInternal, "the audit store reported slot %d of %d full; the call was refused", res.Full, len(p.Slots))
	}
	return refusal(p.Subject, p.Slots[res.Full-1], res.Used)
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
	var buf [128]byte // one string is allocated, not one per part
	k := append(append(buf[:0], scope...), ':')
	for i, id := range ids {
		if i > 0 {
			k = append(k, '/')
		}
		k = append(k, url.QueryEscape(id)...)
	}
	k = append(append(k, ':'), bucket...)
	return string(k)
}

// refusal is the error of docs/requirements.md#limit-messages for a full slot: used is the count in
// the slot's window before this call.
func refusal(s Subject, slot Slot, used int64) *gateway.Error {
	var msg string
	switch slot.Bucket.Scope {
	case ScopeWorkspaceDay:
		msg = fmt.Sprintf(workspaceMessage, used, slot.Bucket.Rate.Limit)
	case ScopeProfileHour:
		msg = fmt.Sprintf(profileMessage, used, slot.Bucket.Rate.Limit)
	case ScopePrincipalMinute:
		msg = fmt.Sprintf(principalMessage, used, slot.Bucket.Rate.Limit)
	case ScopeTokenHour:
		if slot.Bucket.Name == bucketTokenRead {
			msg = fmt.Sprintf(tokenReadMessage, s.Tool, used, slot.Bucket.Rate.Limit)
		} else {
			msg = fmt.Sprintf(tokenOpsMessage, used, slot.Bucket.Rate.Limit)
		}
	default:
		msg = fmt.Sprintf(taskMessage, s.Tool)
	}
	return &gateway.Error{Code: gateway.ERateLimited, Message: msg, Bucket: slot.Bucket.Name}
}
