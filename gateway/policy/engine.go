// Package policy decides tool calls with OPA: it compiles the Rego bundle once
// at start, prepares two queries (one decision, the visible tool set) and
// evaluates them per request with an input built directly as an OPA AST value.
package policy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/loader"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage"

	"github.com/mcpgate/mcpgate/gateway"
)

// The queries the engine prepares; they are the contract with the Rego bundle
// (policies/supacloud/README.md).
const (
	DecisionQuery = "data.supacloud.decision"
	VisibleQuery  = "data.supacloud.visible_tools"
)

// ToolRef is what the policy needs to know of a catalog tool and, for one
// tools/call, of the record the call addresses.
type ToolRef struct {
	Name     string
	Tier     gateway.Tier
	CarveOut bool
	// Group, RequiresApproval and ActionClasses are a cc_server tool's
	// catalog flags (tools.Tool), the policy's input.tool; empty for
	// SupaCloud tools.
	Group            string
	RequiresApproval bool
	ActionClasses    []string
	// Session is the history of the call's flow key (docs/policy.md,
	// "Flow rules"), the policy's input.session; nil when the flow rule
	// set is off for the call's workspace (Engine.FlowRules). Only
	// tools/call inputs carry it.
	Session *gateway.FlowSession
	// FlowRules is true when the admin of the workspace the call acts in
	// switched the flow rule set on (gateway.Caller.FlowRulesOn), the
	// policy's input.workspace.flow_rules on both surfaces. Only
	// tools/call inputs carry it.
	FlowRules bool
	// Resource holds the attributes of the record the call addresses, as
	// the gateway resolved them (policy input.resource: "kind", "id" and
	// what the adapter told, e.g. "gate_class"); nil for a tool that
	// declares no resource. Only tools/call inputs carry it.
	Resource map[string]string
	// Upstream names the bridged upstream that serves the tool ("" for a
	// catalog tool); UpstreamAnnotations are its annotations as the
	// upstream sent them (a JSON object), and DataLabels its data labels
	// (policy data's, data.<surface>.bridged_tools). A bridged tool's
	// input.tool carries them (writeBridged).
	Upstream            string
	UpstreamAnnotations []byte
	DataLabels          []string
}

// Options configure New.
type Options struct {
	// FS holds the policy bundle; its root contains one folder per surface
	// (supacloud/…). Files ending in _test.rego are not loaded.
	FS fs.FS
	// Surface is the Rego package the engine decides with: "" or
	// gateway.SurfaceSupaCloud (data.supacloud.decision), or
	// gateway.SurfaceCCServer (data.ccserver.decision, with the input of
	// policies/ccserver/README.md; ccinput.go).
	Surface string
	// Edition is passed to the policy as input.edition on every evaluation.
	Edition gateway.Edition
	// Tools is the catalog the tools/list query ranges over.
	Tools []ToolRef
	// ToolSet, when set, is the tool list the tools/list query ranges
	// over instead of Tools: a registry that changes while the gateway
	// runs (bridged tools), shared by every engine compiled with these
	// options.
	ToolSet *ToolSet
	// CacheSize bounds the decision cache (entries per query); 0 means
	// DefaultCacheSize, a negative value turns caching off.
	CacheSize int
	// CacheBytes bounds the memory of the decision cache (bytes per query,
	// see decisionCache); 0 or less means DefaultCacheBytes.
	CacheBytes int64
	// KeepInput makes Decide attach the evaluated input to every decision
	// (gateway.Decision.Input), for the decision log; off, no input is
	// converted and a decision costs nothing more.
	KeepInput bool
	// Revision names the bundle in FS (policies.Revision: its .manifest
	// revision, else a hash of its files); every decision carries it.
	// Empty is allowed (tests) and then carried as empty.
	Revision string
	// EvalTimeout bounds one evaluation of the decision or the tools/list
	// query; 0 means DefaultEvalTimeout. An evaluation cut off fails
	// closed with an EInternal error (the call is refused, nothing is
	// listed), so a bundle whose rules run away on some input cannot hold
	// calls and cores for as long as they run.
	EvalTimeout time.Duration
}

// DefaultEvalTimeout is Options.EvalTimeout's default: far above what the
// shipped bundles need (microseconds for a decision, milliseconds for
// tools/list), and below the pipeline's 5 s store budget, so a call cut off
// is refused as a policy failure, not as a store one.
const DefaultEvalTimeout = 2 * time.Second

