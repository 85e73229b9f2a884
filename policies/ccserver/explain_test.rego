package ccserver_test

import data.ccserver

test_explain_allowed_call if {
	x := ccserver.explain with input as object.union(call(agent, t_browser_use, acme), {"guard": {"decision": "prompt"}})
	x.decision.allow
	x.decided_by == {"rule": "data.ccserver.allow", "gate": null, "code": null}
	[g.gate | some g in x.gates; not g.passed] == []
	x.mode == "chat"
	x.guard == "prompt"
	x.workspace == {"call": "ws-acme", "pinned": "ws-acme", "memberships": members, "reachable": "the workspace this agent was started in, ws-acme"}
}

# Each refused call names the first gate it failed, in the order the
# policy checks them, and the reason code of that gate the decision gave
# (for plan mode's browser_use the sorted reasons start with another
# gate's code). Every gate decides one case at least. One evaluation per
# case, in one test; wrong lists the cases whose explanation is not the
# one expected.
explain_refusals := [
	[call({"kind": "robot", "sub": "u-ada"}, t_get_ticket, acme), "principal", "principal.unsupported"],
	[call(in_mode("dream"), t_get_ticket, acme), "mode", "mode.unknown"],
	[call(user, {"name": "x"}, acme), "tool", "input.invalid"],
	[call(in_mode("plan"), t_create_ticket, acme), "mode_tool", "mode.tool_not_allowed"],
	[call(in_mode("plan"), t_browser_use, {"workspace_id": "ws-initech"}), "mode_tool", "mode.tool_not_allowed"],
	[
		call(in_mode("plan"), object.union(t_rig_list, {"action_classes": ["enclosureControl"]}), acme),
		"read_only", "action.read_only_mode",
	],
	[call(user, t_get_ticket, {"workspace_id": "ws-initech"}), "workspace", "workspace.not_member"],
	[call(user, t_get_ticket, {}), "workspace_named", "workspace_id.missing"],
	[
		object.union(call(user, t_get_ticket, acme), {"resource": {"kind": "ticket", "id": "TCK-1", "workspace_id": "ws-globex"}}),
		"resource", "workspace.mismatch",
	],
	[object.union(call(user, t_browser_use, acme), {"guard": {"decision": "deny"}}), "guard", "action.guard_denied"],
	[call(agent_in_mode("plan"), t_close_ticket, {"workspace_id": "ws-acme", "ticket_id": "TCK-9"}), "own_ticket", "mode.own_ticket_only"],
]

test_explain_names_the_deciding_gate_and_reason if {
	wrong := [[case[1], x.decided_by] |
		some case in explain_refusals
		x := ccserver.explain with input as case[0]
		not explained_as(x, case[1], case[2])
	]
	wrong == []
	{case[1] | some case in explain_refusals} == {g | some g in ccserver.explain_gate_order}
}

explained_as(x, gate, code) if {
	not x.decision.allow
	x.decided_by.gate == gate
	x.decided_by.code == code
	x.decided_by.rule == ccserver.explain_gate_catalog[gate].rule
	code in codes(x.decision)
	code in ccserver.explain_gate_catalog[gate].denies_with
}
