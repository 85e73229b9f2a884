package supacloud_test

import data.supacloud

# Allowlist entries (docs/requirements.md#tiers): each case is an
# allowlist, a tool and whether the call is allowed. The actor is an owner,
# so deploy tools depend only on the grant here (deploy_test.rego covers roles).
grant_cases := {
	"baseline with empty allowlist": {"allowlist": [], "tool": "memory.propose_review", "allow": true},
	"supacloud.* grants the baseline": {"allowlist": ["supacloud.*"], "tool": "cancel_subtask", "allow": true},
	"supacloud.* grants no read": {"allowlist": ["supacloud.*"], "tool": "project.get", "allow": false},
	"read wildcard grants read": {"allowlist": ["supacloud.read.*"], "tool": "workspace.info", "allow": true},
	"read wildcard grants no ops": {"allowlist": ["supacloud.read.*"], "tool": "schedule.create", "allow": false},
	"ops wildcard grants ops": {"allowlist": ["supacloud.ops.*"], "tool": "schedule.create", "allow": true},
	"ops wildcard grants no read": {"allowlist": ["supacloud.ops.*"], "tool": "project.get", "allow": false},
	"ops wildcard grants no deploy": {"allowlist": ["supacloud.ops.*"], "tool": "app.deploy", "allow": false},
	"ops wildcard grants no scaffold": {"allowlist": ["supacloud.ops.*"], "tool": "scaffold.app.propose", "allow": false},
	"scaffold wildcard grants scaffold": {"allowlist": ["supacloud.scaffold.*"], "tool": "task.create_for_app_scaffold", "allow": true},
	"deploy wildcard grants deploy": {"allowlist": ["supacloud.deploy.*"], "tool": "app.undeploy", "allow": true},
	"deploy wildcard grants no ops": {"allowlist": ["supacloud.deploy.*"], "tool": "workflow.trigger", "allow": false},
	"full grants baseline": {"allowlist": ["supacloud.full"], "tool": "memory.get", "allow": true},
	"full grants read": {"allowlist": ["supacloud.full"], "tool": "spec.get", "allow": true},
	"full grants ops": {"allowlist": ["supacloud.full"], "tool": "permission.revoke", "allow": true},
	"full grants script.run": {"allowlist": ["supacloud.full"], "tool": "script.run", "allow": true},
	"full grants scaffold": {"allowlist": ["supacloud.full"], "tool": "scaffold.workflow.propose", "allow": true},
	"full grants deploy": {"allowlist": ["supacloud.full"], "tool": "app.migration.apply", "allow": true},
	"exact name": {"allowlist": ["project.get"], "tool": "project.get", "allow": true},
	"exact name grants only that tool": {"allowlist": ["project.get"], "tool": "projects.list", "allow": false},
	"supacloud.<tool-name>": {"allowlist": ["supacloud.project.get"], "tool": "project.get", "allow": true},
	"supacloud.<tool-name> for ops": {"allowlist": ["supacloud.pr.create"], "tool": "pr.create", "allow": true},
	"supacloud.<tool-name> for deploy": {"allowlist": ["supacloud.app.pause"], "tool": "app.pause", "allow": true},
	"conversation wildcard grants conversation.get": {"allowlist": ["supacloud.conversation.*"], "tool": "conversation.get", "allow": true},
	"conversation wildcard grants conversation.list": {"allowlist": ["supacloud.conversation.*"], "tool": "conversation.list", "allow": true},
	"conversation wildcard grants no reply": {"allowlist": ["supacloud.conversation.*"], "tool": "conversation.reply", "allow": false},
	"conversation wildcard grants no other read": {"allowlist": ["supacloud.conversation.*"], "tool": "issue.get", "allow": false},
	"unknown entry grants nothing": {"allowlist": ["supacloud.admin.*"], "tool": "project.get", "allow": false},
	"prefix without dot grants nothing": {"allowlist": ["supacloudproject.get"], "tool": "project.get", "allow": false},
}

test_allowlist_grants if {
	failing := {note | some note, tc in grant_cases; not allowlist_grants_case(tc)}
	failing == set()
}

# allowlist_grants_case holds for one case of test_allowlist_grants.
allowlist_grants_case(tc) if {
	d := supacloud.decision with input as call(with_profile(tc.allowlist, null), tc.tool, {"slug": "s"})
	d.allow == tc.allow
	d.visible == tc.allow
	d.tier == tool_by_name[tc.tool].tier
}

# Counting what each wildcard opens across the whole catalog guards against
# a rule that grants one tool too many.
visible_count_cases := {
	"empty": {"allowlist": [], "count": 8},
	"read": {"allowlist": ["supacloud.read.*"], "count": 39},
	"ops": {"allowlist": ["supacloud.ops.*"], "count": 28},
	"read and ops": {"allowlist": ["supacloud.read.*", "supacloud.ops.*"], "count": 59},
	"scaffold": {"allowlist": ["supacloud.scaffold.*"], "count": 14},
	"deploy": {"allowlist": ["supacloud.deploy.*"], "count": 13},
	"conversation": {"allowlist": ["supacloud.conversation.*"], "count": 10},
	"all four wildcards": {"allowlist": ["supacloud.read.*", "supacloud.ops.*", "supacloud.scaffold.*", "supacloud.deploy.*"], "count": 70},
	"full": {"allowlist": ["supacloud.full"], "count": 71},
}

test_visible_counts if {
	failing := {note | some note, tc in visible_count_cases; not visible_counts_case(tc)}
	failing == set()
}

# visible_counts_case holds for one case of test_visible_counts.
visible_counts_case(tc) if {
	count(supacloud.visible_tools) == tc.count with input as listing(with_profile(tc.allowlist, null))
}

test_missing_grant_message if {
	d := supacloud.decision with input as call(with_profile(["supacloud.read.*"], null), "app.deploy", {})
	codes(d) == ["allowlist.missing_grant"]
	d.reasons[0].message == concat("", [
		"tool app.deploy needs supacloud.deploy.* in the agent profile; profile bot-p-1 (p-1) grants supacloud.read.* ",
		"(add supacloud.deploy.* or supacloud.app.deploy to the profile, or use a profile that grants it)",
	])
}

test_missing_grant_message_empty_allowlist if {
	d := supacloud.decision with input as call(with_profile([], null), "project.get", {})
	contains(d.reasons[0].message, "grants nothing beyond the always-on baseline")
}

# A malformed tool object is denied with input.invalid, never guessed at.
invalid_tool_cases := {
	"no tool": null,
	"unknown tier": {"name": "project.get", "tier": "admin", "carve_out": false},
	"name not a string": {"name": 7, "tier": "read", "carve_out": false},
	"tool not an object": ["project.get"],
}

test_invalid_tool if {
	failing := {note | some note, tool in invalid_tool_cases; not invalid_tool_case(tool)}
	failing == set()
}

# invalid_tool_case holds for one case of test_invalid_tool.
invalid_tool_case(tool) if {
	inp := object.union(with_profile(["supacloud.full"], null), {"tool": tool})
	d := supacloud.decision with input as inp
	not d.allow
	not d.visible
	codes(d) == ["input.invalid"]
}

test_invalid_tools_not_listed if {
	tools := array.concat(catalog, [{"name": "admin.nuke", "tier": "admin"}, {"tier": "read"}, "x"])
	inp := object.union(with_profile(["supacloud.full"], null), {"tools": tools})
	names := supacloud.visible_tools with input as inp
	count(names) == 71
	not names["admin.nuke"]
}
