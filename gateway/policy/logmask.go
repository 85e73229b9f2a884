package policy

import (
	"context"
	"errors"
	"fmt"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage"

	"github.com/mcpgate/mcpgate/gateway"
)

// MaskQuery is the decision log mask rule, at OPA's default place
// (decision_logs.mask_decision "/system/log/mask"): a set of JSON pointers
// to erase, or {"op": "upsert", "path", "value"} objects, evaluated with a
// decision log event as input (policies/system/log).
const MaskQuery = "data.system.log.mask"

// prepareMask prepares MaskQuery when the bundle defines it; e.mask stays
// nil otherwise (HasMask).
func (e *Engine) prepareMask(ctx context.Context, c *ast.Compiler, store storage.Store) error {
	if !hasRule(c, MaskQuery) {
		return nil
	}
	pq, err := rego.New(rego.Query(MaskQuery), rego.Compiler(c), rego.Store(store), rego.StrictBuiltinErrors(true)).PrepareForEval(ctx)
	if err != nil {
		return fmt.Errorf("policy: prepare %s: %w", MaskQuery, err)
	}
	e.mask = &pq
	return nil
}

// HasMask reports whether the bundle defines the decision log mask
// (MaskQuery). Decision logging needs it: without a mask no event is
// written.
func (e *Engine) HasMask() bool { return e.mask != nil }

// Mask evaluates the decision log mask with event (a decision log event as
// a JSON value: maps, slices, strings, json.Number, bools, nil) as input
// and returns its value, the set of mask rules as []any. An evaluation
// error, a bundle without the rule or an undefined result is an error, so
// that the caller drops the event rather than log it unmasked; so is an
// evaluation cut off at the engine's EvalTimeout. It implements
// decisionlog.Masker.
func (e *Engine) Mask(ctx context.Context, event map[string]any) (any, error) {
	if e.mask == nil {
		return nil, errors.New("the policy bundle defines no " + MaskQuery)
	}
	ctx, cancel := context.WithTimeout(ctx, e.evalTimeout)
	defer cancel()
	rs, err := e.mask.Eval(ctx, rego.EvalInput(event))
	if err != nil {
		return nil, err
	}
	if len(rs) != 1 || len(rs[0].Expressions) != 1 {
		return nil, errors.New(MaskQuery + " is undefined for this event")
	}
	return rs[0].Expressions[0].Value, nil
}

// withInput attaches to d, when the engine keeps inputs (Options.KeepInput),
// the evaluated input: in when the caller has it, else written anew from
// the same call (a cached decision). It returns d.
func (e *Engine) withInput(d *gateway.Decision, in ast.Object, p *gateway.Principal, c *gateway.Caller, tool ToolRef, args *ast.Term) *gateway.Decision {
	if !e.keepInput {
		return d
	}
	if in == nil {
		var w astWriter
		e.writeCall(&w, p, c, tool, args)
		in = w.root
	}
	if v, err := ast.JSON(in); err == nil {
		d.Input = v
	}
	return d
}

// HasMask reports whether the live bundle defines the decision log mask.
func (l *Live) HasMask() bool { return l.Engine().HasMask() }

// Mask evaluates the live bundle's mask on one decision log event
// (Engine.Mask): an event queued before a swap is masked by the bundle
// live when it is written, so a reload that tightens the mask applies to
// it too.
func (l *Live) Mask(ctx context.Context, event map[string]any) (any, error) {
	return l.Engine().Mask(ctx, event)
}
