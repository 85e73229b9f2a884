package supacloud_test

import data.supacloud

with_member(base, member) := object.union(object.remove(base, ["member"]), {"member": member})

non_member(base) := object.remove(base, ["member"])

# Deploy tier (docs/requirements.md#deploy-role): grant AND role owner/admin; both must pass.
deploy_role_cases := {
	"owner with grant": {"role": "owner", "grant": true, "codes": []},
	"admin with grant": {"role": "admin", "grant": true, "codes": []},
	"member with grant": {"role": "member", "grant": true, "codes": ["deploy.role_required"]},
	"viewer with grant": {"role": "viewer", "grant": true, "codes": ["deploy.role_required"]},
	"non-member with grant": {"role": null, "grant": true, "codes": ["actor.not_member"]},
	"owner without grant": {"role": "owner", "grant": false, "codes": ["allowlist.missing_grant"]},
	"member without grant": {"role": "member", "grant": false, "codes": ["allowlist.missing_grant", "deploy.role_required"]},
}

deploy_base(tc) := base if {
	allowlist := grant_allowlist(tc.grant)
	tc.role == null
	base := non_member(with_profile(allowlist, null))
} else := with_member(with_profile(grant_allowlist(tc.grant), null), {"role": tc.role, "seat_type": "pro"})

grant_allowlist(true) := ["supacloud.read.*", "supacloud.deploy.*"]

grant_allowlist(false) := ["supacloud.read.*"]

test_deploy_role if {
	failing := {note | some note, tc in deploy_role_cases; not deploy_role_case(tc)}
	failing == set()
}

# deploy_role_case holds for one case of test_deploy_role.
deploy_role_case(tc) if {
	every name in deploy_names {
		d := supacloud.decision with input as call(deploy_base(tc), name, {})
		codes(d) == tc.codes
		expected_allow := count(tc.codes) == 0
		d.allow == expected_allow
		d.visible == d.allow
	}
}

test_role_ignored_below_deploy if {
	base := with_member(with_profile(["supacloud.full"], null), {"role": "member"})
	failing := {note |
		some note, tool in {"read": "project.get", "ops": "workflow.trigger", "scaffold": "scaffold.app.propose", "baseline": "memory.get"}
		not supacloud.decision.allow with input as call(base, tool, {})
	}
	failing == set()
}

# A viewer never calls a write tier (ops, the script.run carve-out,
# scaffold, deploy), whatever its profile grants; tools/list hides them too
# (listed <=> callable), and the reads and the baseline stay.
#
# viewer_tool_cases: the reason codes a viewer with a full profile may get
# per tool, as a set of alternatives. scaffold answers role.viewer_read_only
# while its tier needs no role, and deploy.role_required once a bundle gives
# it the owner/admin check (the policy walkthrough's edit in docs/policy.md).
viewer_tool_cases := {
	"ops": {"tool": "workflow.trigger", "args": {}, "codes": {["role.viewer_read_only"]}},
	"ops pause": {"tool": "schedule.pause", "args": {}, "codes": {["role.viewer_read_only"]}},
	"script.run": {"tool": "script.run", "args": {"script": "nightly"}, "codes": {["role.viewer_read_only"]}},
	"scaffold": {"tool": "scaffold.app.propose", "args": {}, "codes": {["role.viewer_read_only"], ["deploy.role_required"]}},
	"deploy": {"tool": "app.deploy", "args": {}, "codes": {["deploy.role_required"]}},
	"read": {"tool": "project.get", "args": {}, "codes": {[]}},
	"baseline": {"tool": "memory.get", "args": {}, "codes": {[]}},
}

test_viewer_never_calls_write_tiers if {
	failing := {note | some note, tc in viewer_tool_cases; not viewer_never_calls_write_tiers_case(tc)}
	failing == set()
}

# viewer_never_calls_write_tiers_case holds for one case of test_viewer_never_calls_write_tiers.
viewer_never_calls_write_tiers_case(tc) if {
	base := with_member(with_profile(["supacloud.full"], null), {"role": "viewer"})
	d := supacloud.decision with input as call(base, tc.tool, tc.args)
	codes(d) in tc.codes
	expected_allow := tc.codes == {[]}
	d.allow == expected_allow
	d.visible == d.allow
	listed := supacloud.visible_tools with input as listing(base)
	is_listed := tc.tool in listed
	is_listed == d.allow
}

test_viewer_write_message_names_the_role if {
	base := with_member(with_profile(["supacloud.ops.*"], null), {"role": "viewer"})
	d := supacloud.decision with input as call(base, "workflow.trigger", {})
	startswith(d.reasons[0].message, "tool workflow.trigger is a ops-tier tool, which writes, and a viewer never calls write tools")
	contains(d.reasons[0].message, `has role "viewer"`)
}

test_viewer_lists_reads_and_baseline_only if {
	base := with_member(with_profile(["supacloud.full"], null), {"role": "viewer"})
	count(supacloud.visible_tools) == 39 with input as listing(base)
}

test_role_message_names_user_workspace_role if {
	base := with_member(with_profile(["supacloud.deploy.*"], null), {"role": "member"})
	d := supacloud.decision with input as call(base, "app.deploy", {})
	d.reasons[0].message == concat("", [
		"tool app.deploy is a deploy-tier tool and needs the acting user to be owner or admin of the workspace; ",
		`user u-1 has role "member" in workspace ws-1 `,
		"(ask a workspace owner to raise the role, or run the task as a user who holds one of these roles)",
	])
}

test_role_message_non_member if {
	d := supacloud.decision with input as call(non_member(with_profile(["supacloud.deploy.*"], null)), "app.pause", {})
	codes(d) == ["actor.not_member"]
	contains(d.reasons[0].message, "user u-1 is not a member of workspace ws-1")
}

test_member_role_hides_deploy_from_list if {
	base := with_member(with_profile(["supacloud.full"], null), {"role": "member"})
	names := supacloud.visible_tools with input as listing(base)
	count(names) == 66
	every name in deploy_names {
		not names[name]
	}
}

# Confirmation obligation (docs/requirements.md#deploy-confirmation): only
# app.deploy and app.migration.apply, and only when the call is allowed.
confirmation_cases := {
	"app.deploy allowed": {"tool": "app.deploy", "role": "owner", "expected": true},
	"app.migration.apply allowed": {"tool": "app.migration.apply", "role": "admin", "expected": true},
	"app.undeploy allowed": {"tool": "app.undeploy", "role": "owner", "expected": false},
	"app.deploy denied": {"tool": "app.deploy", "role": "viewer", "expected": false},
	"read tool": {"tool": "app.get", "role": "owner", "expected": false},
}

test_confirmation_required if {
	failing := {note | some note, tc in confirmation_cases; not confirmation_required_case(tc)}
	failing == set()
}

# confirmation_required_case holds for one case of test_confirmation_required.
confirmation_required_case(tc) if {
	base := with_member(with_profile(["supacloud.full"], null), {"role": tc.role})
	d := supacloud.decision with input as call(base, tc.tool, {})
	d.obligations.confirmation_required == tc.expected
}
