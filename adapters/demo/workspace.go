package demo

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

// workspace is the whole state of one tenant. Every field is guarded by mu;
// handlers run with it held.
type workspace struct {
	mu  sync.Mutex
	id  string
	seq map[string]int // last id number used per record prefix
	// described is what the gateway's store says of the workspace
	// (Backend.Describe), nil when it is all generated.
	described *WorkspaceFacts

	info          wsInfo
	profiles      []*profile
	projects      []*project
	runners       []*runner
	resources     []*resource
	scripts       []*script
	apps          []*app
	workflows     []*workflow
	schedules     []*schedule
	tasks         []*task
	runs          []*run
	approvals     []*approval
	backlog       []*backlogItem
	memories      []*memory
	reviews       []*memoryReview
	issues        []*issue
	conversations []*conversation
	permissions   []*permission
	proposals     []*proposal
	outcomes      []*outcome
}

// profile is an agent profile; only its id and name appear in results (the
// gateway owns allowlists).
type profile struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	IsDefault bool   `json:"is_workspace_default"`
}

// newID returns the next id for prefix, e.g. "prj-3f9a02c1". The hex part
// hashes the workspace id, prefix and a counter, so ids are stable for a
// workspace and never valid in another one.
func (w *workspace) newID(prefix string) string {
	w.seq[prefix]++
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00%d", w.id, prefix, w.seq[prefix]))
	return prefix + "-" + hex.EncodeToString(sum[:4])
}

// digest returns n hex digits (n <= 64) unique to this workspace, for
// commit hashes and checksums of records that writes create.
func (w *workspace) digest(prefix string, n int) string {
	w.seq[prefix]++
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00%d", w.id, prefix, w.seq[prefix]))
	return hex.EncodeToString(sum[:])[:n]
}

// memoryNamespace scopes the name-based UUIDs of memories.
var memoryNamespace = uuid.MustParse("6f1c3a4e-2b7d-4c1e-9a55-0d3e8f2b7c10")

// newUUID returns the next name-based (v5) UUID for prefix in this workspace.
func (w *workspace) newUUID(prefix string) string {
	w.seq[prefix]++
	return uuid.NewSHA1(memoryNamespace, fmt.Appendf(nil, "%s/%s/%d", w.id, prefix, w.seq[prefix])).String()
}

// generate builds the workspace id from its seed. base is the moment of
// generation; seeded timestamps lie before it. The order of the steps is part
// of the determinism: each draws from the same random stream.
func generate(id string, base time.Time, described *WorkspaceFacts) *workspace {
	w := &workspace{id: id, seq: map[string]int{}, described: described}
	g := newGen(id, base)
	for _, step := range []func(*workspace, *gen){
		genInfo, genProfiles, genProjects, genRunners, genResources, genScripts,
		genApps, genWorkflows, genSchedules, genTasks, genWorkflowRuns, genScriptRuns,
		genAppRuns, genApprovals, genBacklog, genMemories, genIssues, genConversations,
		genPermissions, genOutcomes,
	} {
		step(w, g)
	}
	return w
}

// gen draws deterministic pseudo-random values from a workspace's seed.
type gen struct {
	rng  *rand.Rand
	base time.Time
}

func newGen(seed string, base time.Time) *gen {
	sum := sha256.Sum256([]byte(seed))
	pcg := rand.NewPCG(binary.BigEndian.Uint64(sum[:8]), binary.BigEndian.Uint64(sum[8:16]))
	return &gen{rng: rand.New(pcg), base: base.Truncate(time.Second)}
}

// between returns an int in [lo, hi].
func (g *gen) between(lo, hi int) int { return lo + g.rng.IntN(hi-lo+1) }

// pick returns one of xs.
func (g *gen) pick(xs ...string) string { return xs[g.rng.IntN(len(xs))] }

// chance returns true with probability p.
func (g *gen) chance(p float64) bool { return g.rng.Float64() < p }

// usd returns an amount in [lo, hi] rounded to cents.
func (g *gen) usd(lo, hi float64) float64 { return cents(lo + g.rng.Float64()*(hi-lo)) }

// ago returns base minus a random duration in [lo, hi].
func (g *gen) ago(lo, hi time.Duration) time.Time {
	return g.base.Add(-(lo + time.Duration(g.rng.Int64N(int64(hi-lo)+1)))).Truncate(time.Second)
}

// hex returns n random hex digits (commit hashes, checksums).
func (g *gen) hex(n int) string {
	var sb strings.Builder
	for range n {
		sb.WriteByte("0123456789abcdef"[g.rng.IntN(16)])
	}
	return sb.String()
}

func cents(x float64) float64 { return math.Round(x*100) / 100 }

func ptr[T any](v T) *T { return &v }

// slugify lowers s and keeps [a-z0-9-], for slugs derived from names.
func slugify(s string) string {
	var sb strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			sb.WriteRune(r)
			dash = false
		case !dash && sb.Len() > 0:
			sb.WriteByte('-')
			dash = true
		}
	}
	return strings.Trim(sb.String(), "-")
}

func genProfiles(w *workspace, g *gen) {
	for i, name := range []string{"Coordinator", "Backend Engineer", "Frontend Engineer", "Reviewer", "Support Agent"} {
		w.profiles = append(w.profiles, &profile{ID: w.newID("apf"), Name: name, IsDefault: i == 0})
	}
}

// profileByID returns the agent profile id names, or nil.
func (w *workspace) profileByID(id string) *profile {
	return find(w.profiles, func(p *profile) bool { return p.ID == id })
}

func (w *workspace) defaultProfile() *profile { return w.profiles[0] }
