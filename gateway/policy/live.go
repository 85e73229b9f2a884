package policy

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/policy/policystatus"
)

// Surface is the surface a Live serves when LiveOptions.Engine.Surface is
// empty: the label of its revision in /metrics and /readyz.
const Surface = "supacloud"

// Reload triggers (policystatus.Attempt.Trigger).
const (
	TriggerStart = "start"
	TriggerWatch = "watch"
	TriggerAdmin = "admin"
	// TriggerReplica is a reload another replica asked for (it reloaded
	// through its admin API or its watcher and announced it on the
	// database's policy channel).
	TriggerReplica = "replica"
	// TriggerResync is the check after the announcements of other
	// replicas resumed: reloads asked for meanwhile were missed.
	TriggerResync = "resync"
)

// Observer is told about policy loads and shadow comparisons;
// *metrics.Metrics implements it.
type Observer interface {
	// PolicyRevision is called whenever revision goes live on surface
	// (at start and after each swap): the info series of the old one
	// goes, the new one's is set.
	PolicyRevision(surface, revision string)
	// PolicyReload is called after each reload attempt (not the start)
	// with whether a candidate passed (live or unchanged) or was refused.
	PolicyReload(surface string, ok bool)
	// ShadowFlip is called when the shadow candidate decides a call
	// otherwise than the live bundle, with one of the Flip directions.
	ShadowFlip(tool, direction string)
}

// Directions of a shadow flip (Flip.Direction): the candidate would deny
// or allow the call; or, both allowing it, only the candidate would make
// it wait for a person's approval (the flow rule set switched on, say), or
// only the live bundle does. The approval directions are named as `mcpgate
// policy replay` names them.
const (
	FlipAllowToDeny     = "allow_to_deny"
	FlipDenyToAllow     = "deny_to_allow"
	FlipAllowToApproval = "allow_to_approval"
	FlipApprovalToAllow = "approval_to_allow"
)

// flipDirection is the direction in which the shadow decision sd differs
// from live, "" when it does not.
func flipDirection(live, sd *gateway.Decision) string {
	switch {
	case live.Allow && !sd.Allow:
		return FlipAllowToDeny
	case !live.Allow && sd.Allow:
		return FlipDenyToAllow
	case !live.Allow || live.Obligations.ApprovalRequired == sd.Obligations.ApprovalRequired:
		return ""
	case sd.Obligations.ApprovalRequired:
		return FlipAllowToApproval
	}
	return FlipApprovalToAllow
}

// Flip is one tools/call the shadow candidate would have decided
// otherwise than the live bundle did. Live is the decision the call got;
// Shadow the candidate's, never enforced.
type Flip struct {
	Principal      *gateway.Principal
	Tool           string
	Direction      string
	LiveRevision   string
	ShadowRevision string
	Live, Shadow   *gateway.Decision
}

// LiveOptions configure NewLive.
type LiveOptions struct {
	// Engine is what every bundle is compiled with: Edition, Tools and
	// the cache bounds (its FS and Revision are set per bundle).
	Engine Options
	// Dir is the policy folder (MCPGATE_POLICY_DIR); empty serves
	// Embedded, which never reloads.
	Dir string
	// Embedded is the bundle built into the binary, served when Dir is
	// empty.
	Embedded fs.FS
	// ShadowDir is the folder of a candidate evaluated beside the live
	// bundle on every tools/call and never enforced
	// (MCPGATE_SHADOW_POLICY_DIR); empty turns shadow mode off.
	ShadowDir string
	// Revision names a bundle (policies.Revision); required.
	Revision func(fs.FS) (string, error)
	// Logger receives swaps, refusals with OPA's message, and shadow flips
	// and errors; nil logs nothing.
	Logger *zap.Logger
	// Observer counts reloads and flips and exports the live revision;
	// nil observes nothing.
	Observer Observer
	// OnFlip, when set, is called for every shadow flip, on the call's
	// goroutine after the live decision, with the call's context (the
	// decision log records each flip as an event); keep it fast.
	OnFlip func(context.Context, Flip)
	// OnSwap, when set, is called after a new revision went live, with
	// the engine it replaced (the wiring sends list_changed to the
	// sessions whose tools changed).
	OnSwap func(old, cur *Engine)
	// OnAttempt, when set, is called after every reload attempt (not the
	// start) with its trigger, the attempt and its error, once Status
	// shows it: the wiring announces reloads asked for on this replica
	// (TriggerAdmin, TriggerWatch) to the other replicas. Reloads skipped
	// by ReloadIfChanged are no attempt.
	OnAttempt func(trigger string, at *policystatus.Attempt, err error)
	// OnShadow, when set, is called after every load of the shadow folder
	// (ShadowDir) that read a candidate, at the start too, with its
	// trigger, the attempt (Outcome Live: the candidate is decided beside
	// the live bundle from now on) and its error, once Status shows it;
	// a folder skipped as unchanged is no attempt. The wiring records
	// each as an audit event.
	OnShadow func(trigger string, at *policystatus.Attempt, err error)
	// Debounce is how long Watch waits after the last change in a folder
	// before it reloads; 0 means DefaultDebounce.
	Debounce time.Duration
	// TestBudget bounds the whole run of a candidate's own tests (each
	// test is also bounded on its own); 0 means DefaultTestBudget.
	TestBudget time.Duration
	// RequireMask refuses every bundle from a folder that does not
	// define the decision log mask (MaskQuery), at start and on every
	// reload: set it while a decision log is on, whose events are never
	// written unmasked, so a candidate without the mask would drop them
	// all once live.
	RequireMask bool
	// Tested remembers the bundles whose tests passed in this process;
	// give the Lives of one gateway (its surfaces) the same one, so that
	// a folder's tests run once for all of them. nil gives this Live one
	// of its own.
	Tested *TestedBundles
}

