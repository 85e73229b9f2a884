# The decision document the gateway evaluates for cc_server:
# data.ccserver.decision for one tools/call (input.tool) and
# data.ccserver.visible_tools for the tools callable now (input.tools; what
# list_my_tools and search_tool_bm25 report, docs/requirements.md#cc-tool-search: both ask the mode
# lock). Both use tool_visible, so a tool is reported callable iff a call
# with valid arguments would be allowed.
package ccserver

# tool_valid: the gateway sent a catalog entry with a name and a group, and
# flags of the right types.
tool_valid(tool) if {
	is_string(tool.name)
	tool.name != ""
	is_string(tool.group)
	is_boolean(object.get(tool, "requires_approval", false))
	is_array(object.get(tool, "action_classes", []))
}

# tool_visible: for a session that passed session_ok, the tool is valid,
# the mode reaches it, it is not an action tool in a read-only mode, and
# the caller can reach a workspace it may act in.
tool_visible(tool) if {
	tool_valid(tool)
	mode_visible(tool)
	not read_only_refused(tool)
	workspace_reachable(tool)
}

default visible := false

visible if {
	session_ok
	tool_visible(input.tool)
}

# allow: visible, and the call itself passes: a scoped tool names its
# workspace, the target entity is in it, the guard does not refuse it, and
# an own-ticket tool names the run's ticket.
default allow := false

allow if {
	session_ok
	tool_visible(input.tool)
	not workspace_missing
	not resource_mismatch
	not guard_denied
	not own_ticket_refused
}

default group := ""

group := input.tool.group if is_string(input.tool.group)

default decision_mode := ""

decision_mode := mode

# approval_because lists why an allowed call needs a person's approval
# before it runs: the tool declares requiresApproval, or the action guard
# answered prompt.
approval_because contains "tool.requires_approval" if input.tool.requires_approval == true

approval_because contains "guard.prompt" if guard_prompts

deny contains {
	"code": "input.invalid",
	"message": "the gateway sent no valid cc_server tool (name, group, requires_approval, action_classes); this is a gateway bug, report it to the operator",
} if {
	session_ok
	not tool_valid(input.tool)
}

# reasons is deny sorted; empty when allowed. Session gates come alone.
reasons := sort(flow_notices) if {
	allow
} else := sort(session_deny) if {
	count(session_deny) > 0
} else := sort(deny) if {
	count(deny) > 0
} else := [{
	"code": "input.invalid",
	"message": "the policy denied the call without a specific reason; the input is malformed, report it to the operator",
}]

session_codes := {"principal.unsupported", "mode.unknown"}

session_deny contains r if {
	some r in deny
	r.code in session_codes
}

# decision is the answer for one tools/call, defined for every input:
# {"allow", "visible", "group", "mode", "workspace_id" (the call's
# workspace, "" for none), "reasons": [{"code", "message"}] sorted (when
# allowed only the flow.tainted notices of flow.rego, usually none),
# "obligations": {"redact": [], "confirmation_required": false,
# "approval_required": bool, "approval_because": [..] sorted,
# "flow_reads": [label] sorted}}.
# Obligations bind allowed calls only.
decision := {
	"allow": true,
	"visible": true,
	"group": group,
	"mode": decision_mode,
	"workspace_id": call_workspace,
	"reasons": reasons,
	"obligations": {
		"redact": [],
		"confirmation_required": false,
		"approval_required": count(approval_because) > 0,
		"approval_because": sort(approval_because),
		"flow_reads": flow_reads,
	},
} if {
	allow
} else := {
	"allow": false,
	"visible": visible,
	"group": group,
	"mode": decision_mode,
	"workspace_id": call_workspace,
	"reasons": reasons,
	"obligations": {
		"redact": [],
		"confirmation_required": false,
		"approval_required": false,
		"approval_because": [],
	},
}

# visible_tools is the set of names in input.tools that the session may
# call now (with input.arguments.workspace_id, in that workspace).
visible_tools contains tool.name if {
	session_ok
	some tool in input.tools
	tool_visible(tool)
}
