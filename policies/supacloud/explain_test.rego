package supacloud_test

import data.supacloud

# explained is the explanation of a call of tool name with arguments.
explained(base, name, arguments) := x if {
	x := supacloud.explain with input as call(base, name, arguments)
}

# decided_gate is the gate an explanation names as deciding (null: allowed).
decided_gate(x) := x.decided_by.gate

# failed lists the gates an explanation shows as failed.
failed(x) := [g.gate | some g in x.gates; not g.passed]

test_explain_allowed_by_tier_wildcard if {
	x := explained(with_profile(["supacloud.read.*"], null), "project.get", {})
	x.decision.allow
	x.decided_by == {"rule": "data.supacloud.allow", "gate": null, "code": null}
	failed(x) == []
	x.grant.granted_by == ["supacloud.read.*"]
	x.grant.would_grant == ["project.get", "supacloud.full", "supacloud.project.get", "supacloud.read.*"]
	not x.grant.always_on
	x.profile.source == "requested"
	x.profile.allowlist == ["supacloud.read.*"]
	x.edition == {"name": "community", "enterprise": false}
	x.permissions == []
}

test_explain_missing_grant_names_what_would_grant if {
	x := explained(with_profile(["supacloud.read.*"], null), "workflow.trigger", {})
	not x.decision.allow
	decided_gate(x) == "grant"
	x.decided_by.code == "allowlist.missing_grant"
	x.decided_by.rule == "data.supacloud.tool_granted"
	failed(x) == ["grant"]
	x.grant.granted_by == []
	"supacloud.ops.*" in x.grant.would_grant
	"supacloud.workflow.trigger" in x.grant.would_grant
}

test_explain_baseline_is_always_on if {
	x := explained(with_profile([], null), "memory.search", {})
	x.decision.allow
	x.grant.always_on
	x.grant.granted_by == []
}

test_explain_group_wildcard if {
	x := explained(with_profile(["supacloud.conversation.*"], null), "conversation.get", {})
	x.decision.allow
	x.grant.granted_by == ["supacloud.conversation.*"]
}

test_explain_carve_out_is_not_granted_by_its_tier if {
	x := explained(with_profile(["supacloud.ops.*"], null), "script.run", {"slug": "a"})
	decided_gate(x) == "grant"
	x.decided_by.code == "script.not_granted"
	x.grant.carve_out
	not "supacloud.ops.*" in x.grant.would_grant
	x.grant.would_grant == ["script.run", "supacloud.full", "supacloud.script.run"]
}

test_explain_script_slug if {
	x := explained(with_profile(["supacloud.script.run"], ["nightly"]), "script.run", {"slug": "other"})
	decided_gate(x) == "script"
	x.decided_by.code == "script.slug_not_allowed"
	x.profile.script_allowlist == ["nightly"]
}

test_explain_deploy_role if {
	x := explained(object.union(with_profile(["supacloud.full"], null), {"member": {"role": "member"}}), "app.deploy", {})
	decided_gate(x) == "role"
	x.decided_by.code == "deploy.role_required"
	x.grant.roles == ["owner", "admin"]
	x.grant.granted_by == ["supacloud.full"]
}

# Each session gate, when it is the first to fail, is the one named.
explain_session_cases := {
	"edition": {"input": object.union(session, {"edition": "pro"}), "code": "edition.invalid"},
	"member": {"input": object.remove(session, ["member"]), "code": "actor.not_member"},
	"task_known": {"input": object.remove(session, ["task"]), "code": "task.unknown"},
	"task_running": {"input": object.union(session, {"task": {"id": "t-1", "status": "completed"}}), "code": "task.not_running"},
	"profile": {"input": object.remove(session, ["profile"]), "code": "profile.not_in_workspace"},
}

test_explain_first_failed_session_gate if {
	failing := {gate | some gate, tc in explain_session_cases; not explain_first_failed_session_gate_case(gate, tc)}
	failing == set()
}

# explain_first_failed_session_gate_case holds for one case of test_explain_first_failed_session_gate.
explain_first_failed_session_gate_case(gate, tc) if {
	x := supacloud.explain with input as object.union(tc.input, {"tool": tool_by_name["project.get"], "arguments": {}})
	decided_gate(x) == gate
	x.decided_by.code == tc.code
}

