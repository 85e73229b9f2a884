package ccserver_test

import data.ccserver

all_tools := [
	t_get_ticket, t_close_ticket, t_create_ticket, t_assign_ticket, t_delegate_ticket,
	t_search_memory, t_remember, t_search_code, t_search_tools, t_todo_write, t_submit_plan,
	t_exit_plan, t_publish_artifact, t_send_message, t_add_review_node, t_propose_orch,
	t_run_playbook, t_create_playbook, t_install_skill, t_list_workspaces, t_get_article,
	t_browser_use, t_rig_close, t_rig_list, t_fail_ticket,
]

test_requires_approval_is_an_obligation if {
	d := ccserver.decision with input as call(user, t_create_ticket, acme)
	d.allow
	d.obligations.approval_required
	d.obligations.approval_because == ["tool.requires_approval"]
	d.group == "tickets"
}

test_denied_call_carries_no_obligation if {
	d := ccserver.decision with input as call(in_mode("plan"), t_create_ticket, acme)
	not d.allow
	d.obligations.approval_required == false
	d.obligations.approval_because == []
}

test_plain_tool_needs_no_approval if {
	d := ccserver.decision with input as call(user, t_search_memory, acme)
	d.obligations.approval_required == false
	d.obligations.confirmation_required == false
	d.obligations.redact == []
}

test_invalid_tool if {
	some t in [{}, {"name": "x"}, {"name": "", "group": "g"}, {"name": "x", "group": "g", "action_classes": "rigs"}, {"name": "x", "group": "g", "requires_approval": "yes"}]
	d := ccserver.decision with input as call(user, t, acme)
	not d.allow
	codes(d) == {"input.invalid"}
}

# Listed iff callable (the call, with valid arguments, is allowed) for one
# principal and arguments of each rule path: tool_visible is the mode's
# reach and read-only lock (the principal's mode, whatever the workspace)
# and the workspace rules (the principal's pin or memberships and the
# arguments' workspace_id, whatever the mode), so every mode is met in a
# workspace the caller may act in, and the user and the pinned agent with
# no workspace, with one it may act in and with another.
# listed_and_callable evaluates the matrix once, tools/list's names beside
# the names whose call is allowed, as two sets per principal and
# arguments.
listed_iff_callable_cases := [
	[user, {}], [user, acme], [user, {"workspace_id": "ws-globex"}],
	[in_mode("plan"), acme], [in_mode("review"), acme], [in_mode("orchestrate"), acme],
	[agent, {}], [agent, acme], [agent, {"workspace_id": "ws-globex"}],
	[agent_in_mode("plan"), acme],
]

# matrix_tools are the catalog's tools and one that a read-only mode
# reaches but must refuse: an always-allowed name declaring an action
# class, so the read-only lock is met on both sides.
matrix_tools := array.concat(all_tools, [{"name": "code_impact", "group": "code", "requires_approval": false, "action_classes": ["processSpawn"]}])

listed_and_callable := {[p, args]: {"listed": listed, "callable": callable} |
	some [p, args] in listed_iff_callable_cases
	listed := ccserver.visible_tools with input as {"principal": p, "memberships": members, "tools": matrix_tools, "arguments": args}
	call_args := object.union(object.union(acme, args), {"ticket_id": "TCK-7"})
	callable := {t.name |
		some t in matrix_tools
		ccserver.allow with input as object.union(call(p, t, call_args), {"guard": {"decision": "allow"}})
	}
}

# No entry of the matrix has listed and callable sets that differ, and the
# matrix is not trivial: it covers its 10 cases, some tools are callable
# and some are not. One test, so the matrix is evaluated once.
test_visible_tools_agree_with_decision if {
	disagreeing := {k: v | some k, v in listed_and_callable; v.listed != v.callable}
	disagreeing == {}
	count(listed_and_callable) == 10
	sizes := {count(v.callable) | some v in listed_and_callable}
	max(sizes) > 0
	min(sizes) < count(matrix_tools)
	vis_plan := listed_and_callable[[in_mode("plan"), acme]].listed
	"submit_plan" in vis_plan
	not "create_ticket" in vis_plan
	not "code_impact" in vis_plan
	"code_impact" in listed_and_callable[[user, acme]].listed
}

# The matrix is not vacuous: a listing that leaves out a tool a call may
# use, or shows one no call may use, disagrees (over a one-tool catalog,
# so the check stays cheap; the same cases agree with the real listing).
test_visible_tools_matrix_catches_a_broken_listing if {
	agreeing := {k | some k, v in listed_and_callable; v.listed == v.callable} with matrix_tools as [t_browser_use]
	count(agreeing) == 10
	left_out := {k | some k, v in listed_and_callable; v.listed != v.callable} with matrix_tools as [t_search_memory]
		with ccserver.visible_tools as set()
	count(left_out) > 0
	shown := {k | some k, v in listed_and_callable; v.listed != v.callable} with matrix_tools as [t_browser_use]
		with ccserver.visible_tools as {"browser_use"}
	[in_mode("plan"), acme] in shown
}

test_visible_tools_without_session if {
	count(ccserver.visible_tools) == 0 with input as {"principal": {"kind": "x"}, "tools": all_tools}
}

test_reasons_are_sorted_and_fall_back if {
	d := ccserver.decision with input as call(in_mode("plan"), t_browser_use, {"workspace_id": "ws-initech"})
	codes(d) == {"action.read_only_mode", "mode.tool_not_allowed", "workspace.not_member"}
	d.reasons == sort(d.reasons)
	r := ccserver.reasons with ccserver.allow as false with ccserver.deny as set()
	r[0].code == "input.invalid"
}
