package supacloud_test

import data.supacloud

# Sessions for the listed <=> callable matrix (docs/architecture.md, Invariants): a mix of
# editions, roles, profile sources, grants and broken gates, in small groups
# so each test stays well inside opa test's per-test timeout.
matrix_grant_sessions := {
	"community owner full": with_profile(["supacloud.full"], null),
	"empty allowlist": with_profile([], null),
	"exact names": with_profile(["project.get", "supacloud.app.deploy", "script.run", "supacloud.pr.create"], ["x", "y"]),
}

matrix_profile_sessions := {
	"read-only fallback": object.union(object.remove(session, ["profile"]), {"profile_requested": ""}),
	"default profile conversation": object.union(
		object.remove(session, ["profile"]),
		{"profile_requested": "", "default_profile": profile("p-d", ["supacloud.conversation.*", "supacloud.scaffold.*"], null)},
	),
}

matrix_role_sessions := {
	"enterprise admin full, one script": object.union(
		with_profile(["supacloud.full"], ["nightly"]),
		{"edition": "enterprise", "member": {"role": "admin"}},
	),
	"member full": object.union(with_profile(["supacloud.full"], null), {"member": {"role": "member"}}),
	"viewer read and ops": object.union(
		with_profile(["supacloud.read.*", "supacloud.ops.*"], null),
		{"member": {"role": "viewer"}},
	),
}

matrix_script_sessions := {
	"non-member full": object.remove(with_profile(["supacloud.full"], null), ["member"]),
	"script carve-out, empty script list": with_profile(["supacloud.script.run"], []),
}

matrix_gate_sessions := {
	"coordinator": object.union(with_profile(["supacloud.full"], null), {"principal": {"kind": "coordinator"}}),
	"task completed": object.union(with_profile(["supacloud.full"], null), {"task": {"status": "completed"}}),
	"profile not in workspace": object.union(with_profile(["supacloud.full"], null), {"profile_requested": "p-9"}),
	"invalid edition": object.union(with_profile(["supacloud.full"], null), {"edition": "gold"}),
}

matrix_sessions := object.union_n([
	matrix_grant_sessions, matrix_profile_sessions, matrix_role_sessions,
	matrix_script_sessions, matrix_gate_sessions,
])

# valid_arguments are arguments a call may carry for the session: a slug from
# the script_allowlist when there is a non-empty one.
valid_arguments(base) := {"slug": min({s | some s in base.profile.script_allowlist})} if {
	is_array(base.profile.script_allowlist)
	count(base.profile.script_allowlist) > 0
} else := {"slug": "any-script"}

# listed_iff_callable holds when, for every catalog tool, the tool is in
# visible_tools iff the decision for that tool is visible, a call with valid
# arguments is allowed iff visible, and a denial always has a reason.
listed_iff_callable(base) if {
	listed := supacloud.visible_tools with input as listing(base)
	arguments := valid_arguments(base)
	every tool in catalog {
		d := supacloud.decision with input as object.union(base, {"tool": tool, "arguments": arguments, "resource": question_gate})
		is_listed := tool.name in listed
		is_listed == d.visible
		d.allow == d.visible
		no_reasons := count(d.reasons) == 0
		no_reasons == d.allow
	}
}

# Each matrix test evaluates its whole group in one comprehension and asserts
# that no session breaks the property; failing names the sessions that do
# (opa test -v --var-values shows it). A per-case test_x[name] rule would be
# traced on every run, at several times the cost of the evaluation itself
# (docs/policy.md#testing-a-change).
test_listed_iff_callable_grants if {
	failing := {name | some name, base in matrix_grant_sessions; not listed_iff_callable(base)}
	failing == set()
}

test_listed_iff_callable_profiles if {
	failing := {name | some name, base in matrix_profile_sessions; not listed_iff_callable(base)}
	failing == set()
}

test_listed_iff_callable_roles if {
	failing := {name | some name, base in matrix_role_sessions; not listed_iff_callable(base)}
	failing == set()
}

test_listed_iff_callable_scripts if {
	failing := {name | some name, base in matrix_script_sessions; not listed_iff_callable(base)}
	failing == set()
}

test_listed_iff_callable_gates if {
	failing := {name | some name, base in matrix_gate_sessions; not listed_iff_callable(base)}
	failing == set()
}

# The matrix covers every session.
test_matrix_has_14_sessions if count(matrix_sessions) == 14

# The matrix must not pass vacuously: some sessions list tools, some list none.
test_matrix_lists_something_and_nothing if {
	counts := {n: c |
		some n, base in matrix_sessions
		c := count(supacloud.visible_tools) with input as listing(base)
	}
	counts["community owner full"] == 71
	counts["enterprise admin full, one script"] == 71
	counts["member full"] == 66
	counts["viewer read and ops"] == 39
	counts["non-member full"] == 0
	counts["read-only fallback"] == 39
	counts["default profile conversation"] == 16
	counts["script carve-out, empty script list"] == 8
	counts["exact names"] == 12
	counts.coordinator == 0
	counts["invalid edition"] == 0
}