// Engine evaluates prepared policy queries. It is safe for concurrent use.
type Engine struct {
	decide  rego.PreparedEvalQuery
	visible rego.PreparedEvalQuery
	edition *ast.Term
	tools   *ast.Term
	cache   *decisionCache
	args    argumentUse
	session sessionUse
	// flow is the bundle's data.<surface>.flow_rules (FlowRules).
	flow flowRules
	// mask is the prepared MaskQuery, nil when the bundle has none;
	// keepInput is Options.KeepInput.
	mask      *rego.PreparedEvalQuery
	keepInput bool
	// content, tests and testsFrom are set by Live on a bundle from a
	// folder: its ContentHash, how many of its tests passed, and where
	// (policystatus.Attempt.TestsFrom).
	content   string
	tests     int
	testsFrom string

	grantEntries []string
	toolPrefix   string
	revision     string
	evalTimeout  time.Duration // Options.EvalTimeout, defaulted

	// surface is the Rego package the engine decides with
	// (Options.Surface, defaulted); cc is set for the cc_server surface
	// (ccinput.go); limits are its data.<surface>.limits, read at load.
	surface string
	cc      bool
	limits  map[string]any
	// overrides are the bundle's data.<surface>.bridged_tools (bridged.go);
	// setState the Options.ToolSet and this engine's term of it.
	overrides map[string]bridgedOverride
	setState
	// compiler and store are the compiled bundle and its data, kept for
	// Explainer: an explanation evaluates the very rules and data that
	// decided, never a second read of the bundle.
	compiler *ast.Compiler
	store    storage.Store
}

// New loads and compiles the bundle in opts.FS and prepares both queries. It
// fails when a module does not parse or compile, or the bundle has no
// supacloud decision, so a bad policy refuses to start.
func New(ctx context.Context, opts Options) (*Engine, error) {
	if opts.FS == nil {
		return nil, errors.New("policy: no policy bundle given")
	}
	res, err := loader.NewFileLoader().
		WithFS(opts.FS).
		WithRegoVersion(ast.RegoV1).
		Filtered([]string{"."}, skipTests)
	if err != nil {
		return nil, fmt.Errorf("policy: load bundle: %w", err)
	}
	if len(res.Modules) == 0 {
		return nil, errors.New("policy: the bundle has no .rego modules")
	}
	if err := refuseBuiltins(res.ParsedModules()); err != nil {
		return nil, err
	}
	compiler := newCompiler()
	if compiler.Compile(res.ParsedModules()); compiler.Failed() {
		return nil, fmt.Errorf("policy: compile bundle: %w", compiler.Errors)
	}
	store, err := res.Store()
	if err != nil {
		return nil, fmt.Errorf("policy: data documents: %w", err)
	}
	cacheSize := opts.CacheSize
	if usesNondeterministic(compiler) {
		cacheSize = -1 // the same input may get another answer later
	}
	surface, err := surfaceOf(opts.Surface)
	if err != nil {
		return nil, err
	}
	e := &Engine{
		edition: ast.StringTerm(string(opts.Edition)), surface: surface, cc: surface == gateway.SurfaceCCServer,
		cache: newDecisionCache(cacheSize, opts.CacheBytes), args: analyseArguments(compiler, surface),
		session:   analyseSession(compiler, surface),
		keepInput: opts.KeepInput, revision: opts.Revision, evalTimeout: opts.EvalTimeout,
		compiler: compiler, store: store,
	}
	if e.evalTimeout <= 0 {
		e.evalTimeout = DefaultEvalTimeout
	}
	e.toolSet = opts.ToolSet
	if e.overrides, err = readBridged(ctx, compiler, store, surface); err != nil {
		return nil, err
	}
	e.tools = e.toolsTerm(opts.Tools)
	if e.limits, err = evalData(ctx, compiler, store, "data."+surface+".limits"); err != nil {
		return nil, err
	}
	flow, err := evalData(ctx, compiler, store, "data."+surface+".flow_rules")
	if err != nil {
		return nil, err
	}
	if e.flow, err = readFlowRules(flow); err != nil {
		return nil, err
	}
	decisionQuery, visibleQuery := "data."+surface+".decision", "data."+surface+".visible_tools"
	if err := e.prepareMask(ctx, compiler, store); err != nil {
		return nil, err
	}
	grants, err := evalGrants(ctx, compiler, store)
	if err != nil {
		return nil, err
	}
	e.grantEntries, e.toolPrefix = readGrants(grants)
	for _, q := range []struct {
		query string
		dst   *rego.PreparedEvalQuery
	}{{decisionQuery, &e.decide}, {visibleQuery, &e.visible}} {
		pq, err := rego.New(
			rego.Query(q.query),
			rego.Compiler(compiler),
			rego.Store(store),
			rego.StrictBuiltinErrors(true),
		).PrepareForEval(ctx)
		if err != nil {
			return nil, fmt.Errorf("policy: prepare %s: %w", q.query, err)
		}
		*q.dst = pq
	}
	if !hasRule(compiler, decisionQuery) || !hasRule(compiler, visibleQuery) {
		return nil, fmt.Errorf("policy: the bundle must define %s and %s", decisionQuery, visibleQuery)
	}
	return e, nil
}