// DefaultTestBudget is LiveOptions.TestBudget when unset.
const DefaultTestBudget = 10 * time.Minute

// DefaultDebounce is LiveOptions.Debounce when unset: an editor's save or
// a deploy's copy of several files is taken as one change.
const DefaultDebounce = 300 * time.Millisecond

// Live holds the engine that decides calls now and swaps it, atomically,
// for a candidate that passed every check: it loads, compiles, defines the
// surface's decision queries and its own *_test.rego pass (run in-process
// with OPA's tester). A candidate that fails leaves the running revision
// in place. Every call is decided by exactly one engine: Snapshot takes
// the current one (with the shadow candidate), and a call keeps it. Each
// engine has its own decision cache, so cached decisions are those of
// their revision. Live implements the pipeline's Decider. It is safe for
// concurrent use.
type Live struct {
	opts    LiveOptions
	log     *zap.Logger
	surface string
	snap    atomic.Pointer[Snapshot]

	reload sync.Mutex // one reload at a time
	// asked is set while a ReloadIfChanged waits for reload: the requests
	// that come meanwhile are answered by that one, which reads the
	// folder once it runs.
	asked atomic.Bool

	mu     sync.Mutex // guards status, shadowFinal and flips
	status policystatus.Status
	// shadowFinal says the shadow folder's last attempt is final for its
	// bytes: it passed, or it was refused for a reason that the same
	// bytes meet again (not a test budget or a context that ran out).
	shadowFinal bool
	flips       map[policystatus.ShadowFlips]int64 // by Tool and Direction (Count 0)
}

// NewLive loads the bundle of opts.Dir (or opts.Embedded) and, when set,
// the shadow candidate of opts.ShadowDir. A bundle from a folder must pass
// the same checks as a reload, its tests included, or NewLive fails: the
// gateway does not start on a bundle that would not go live. The embedded
// bundle is compiled without running its tests (the build ran them). A
// shadow candidate that fails is logged and shown in Status; shadow mode
// then waits for a reload that passes.
func NewLive(ctx context.Context, opts LiveOptions) (*Live, error) {
	if opts.Revision == nil {
		return nil, errors.New("policy: LiveOptions.Revision is required")
	}
	if opts.Debounce <= 0 {
		opts.Debounce = DefaultDebounce
	}
	if opts.Tested == nil {
		opts.Tested = NewTestedBundles(0)
	}
	l := &Live{opts: opts, log: opts.Logger, surface: opts.Engine.Surface}
	if l.surface == "" {
		l.surface = Surface
	}
	if l.log == nil {
		l.log = zap.NewNop()
	}
	l.log = l.log.With(zap.String("surface", l.surface))
	l.status = policystatus.Status{Surface: l.surface, Source: policystatus.SourceEmbedded, Watched: false}
	var e *Engine
	var at *policystatus.Attempt
	if opts.Dir == "" {
		if opts.Embedded == nil {
			return nil, errors.New("policy: no policy bundle given")
		}
		rev, err := opts.Revision(opts.Embedded)
		if err != nil {
			return nil, err
		}
		if e, err = l.compile(ctx, opts.Embedded, rev); err != nil {
			return nil, err
		}
		at = &policystatus.Attempt{Time: time.Now().UTC(), Trigger: TriggerStart, Revision: rev, Outcome: policystatus.Live}
	} else {
		l.status.Source, l.status.Watched = opts.Dir, true
		var err error
		if e, at, err = l.candidate(ctx, opts.Dir, TriggerStart, nil, nil); err != nil {
			return nil, err
		}
	}
	l.status.Revision, l.status.LiveSince, l.status.LastAttempt = e.Revision(), at.Time, at
	var shadow *Engine
	if opts.ShadowDir != "" {
		l.status.Shadow = &policystatus.Shadow{Source: opts.ShadowDir, FlipsSince: time.Now().UTC()}
		shadow = l.loadShadow(ctx, TriggerStart, nil)
	}
	l.snap.Store(&Snapshot{live: e, shadow: shadow, l: l})
	l.observer().PolicyRevision(l.surface, e.Revision())
	return l, nil
}

