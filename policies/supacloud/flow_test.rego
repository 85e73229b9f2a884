package supacloud_test

import data.supacloud

# flow_session is an agent session granted reads and ops, whose history
# holds one private read (audit row 7), with the rule set on for ws-1.
flow_base := with_profile(["supacloud.read.*", "supacloud.ops.*"], null)

tainted := object.union(flow_base, {"session": {
	"labels_read": ["private", "source"],
	"reads": [
		{"label": "private", "tool": "app.files.get", "audit_id": 7, "time": "2026-12-03T17:00:00Z"},
		{"label": "source", "tool": "app.files.get", "audit_id": 7, "time": "2026-12-03T17:00:00Z"},
	],
}})

clean := object.union(flow_base, {"session": {"labels_read": [], "reads": []}})

on_ws1 := {"all_workspaces": false, "workspaces": ["ws-1"]}

test_flow_egress_after_private_read_needs_approval_naming_the_read if {
	d := supacloud.decision with input as call(tainted, "pr.create", {}) with data.supacloud.flow_rules as on_ws1
	d.allow
	d.obligations.approval_required
	d.obligations.approval_because == ["flow.tainted"]
	[r] := d.reasons
	r.code == "flow.tainted"
	contains(r.message, "private data through app.files.get (audit row 7 at 2026-12-03T17:00:00Z)")
}

test_flow_off_by_default if {
	d := supacloud.decision with input as call(tainted, "pr.create", {})
	not d.obligations.approval_required
	d.reasons == []
}

test_flow_on_for_every_workspace if {
	d := supacloud.decision with input as call(tainted, "conversation.reply", {}) with data.supacloud.flow_rules as {"all_workspaces": true}
	d.obligations.approval_required
}

# The workspace's admin switched the rule set on (input.workspace, from
# the store): on for this workspace although policy data leaves it off.
test_flow_on_by_the_workspace_switch if {
	d := supacloud.decision with input as call(object.union(tainted, {"workspace": {"flow_rules": true}}), "pr.create", {})
	d.obligations.approval_required
	d.obligations.approval_because == ["flow.tainted"]
}

# A switch that is not true leaves the rule set off.
test_flow_workspace_switch_off if {
	d := supacloud.decision with input as call(object.union(tainted, {"workspace": {"flow_rules": false}}), "pr.create", {})
	not d.obligations.approval_required
}

test_flow_workspace_switch_not_a_bool if {
	d := supacloud.decision with input as call(object.union(tainted, {"workspace": {"flow_rules": "true"}}), "pr.create", {})
	not d.obligations.approval_required
}

test_flow_other_workspace_unaffected if {
	d := supacloud.decision with input as call(tainted, "pr.create", {}) with data.supacloud.flow_rules as {"all_workspaces": false, "workspaces": ["ws-9"]}
	not d.obligations.approval_required
}

test_flow_clean_session_and_non_egress_run_freely if {
	e := supacloud.decision with input as call(clean, "pr.create", {}) with data.supacloud.flow_rules as on_ws1
	not e.obligations.approval_required
	r := supacloud.decision with input as call(tainted, "issue.transition", {}) with data.supacloud.flow_rules as on_ws1
	not r.obligations.approval_required
}

test_flow_non_sensitive_read_does_not_taint if {
	s := object.union(flow_base, {"session": {"labels_read": ["source"], "reads": [{"label": "source", "tool": "app.files.list", "audit_id": 3, "time": "t"}]}})
	d := supacloud.decision with input as call(s, "pr.create", {}) with data.supacloud.flow_rules as on_ws1
	not d.obligations.approval_required
}

test_flow_reads_are_the_tools_labels if {
	d := supacloud.decision with input as call(flow_base, "conversation.get", {})
	d.obligations.flow_reads == ["customer", "private"]
	w := supacloud.decision with input as call(flow_base, "workspace.info", {})
	w.obligations.flow_reads == []
}

# Every labelled tool is a catalog tool, and its labels are strings.
test_flow_labels_name_catalog_tools if {
	every name, l in supacloud.flow_labels {
		tool_by_name[name]
		every label in object.get(l, "reads", []) {
			is_string(label)
		}
	}
}
