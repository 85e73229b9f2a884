package ccserver_test

import data.ccserver

rig := object.union(acme, {"rig_id": "rig-1"})

test_action_tools_refused_in_read_only_modes if {
	every m in ccserver.read_only_modes {
		every t in [t_browser_use, t_rig_close] {
			d := ccserver.decision with input as object.union(call(in_mode(m), t, rig), {"guard": {"decision": "allow"}})
			not d.allow
			not d.visible
			"action.read_only_mode" in codes(d)
		}
	}
}

test_read_only_refusal_names_classes if {
	d := ccserver.decision with input as call(in_mode("review"), t_browser_use, rig)
	some r in d.reasons
	r.code == "action.read_only_mode"
	contains(r.message, "enclosureControl, networkEgress, processSpawn")
	contains(r.message, "review mode is read-only")
}

test_rig_list_has_no_action_class if {
	every m in ccserver.modes {
		d := ccserver.decision with input as call(in_mode(m), t_rig_list, acme)
		d.allow
	}
}

test_chat_guard_allow_runs if {
	d := ccserver.decision with input as object.union(call(user, t_browser_use, rig), {"guard": {"decision": "allow"}})
	d.allow
	d.obligations.approval_required == false
}

test_chat_guard_prompt_needs_approval if {
	d := ccserver.decision with input as object.union(call(user, t_browser_use, rig), {"guard": {"decision": "prompt"}})
	d.allow
	d.obligations.approval_required
	d.obligations.approval_because == ["guard.prompt"]
}

test_chat_without_guard_verdict_prompts if {
	d := ccserver.decision with input as call(user, t_rig_close, rig)
	d.allow
	d.obligations.approval_because == ["guard.prompt"]
}

test_chat_guard_deny_refuses if {
	d := ccserver.decision with input as object.union(call(user, t_browser_use, rig), {"guard": {"decision": "deny", "reason": "egress to 10.0.0.0/8 is blocked"}})
	not d.allow
	d.visible
	codes(d) == {"action.guard_denied"}
	contains(d.reasons[0].message, "egress to 10.0.0.0/8 is blocked")
}

test_unknown_guard_verdict_refuses if {
	d := ccserver.decision with input as object.union(call(user, t_browser_use, rig), {"guard": {"decision": "maybe"}})
	codes(d) == {"action.guard_denied"}
	d2 := ccserver.decision with input as object.union(call(user, t_browser_use, rig), {"guard": "allow"})
	codes(d2) == {"action.guard_denied"}
}

test_guard_ignored_for_tools_without_action_class if {
	d := ccserver.decision with input as object.union(call(user, t_get_ticket, object.union(acme, {"ticket_id": "TCK-1"})), {"guard": {"decision": "deny"}})
	d.allow
	d.obligations.approval_required == false
}