// compile builds the engine of the bundle in fsys with revision rev.
func (l *Live) compile(ctx context.Context, fsys fs.FS, rev string) (*Engine, error) {
	o := l.opts.Engine
	o.FS, o.Revision = fsys, rev
	return New(ctx, o)
}

// Vouch is a pass announced by another replica: the content hash of a
// bundle whose own tests passed there, and how many passed.
type Vouch struct {
	Content string
	Tests   int
}

// candidate reads the folder dir and runs every check on it: it compiles
// (New refuses a bundle without the decision queries) and its own tests
// pass. It returns the engine and the attempt, or the attempt's error.
// When the folder holds the bytes of cur (its ContentHash), cur is
// returned as is: nothing to compile or test. The tests run once per
// content hash in this process (LiveOptions.Tested), and not at all when
// vouch names the candidate's content hash: the same bytes passed the
// same tests on the replica that announced it.
func (l *Live) candidate(ctx context.Context, dir, trigger string, cur *Engine, vouch *Vouch) (*Engine, *policystatus.Attempt, error) {
	at := &policystatus.Attempt{Time: time.Now().UTC(), Trigger: trigger, Outcome: policystatus.Refused}
	e, err := func() (*Engine, error) {
		fsys, err := readBundle(dir)
		if err != nil {
			return nil, err
		}
		if at.Content, err = ContentHash(fsys); err != nil {
			return nil, err
		}
		if at.Revision, err = l.opts.Revision(fsys); err != nil {
			return nil, err
		}
		if cur != nil && cur.content == at.Content {
			at.Tests, at.TestsFrom = cur.tests, policystatus.TestsCached
			if cur.testsFrom == policystatus.TestsReplica { // still never run here
				at.TestsFrom = cur.testsFrom
			}
			return cur, nil
		}
		e, err := l.compile(ctx, fsys, at.Revision)
		if err != nil {
			return nil, err
		}
		e.content = at.Content
		if l.opts.RequireMask && !e.HasMask() {
			return nil, fmt.Errorf("policy: the bundle defines no %s, and a decision log is on (MCPGATE_DECISION_LOG_FILE or MCPGATE_DECISION_LOG_URL) whose events are never written unmasked; keep the system/log folder of the built-in bundle (policies/system/log) in the folder", MaskQuery)
		}
		if vouch != nil && vouch.Content == at.Content {
			at.Tests, at.TestsFrom = vouch.Tests, policystatus.TestsReplica
			e.tests, e.testsFrom = at.Tests, at.TestsFrom
			return e, nil
		}
		budget := l.opts.TestBudget
		if budget <= 0 {
			budget = DefaultTestBudget
		}
		tctx, cancel := context.WithTimeout(ctx, budget)
		defer cancel()
		n, cached, err := l.opts.Tested.run(ctx, at.Content, func() (int, error) { return runBundleTests(tctx, fsys) })
		at.Tests = n
		if err != nil {
			if errors.Is(tctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
				err = &budgetError{err: err, budget: budget}
			}
			return nil, err
		}
		at.TestsFrom = policystatus.TestsRun
		if cached {
			at.TestsFrom = policystatus.TestsCached
		}
		e.tests, e.testsFrom = n, at.TestsFrom
		return e, nil
	}()
	if err != nil {
		at.Error = err.Error()
		return nil, at, fmt.Errorf("policy bundle %s refused: %w", dir, err)
	}
	at.Outcome = policystatus.Live
	return e, at, nil
}