test_explain_no_profile_is_null if {
	x := supacloud.explain with input as object.union(object.remove(session, ["profile"]), {"tool": tool_by_name["project.get"]})
	x.profile == null
}

test_explain_invalid_tool if {
	x := supacloud.explain with input as object.union(session, {"tool": {"name": "x"}})
	decided_gate(x) == "tool"
	x.decided_by.code == "input.invalid"
	x.grant == null
}

test_explain_unsupported_principal if {
	x := supacloud.explain with input as object.union(call(session, "project.get", {}), {"principal": {"kind": "robot"}})
	[g.gate | some g in x.gates] == ["edition", "principal"]
	decided_gate(x) == "principal"
	x.grant == null
	x.profile == null
}

test_explain_human_gate if {
	inp := object.union(
		call(with_profile(["supacloud.ops.*"], null), "approval.decide", {"approval_id": "apr-1"}),
		{"resource": {"kind": "approval", "id": "apr-1", "gate_class": "tool"}},
	)
	x := supacloud.explain with input as inp
	decided_gate(x) == "human_gate"
	x.decided_by.code == "approval.person_required"
}

test_explain_coordinator_reached if {
	x := explained(coordinator(["mcp:read"]), "run.list", {})
	x.decision.allow
	[g.gate | some g in x.gates] == ["edition", "principal", "workspace", "tool", "scope", "human_gate"]
	x.grant == {"kind": "scopes", "tier": "read", "excluded_tier": false, "granted_by": ["mcp:read"], "would_grant": ["mcp:read"]}
	x.profile == null
}

test_explain_coordinator_scope_missing if {
	x := explained(coordinator(["mcp:read"]), "task.create", {})
	decided_gate(x) == "scope"
	x.decided_by.code == "scope.missing"
	x.grant.granted_by == []
	x.grant.would_grant == ["mcp:ops"]
}

test_explain_coordinator_deploy_is_excluded if {
	x := explained(coordinator("not a list"), "app.deploy", {})
	x.grant.excluded_tier
	x.grant.would_grant == []
}

test_explain_coordinator_without_workspace if {
	x := supacloud.explain with input as call(object.union(coordinator(["mcp:read"]), {"principal": {"kind": "coordinator", "workspace_id": ""}}), "run.list", {})
	decided_gate(x) == "workspace"
	x.decided_by.code == "coordinator.no_workspace"
}

test_explain_denied_without_failed_gate_falls_back_to_the_reason if {
	x := explained(with_profile(["supacloud.read.*"], null), "project.get", {}) with data.supacloud.allow as false
	x.decided_by.rule == "data.supacloud.deny"
	x.decided_by.gate == null
}

test_explain_enterprise if {
	x := explained(object.union(with_profile(["supacloud.read.*"], null), {"edition": "enterprise"}), "project.get", {})
	x.edition == {"name": "enterprise", "enterprise": true}
}

# workspace.info reads three permission keys; each shows its chain.
test_explain_permissions_of_workspace_info if {
	base := object.union(with_profile(["supacloud.read.*"], null), {"permissions": perms(
		{"workspace.budget.view": false},
		seat(false, {"workspace.members.view": false}),
		{},
		plan({}),
	)})
	x := explained(base, "workspace.info", {})
	[[p.field, p.decided_by, p.value, p.redacted] | some p in x.permissions] == [
		["budget_remaining", "user_override", false, true],
		["member_count", "seat_type", false, true],
		["plan_tier", "default", true, false],
	]
	x.decision.obligations.redact == ["budget_remaining", "member_count"]
	[l.link | some l in x.permissions[0].chain] == ["user_override", "seat_type", "workspace_override", "org_plan", "default"]
	x.permissions[1].chain[1] == {"link": "seat_type", "name": "s", "applies": true, "value": false}
}

