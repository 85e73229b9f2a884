package ccserver_test

import data.ccserver

tainted(p) := object.union(call(p, t_send_message, acme), {"session": {
	"labels_read": ["private"],
	"reads": [{"label": "private", "tool": "get_ticket", "audit_id": 12, "time": "2026-12-03T17:00:00Z"}],
}})

test_flow_send_after_private_read_needs_approval_naming_the_read if {
	d := ccserver.decision with input as tainted(agent) with data.ccserver.flow_rules as {"workspaces": ["ws-acme"]}
	d.allow
	d.obligations.approval_required
	"flow.tainted" in d.obligations.approval_because
	[r] := d.reasons
	contains(r.message, "private data through get_ticket (audit row 12 at 2026-12-03T17:00:00Z)")
}

test_flow_cc_off_by_default_and_for_unpinned_users if {
	off := ccserver.decision with input as tainted(agent)
	not off.obligations.approval_required
	u := ccserver.decision with input as tainted(user) with data.ccserver.flow_rules as {"workspaces": ["ws-acme"]}
	not u.obligations.approval_required
	all := ccserver.decision with input as tainted(user) with data.ccserver.flow_rules as {"all_workspaces": true}
	all.obligations.approval_required
}

# The workspace's admin switched the rule set on (input.workspace, from
# the store): on for a pinned agent and for a user alike, although policy
# data leaves it off; a switch that is not true leaves it off.
test_flow_cc_on_by_the_workspace_switch if {
	every p in [agent, user] {
		d := ccserver.decision with input as object.union(tainted(p), {"workspace": {"flow_rules": true}})
		d.obligations.approval_required
		"flow.tainted" in d.obligations.approval_because
	}
	off := ccserver.decision with input as object.union(tainted(agent), {"workspace": {"flow_rules": false}})
	not off.obligations.approval_required
}

test_flow_cc_reads if {
	d := ccserver.decision with input as call(agent, t_search_code, acme)
	d.obligations.flow_reads == ["private", "source"]
}