// budgetError is a candidate's test failure once its tests ran past
// LiveOptions.TestBudget: it says more of the machine's load than of the
// bundle, so the same bytes are worth testing again.
type budgetError struct {
	err    error
	budget time.Duration
}

func (e *budgetError) Error() string {
	return fmt.Sprintf("%v (they ran longer than %v in all; make them faster or fewer)", e.err, e.budget)
}

func (e *budgetError) Unwrap() error { return e.err }

// loadShadow loads the shadow candidate with the checks of candidate
// (cur is the shadow engine in place, kept when the folder still holds
// its bytes) and records the attempt; it returns nil when the candidate
// was refused. A folder that holds the bytes of the last attempt (its
// content hash) is not read into a candidate nor tested again, whether
// that attempt passed or was refused, unless it was refused for running
// out of time or for a context that ended: cur is returned and the last
// attempt stays in Status.
func (l *Live) loadShadow(ctx context.Context, trigger string, cur *Engine) *Engine {
	l.mu.Lock()
	last, final := l.status.Shadow.LastAttempt, l.shadowFinal
	l.mu.Unlock()
	if last != nil && final && last.Content != "" && l.unchanged(l.opts.ShadowDir, last.Content) {
		return cur
	}
	e, at, err := l.candidate(ctx, l.opts.ShadowDir, trigger, cur, nil)
	var be *budgetError
	l.mu.Lock()
	l.status.Shadow.LastAttempt = at
	l.shadowFinal = !errors.As(err, &be) && ctx.Err() == nil
	if err == nil {
		l.status.Shadow.Revision = e.Revision()
	}
	l.mu.Unlock()
	if l.opts.OnShadow != nil {
		l.opts.OnShadow(trigger, at, err)
	}
	if err != nil {
		l.log.Error("shadow policy bundle refused; the previous shadow candidate (if any) stays, nothing is enforced from it",
			zap.String("dir", l.opts.ShadowDir), zap.String("trigger", trigger), zap.Error(err))
		return nil
	}
	if e == cur {
		return e
	}
	l.log.Info("shadow policy bundle loaded", zap.String("dir", l.opts.ShadowDir), zap.String("revision", e.Revision()))
	return e
}

// Snapshot returns the engines that decide calls now: the live one and
// the shadow candidate. They never change for the holder, whatever
// reloads happen meanwhile.
func (l *Live) Snapshot() *Snapshot { return l.snap.Load() }

// Engine returns the live engine.
func (l *Live) Engine() *Engine { return l.snap.Load().live }

// Decide decides one tools/call with the current Snapshot.
func (l *Live) Decide(ctx context.Context, p *gateway.Principal, c *gateway.Caller, tool ToolRef, args map[string]any) (*gateway.Decision, error) {
	return l.Snapshot().Decide(ctx, p, c, tool, args)
}

// Visible answers tools/list with the current Snapshot.
func (l *Live) Visible(ctx context.Context, p *gateway.Principal, c *gateway.Caller) (map[string]bool, error) {
	return l.Snapshot().Visible(ctx, p, c)
}

// Grants are the live engine's Engine.Grants.
func (l *Live) Grants() (entries []string, toolPrefix string) { return l.Engine().Grants() }

// Status reports the live revision, its source, the last attempts and the
// shadow candidate.
func (l *Live) Status() policystatus.Status {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.status
	if st.Shadow != nil {
		sh := *st.Shadow
		sh.Flips = make([]policystatus.ShadowFlips, 0, len(l.flips))
		for k, n := range l.flips {
			k.Count = n
			sh.Flips = append(sh.Flips, k)
		}
		slices.SortFunc(sh.Flips, func(a, b policystatus.ShadowFlips) int {
			return cmp.Or(cmp.Compare(a.Tool, b.Tool), cmp.Compare(a.Direction, b.Direction))
		})
		st.Shadow = &sh
	}
	return st
}

// countFlip counts one shadow flip for Status.
func (l *Live) countFlip(tool, direction string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.flips == nil {
		l.flips = map[policystatus.ShadowFlips]int64{}
	}
	l.flips[policystatus.ShadowFlips{Tool: tool, Direction: direction}]++
}

// ErrNotReloadable is returned by Reload when the gateway serves the
// embedded bundle, which never reloads (an EConflict *gateway.Error: the
// admin API answers 409).
var ErrNotReloadable error = &gateway.Error{Code: gateway.EConflict,
	Message: "the gateway serves its embedded policy bundle, which never reloads; start it with MCPGATE_POLICY_DIR set to a policy folder to reload policies"}

