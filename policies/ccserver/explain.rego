# The explanation of one cc_server tools/call decision, for people (POST
# /admin/v1/explain with "surface": "ccserver"): data.ccserver.explain. It
# is built from the rules the decision uses (session.rego, mode.rego,
# guard.rego, workspace.rego, decision.rego), evaluated on the same input,
# so what it shows is what the policy did, not a second account of it. The
# gateway never evaluates it on the request path.
package ccserver

# explain is, for the tools/call input:
# {"decision": the decision document (decision.rego),
#  "decided_by": {"rule", "gate", "code"}: the rule that decided it,
#  "gates": [{"gate", "rule", "passed", "denies_with": [codes]}], in the
#            order the policy checks them,
#  "mode": the conversation mode in force, or null for an unknown one,
#  "workspace": {"call", "pinned", "memberships", "reachable"},
#  "guard": the action guard's verdict as the policy reads it, or null
#           for a tool without action classes}.
explain := {
	"decision": decision,
	"decided_by": explain_decided_by,
	"gates": explain_gates,
	"mode": explain_mode,
	"workspace": {
		"call": call_workspace,
		"pinned": explain_pinned,
		"memberships": sort(memberships),
		"reachable": reachable_text,
	},
	"guard": explain_guard,
}

default explain_mode := null

explain_mode := mode

default explain_pinned := null

explain_pinned := pinned_workspace

explain_guard := guard_decision if {
	action_tool(input.tool)
} else := null

# explain_passed names the gates that pass for this input.
explain_passed contains "principal" if principal_ok

explain_passed contains "mode" if mode

explain_passed contains "tool" if tool_valid(input.tool)

explain_passed contains "mode_tool" if mode_visible(input.tool)

explain_passed contains "read_only" if not read_only_refused(input.tool)

explain_passed contains "workspace" if workspace_reachable(input.tool)

explain_passed contains "workspace_named" if not workspace_missing

explain_passed contains "resource" if not resource_mismatch

explain_passed contains "guard" if not guard_denied

explain_passed contains "own_ticket" if not own_ticket_refused

# explain_gate_catalog describes each gate: the rule that checks it and the
# reason codes it denies with (explain_test.rego checks that a refused
# call's reason is one of its deciding gate's).
explain_gate_catalog := {
	"principal": {"rule": "data.ccserver.principal_ok", "denies_with": ["principal.unsupported"]},
	"mode": {"rule": "data.ccserver.mode", "denies_with": ["mode.unknown"]},
	"tool": {"rule": "data.ccserver.tool_valid", "denies_with": ["input.invalid"]},
	"mode_tool": {"rule": "data.ccserver.mode_visible", "denies_with": ["mode.own_ticket_only", "mode.tool_not_allowed"]},
	"read_only": {"rule": "data.ccserver.read_only_refused", "denies_with": ["action.read_only_mode"]},
	"workspace": {
		"rule": "data.ccserver.workspace_reachable",
		"denies_with": ["workspace.foreign", "workspace.none", "workspace.not_member", "workspace_id.invalid"],
	},
	"workspace_named": {"rule": "data.ccserver.workspace_missing", "denies_with": ["workspace_id.missing"]},
	"resource": {"rule": "data.ccserver.resource_mismatch", "denies_with": ["workspace.mismatch"]},
	"guard": {"rule": "data.ccserver.guard_denied", "denies_with": ["action.guard_denied"]},
	"own_ticket": {"rule": "data.ccserver.own_ticket_refused", "denies_with": ["mode.own_ticket_only"]},
}

# explain_gate_order is the order the policy checks the gates in: the
# session (session.rego), then what makes the tool visible (decision.rego
# tool_visible), then what only the call can tell (decision.rego allow).
explain_gate_order := [
	"principal", "mode", "tool", "mode_tool", "read_only", "workspace",
	"workspace_named", "resource", "guard", "own_ticket",
]

explain_gates := [object.union(explain_gate_catalog[g], {"gate": g, "passed": g in explain_passed}) |
	some g in explain_gate_order
]

# explain_decided_by is data.ccserver.allow for an allowed call, else the
# first gate that failed, with the first reason code of the decision that
# gate denies with (reasons are sorted by code, so another gate's code may
# come first in them).
explain_decided_by := {"rule": "data.ccserver.allow", "gate": null, "code": null} if {
	allow
} else := {"rule": g.rule, "gate": g.gate, "code": explain_code(g)} if {
	g := [f | some f in explain_gates; not f.passed][0]
} else := {"rule": "data.ccserver.deny", "gate": null, "code": reasons[0].code}

explain_code(g) := own[0] if {
	own := [r.code | some r in reasons; r.code in g.denies_with]
	count(own) > 0
} else := reasons[0].code
