# Session flow rules (docs/requirements.md#flow-rules; docs/policy.md, "Flow rules"): decide a
# call by what the same session already read. Each tool may carry, in
# flow_labels, the labels of the data its result holds (reads) and whether
# it sends data out of the workspace (egress). The gateway records the
# labels allowed calls read per flow key (the task; an API token for
# coordinators) and sends them as input.session while the rule set is on
# for the workspace (flow_rules). The shipped rule: after a secret or
# private read, an egress tool needs a person's approval of that exact
# call, and the decision names the call that tainted the session.
package supacloud

# flow_rules switches the rule set on, for every workspace
# (all_workspaces) or for the workspace ids listed; off by default. The
# gateway reads it at load, and records and sends a session's history
# only for the workspaces it, or the workspace's admin
# (input.workspace.flow_rules), switches on.
flow_rules := {"all_workspaces": false, "workspaces": []}

# flow_labels: what each tool's result holds and whether it sends data
# out, from what the tool does (docs/requirements.md#tiers). Labels:
# secret (credentials and what they unlock), private (the workspace's own
# records, not meant for outsiders), customer (the workspace's customers'
# personal data), source (source code). Tools not listed read nothing
# labelled and send nothing out: metadata and status reads
# (workspace.info, apps.list, runners.status, ...), resources.list (kind,
# name and status only, never connection strings or secrets), the
# product documentation (docs.search, docs.get, spec.get), and writes that
# stay in the workspace (schedules, task control, proposals for review).
flow_labels := {
	# the workspace's and project's memories: what agents and people
	# recorded about the work
	"memory.search": {"reads": ["private"]},
	"memory.get": {"reads": ["private"]},
	"memory.list_recent": {"reads": ["private"]},
	# a child task's result carries whatever the child read
	"get_subtask_result": {"reads": ["private"]},
	# a run's event log holds each step's output, tool results included
	"run.events": {"reads": ["private"]},
	# the body of an app source file: the workspace's own code, and the
	# configuration it embeds; a listing names the files only
	"app.files.get": {"reads": ["private", "source"]},
	"app.files.list": {"reads": ["source"]},
	# a script definition: its code and the resources it binds
	"script.get": {"reads": ["private", "source"]},
	# issues of the project's tracker or git provider, private
	# repositories' included
	"issue.get": {"reads": ["private"]},
	"issue.list": {"reads": ["private"]},
	# support conversations: what the workspace's customers wrote
	"conversation.get": {"reads": ["customer", "private"]},
	"conversation.list": {"reads": ["customer", "private"]},
	# a script binds workspace resources and secrets at run time, so its
	# result may hold them, and it reaches those resources: both ways
	"script.run": {"reads": ["secret"], "egress": true},
	# a reply the customer sees
	"conversation.reply": {"egress": true},
	# posted to the issue tracker (one of six providers, public ones too)
	"issue.comment": {"egress": true},
	# a pull request on the project's git forge
	"pr.create": {"egress": true},
	# pushes the project's changes to its git repository
	"repo_sync.trigger": {"egress": true},
	# puts an app on its public route
	"app.deploy": {"egress": true},
}

# flow_sensitive are the labels after which an egress tool needs a
# person's approval.
flow_sensitive := {"secret", "private"}

# flow_on: the rule set applies to this call (its workspace is switched on
# and the gateway sent the session's history).
# flow_on reads flow_rules member by member, with defaults, so that an
# operator may write only the member they set ({"workspaces": ["ws-1"]}).
flow_on if {
	input.session
	object.get(data.supacloud.flow_rules, "all_workspaces", false) == true
}

flow_on if {
	input.session
	input.principal.workspace_id in object.get(data.supacloud.flow_rules, "workspaces", [])
}

# The workspace's admin switched the rule set on for it (PUT
# /admin/v1/workspaces/{ws}/flow-rules): the gateway sends
# input.workspace.flow_rules, true, from the store.
flow_on if {
	input.session
	input.workspace.flow_rules == true
}

# flow_reads are the labels of what this call's result holds, which the
# gateway records in the session's history once the call is allowed
# (obligations.flow_reads).
flow_reads := sort(object.get(flow_labels, [input.tool.name, "reads"], []))

# flow_taint: the sensitive reads of the session, each the first call
# that read its label ({"label", "tool", "audit_id", "time"}).
flow_taint contains r if {
	flow_on
	some r in input.session.reads
	r.label in flow_sensitive
}

# flow_approval: an egress tool in a tainted session.
flow_approval if {
	count(flow_taint) > 0 # first: without input.session nothing more is evaluated
	object.get(flow_labels, [input.tool.name, "egress"], false) == true
}

# flow_notices name the calls that tainted the session, on the decision
# of an egress call that needs a person's approval for it.
flow_notices contains {"code": "flow.tainted", "message": msg} if {
	flow_approval
	some r in flow_taint
	msg := sprintf(
		"this session read %s data through %s (audit row %d at %s) and %s sends data out of the workspace, so a person must approve this exact call before it runs",
		[r.label, r.tool, r.audit_id, r.time, input.tool.name],
	)
}

notices contains n if some n in flow_notices

# approval_because lists why an allowed call needs a person's approval
# before it runs (obligations.approval_because): on SupaCloud only the
# flow rule set asks for one.
approval_because contains "flow.tainted" if flow_approval
