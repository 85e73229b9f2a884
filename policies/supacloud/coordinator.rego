# External coordinators (docs/requirements.md#external-gateway): a principal of kind "coordinator" holds a
# workspace-bound scmt_ API token on /api/mcp. It has no task, no member and
# no agent profile, so the agent's membership, task and profile gates do not
# apply; what it reaches is the reach of its token's scopes
# (data.supacloud.grants.coordinator.scopes), never a tool of an excluded
# tier (the deploy level is never reachable externally, docs/requirements.md#external-tools-list).
# The gateway answers a tool a coordinator does not reach exactly as an
# unknown name, so the reason below only reaches the audit trail.
package supacloud

# principal_coordinator holds for an external coordinator.
principal_coordinator if input.principal.kind == "coordinator"

# coordinator_session_ok holds for a coordinator of a valid edition whose
# credential names a workspace.
coordinator_session_ok if {
	input.edition in data.supacloud.grants.editions
	input.principal.kind == "coordinator"
	is_string(input.principal.workspace_id)
	input.principal.workspace_id != ""
}

# coordinator_tools is the set of tool names the token's scopes reach; a
# scopes value that is not an array reaches nothing.
coordinator_tools contains name if {
	is_array(input.principal.scopes)
	some scope in input.principal.scopes
	some name in data.supacloud.grants.coordinator.scopes[scope]
}

# coordinator_reaches holds when the tool has a string name and a known tier
# outside the excluded tiers, is no carve-out, and the scopes reach it.
coordinator_reaches(tool) if {
	is_string(tool.name)
	data.supacloud.grants.tiers[tool.tier]
	not tool.tier in data.supacloud.grants.coordinator.excluded_tiers
	not carve_out(tool)
	coordinator_tools[tool.name]
}

# scopes_text lists the token's scopes for messages.
default scopes_text := "no scopes"

scopes_text := concat(", ", sort(input.principal.scopes)) if {
	is_array(input.principal.scopes)
	count(input.principal.scopes) > 0
}

deny contains {"code": "scope.missing", "message": msg} if {
	coordinator_session_ok
	tool_valid(input.tool)
	not coordinator_reaches(input.tool)
	msg := sprintf(
		"tool %s is not reachable with this API token's scopes (%s); mcp:read reaches the read level, mcp:ops the control level, and deploy tools are never reachable externally",
		[input.tool.name, scopes_text],
	)
}

deny contains {"code": "coordinator.no_workspace", "message": msg} if {
	edition_valid
	principal_coordinator
	not coordinator_session_ok
	msg := "the API token names no workspace, so every tool is denied; create a token for a workspace"
}
