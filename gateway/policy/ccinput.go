package policy

import (
	"context"
	"fmt"
	"strconv"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage"

	"github.com/mcpgate/mcpgate/gateway"
)

// The cc_server surface (docs/requirements.md#cc-registry) is decided by the same engine with the
// input policies/ccserver/README.md defines, written to the same
// inputWriter stream as SupaCloud's (so the decision cache keys on it the
// same way):
//
//	{"principal": {"kind", "sub", "mode", "workspace_id", "ticket_id"},
//	 "memberships": [...], "tool": {"name", "group", "requires_approval",
//	 "action_classes"}, "arguments": {...}, "resource": {...}}
//
// visible_tools gets the principal, the memberships, the arguments (only
// workspace_id, when the search tool was given one) and the catalog as
// input.tools. No guard verdict is sent: the bundle then treats an
// action-class tool's call as "prompt", so a person decides it.

// surfaceOf checks Options.Surface; "" is SupaCloud.
func surfaceOf(s string) (string, error) {
	switch s {
	case "", gateway.SurfaceSupaCloud:
		return gateway.SurfaceSupaCloud, nil
	case gateway.SurfaceCCServer:
		return s, nil
	}
	return "", fmt.Errorf("policy: unknown surface %q; want %s or %s", s, gateway.SurfaceSupaCloud, gateway.SurfaceCCServer)
}

// writeCCBase writes the principal and the memberships, without closing
// the root object.
func writeCCBase(w inputWriter, p *gateway.Principal, c *gateway.Caller) {
	w.open("")
	w.open("principal")
	w.str("kind", string(p.Kind))
	w.str("sub", p.Subject)
	w.str("mode", p.Mode)
	w.str("workspace_id", p.WorkspaceID)
	w.str("ticket_id", p.TicketID)
	w.close()
	var m []string
	if c != nil {
		m = c.Memberships
	}
	w.strs("memberships", m, false)
}

// writeCCCall writes the complete input of one cc_server tools/call.
func (e *Engine) writeCCCall(w inputWriter, p *gateway.Principal, c *gateway.Caller, tool ToolRef, args *ast.Term) {
	writeCCBase(w, p, c)
	w.open("tool")
	e.writeTool(w, tool)
	w.close()
	writeResource(w, tool.Resource)
	writeWorkspace(w, tool.FlowRules)
	e.writeSession(w, tool.Session)
	w.term("arguments", args)
	w.close()
}

// VisibleIn is Visible for a cc_server search tool (list_my_tools,
// search_tool_bm25) called with workspaceID ("" when it was given none):
// the names of the catalog tools a call of which, with valid arguments,
// the policy would allow now for p in that workspace (docs/requirements.md#cc-tool-search: both
// search tools "fragen die Modus-Sperre"). The map is shared with the
// cache and must not be modified. Errors are EInternal: no callability
// can then be told.
func (e *Engine) VisibleIn(ctx context.Context, p *gateway.Principal, c *gateway.Caller, workspaceID string) (map[string]bool, error) {
	if !e.cc || workspaceID == "" {
		return e.Visible(ctx, p, c)
	}
	args := ast.ObjectTerm(ast.Item(ast.InternedTerm("workspace_id"), ast.StringTerm(workspaceID)))
	tools, version := e.toolsNow()
	write := func(w inputWriter) {
		writeCCBase(w, p, c)
		w.term("arguments", args)
		if version != 0 {
			w.str("tools_version", strconv.FormatUint(version, 10))
		}
	}
	var key cacheKey
	cacheable := false
	if e.cache != nil {
		kw := keyWriter{b: make([]byte, 0, 256)}
		write(&kw)
		kw.close()
		if key, cacheable = kw.sum(); cacheable {
			if v, ok := e.cache.visible.get(key); ok {
				return v, nil
			}
		}
	}
	var in astWriter
	writeCCBase(&in, p, c)
	in.term("arguments", args)
	in.term("tools", tools)
	in.close()
	v, err := e.visibleFrom(ctx, in.root)
	if err == nil && cacheable {
		e.cache.visible.add(key, v, visibleCost(v))
	}
	return v, err
}

// Limits returns the bundle's data.<surface>.limits document (nil when it
// defines none), read once at load: e.g. cc_server's calls_per_minute.
// The map must not be modified.
func (e *Engine) Limits() map[string]any { return e.limits }

// LimitInt is Limits()[name] as a positive whole number, ok false when the
// bundle sets none (or not a positive whole number).
func (e *Engine) LimitInt(name string) (int, bool) {
	switch v := e.limits[name].(type) {
	case int:
		return v, v > 0
	case float64:
		return int(v), v > 0 && v == float64(int(v))
	case interface{ Int64() (int64, error) }:
		n, err := v.Int64()
		return int(n), err == nil && n > 0
	}
	return 0, false
}

// evalData evaluates a data document once, at load; undefined yields nil.
func evalData(ctx context.Context, c *ast.Compiler, store storage.Store, query string) (map[string]any, error) {
	rs, err := rego.New(rego.Query(query), rego.Compiler(c), rego.Store(store), rego.StrictBuiltinErrors(true)).Eval(ctx)
	if err != nil {
		return nil, fmt.Errorf("policy: evaluate %s: %w", query, err)
	}
	if len(rs) == 0 || len(rs[0].Expressions) == 0 {
		return nil, nil
	}
	m, _ := rs[0].Expressions[0].Value.(map[string]any)
	return m, nil
}
