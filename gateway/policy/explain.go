package policy

import (
	"context"
	"errors"
	"fmt"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/mcpgate/mcpgate/gateway"
)

// ExplainQuery is where a bundle explains one SupaCloud tools/call
// decision (policies/supacloud/explain.rego): the decision, the gates in
// the order the policy checks them, the rule that decided, the grant that
// allows the tool or would, and the permission precedence chain as
// resolved. Every surface explains in its own package, as it decides
// there (ExplainQueryOf). The request path never evaluates it.
const ExplainQuery = "data.supacloud.explain"

// ExplainQueryOf is the explanation query of surface (Options.Surface):
// data.<surface>.explain, beside the surface's decision. cc_server's
// (policies/ccserver/explain.rego) gives the decision, its gates in the
// order the policy checks them and the rule and reason that decided. ""
// is SupaCloud's ExplainQuery.
func ExplainQueryOf(surface string) string {
	if surface == "" {
		surface = gateway.SurfaceSupaCloud
	}
	return "data." + surface + ".explain"
}

// DecideInput evaluates the decision query on a complete policy input as
// it was recorded (a decision-log event's "input"), instead of building
// one from a principal and a caller: policy replay re-decides recorded
// inputs against a candidate bundle with it. input must be a JSON object
// decoded with json.Decoder.UseNumber or as plain Go values; the result
// bypasses the decision cache and carries a fresh ID. Errors are EInvalid
// for an input that is no object, EInternal as Decide's.
func (e *Engine) DecideInput(ctx context.Context, input map[string]any) (*gateway.Decision, error) {
	v, err := ast.InterfaceToValue(input)
	if err != nil {
		return nil, gateway.Wrap(gateway.EInvalid, err, "the recorded policy input cannot be evaluated")
	}
	obj, ok := v.(ast.Object)
	if !ok {
		return nil, gateway.Errorf(gateway.EInvalid, "the recorded policy input is a %T, not an object", v)
	}
	d, err := e.evalDecision(ctx, obj)
	if err != nil {
		return nil, err
	}
	return withID(d), nil
}

// Explanation is the answer of Explainer.Explain.
type Explanation struct {
	// Decision is the engine's decision, exactly as Decide returns it on
	// the request path (with a fresh ID).
	Decision *gateway.Decision `json:"decision"`
	// Detail is the bundle's explanation document of the engine's surface
	// (ExplainQueryOf: data.supacloud.explain, policies/supacloud/README.md
	// Explain; data.ccserver.explain) for the same input.
	Detail map[string]any `json:"explain"`
	// Input is the policy input both were evaluated on.
	Input map[string]any `json:"input"`
}

// Explainer decides a call with an Engine and explains the decision with
// the explanation query of the engine's surface (ExplainQueryOf),
// prepared from the same bundle. It is safe for concurrent use.
type Explainer struct {
	engine  *Engine
	query   string
	explain rego.PreparedEvalQuery
}

// NewExplainer compiles the bundle of opts into an Engine (New) and
// prepares the explanation query of opts.Surface on it. It fails as New
// does, and when the bundle does not define that query (an older bundle:
// explain needs one that does).
func NewExplainer(ctx context.Context, opts Options) (*Explainer, error) {
	e, err := New(ctx, opts)
	if err != nil {
		return nil, err
	}
	return e.Explainer(ctx)
}

// Explainer prepares the explanation query of e's surface
// (ExplainQueryOf) on the bundle e compiled, with e's own compiler and
// data (not a second read of its files, which may have changed since),
// and returns the explainer that decides with e itself: its decisions
// carry e's revision (the live one, when e is policy.Live's Engine) and
// its explanations read the rules and data that decided. It fails when
// the bundle does not define that query.
func (e *Engine) Explainer(ctx context.Context) (*Explainer, error) {
	if e.compiler == nil {
		return nil, errors.New("policy: no policy bundle given")
	}
	query := ExplainQueryOf(e.surface)
	if !hasRule(e.compiler, query) {
		return nil, fmt.Errorf("policy: the bundle does not define %s, so its decisions cannot be explained; add policies/%s/explain.rego from the shipped bundle", query, e.surface)
	}
	pq, err := rego.New(rego.Query(query), rego.Compiler(e.compiler), rego.Store(e.store),
		rego.StrictBuiltinErrors(true)).PrepareForEval(ctx)
	if err != nil {
		return nil, fmt.Errorf("policy: prepare %s: %w", query, err)
	}
	return &Explainer{engine: e, query: query, explain: pq}, nil
}

// Engine is the engine the explainer decides with.
func (x *Explainer) Engine() *Engine { return x.engine }

// Explain decides the call of tool by p as Engine.Decide does (the same
// input, the same arguments filter, a bridged tool's overrides) and
// evaluates the explanation query on that input. Errors are Decide's, and
// EInternal when the explanation is undefined or not an object.
func (x *Explainer) Explain(ctx context.Context, p *gateway.Principal, c *gateway.Caller, tool ToolRef, args map[string]any) (*Explanation, error) {
	d, err := x.engine.Decide(ctx, p, c, tool, args)
	if err != nil {
		return nil, err
	}
	tool = x.engine.bridged(tool) // as Decide read it
	argTerm, err := argumentsTerm(x.engine.args.read(args))
	if err != nil {
		return nil, gateway.Wrap(gateway.EInvalid, err, fmt.Sprintf("arguments of tool %s cannot be evaluated", tool.Name))
	}
	var in astWriter
	x.engine.writeCall(&in, p, c, tool, argTerm)
	rs, err := x.explain.Eval(ctx, rego.EvalParsedInput(in.root))
	if err != nil {
		return nil, gateway.Wrap(gateway.EInternal, err, "the policy's explanation failed")
	}
	if len(rs) != 1 || len(rs[0].Expressions) != 1 {
		return nil, gateway.Errorf(gateway.EInternal, "the policy's explanation (%s) is undefined for this input", x.query)
	}
	detail, ok := rs[0].Expressions[0].Value.(map[string]any)
	if !ok {
		return nil, gateway.Errorf(gateway.EInternal, "the policy's explanation is a %T, not an object", rs[0].Expressions[0].Value)
	}
	input, err := ast.JSON(in.root)
	if err != nil {
		return nil, gateway.Wrap(gateway.EInternal, err, "the policy input cannot be shown")
	}
	inMap, _ := input.(map[string]any)
	return &Explanation{Decision: d, Detail: detail, Input: inMap}, nil
}
