package supacloud_test

import data.supacloud

no_profile := object.union(object.remove(session, ["profile"]), {"profile_requested": ""})

with_default(allowlist) := object.union(no_profile, {"default_profile": profile("p-def", allowlist, null)})

# Profile resolution
# (docs/requirements.md#profile-less-tasks): which profile governs, and what it lets through.
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

test_profile_resolution if {
	failing := {note | some note, tc in profile_cases; not profile_resolution_case(tc)}
	failing == set()
}

# profile_resolution_case holds for one case of test_profile_resolution.
profile_resolution_case(tc) if {
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

test_profile_not_in_workspace if {
	failing := {note | some note, base in missing_profile_cases; not profile_not_in_workspace_case(base)}
	failing == set()
}

# profile_not_in_workspace_case holds for one case of test_profile_not_in_workspace.
profile_not_in_workspace_case(base) if {
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

# A requested profile that was deleted from the workspace falls back exactly
# as a session without agent_profile_id does, and says so in a notice.
deleted_profile := object.union(object.remove(session, ["profile"]), {"profile_deleted": true})

deleted_with_default(allowlist) := object.union(deleted_profile, {"default_profile": profile("p-def", allowlist, null)})

deleted_profile_cases := {
	"fallback grants reads": {
		"input": deleted_profile,
		"source": "fallback", "tool": "project.get", "allow": true,
	},
	"fallback keeps the baseline": {
		"input": deleted_profile,
		"source": "fallback", "tool": "delegate_subtask", "allow": true,
	},
	"fallback keeps ops closed": {
		"input": deleted_profile,
		"source": "fallback", "tool": "workflow.trigger", "allow": false,
	},
	"fallback runs no script": {
		"input": deleted_profile,
		"source": "fallback", "tool": "script.run", "allow": false,
	},
	"default profile governs": {
		"input": deleted_with_default(["supacloud.ops.*"]),
		"source": "default", "tool": "workflow.trigger", "allow": true,
	},
	"default profile replaces the read fallback": {
		"input": deleted_with_default(["supacloud.ops.*"]),
		"source": "default", "tool": "project.get", "allow": false,
	},
}

test_deleted_profile_falls_back if {
	failing := {note | some note, tc in deleted_profile_cases; not deleted_profile_falls_back_case(tc)}
	failing == set()
}

# deleted_profile_falls_back_case holds for one case of test_deleted_profile_falls_back.
deleted_profile_falls_back_case(tc) if {
	inp := call(tc.input, tc.tool, {"slug": "any"})
	supacloud.profile_source == tc.source with input as inp
	d := supacloud.decision with input as inp
	d.allow == tc.allow

	# The notice comes on every decision, last, after any denial.
	d.reasons[count(d.reasons) - 1].code == "profile.deleted"
	count([r | some r in d.reasons; r.code == "profile.deleted"]) == 1
	allowed_alone(d)
}

# allowed_alone: an allowed decision carries the notice alone; a denied
# one leads with at least one denial.
allowed_alone(d) if {
	d.allow
	count(d.reasons) == 1
}

allowed_alone(d) if {
	not d.allow
	count(d.reasons) > 1
}

# Listed <=> callable holds for the fallback of a deleted profile: the same
# tools as for a session without agent_profile_id.
test_deleted_profile_lists_as_no_profile if {
	deleted := supacloud.visible_tools with input as listing(deleted_profile)
	none := supacloud.visible_tools with input as listing(no_profile)
	count(deleted) > 0
	deleted == none
	with_def := supacloud.visible_tools with input as listing(deleted_with_default(["supacloud.ops.*"]))
	with_def == supacloud.visible_tools with input as listing(with_default(["supacloud.ops.*"]))
}

test_deleted_profile_notice_names_the_fallback if {
	d := supacloud.decision with input as call(deleted_profile, "project.get", {})
	d.allow
	d.reasons == [{"code": "profile.deleted", "message": concat("", [
		`agent profile "p-1" named by task t-1 was deleted from workspace ws-1, so the session falls back to `,
		"the read-only fallback (workspace ws-1 has no default profile), as a task without agent profile does; ",
		"create the profile again with PUT /admin/v1/workspaces/ws-1/profiles/p-1, or start the task with another profile",
	])}]
}

test_deleted_profile_notice_names_the_default if {
	d := supacloud.decision with input as call(deleted_with_default(["supacloud.ops.*"]), "workflow.trigger", {})
	d.allow
	codes(d) == ["profile.deleted"]
	contains(d.reasons[0].message, "so the session falls back to workspace default profile bot-p-def (p-def), as a task")
}

# Under the default profile, a denial names the deleted profile it stands in for.
test_deleted_profile_denial_under_the_default if {
	d := supacloud.decision with input as call(deleted_with_default(["supacloud.ops.*"]), "project.get", {})
	codes(d) == ["allowlist.missing_grant", "profile.deleted"]
	contains(d.reasons[0].message, `workspace default profile bot-p-def (p-def, in place of the deleted agent profile "p-1") grants supacloud.ops.*`)
}

# A denial under the fallback leads with why it is denied, and that reason
# says the profile was deleted rather than that the task has none.
test_deleted_profile_denial_leads_with_the_grant if {
	d := supacloud.decision with input as call(deleted_profile, "workflow.trigger", {})
	not d.allow
	codes(d) == ["allowlist.missing_grant", "profile.deleted"]
	contains(d.reasons[0].message, `agent profile "p-1" of task t-1 was deleted and workspace ws-1 has no default profile; the read-only fallback grants`)
	not contains(d.reasons[0].message, "task has no agent profile")
}

# Only a deleted profile falls back: an id the workspace never had is still
# refused, the flag is ignored when the profile exists, and only true counts.
test_deleted_flag_needs_the_profile_gone if {
	d := supacloud.decision with input as call(object.union(session, {"profile_deleted": true}), "workflow.trigger", {})
	supacloud.profile_source == "requested" with input as call(object.union(session, {"profile_deleted": true}), "workflow.trigger", {})
	codes(d) == ["allowlist.missing_grant"]
	not_true := object.union(object.remove(session, ["profile"]), {"profile_deleted": "true"})
	codes(supacloud.decision) == ["profile.not_in_workspace"] with input as call(not_true, "project.get", {})
	codes(supacloud.decision) == ["profile.not_in_workspace"] with input as call(object.remove(session, ["profile"]), "project.get", {})
}

# No notice for a session that names no profile, even with the flag set.
test_deleted_flag_without_request_adds_no_notice if {
	inp := call(object.union(no_profile, {"profile_deleted": true}), "project.get", {})
	d := supacloud.decision with input as inp
	d.allow
	d.reasons == []
}

# The session gates still come first: a non-member, or a stopped task, with
# a deleted profile gets that gate's denial and no notice.
test_deleted_profile_after_session_gates if {
	d := supacloud.decision with input as call(object.remove(deleted_profile, ["member"]), "project.get", {})
	codes(d) == ["actor.not_member"]
	stopped := object.union(deleted_profile, {"task": {"id": "t-1", "status": "completed"}})
	codes(supacloud.decision) == ["task.not_running"] with input as call(stopped, "project.get", {})
}
