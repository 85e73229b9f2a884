package ccserver_test

import data.ccserver

allowed(p, tool, args) if {
	d := ccserver.decision with input as call(p, tool, args)
	d.allow
}

refused(p, tool, args, code) if {
	d := ccserver.decision with input as call(p, tool, args)
	not d.allow
	code in codes(d)
}

# Chat: every registered tool.
test_chat_reaches_every_tool if {
	every t in [t_create_ticket, t_delegate_ticket, t_install_skill, t_propose_orch, t_add_review_node, t_remember] {
		allowed(user, t, object.union(acme, {"ticket_id": "TCK-1"}))
	}
}

# The three always-allowed sets, in every mode.
test_always_allowed_in_every_mode if {
	every m in ccserver.modes {
		every t in [t_search_memory, t_publish_artifact, t_search_code, t_search_tools, t_todo_write] {
			allowed(in_mode(m), t, acme)
		}
	}
}

test_always_allowed_sets_are_the_seeds if {
	count(ccserver.always_allowed.memory_and_artifacts) == 14
	count(ccserver.always_allowed.code_graph) == 5
	ccserver.always_allowed.run_mechanics == {"search_tool_bm25", "list_my_tools", "todo_write", "todo_read"}
}

# Plan: no ticket create/assign/delegate, no worktree-touching tools; memory,
# artifacts, todo lists, submit_plan, exit_plan_mode, reads.
test_plan_allowlist if {
	p := in_mode("plan")
	every t in [t_remember, t_submit_plan, t_exit_plan, t_publish_artifact, t_get_ticket] {
		allowed(p, t, object.union(acme, {"ticket_id": "TCK-1"}))
	}
	every t in [t_create_ticket, t_assign_ticket, t_delegate_ticket, t_send_message, t_install_skill, t_propose_orch] {
		refused(p, t, acme, "mode.tool_not_allowed")
	}
}

test_mode_refusal_says_what_to_do if {
	d := ccserver.decision with input as call(in_mode("plan"), t_create_ticket, acme)
	d.visible == false
	contains(d.reasons[0].message, "plan mode")
	contains(d.reasons[0].message, "list_my_tools")
}

# Plan: the closing verbs on the run's own ticket only.
test_plan_closes_only_its_own_ticket if {
	p := agent_in_mode("plan")
	allowed(p, t_close_ticket, object.union(acme, {"ticket_id": "TCK-7"}))
	allowed(p, t_fail_ticket, object.union(acme, {"ticket_id": "TCK-7"}))
	refused(p, t_close_ticket, object.union(acme, {"ticket_id": "TCK-8"}), "mode.own_ticket_only")
	refused(p, t_close_ticket, acme, "mode.own_ticket_only")
	d := ccserver.decision with input as call(p, t_close_ticket, object.union(acme, {"ticket_id": "TCK-8"}))
	d.visible
	contains(d.reasons[0].message, "TCK-7")
	contains(d.reasons[0].message, "TCK-8")
}

test_plan_without_run_ticket_cannot_close if {
	d := ccserver.decision with input as call(in_mode("plan"), t_close_ticket, object.union(acme, {"ticket_id": "TCK-7"}))
	not d.allow
	not d.visible
	codes(d) == {"mode.own_ticket_only"}
	contains(d.reasons[0].message, "names no ticket")
}

# Review: collaboration, communication, read-only context, every ticket verb.
test_review_allowlist if {
	p := in_mode("review")
	every t in [t_add_review_node, t_send_message, t_get_ticket, t_create_ticket, t_assign_ticket, t_delegate_ticket, t_close_ticket] {
		allowed(p, t, object.union(acme, {"ticket_id": "TCK-1"}))
	}
	every t in [t_install_skill, t_propose_orch, t_submit_plan, t_remember] {
		refused(p, t, acme, "mode.tool_not_allowed")
	}
	ccserver.ticket_verbs - ccserver.mode_tool_policy.review.tools == set()
	count(ccserver.ticket_verbs) == 14
}

# Orchestrate: research and reads plus propose_orchestration, create_playbook, run_playbook.
test_orchestrate_allowlist if {
	p := in_mode("orchestrate")
	every t in [t_propose_orch, t_create_playbook, t_run_playbook, t_get_ticket, t_get_article] {
		allowed(p, t, object.union(acme, {"ticket_id": "TCK-1"}))
	}
	every t in [t_create_ticket, t_close_ticket, t_delegate_ticket, t_send_message, t_submit_plan] {
		refused(p, t, acme, "mode.tool_not_allowed")
	}
}

# No curated list reaches a tool with an action class.
test_curated_lists_hold_no_action_tool if {
	every m in ["plan", "review", "orchestrate"] {
		not "browser_use" in ccserver.mode_tool_policy[m].tools
		not "rig_close" in ccserver.mode_tool_policy[m].tools
	}
}
