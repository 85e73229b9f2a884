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

# Listed iff callable (the call, with valid arguments, is allowed), for
# every mode, for the user and the pinned agent, with no workspace, with
# one it may act in and with another: listed_and_callable evaluates the
# whole matrix once, tools/list's names beside the names whose call is
# allowed, as two sets per principal and arguments.
listed_iff_callable_principals := [
	user, in_mode("plan"), in_mode("review"), in_mode("orchestrate"),
	agent, agent_in_mode("plan"),
]

listed_iff_callable_arguments := [{}, acme, {"workspace_id": "ws-globex"}]

listed_and_callable := {[p, args]: {"listed": listed, "callable": callable} |
	some p in listed_iff_callable_principals
	some args in listed_iff_callable_arguments
	listed := ccserver.visible_tools with input as {"principal": p, "memberships": members, "tools": all_tools, "arguments": args}
	call_args := object.union(object.union(acme, args), {"ticket_id": "TCK-7"})
	callable := {t.name |
		some t in all_tools
		ccserver.allow with input as object.union(call(p, t, call_args), {"guard": {"decision": "allow"}})
	}
}

# No entry of the matrix has listed and callable sets that differ, and the
# matrix is not trivial: it covers the 6 principals with 3 kinds of
# arguments each, some tools are callable and some are not. One test, so
# the matrix is evaluated once.
test_visible_tools_agree_with_decision if {
	disagreeing := {k: v | some k, v in listed_and_callable; v.listed != v.callable}
	disagreeing == {}
	count(listed_and_callable) == 18
	sizes := {count(v.callable) | some v in listed_and_callable}
	max(sizes) > 0
	min(sizes) < count(all_tools)
	vis_plan := listed_and_callable[[in_mode("plan"), acme]].listed
	"submit_plan" in vis_plan
	not "create_ticket" in vis_plan
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
