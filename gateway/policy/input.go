package policy

import (
	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/mcpgate/mcpgate/gateway"
)

// baseInput builds the part of the policy input shared by tools/call and
// tools/list (policies/supacloud/README.md, Input). It builds OPA AST values
// directly: no JSON round trip on the hot path.
func (e *Engine) baseInput(p *gateway.Principal, c *gateway.Caller) ast.Object {
	in := ast.NewObject(
		ast.Item(ast.InternedTerm("edition"), e.edition),
		ast.Item(ast.InternedTerm("principal"), principalTerm(p)),
		ast.Item(ast.InternedTerm("profile_requested"), ast.StringTerm(p.ProfileID)),
		ast.Item(ast.InternedTerm("permissions"), permissionsTerm(c)),
	)
	if c.Task != nil {
		in.Insert(ast.InternedTerm("task"), ast.ObjectTerm(
			ast.Item(ast.InternedTerm("id"), ast.StringTerm(c.Task.ID)),
			ast.Item(ast.InternedTerm("status"), ast.StringTerm(c.Task.Status)),
		))
	}
	if c.Member != nil {
		in.Insert(ast.InternedTerm("member"), ast.ObjectTerm(
			ast.Item(ast.InternedTerm("role"), ast.StringTerm(c.Member.Role)),
			ast.Item(ast.InternedTerm("seat_type"), ast.StringTerm(c.Member.SeatType)),
		))
	}
	if c.Profile != nil {
		in.Insert(ast.InternedTerm("profile"), profileTerm(c.Profile))
	}
	if c.DefaultProfile != nil {
		in.Insert(ast.InternedTerm("default_profile"), profileTerm(c.DefaultProfile))
	}
	return in
}

func principalTerm(p *gateway.Principal) *ast.Term {
	return ast.ObjectTerm(
		ast.Item(ast.InternedTerm("kind"), ast.StringTerm(string(p.Kind))),
		ast.Item(ast.InternedTerm("sub"), ast.StringTerm(p.Subject)),
		ast.Item(ast.InternedTerm("workspace_id"), ast.StringTerm(p.WorkspaceID)),
		ast.Item(ast.InternedTerm("task_id"), ast.StringTerm(p.TaskID)),
		ast.Item(ast.InternedTerm("scopes"), stringsTerm(p.Scopes)),
	)
}

func profileTerm(pr *gateway.Profile) *ast.Term {
	script := ast.NullTerm()
	if pr.ScriptAllowlist != nil {
		script = stringsTerm(pr.ScriptAllowlist)
	}
	return ast.ObjectTerm(
		ast.Item(ast.InternedTerm("id"), ast.StringTerm(pr.ID)),
		ast.Item(ast.InternedTerm("name"), ast.StringTerm(pr.Name)),
		ast.Item(ast.InternedTerm("allowlist"), stringsTerm(pr.Allowlist)),
		ast.Item(ast.InternedTerm("script_allowlist"), script),
	)
}

func permissionsTerm(c *gateway.Caller) *ast.Term {
	obj := ast.NewObject(
		ast.Item(ast.InternedTerm("user_overrides"), grantsTerm(c.UserOverrides)),
		ast.Item(ast.InternedTerm("workspace_overrides"), grantsTerm(c.WorkspaceOverrides)),
	)
	if c.SeatType != nil {
		obj.Insert(ast.InternedTerm("seat_type"), ast.ObjectTerm(
			ast.Item(ast.InternedTerm("name"), ast.StringTerm(c.SeatType.Name)),
			ast.Item(ast.InternedTerm("enterprise_only"), ast.BooleanTerm(c.SeatType.EnterpriseOnly)),
			ast.Item(ast.InternedTerm("permissions"), grantsTerm(c.SeatType.Permissions)),
		))
	}
	if c.OrgPlan != nil {
		obj.Insert(ast.InternedTerm("org_plan"), ast.ObjectTerm(
			ast.Item(ast.InternedTerm("name"), ast.StringTerm(c.OrgPlan.Name)),
			ast.Item(ast.InternedTerm("permissions"), grantsTerm(c.OrgPlan.Permissions)),
		))
	}
	return ast.NewTerm(obj)
}

func grantsTerm(p gateway.Permissions) *ast.Term {
	obj := ast.NewObject()
	for k, v := range p {
		obj.Insert(ast.StringTerm(k), ast.BooleanTerm(v))
	}
	return ast.NewTerm(obj)
}

func stringsTerm(ss []string) *ast.Term {
	terms := make([]*ast.Term, len(ss))
	for i, s := range ss {
		terms[i] = ast.StringTerm(s)
	}
	return ast.ArrayTerm(terms...)
}

func toolTerm(t ToolRef) *ast.Term {
	return ast.ObjectTerm(
		ast.Item(ast.InternedTerm("name"), ast.StringTerm(t.Name)),
		ast.Item(ast.InternedTerm("tier"), ast.StringTerm(string(t.Tier))),
		ast.Item(ast.InternedTerm("carve_out"), ast.BooleanTerm(t.CarveOut)),
	)
}

// toolsTerm is built once at start: the catalog does not change per request.
func toolsTerm(tools []ToolRef) *ast.Term {
	terms := make([]*ast.Term, len(tools))
	for i, t := range tools {
		terms[i] = toolTerm(t)
	}
	return ast.ArrayTerm(terms...)
}

// argumentsTerm converts decoded JSON arguments (maps, slices, strings,
// float64/json.Number, bools, nil) to an AST term.
func argumentsTerm(args map[string]any) (*ast.Term, error) {
	if len(args) == 0 {
		return ast.ObjectTerm(), nil
	}
	v, err := ast.InterfaceToValue(args)
	if err != nil {
		return nil, err
	}
	return ast.NewTerm(v), nil
}
