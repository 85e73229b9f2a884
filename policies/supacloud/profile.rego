# Profile resolution
# (docs/requirements.md#profile-less-tasks, docs/requirements.md#workspace-default-profile): the JWT's
# agent_profile_id names the profile; without one the workspace default
# profile applies; without that the read-only fallback
# (data.supacloud.grants.fallback_profile: supacloud.read.* plus the
# always-on baseline, no scripts). A requested profile that was deleted from
# the workspace (input.profile_deleted) falls back in the same way, and the
# decision says so (notice profile.deleted). A requested profile the
# workspace never had denies every tool, baseline included.
package supacloud

# active_profile is the profile object that governs the session:
# {"id", "name", "allowlist": [entry], "script_allowlist": [slug] | null}.
# input.profile_requested is the agent_profile_id claim, "" when the JWT has
# none. Undefined when the requested profile is missing from the workspace
# and was not deleted from it, and when the input has no profile_requested
# at all (fail closed).
active_profile := input.profile if {
	input.profile_requested != ""
	input.profile.id == input.profile_requested
} else := input.default_profile if {
	falls_back
	is_object(input.default_profile)
} else := data.supacloud.grants.fallback_profile if {
	falls_back
}

# requested_profile_deleted holds when the JWT names a profile that the
# workspace had and that was deleted (input.profile_deleted, set by the
# gateway from the store's record of deleted profiles; re-creating the
# profile clears it) and that is not in the input.
requested_profile_deleted if {
	input.profile_requested != ""
	input.profile_deleted == true
	not requested_profile_present
}

# requested_profile_present holds when the input has the requested profile.
requested_profile_present if input.profile.id == input.profile_requested

# falls_back holds when no requested profile governs and the session takes
# the workspace default profile or the read-only fallback: the JWT names no
# profile, or names a deleted one.
falls_back if input.profile_requested == ""

falls_back if requested_profile_deleted

# profile_resolved holds when a profile governs the session.
profile_resolved if active_profile

# allowlist is the set of entries of the active profile; a value that is not
# an array grants nothing.
allowlist := {entry |
	is_array(active_profile.allowlist)
	some entry in active_profile.allowlist
}

# scripts_unrestricted holds when the active profile's script_allowlist is
# absent or null: script.run may run any script. Otherwise it must be an
# array of slugs (carveout.rego); any other value allows no script.
scripts_unrestricted if object.get(active_profile, "script_allowlist", null) == null

# profile_source names where active_profile came from, for messages and
# tests: "requested", "default" or "fallback".
profile_source := "requested" if {
	active_profile == input.profile
	input.profile_requested != ""
} else := "default" if {
	active_profile == input.default_profile
} else := "fallback" if {
	active_profile
}

# profile_requested_text is input.profile_requested as JSON for messages.
default profile_requested_text := "(unset)"

profile_requested_text := json.marshal(input.profile_requested)

# profile_label names the active profile for people, e.g.
# "profile ci-bot (p-1)".
profile_label := sprintf("profile %v (%v)", [
	object.get(active_profile, "name", ""),
	object.get(active_profile, "id", ""),
]) if {
	profile_source == "requested"
} else := sprintf("workspace default profile %v (%v%s)", [
	object.get(active_profile, "name", ""),
	object.get(active_profile, "id", ""),
	deleted_suffix,
]) if {
	profile_source == "default"
} else := sprintf(
	"the read-only fallback (%s and workspace %s has no default profile)",
	[fallback_cause, workspace_id],
)

# default_label names the workspace default profile, e.g.
# "workspace default profile ops (p-0)".
default_label := sprintf("workspace default profile %v (%v)", [
	object.get(input.default_profile, "name", ""),
	object.get(input.default_profile, "id", ""),
])

# deleted_suffix tells, inside profile_label's parentheses, whose place the
# default profile takes.
deleted_suffix := sprintf(", in place of the deleted agent profile %s", [profile_requested_text]) if {
	requested_profile_deleted
} else := ""

# fallback_cause says, for messages, why no requested profile governs.
fallback_cause := sprintf("agent profile %s of task %s was deleted", [profile_requested_text, task_id]) if {
	requested_profile_deleted
} else := "task has no agent profile"

# notices explain a decision without denying anything: the decision carries
# them in its reasons, after the denials, and for an allowed call alone
# (decision.rego), so the audit row names them too. Only a session that
# passes its gates gets one: a non-member learns nothing of the
# workspace's profiles, and a stopped task's denial stands alone.
notices contains {"code": "profile.deleted", "message": msg} if {
	agent_session_ok
	requested_profile_deleted
	msg := sprintf(
		"agent profile %s named by task %s was deleted from workspace %s, so the session falls back to %s, as a task without agent profile does; create the profile again with PUT /admin/v1/workspaces/%s/profiles/%s, or start the task with another profile",
		[profile_requested_text, task_id, workspace_id, stand_in, workspace_id, input.profile_requested],
	)
}

# stand_in names, for the notice, what governs a session whose profile was
# deleted.
stand_in := default_label if {
	profile_source == "default"
} else := sprintf("the read-only fallback (workspace %s has no default profile)", [workspace_id])

# granted_text lists what the active profile grants, for messages.
granted_text := concat(", ", sort(allowlist)) if {
	count(allowlist) > 0
} else := "nothing beyond the always-on baseline"

deny contains {"code": "profile.not_in_workspace", "message": msg} if {
	edition_valid
	principal_agent
	actor_member
	task_known
	task_running
	not profile_resolved
	msg := sprintf(
		"agent profile %s requested by task %s does not exist in workspace %s, so every tool is denied, including the baseline; start the task with a profile of this workspace, or without agent_profile_id to use the workspace default profile",
		[profile_requested_text, task_id, workspace_id],
	)
}
