package supacloud_test

import data.supacloud

no_profile := object.union(object.remove(session, ["profile"]), {"profile_requested": ""})

with_default(allowlist) := object.union(no_profile, {"default_profile": profile("p-def", allowlist, null)})

# Profile resolution (seed 000, "Tasks ohne Profil und Workspace-
# Standardprofile"): which profile governs, and what it lets through.
profile_cases := {
	"requested profile governs": {
		"input": session,
		"source": "requested", "tool": "project.get", "allow": true,
	},
	"requested profile beats the default": {
		"input": object.union(session, {"default_profile": profile("p-def", ["supacloud.full"], null)}),
		"source": "requested", "tool": "workflow.trigger", "allow": false,
	},
	"default profile when none requested": {
		"input": with_default(["supacloud.ops.*"]),
		"source": "default", "tool": "workflow.trigger", "allow": true,
	},
	"default profile replaces the read fallback": {
		"input": with_default(["supacloud.ops.*"]),
		"source": "default", "tool": "project.get", "allow": false,
	},
	"fallback grants reads": {
		"input": no_profile,
		"source": "fallback", "tool": "project.get", "allow": true,
	},
	"fallback keeps the baseline": {
		"input": no_profile,
		"source": "fallback", "tool": "delegate_subtask", "allow": true,
	},
	"fallback keeps ops closed": {
		"input": no_profile,
		"source": "fallback", "tool": "workflow.trigger", "allow": false,
	},
	"fallback keeps scaffold closed": {
		"input": no_profile,
		"source": "fallback", "tool": "scaffold.app.propose", "allow": false,
	},
	"fallback keeps deploy closed": {
		"input": no_profile,
		"source": "fallback", "tool": "app.deploy", "allow": false,
	},
	"fallback runs no script": {
		"input": no_profile,
		"source": "fallback", "tool": "script.run", "allow": false,
	},
}

test_profile_resolution[note] if {
	some note, tc in profile_cases
	inp := call(tc.input, tc.tool, {"slug": "any"})
	supacloud.profile_source == tc.source with input as inp
	supacloud.decision.allow == tc.allow with input as inp
}

# A requested profile that is not in the workspace denies everything,
# baseline included, even when a default profile exists.
missing_profile_cases := {
	"profile absent": object.remove(session, ["profile"]),
	"profile absent with a default": object.union(
		object.remove(session, ["profile"]),
		{"default_profile": profile("p-def", ["supacloud.full"], null)},
	),
	"profile of another id": object.union(session, {"profile_requested": "p-9"}),
}

test_profile_not_in_workspace[note] if {
	some note, base in missing_profile_cases
	d := supacloud.decision with input as call(base, "memory.search", {})
	not d.allow
	codes(d) == ["profile.not_in_workspace"]
	count(supacloud.visible_tools) == 0 with input as listing(base)
}

test_profile_not_in_workspace_message if {
	inp := call(object.union(object.remove(session, ["profile"]), {"profile_requested": "p-9"}), "project.get", {})
	d := supacloud.decision with input as inp
	d.reasons[0].message == concat("", [
		`agent profile "p-9" requested by task t-1 does not exist in workspace ws-1, so every tool is denied, `,
		"including the baseline; start the task with a profile of this workspace, ",
		"or without agent_profile_id to use the workspace default profile",
	])
}

test_empty_allowlist_keeps_baseline_only if {
	inp := listing(with_profile([], null))
	names := supacloud.visible_tools with input as inp
	names == {n | some n in baseline_names}
}

test_fallback_message_explains_what_to_do if {
	d := supacloud.decision with input as call(no_profile, "workflow.trigger", {})
	codes(d) == ["allowlist.missing_grant"]
	contains(d.reasons[0].message, concat("", [
		"task has no agent profile and workspace ws-1 has no default profile; ",
		"the read-only fallback grants supacloud.read.* (set a workspace default profile ",
		"or start the task with an agent profile that grants supacloud.ops.*)",
	]))
}

test_default_profile_named_in_message if {
	d := supacloud.decision with input as call(with_default(["supacloud.ops.*"]), "app.get", {})
	contains(d.reasons[0].message, "workspace default profile bot-p-def (p-def) grants supacloud.ops.*")
}

test_malformed_profile_fields_grant_nothing if {
	base := object.union(no_profile, {"default_profile": {"id": "p-x", "allowlist": "supacloud.full", "script_allowlist": "x"}})
	names := supacloud.visible_tools with input as listing(base)
	names == {n | some n in baseline_names}
}

test_missing_profile_requested_fails_closed if {
	inp := object.remove(call(session, "project.get", {}), ["profile_requested"])
	d := supacloud.decision with input as inp
	codes(d) == ["profile.not_in_workspace"]
	contains(d.reasons[0].message, "agent profile (unset) requested")
}

test_object_allowlist_grants_nothing if {
	base := with_profile({"a": "supacloud.full"}, null)
	names := supacloud.visible_tools with input as listing(base)
	names == {n | some n in baseline_names}
}
