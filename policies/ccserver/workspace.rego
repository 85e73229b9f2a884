# The workspace_id rules (docs/requirements.md#cc-workspace-id): required on
# every workspace-scoped tool; missing or invalid is an explicit error; a
# value that does not match the target entity's workspace is refused, not
# ignored; the global tools take none and the search tools take it
# optionally. An agent the server started is pinned to its workspace
# (principal.workspace_id): a foreign id opens nothing. Without the claim
# the caller may use the workspaces its user is a member of
# (input.memberships). The target entity's workspace is
# input.resource.workspace_id, which the adapter tells; it never comes
# from the caller.
package ccserver

global_tool(tool) if tool.name in workspace.global_tools

optional_tool(tool) if tool.name in workspace.optional_tools

scoped_tool(tool) if {
	not global_tool(tool)
	not optional_tool(tool)
}

workspace_given if input.arguments.workspace_id

workspace_valid if {
	is_string(input.arguments.workspace_id)
	regex.match(workspace.id_pattern, input.arguments.workspace_id)
}

# permitted(ws): the pinned workspace, or without a pin one of the user's.
permitted(ws) if ws == pinned_workspace

permitted(ws) if {
	not pinned_workspace
	ws in memberships
}

# some_workspace: the caller can reach at least one workspace.
some_workspace if pinned_workspace

some_workspace if count(memberships) > 0

# workspace_reachable(tool): a global tool always; otherwise the given
# workspace must be valid and permitted, and without one a scoped tool
# needs the caller to reach some workspace. It is part of visibility, so
# list_my_tools with a workspace_id reports what a call in that workspace
# may do.
workspace_reachable(tool) if global_tool(tool)

workspace_reachable(tool) if {
	not global_tool(tool)
	workspace_given
	workspace_valid
	permitted(input.arguments.workspace_id)
}

workspace_reachable(tool) if {
	optional_tool(tool)
	not workspace_given
}

workspace_reachable(tool) if {
	scoped_tool(tool)
	not workspace_given
	some_workspace
}

# call_workspace is the workspace a call acts in: "" for a global tool or an
# optional one called without it.
default call_workspace := ""

call_workspace := input.arguments.workspace_id if {
	not global_tool(input.tool)
	workspace_valid
}

# workspace_missing: a scoped tool called without a workspace_id.
workspace_missing if {
	scoped_tool(input.tool)
	not workspace_given
}

# resource_mismatch: the target entity lives in another workspace.
resource_mismatch if {
	not global_tool(input.tool)
	is_string(input.resource.workspace_id)
	input.resource.workspace_id != input.arguments.workspace_id
}

reachable_text := sprintf("the workspace this agent was started in, %s", [pinned_workspace]) if {
	pinned_workspace
} else := sprintf("the workspaces you are a member of: %s", [concat(", ", sort(memberships))]) if {
	count(memberships) > 0
} else := "none: you are a member of no workspace"

deny contains {
	"code": "workspace_id.missing",
	"message": sprintf("tool %s acts on data of one workspace and needs the argument workspace_id; pass one of %s (list_workspaces lists them)", [input.tool.name, reachable_text]),
} if {
	session_ok
	tool_valid(input.tool)
	workspace_missing
	some_workspace
}

deny contains {
	"code": "workspace_id.invalid",
	"message": sprintf("workspace_id %v of tool %s is not a workspace id (1-64 letters, digits, '_' or '-', starting with a letter or digit); pass one of %s", [input.arguments.workspace_id, input.tool.name, reachable_text]),
} if {
	session_ok
	tool_valid(input.tool)
	not global_tool(input.tool)
	workspace_given
	not workspace_valid
}

deny contains {
	"code": "workspace.foreign",
	"message": sprintf("this agent was started in workspace %s, so workspace %s stays closed to it (tool %s); a server-started agent acts only in its own workspace", [pinned_workspace, input.arguments.workspace_id, input.tool.name]),
} if {
	session_ok
	tool_valid(input.tool)
	not global_tool(input.tool)
	workspace_valid
	pinned_workspace
	not permitted(input.arguments.workspace_id)
}

deny contains {
	"code": "workspace.not_member",
	"message": sprintf("user %s is not a member of workspace %s, so tool %s cannot act there; pass one of %s, or ask an owner of %s to add you", [input.principal.sub, input.arguments.workspace_id, input.tool.name, reachable_text, input.arguments.workspace_id]),
} if {
	session_ok
	tool_valid(input.tool)
	not global_tool(input.tool)
	workspace_valid
	not pinned_workspace
	not permitted(input.arguments.workspace_id)
}

deny contains {
	"code": "workspace.none",
	"message": sprintf("tool %s acts on data of one workspace, and %s; ask a workspace owner to add you, or use a global tool such as list_workspaces", [input.tool.name, reachable_text]),
} if {
	session_ok
	tool_valid(input.tool)
	scoped_tool(input.tool)
	not workspace_given
	not some_workspace
}

deny contains {
	"code": "workspace.mismatch",
	"message": sprintf("%s %s belongs to workspace %s, not to workspace %s that the call names; tool %s was refused rather than run in the wrong workspace; pass workspace_id %s if you may use it", [
		object.get(input.resource, "kind", "entity"),
		object.get(input.resource, "id", "(unknown)"),
		input.resource.workspace_id, input.arguments.workspace_id, input.tool.name,
		input.resource.workspace_id,
	]),
} if {
	session_ok
	tool_visible(input.tool)
	workspace_valid
	resource_mismatch
}