// Reload loads the policy folder again (and the shadow folder, when set)
// and swaps the candidate in when it passes every check and has another
// revision. It returns the attempt; err is ErrNotReloadable for the
// embedded bundle, or the reason the candidate was refused (with OPA's
// message): the running revision then stays. Reloads run one at a time.
func (l *Live) Reload(ctx context.Context, trigger string) (*policystatus.Attempt, error) {
	return l.reloadVouched(ctx, trigger, nil)
}

// reloadVouched is Reload, taking a candidate whose content hash vouch
// names without running its tests. The live bundle is swapped, reported
// and announced (OnSwap, OnAttempt) before the shadow folder is loaded,
// so a shadow candidate's tests never delay a change of the live policy.
func (l *Live) reloadVouched(ctx context.Context, trigger string, vouch *Vouch) (*policystatus.Attempt, error) {
	if l.opts.Dir == "" {
		return nil, ErrNotReloadable
	}
	l.reload.Lock()
	defer l.reload.Unlock()
	return l.reloadLocked(ctx, trigger, vouch)
}

// reloadLocked is reloadVouched once it holds l.reload.
func (l *Live) reloadLocked(ctx context.Context, trigger string, vouch *Vouch) (*policystatus.Attempt, error) {
	old := l.snap.Load()
	e, at, err := l.candidate(ctx, l.opts.Dir, trigger, old.live, vouch)
	swapped := err == nil && e.Revision() != old.live.Revision()
	if err == nil && !swapped {
		at.Outcome = policystatus.Unchanged
	}
	if swapped {
		l.snap.Store(&Snapshot{live: e, shadow: old.shadow, l: l})
	}
	l.mu.Lock()
	l.status.LastAttempt = at
	if err != nil {
		l.status.LastFailure = at
	}
	if swapped {
		l.status.Revision, l.status.LiveSince = e.Revision(), at.Time
	}
	l.mu.Unlock()
	l.observer().PolicyReload(l.surface, err == nil)
	switch {
	case err != nil:
		l.log.Error("policy bundle refused; the running revision stays", zap.String("trigger", trigger),
			zap.String("running_revision", old.live.Revision()), zap.String("candidate_revision", at.Revision), zap.Error(err))
	case swapped:
		l.observer().PolicyRevision(l.surface, e.Revision())
		l.log.Info("policy bundle live", zap.String("trigger", trigger), zap.String("revision", e.Revision()),
			zap.String("previous_revision", old.live.Revision()), zap.Int("tests_passed", at.Tests), zap.String("tests_from", at.TestsFrom))
		if l.opts.OnSwap != nil {
			l.opts.OnSwap(old.live, e)
		}
	default:
		l.log.Info("policy bundle reloaded, revision unchanged", zap.String("trigger", trigger), zap.String("revision", e.Revision()))
	}
	if l.opts.OnAttempt != nil {
		l.opts.OnAttempt(trigger, at, err)
	}
	if l.opts.ShadowDir != "" {
		cur := l.snap.Load()
		if s := l.loadShadow(ctx, trigger, cur.shadow); s != nil && s != cur.shadow {
			l.snap.Store(&Snapshot{live: cur.live, shadow: s, l: l})
		}
	}
	return at, err
}

// Surface is the surface this Live decides for (LiveOptions.Engine.Surface,
// by default Surface).
func (l *Live) Surface() string { return l.surface }

// ReloadIfChanged reloads (Reload with trigger) unless the policy
// folder holds the bytes already live (and the shadow folder, when set,
// those of its last attempt): it returns nil, nil then, and Reload's
// results otherwise (a live candidate refused before is tried again).
// vouch, when set, is another replica's announced pass: a candidate
// with its content hash goes live without running its tests (they
// passed on the same bytes there); any other candidate is tested in
// full. A call made while another one waits for the running reload
// returns nil, nil at once: the waiting one reads the folder after this
// call was made, so announcements of other replicas, however many, run
// one reload after the running one.
func (l *Live) ReloadIfChanged(ctx context.Context, trigger string, vouch *Vouch) (*policystatus.Attempt, error) {
	if l.opts.Dir == "" {
		return nil, ErrNotReloadable
	}
	if !l.asked.CompareAndSwap(false, true) {
		return nil, nil
	}
	l.reload.Lock()
	l.asked.Store(false)
	defer l.reload.Unlock()
	if l.unchanged(l.opts.Dir, l.Engine().content) && (l.opts.ShadowDir == "" || l.unchanged(l.opts.ShadowDir, l.shadowContent())) {
		return nil, nil
	}
	return l.reloadLocked(ctx, trigger, vouch)
}