// Revision names the bundle this engine compiled (Options.Revision); it
// is the Revision of every decision the engine makes.
func (e *Engine) Revision() string { return e.revision }

func skipTests(_ string, info fs.FileInfo, _ int) bool {
	return !info.IsDir() && strings.HasSuffix(info.Name(), "_test.rego")
}

func hasRule(c *ast.Compiler, query string) bool {
	ref := ast.MustParseRef(query)
	return len(c.GetRulesExact(ref)) > 0
}

// Decide evaluates the decision for one tools/call. Any evaluation error, an
// undefined decision or a malformed one is returned as an EInternal
// *gateway.Error: the caller must refuse the call (fail closed).
//
// Only the arguments the bundle can read (ArgumentKeys) enter the policy
// input. args must already be bounded: the engine does not know the tool's
// schema, so the caller leaves out values larger than it allows (the
// server does so with tools.Catalog.PolicyArguments).
//
// Results are memoised by their complete input (see decisionCache): one
// description of the input (writeCall) yields both the cache key and, on a
// miss, the value evaluated. Every returned decision carries a fresh ID and
// may be modified by the caller; with Options.KeepInput it also carries the
// input evaluated (or, from the cache, the identical one of this call).
func (e *Engine) Decide(ctx context.Context, p *gateway.Principal, c *gateway.Caller, tool ToolRef, args map[string]any) (*gateway.Decision, error) {
	tool = e.bridged(tool)
	argTerm, err := argumentsTerm(e.args.read(args))
	if err != nil {
		return nil, gateway.Wrap(gateway.EInvalid, err, fmt.Sprintf("arguments of tool %s cannot be evaluated", tool.Name))
	}
	var key cacheKey
	cacheable := false
	if e.cache != nil {
		key, cacheable = e.callKey(p, c, tool, argTerm)
		if cacheable {
			if d, ok := e.cache.decisions.get(key); ok {
				hit := withID(d)
				hit.Cached = true
				return e.withInput(hit, nil, p, c, tool, argTerm), nil
			}
		}
	}
	var in astWriter
	e.writeCall(&in, p, c, tool, argTerm)
	d, err := e.evalDecision(ctx, in.root)
	if err != nil {
		return nil, err
	}
	if cacheable {
		e.cache.decisions.add(key, d, decisionCost(d))
	}
	return e.withInput(withID(d), in.root, p, c, tool, argTerm), nil
}

// withID returns a copy of d with a new decision id; the cached value is
// never handed out.
func withID(d *gateway.Decision) *gateway.Decision {
	cp := *d
	cp.Reasons = slices.Clone(d.Reasons)
	cp.Obligations.Redact = slices.Clone(d.Obligations.Redact)
	cp.Obligations.ApprovalBecause = slices.Clone(d.Obligations.ApprovalBecause)
	cp.Obligations.FlowReads = slices.Clone(d.Obligations.FlowReads)
	cp.ID = newDecisionID()
	return &cp
}

