# Session gates evaluated once per request, before any tool: the principal
# kind, the acting user's membership of the workspace and the task of an
# agent task session (docs/http.md, Agent session JWT). Each gate only
# reports when the gates before it passed, so a denial names the first thing
# to fix.
package supacloud

# principal_supported holds for the principal kinds this bundle has rules
# for (data.supacloud.grants.principal_kinds: agents and coordinators).
principal_supported if input.principal.kind in data.supacloud.grants.principal_kinds

# principal_agent holds for an in-app agent task session (JWT on /mcp): the
# membership, task and profile gates below are the agent's; a coordinator
# (coordinator.rego) has none of them.
principal_agent if input.principal.kind == "agent"

# actor_member holds when the acting user (JWT "sub") is a member of the
# credential's workspace: the gateway sends input.member only then.
# Permissions are resolved per workspace user (docs/requirements.md#precedence:
# user override, then the member's seat type), so a
# user outside the workspace has no standing in it and gets no tool, the
# always-on baseline included. The gate comes before the task gates, so a
# non-member learns nothing about the workspace's tasks or profiles.
actor_member if is_object(input.member)

# task_known holds when the input carries the session's task: input.task is
# absent when the store does not have it (the gateway registers a new task
# before it asks, so that means it could not), and an id that differs from
# the credential's task_id is treated the same way (fail closed).
task_known if input.task.id == input.principal.task_id

# task_running holds when the task's status is the running status.
task_running if input.task.status == data.supacloud.grants.running_status

# session_ok holds when the per-request gates of the principal's kind pass:
# an agent session (agent_session_ok) or a coordinator
# (coordinator_session_ok, coordinator.rego). Tool rules only run after it.
session_ok if agent_session_ok

session_ok if coordinator_session_ok

# agent_session_ok holds when every gate of an agent session passes:
# edition_valid (edition.rego), principal_agent, actor_member, task_known,
# task_running, and a resolved profile (active_profile, profile.rego). The
# agent's tool rules only run after it. Every call and every listing
# evaluates it, so it spells out the gates' expressions instead of calling
# the gate rules (each rule costs an evaluation); session_test.rego checks
# that it agrees with them.
agent_session_ok if {
	input.edition in data.supacloud.grants.editions
	input.principal.kind == "agent"
	is_object(input.member)
	input.task.id == input.principal.task_id
	input.task.status == data.supacloud.grants.running_status
	active_profile
}

# The helpers below only feed messages; each has a default so a message can
# always be built, whatever the input holds.

# principal_kind_text is input.principal.kind as JSON, or "(unset)".
default principal_kind_text := "(unset)"

principal_kind_text := json.marshal(input.principal.kind)

# actor is the acting user (JWT "sub"), or "(unknown user)".
default actor := "(unknown user)"

actor := input.principal.sub

# workspace_id is the credential's workspace, or "(unknown workspace)".
default workspace_id := "(unknown workspace)"

workspace_id := input.principal.workspace_id

# task_id is the session's task (JWT "task_id"), or "(unknown task)".
default task_id := "(unknown task)"

task_id := input.principal.task_id

deny contains {"code": "principal.unsupported", "message": msg} if {
	edition_valid
	not principal_supported
	msg := sprintf(
		"principal kind %s is not supported by the supacloud policy, so every tool is denied; call /mcp with an agent task session token, or /api/mcp with an scmt_ API token",
		[principal_kind_text],
	)
}

deny contains {"code": "actor.not_member", "message": msg} if {
	edition_valid
	principal_agent
	not actor_member
	msg := sprintf(
		"user %s is not a member of workspace %s, so every tool is denied; permissions are resolved per workspace member: ask a workspace owner or admin to add the user to the workspace, or start the task session as a member of it",
		[actor, workspace_id],
	)
}

# task_status_text is the task's status as text: the status itself when
# it is a string (running, completed, failed, cancelled), JSON otherwise,
# or "(no status)".
default task_status_text := "(no status)"

task_status_text := input.task.status if is_string(input.task.status)

task_status_text := json.marshal(input.task.status) if {
	not is_string(input.task.status)
	input.task.status != null
}

# The gateway registers a session's task as running on its first request
# (the signed token is the platform's word that it exists), so input.task
# is present for every member's session; its absence means the gateway
# could not register it.
deny contains {"code": "task.unknown", "message": msg} if {
	edition_valid
	principal_agent
	actor_member
	not task_known
	msg := sprintf(
		"task %s of workspace %s is not registered with the gateway, so every tool is denied; the gateway registers a session's task on its first request: call again, and if this persists ask an operator to check the gateway's store",
		[task_id, workspace_id],
	)
}

# A task the admin API set to a terminal status (completed, failed,
# cancelled) is refused with a message that names the status.
deny contains {"code": "task.not_running", "message": msg} if {
	edition_valid
	principal_agent
	actor_member
	task_known
	not task_running
	msg := sprintf(
		"task %s is %s; calls of a %s task are refused, so every tool is denied; start a new task (a session token with a new task_id) to call tools",
		[task_id, task_status_text, task_status_text],
	)
}