# The decision is defined, denies, and explains itself for any input.
garbage_inputs := {
	"no input fields": {},
	"string": "garbage",
	"array": [1, 2, 3],
	"number": 42,
	"null": null,
	"principal is a string": {"edition": "community", "principal": "u-1"},
	"tools/list input": listing(with_profile(["supacloud.full"], null)),
	"tool is a number": object.union(with_profile(["supacloud.full"], null), {"tool": 5}),
	"arguments not an object": object.union(call(with_profile(["script.run"], ["a"]), "script.run", {}), {"arguments": "a"}),
	"profile is a list": object.union(call(session, "project.get", {}), {"profile": ["p-1"]}),
	"task is a string": object.union(call(session, "project.get", {}), {"task": "t-1"}),
}

test_decision_always_defined if {
	failing := {note | some note, inp in garbage_inputs; not decision_always_defined_case(inp)}
	failing == set()
}

# decision_always_defined_case holds for one case of test_decision_always_defined.
decision_always_defined_case(inp) if {
	d := supacloud.decision with input as inp
	d.allow == false
	count(d.reasons) > 0
	every r in d.reasons {
		is_string(r.code)
		is_string(r.message)
	}
	is_string(d.tier)
	d.obligations == {"redact": [], "confirmation_required": false}
}

test_allowed_decision_shape if {
	d := supacloud.decision with input as call(session, "workspace.info", {})
	d == {
		"allow": true,
		"visible": true,
		"tier": "read",
		"reasons": [],
		"obligations": {
			"redact": [],
			"confirmation_required": false,
			"relay": {"kinds": ["elicitation", "log", "progress", "roots", "sampling"], "secret_words": supacloud.relay_rules.secret_words},
			"approval_required": false,
			"approval_because": [],
			"flow_reads": [],
		},
	}
}

test_reasons_sorted_by_code if {
	base := object.union(with_profile(["supacloud.read.*"], null), {"member": {"role": "viewer"}})
	d := supacloud.decision with input as call(base, "app.deploy", {})
	codes(d) == ["allowlist.missing_grant", "deploy.role_required"]
}

test_visible_tools_ignores_input_tool if {
	inp := object.union(listing(with_profile([], null)), {"tool": tool_by_name["app.deploy"]})
	names := supacloud.visible_tools with input as inp
	count(names) == 8
}

# Every reason code of the contract is produced by some input.
reason_code_inputs := {
	"edition.invalid": call(object.union(session, {"edition": "x"}), "project.get", {}),
	"principal.unsupported": call(object.union(session, {"principal": {"kind": "robot"}}), "project.get", {}),
	"scope.missing": call(coordinator(["mcp:read"]), "workflow.trigger", {}),
	"coordinator.no_workspace": call(object.union(coordinator(["mcp:read"]), {"principal": {"workspace_id": ""}}), "run.list", {}),
	"approval.person_required": object.union(
		call(coordinator(["mcp:ops"]), "approval.decide", {"approval_id": "apr-1"}),
		{"resource": {"kind": "approval", "id": "apr-1", "gate_class": "workflow_human_gate"}},
	),
	"actor.not_member": call(object.remove(session, ["member"]), "project.get", {}),
	"task.unknown": call(object.remove(session, ["task"]), "project.get", {}),
	"task.not_running": call(object.union(session, {"task": {"status": "failed"}}), "project.get", {}),
	"profile.not_in_workspace": call(object.remove(session, ["profile"]), "project.get", {}),
	"allowlist.missing_grant": call(session, "workflow.trigger", {}),
	"script.not_granted": call(with_profile(["supacloud.ops.*"], null), "script.run", {"slug": "a"}),
	"script.slug_not_allowed": call(with_profile(["script.run"], ["a"]), "script.run", {"slug": "b"}),
	"deploy.role_required": call(object.union(with_profile(["supacloud.deploy.*"], null), {"member": {"role": "member"}}), "app.deploy", {}),
	"input.invalid": object.union(session, {"tool": {"name": "x", "tier": "nope"}}),
}

test_every_reason_code if {
	failing := {code | some code, inp in reason_code_inputs; not every_reason_code_case(code, inp)}
	failing == set()
}

# every_reason_code_case holds for one case of test_every_reason_code.
every_reason_code_case(code, inp) if {
	d := supacloud.decision with input as inp
	codes(d) == [code]
	not d.allow
	count(d.reasons[0].message) > 40
}

test_reasons_empty_when_allowed if {
	supacloud.reasons == [] with input as call(session, "project.get", {})
}

# The benchmark inputs (bench.sh) are what their names promise.
bench_cases := {
	"bench_call": {"input": bench_call, "allow": true},
	"bench_read": {"input": bench_read, "allow": true},
	"bench_denied": {"input": bench_denied, "allow": false},
}

test_bench_inputs[note] if {
	some note, tc in bench_cases
	supacloud.decision.allow == tc.allow with input as tc.input
}

test_bench_listings if {
	count(supacloud.visible_tools) == 71 with input as bench_list
	count(supacloud.visible_tools) == 59 with input as bench_list_read
}