# all_permissions resolves every known key, whatever the tool: the keys
# with a default, the enterprise-only keys and those the input's links set,
# each with the result field of the tool that keeps it (or null).
test_explain_all_permissions if {
	base := object.union(with_profile(["supacloud.read.*"], null), {"permissions": perms(
		{"workspace.budget.view": false, "custom.flag": true},
		seat(false, {"workspace.members.view": false, "seat.only": true}),
		{"ws.only": false},
		plan({"plan.only": true}),
	)})
	x := explained(base, "project.get", {})
	x.permissions == []
	[[p.key, p.field, p.decided_by, p.value] | some p in x.all_permissions] == [
		["audit.export", null, "edition", false],
		["custom.flag", null, "user_override", true],
		["plan.only", null, "org_plan", true],
		["seat.only", null, "seat_type", true],
		["sso.configure", null, "edition", false],
		["workspace.budget.view", null, "user_override", false],
		["workspace.members.view", null, "seat_type", false],
		["workspace.plan.view", null, "default", true],
		["ws.only", null, "workspace_override", false],
	]
	y := explained(base, "workspace.info", {})
	[[p.key, p.field] | some p in y.all_permissions; p.field != null] == [
		["workspace.budget.view", "budget_remaining"],
		["workspace.members.view", "member_count"],
		["workspace.plan.view", "plan_tier"],
	]
	[p | some p in y.all_permissions; p.key == "workspace.budget.view"][0] == y.permissions[0]
}

# Without permissions in the input the table still lists the bundle's
# keys, each decided by its default (or the edition).
test_explain_all_permissions_without_input_links if {
	x := explained(with_profile(["supacloud.read.*"], null), "project.get", {})
	[[p.key, p.decided_by] | some p in x.all_permissions] == [
		["audit.export", "edition"],
		["sso.configure", "edition"],
		["workspace.budget.view", "default"],
		["workspace.members.view", "default"],
		["workspace.plan.view", "default"],
	]
}

# The link explain_link names holds the value permission resolves, for
# every precedence case (precedence_test.rego): the chain shown is the one
# the policy used.
test_explain_link_agrees_with_permission if {
	failing := {note | some note, tc in precedence_cases; not explain_link_agrees_with_permission_case(tc)}
	failing == set()
}

# explain_link_agrees_with_permission_case holds for one case of test_explain_link_agrees_with_permission.
explain_link_agrees_with_permission_case(tc) if {
	inp := {"edition": tc.edition, "permissions": object.get(tc, "permissions", null)}
	link := supacloud.explain_link(tc.key) with input as inp
	value := supacloud.permission(tc.key) with input as inp
	value == tc.expected
	link_value(link, tc.key, inp) == value
}

link_value("edition", _, _) := false

link_value("none", _, _) := false

link_value("default", key, _) := data.supacloud.permissions.defaults[key]

link_value(link, key, inp) := inp.permissions[path[0]][path[1]][key] if {
	path := {"seat_type": ["seat_type", "permissions"], "org_plan": ["org_plan", "permissions"]}[link]
}

link_value(link, key, inp) := inp.permissions[path][key] if {
	path := {"user_override": "user_overrides", "workspace_override": "workspace_overrides"}[link]
}

test_explain_edition_cap if {
	inp := object.union(call(with_profile(["supacloud.read.*"], null), "workspace.info", {}), {"permissions": perms({"workspace.budget.view": true}, null, {}, null)})
	capped := object.union(supacloud.permissions, {"enterprise_only": ["workspace.budget.view"]})
	x := supacloud.explain with input as inp with data.supacloud.permissions as capped
	p := [q | some q in x.permissions; q.key == "workspace.budget.view"][0]
	p.decided_by == "edition"
	p.edition_capped
	p.value == false
}

test_explain_locked_seat_does_not_apply if {
	inp := object.union(call(with_profile(["supacloud.read.*"], null), "workspace.info", {}), {"permissions": perms({}, seat(true, {"workspace.plan.view": false}), {}, null)})
	x := supacloud.explain with input as inp
	p := [q | some q in x.permissions; q.key == "workspace.plan.view"][0]
	p.chain[1].applies == false
	p.decided_by == "default"
	p.value == true
}

test_explain_coordinator_scopes_not_a_list if {
	x := explained(coordinator("mcp:read"), "run.list", {})
	x.grant.granted_by == []
	x.grant.would_grant == ["mcp:read"]
}

test_explain_without_edition if {
	x := supacloud.explain with input as object.remove(call(session, "project.get", {}), ["edition"])
	x.edition == {"name": null, "enterprise": false}
	decided_gate(x) == "edition"
}
