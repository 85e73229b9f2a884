# Profile resolution (seed 000, "Tasks ohne Profil und Workspace-
# Standardprofile"; seed 001, Tiers and allowlist entries): the JWT's
# agent_profile_id names the profile; without one the workspace default
# profile applies; without that the read-only fallback
# (data.supacloud.grants.fallback_profile: supacloud.read.* plus the
# always-on baseline, no scripts). A requested profile that does not exist in
# the workspace denies every tool, baseline included.
package supacloud

# active_profile is the profile object that governs the session:
# {"id", "name", "allowlist": [entry], "script_allowlist": [slug] | null}.
# input.profile_requested is the agent_profile_id claim, "" when the JWT has
# none. Undefined when the requested profile is missing from the workspace,
# and when the input has no profile_requested at all (fail closed).
active_profile := input.profile if {
	input.profile_requested != ""
	input.profile.id == input.profile_requested
} else := input.default_profile if {
	input.profile_requested == ""
	is_object(input.default_profile)
} else := data.supacloud.grants.fallback_profile if {
	input.profile_requested == ""
}

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
} else := sprintf("workspace default profile %v (%v)", [
	object.get(active_profile, "name", ""),
	object.get(active_profile, "id", ""),
]) if {
	profile_source == "default"
} else := sprintf(
	"the read-only fallback (task has no agent profile and workspace %s has no default profile)",
	[workspace_id],
)

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