// unchanged reports whether the folder dir holds the bytes of content
// hash content.
func (l *Live) unchanged(dir, content string) bool {
	fsys, err := readBundle(dir)
	if err != nil {
		return false
	}
	h, err := ContentHash(fsys)
	return err == nil && h == content
}

// shadowContent is the content hash of the shadow folder's last attempt.
func (l *Live) shadowContent() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.status.Shadow == nil || l.status.Shadow.LastAttempt == nil {
		return ""
	}
	return l.status.Shadow.LastAttempt.Content
}

func (l *Live) observer() Observer {
	if l.opts.Observer == nil {
		return noObserver{}
	}
	return l.opts.Observer
}

type noObserver struct{}

func (noObserver) PolicyRevision(string, string) {}
func (noObserver) PolicyReload(string, bool)     {}
func (noObserver) ShadowFlip(string, string)     {}

// Snapshot is the live engine and the shadow candidate (nil when off) at
// one moment; one call is decided by one Snapshot. It implements the
// pipeline's Decider.
type Snapshot struct {
	live, shadow *Engine
	l            *Live
}

// Engine is the snapshot's live engine.
func (s *Snapshot) Engine() *Engine { return s.live }

// FlowRules reports whether the live engine or the shadow candidate
// switches the flow rule set on for workspaceID (Engine.FlowRules): the
// call's history is then loaded, so that a candidate that turns the rule
// set on is compared on the input it would get.
func (s *Snapshot) FlowRules(workspaceID string) bool {
	return s.live.FlowRules(workspaceID) || (s.shadow != nil && s.shadow.FlowRules(workspaceID))
}

// Decide decides the call with the live engine; the decision names its
// revision. With a shadow candidate it then decides the same call with
// the candidate, never enforced: a different allow is a Flip (counted,
// logged with both revisions, passed to LiveOptions.OnFlip). The
// candidate's errors are logged and never change the call's decision.
func (s *Snapshot) Decide(ctx context.Context, p *gateway.Principal, c *gateway.Caller, tool ToolRef, args map[string]any) (*gateway.Decision, error) {
	d, err := s.live.Decide(ctx, p, c, tool, args)
	if err != nil || s.shadow == nil {
		return d, err
	}
	s.compare(ctx, p, c, tool, args, d)
	return d, nil
}

// compare decides the call with the shadow candidate and reports a flip.
func (s *Snapshot) compare(ctx context.Context, p *gateway.Principal, c *gateway.Caller, tool ToolRef, args map[string]any, live *gateway.Decision) {
	sd, err := s.shadow.Decide(ctx, p, c, tool, args)
	if err != nil {
		s.l.log.Warn("shadow policy could not decide a call; the call's decision is the live bundle's alone",
			zap.String("tool", tool.Name), zap.String("shadow_revision", s.shadow.Revision()), zap.Error(err))
		return
	}
	dir := flipDirection(live, sd)
	if dir == "" {
		return
	}
	f := Flip{Principal: p, Tool: tool.Name, Direction: dir, LiveRevision: live.Revision,
		ShadowRevision: sd.Revision, Live: live, Shadow: sd}
	s.l.observer().ShadowFlip(f.Tool, f.Direction)
	s.l.countFlip(f.Tool, f.Direction)
	s.l.log.Info("shadow policy would flip a decision", zap.String("tool", f.Tool), zap.String("direction", f.Direction),
		zap.String("live_revision", f.LiveRevision), zap.String("shadow_revision", f.ShadowRevision),
		zap.String("decision_id", live.ID), zap.String("workspace_id", p.WorkspaceID),
		zap.Strings("live_reasons", reasonCodes(live.Reasons)), zap.Strings("shadow_reasons", reasonCodes(sd.Reasons)))
	if s.l.opts.OnFlip != nil {
		s.l.opts.OnFlip(ctx, f)
	}
}

func reasonCodes(rs []gateway.Reason) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Code
	}
	return out
}

// Visible answers tools/list with the live engine; the shadow candidate
// takes no part (its flips are counted on calls).
func (s *Snapshot) Visible(ctx context.Context, p *gateway.Principal, c *gateway.Caller) (map[string]bool, error) {
	return s.live.Visible(ctx, p, c)
}
