# Session flow rules (docs/requirements.md#flow-rules; docs/policy.md, "Flow rules") for the
# cc_server registry, as policies/supacloud/flow.rego for SupaCloud: the
# labels and egress flag of each tool, and the shipped rule set, off by
# default. The flow key is the conversation (JWT claim conversation_id),
# else the principal and its ticket.
package ccserver

# flow_rules switches the rule set on, for every workspace
# (all_workspaces) or for the credential's pinned workspace when listed (a
# user acting across workspaces is on only with all_workspaces); off by
# default. The gateway reads it at load; it is on too for a workspace
# whose admin switches it on (input.workspace.flow_rules).
flow_rules := {"all_workspaces": false, "workspaces": []}

# flow_labels: what each tool's result holds and whether it sends data
# out, from what the tool does (docs/requirements.md#cc-registry). Labels
# as on SupaCloud: secret, private, customer, source. Tools not listed
# read nothing labelled and send nothing out: listings of names and
# states, the public news feeds, plans, reviews and memory writes that
# stay in the workspace.
flow_labels := {
	# a space's messages and shared handoff document: the team's own talk
	"get_messages": {"reads": ["private"]},
	"get_space_notes": {"reads": ["private"]},
	# tickets and work products: the workspace's own work
	"get_ticket": {"reads": ["private"]},
	"get_work_product": {"reads": ["private"]},
	"get_artifact": {"reads": ["private"]},
	# facts, policies and an agent's notes from the workspace's memory
	"search_memory": {"reads": ["private"]},
	"get_my_notes": {"reads": ["private"]},
	# the indexed code of the workspace's repositories
	"search_code": {"reads": ["private", "source"]},
	"code_symbol": {"reads": ["private", "source"]},
	# a message to a space, which people and agents outside the
	# conversation read
	"send_message": {"egress": true},
	# rigs reach the network: a browser, a desktop, a phone
	"browser_use": {"egress": true},
	"computer_use": {"egress": true},
	"mobile_use": {"egress": true},
	"ios_use": {"egress": true},
	# inline comments and a summary on GitHub
	"publish_review_to_github": {"egress": true},
	# tickets of the configured provider (an outside tracker)
	"create_ticket": {"egress": true},
	"comment_on_ticket": {"egress": true},
}

flow_sensitive := {"secret", "private"}

# flow_on reads flow_rules member by member, with defaults, so that an
# operator may write only the member they set ({"workspaces": ["ws-1"]}).
flow_on if {
	input.session
	object.get(data.ccserver.flow_rules, "all_workspaces", false) == true
}

flow_on if {
	input.session
	input.principal.workspace_id in object.get(data.ccserver.flow_rules, "workspaces", [])
}

# The admin of the workspace the call acts in switched the rule set on
# for it (PUT /admin/v1/workspaces/{ws}/flow-rules): the gateway sends
# input.workspace.flow_rules, true, from the store, for a pinned agent's
# workspace and for a user's call in a workspace it is a member of.
flow_on if {
	input.session
	input.workspace.flow_rules == true
}

# flow_reads are the labels of what this call's result holds, recorded
# once the call is allowed (obligations.flow_reads).
flow_reads := sort(object.get(flow_labels, [input.tool.name, "reads"], []))

# flow_taint: the sensitive reads of the session, each the first call
# that read its label.
flow_taint contains r if {
	flow_on
	some r in input.session.reads
	r.label in flow_sensitive
}

flow_approval if {
	count(flow_taint) > 0 # first: without input.session nothing more is evaluated
	object.get(flow_labels, [input.tool.name, "egress"], false) == true
}

# flow_notices name the calls that tainted the session: the reasons of an
# allowed egress call that waits for a person's approval.
flow_notices contains {"code": "flow.tainted", "message": msg} if {
	flow_approval
	some r in flow_taint
	msg := sprintf(
		"this conversation read %s data through %s (audit row %d at %s) and %s sends data out of the workspace, so a person must approve this exact call before it runs",
		[r.label, r.tool, r.audit_id, r.time, input.tool.name],
	)
}

approval_because contains "flow.tainted" if flow_approval