// evalDecision evaluates the decision query on the tools/call input in.
func (e *Engine) evalDecision(ctx context.Context, in ast.Object) (*gateway.Decision, error) {
	ctx, cancel := context.WithTimeout(ctx, e.evalTimeout)
	defer cancel()
	rs, err := e.decide.Eval(ctx, rego.EvalParsedInput(in))
	if err != nil {
		return nil, gateway.Wrap(gateway.EInternal, err, e.evalFailed(ctx, "the call was refused"))
	}
	d, err := decisionFrom(rs)
	if err != nil {
		return nil, gateway.Wrap(gateway.EInternal, err, "policy returned no usable decision; the call was refused")
	}
	d.Revision = e.revision
	return d, nil
}

// evalFailed is the message of a failed evaluation, saying so when it ran
// past the engine's evaluation timeout (the bundle's rules are too slow).
func (e *Engine) evalFailed(ctx context.Context, outcome string) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Sprintf("policy evaluation took longer than %v and was stopped; %s; the bundle (revision %q) needs a faster rule, ask the operator", e.evalTimeout, outcome, e.revision)
	}
	return "policy evaluation failed; " + outcome
}

// Visible returns the names of the catalog tools the principal may see, from
// the same per-tool rules as Decide (listed ⇔ callable, docs/architecture.md).
// The returned map is shared with the cache and must not be modified.
func (e *Engine) Visible(ctx context.Context, p *gateway.Principal, c *gateway.Caller) (map[string]bool, error) {
	tools, version := e.toolsNow()
	var key cacheKey
	cacheable := false
	if e.cache != nil {
		key, cacheable = e.visibleKey(p, c, version)
		if cacheable {
			if v, ok := e.cache.visible.get(key); ok {
				return v, nil
			}
		}
	}
	v, err := e.evalVisible(ctx, p, c, tools)
	if err == nil && cacheable {
		e.cache.visible.add(key, v, visibleCost(v))
	}
	return v, err
}

func (e *Engine) evalVisible(ctx context.Context, p *gateway.Principal, c *gateway.Caller, tools *ast.Term) (map[string]bool, error) {
	var in astWriter
	e.writeBase(&in, p, c)
	in.term("tools", tools)
	in.close()
	return e.visibleFrom(ctx, in.root)
}

// visibleFrom evaluates the visible-tools query on the input in.
func (e *Engine) visibleFrom(ctx context.Context, in ast.Object) (map[string]bool, error) {
	ctx, cancel := context.WithTimeout(ctx, e.evalTimeout)
	defer cancel()
	rs, err := e.visible.Eval(ctx, rego.EvalParsedInput(in))
	if err != nil {
		return nil, gateway.Wrap(gateway.EInternal, err, e.evalFailed(ctx, "no tools can be listed"))
	}
	if len(rs) != 1 || len(rs[0].Expressions) != 1 {
		return nil, gateway.Errorf(gateway.EInternal, "policy returned no visible tool set; no tools can be listed")
	}
	names, ok := rs[0].Expressions[0].Value.([]any)
	if !ok {
		return nil, gateway.Errorf(gateway.EInternal, "policy returned a visible tool set of type %T", rs[0].Expressions[0].Value)
	}
	out := make(map[string]bool, len(names))
	for _, n := range names {
		if s, ok := n.(string); ok {
			out[s] = true
		}
	}
	return out, nil
}

