package policy

import (
	"fmt"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/mcpgate/mcpgate/gateway"
)

// Session flow rules (docs/requirements.md#flow-rules; docs/policy.md, "Flow rules"). A
// tools/call input carries input.session when the call's ToolRef has a
// Session (the pipeline loads it for the workspaces the bundle switches
// on, FlowRules):
//
//	{"labels_read": [label] sorted,
//	 "reads": [{"label", "tool", "audit_id", "time"}] sorted by label: the
//	          first call that read each label,
//	 "tools_called": [tool]}  only when the bundle reads it (sessionUse)
//
// It is written to the same inputWriter stream as the rest of the input,
// so the decision cache keys on it: a decision made before a taint is
// never served after it.

// flowRules is the bundle's data.<surface>.flow_rules, read at load.
type flowRules struct {
	all        bool
	workspaces map[string]bool
}

// readFlowRules reads {"all_workspaces": bool, "workspaces": [id]}; a
// bundle without it switches the rule set on nowhere.
func readFlowRules(m map[string]any) (flowRules, error) {
	r := flowRules{workspaces: map[string]bool{}}
	if m == nil {
		return r, nil
	}
	if v, ok := m["all_workspaces"]; ok {
		if r.all, ok = v.(bool); !ok {
			return r, fmt.Errorf("policy: flow_rules.all_workspaces is a %T; want true or false", v)
		}
	}
	for _, w := range asSlice(m["workspaces"]) {
		s, ok := w.(string)
		if !ok {
			return r, fmt.Errorf("policy: flow_rules.workspaces holds a %T; want workspace ids (strings)", w)
		}
		r.workspaces[s] = true
	}
	return r, nil
}

// FlowRules reports whether the bundle switches the flow rule set on for
// workspaceID (data.<surface>.flow_rules): the pipeline then loads the
// session's history for the call and records the call in it. On
// cc_server workspaceID is the credential's pinned workspace, "" for a
// user acting across workspaces (on then only with all_workspaces).
func (e *Engine) FlowRules(workspaceID string) bool {
	return e.flow.all || (workspaceID != "" && e.flow.workspaces[workspaceID])
}

// sessionUse says which optional parts of input.session the bundle can
// read: tools_called changes with every new tool a session calls, so it
// is written (and keyed on) only for a bundle that reads it.
type sessionUse struct{ tools bool }

// analyseSession looks, as analyseArguments does, at every ref rooted at
// input in the modules of this surface: tools_called is read when a ref
// names it, or reaches input.session or input whole (or by a variable).
func analyseSession(c *ast.Compiler, surface string) sessionUse {
	use := sessionUse{}
	for _, m := range c.Modules {
		if otherSurface(m.Package.Path, surface) {
			continue
		}
		ast.WalkRefs(m, func(r ast.Ref) bool {
			if use.tools || !r[0].Equal(ast.InputRootDocument) {
				return false
			}
			use.tools = readsTools(r)
			return false
		})
	}
	return use
}

func readsTools(r ast.Ref) bool {
	if len(r) < 2 {
		return true
	}
	first, ok := r[1].Value.(ast.String)
	if !ok {
		return true
	}
	if first != "session" {
		return false
	}
	if len(r) < 3 {
		return true
	}
	key, ok := r[2].Value.(ast.String)
	return !ok || key == "tools_called"
}

// writeSession writes input.session, unless s is nil.
func (e *Engine) writeSession(w inputWriter, s *gateway.FlowSession) {
	if s == nil {
		return
	}
	w.open("session")
	w.strs("labels_read", s.Labels(), false)
	w.term("reads", readsTerm(s.Reads))
	if e.session.tools {
		w.strs("tools_called", s.Tools, false)
	}
	w.close()
}

func readsTerm(reads []gateway.FlowRead) *ast.Term {
	terms := make([]*ast.Term, len(reads))
	for i, r := range reads {
		terms[i] = ast.ObjectTerm(
			ast.Item(ast.InternedTerm("label"), ast.StringTerm(r.Label)),
			ast.Item(ast.InternedTerm("tool"), ast.StringTerm(r.Tool)),
			ast.Item(ast.InternedTerm("audit_id"), ast.IntNumberTerm(int(r.AuditID))),
			ast.Item(ast.InternedTerm("time"), ast.StringTerm(r.Time.UTC().Format(time.RFC3339Nano))),
		)
	}
	return ast.ArrayTerm(terms...)
}