func newDecisionID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// decisionFrom converts the decision document into a gateway.Decision,
// rejecting documents that lack the allow and visible booleans.
func decisionFrom(rs rego.ResultSet) (*gateway.Decision, error) {
	if len(rs) != 1 || len(rs[0].Expressions) != 1 {
		return nil, errors.New("decision is undefined")
	}
	doc, ok := rs[0].Expressions[0].Value.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("decision is a %T, not an object", rs[0].Expressions[0].Value)
	}
	allow, ok1 := doc["allow"].(bool)
	visible, ok2 := doc["visible"].(bool)
	if !ok1 || !ok2 {
		return nil, errors.New("decision lacks boolean allow/visible")
	}
	d := &gateway.Decision{Allow: allow, Visible: visible}
	if t, ok := doc["tier"].(string); ok {
		d.Tier = gateway.Tier(t)
	}
	d.Group, _ = doc["group"].(string)
	d.Mode, _ = doc["mode"].(string)
	d.WorkspaceID, _ = doc["workspace_id"].(string)
	for _, r := range asSlice(doc["reasons"]) {
		m, _ := r.(map[string]any)
		code, _ := m["code"].(string)
		msg, _ := m["message"].(string)
		if code != "" {
			d.Reasons = append(d.Reasons, gateway.Reason{Code: code, Message: msg})
		}
	}
	if !d.Allow && len(d.Reasons) == 0 {
		d.Reasons = []gateway.Reason{{Code: "policy.denied", Message: "the policy denied this call without a reason"}}
	}
	if ob, ok := doc["obligations"].(map[string]any); ok {
		for _, f := range asSlice(ob["redact"]) {
			if s, ok := f.(string); ok {
				d.Obligations.Redact = append(d.Obligations.Redact, s)
			}
		}
		sort.Strings(d.Obligations.Redact)
		d.Obligations.ConfirmationRequired, _ = ob["confirmation_required"].(bool)
		d.Obligations.Relay = relayFrom(ob["relay"])
		d.Obligations.ApprovalRequired, _ = ob["approval_required"].(bool)
		for _, f := range asSlice(ob["approval_because"]) {
			if s, ok := f.(string); ok {
				d.Obligations.ApprovalBecause = append(d.Obligations.ApprovalBecause, s)
			}
		}
		sort.Strings(d.Obligations.ApprovalBecause)
		for _, f := range asSlice(ob["flow_reads"]) {
			if s, ok := f.(string); ok {
				d.Obligations.FlowReads = append(d.Obligations.FlowReads, s)
			}
		}
		sort.Strings(d.Obligations.FlowReads)
	}
	return d, nil
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

// Grants lists the allowlist entries the bundle's data defines that are not
// tool names: the tier wildcards, the full grant and the group wildcards of
// data.supacloud.grants (docs/requirements.md#tiers), and the
// prefix (data.supacloud.grants.tool_prefix, "supacloud.") under which any
// tool may also be named. The admin API uses them to refuse allowlist
// entries that grant nothing; the bundle stays the one place they are defined.
func (e *Engine) Grants() (entries []string, toolPrefix string) {
	return slices.Clone(e.grantEntries), e.toolPrefix
}

// GrantsQuery is where a bundle defines its grant catalog: a data document
// (data.json under supacloud/) or a Rego rule of package supacloud, as the
// shipped bundle's grants.rego does.
const GrantsQuery = "data.supacloud.grants"

// evalGrants evaluates GrantsQuery once, at load; undefined yields nil.
func evalGrants(ctx context.Context, c *ast.Compiler, store storage.Store) (map[string]any, error) {
	rs, err := rego.New(rego.Query(GrantsQuery), rego.Compiler(c), rego.Store(store), rego.StrictBuiltinErrors(true)).Eval(ctx)
	if err != nil {
		return nil, fmt.Errorf("policy: evaluate %s: %w", GrantsQuery, err)
	}
	if len(rs) == 0 || len(rs[0].Expressions) == 0 {
		return nil, nil
	}
	grants, _ := rs[0].Expressions[0].Value.(map[string]any)
	return grants, nil
}

// readGrants extracts Grants from the bundle's grant catalog; a bundle
// without one yields none (every non-tool entry is then refused).
func readGrants(grants map[string]any) (entries []string, prefix string) {
	if tiers, ok := grants["tiers"].(map[string]any); ok {
		for _, t := range tiers {
			if w, ok := t.(map[string]any)["wildcard"].(string); ok {
				entries = append(entries, w)
			}
		}
	}
	if full, ok := grants["full"].(string); ok {
		entries = append(entries, full)
	}
	if groups, ok := grants["group_wildcards"].(map[string]any); ok {
		for w := range groups {
			entries = append(entries, w)
		}
	}
	prefix, _ = grants["tool_prefix"].(string)
	slices.Sort(entries)
	return entries, prefix
}

// relayFrom reads the relay obligation {"kinds": [...], "secret_words":
// [...]}; anything else relays nothing.
func relayFrom(v any) *gateway.RelayPolicy {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	rp := &gateway.RelayPolicy{}
	for _, k := range asSlice(m["kinds"]) {
		if s, ok := k.(string); ok {
			rp.Kinds = append(rp.Kinds, gateway.RelayKind(s))
		}
	}
	for _, w := range asSlice(m["secret_words"]) {
		if s, ok := w.(string); ok && s != "" {
			rp.SecretWords = append(rp.SecretWords, s)
		}
	}
	return rp
}
