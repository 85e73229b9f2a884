package supacloud_test

import data.supacloud

# Sessions for the listed <=> callable matrix (docs/architecture.md, Invariants): a mix of
# editions, roles, profile sources, grants and broken gates, in small groups
# so the tests run in parallel, each session with the number of tools it
# lists. One session per rule path: every failed session gate (an invalid
# edition, no member, a task not running, a profile not in the workspace)
# fails agent_session_ok, which visible_tools and the decision both check
# first, so "task completed" and "non-member full" stand for them all here;
# the others' listings are asserted by
# test_matrix_gated_sessions_list_nothing and their refusals by
# test_edition_gate and test_profile_not_in_workspace.
matrix_grant_sessions := {
	"community owner full": [with_profile(["supacloud.full"], null), 71],
	"empty allowlist": [with_profile([], null), 8],
	"exact names": [with_profile(["project.get", "supacloud.app.deploy", "script.run", "supacloud.pr.create"], ["x", "y"]), 12],
}

matrix_profile_sessions := {
	"read-only fallback": [object.union(object.remove(session, ["profile"]), {"profile_requested": ""}), 39],
	"default profile conversation": [
		object.union(
			object.remove(session, ["profile"]),
			{"profile_requested": "", "default_profile": profile("p-d", ["supacloud.conversation.*", "supacloud.scaffold.*"], null)},
		),
		16,
	],
}

matrix_role_sessions := {
	"enterprise admin full, one script": [
		object.union(with_profile(["supacloud.full"], ["nightly"]), {"edition": "enterprise", "member": {"role": "admin"}}),
		71,
	],
	"member full": [object.union(with_profile(["supacloud.full"], null), {"member": {"role": "member"}}), 66],
	"viewer read and ops": [
		object.union(with_profile(["supacloud.read.*", "supacloud.ops.*"], null), {"member": {"role": "viewer"}}),
		39,
	],
}

matrix_script_sessions := {
	"script carve-out, empty script list": [with_profile(["supacloud.script.run"], []), 8],
	"non-member full": [object.remove(with_profile(["supacloud.full"], null), ["member"]), 0],
}

matrix_gate_sessions := {
	"coordinator": [object.union(with_profile(["supacloud.full"], null), {"principal": {"kind": "coordinator"}}), 0],
	"task completed": [object.union(with_profile(["supacloud.full"], null), {"task": {"status": "completed"}}), 0],
}

matrix_sessions := object.union_n([
	matrix_grant_sessions, matrix_profile_sessions, matrix_role_sessions,
	matrix_script_sessions, matrix_gate_sessions,
])

# The failed session gates the matrix leaves to "task completed" and
# "non-member full": each lists nothing.
matrix_gated_sessions := {
	"profile not in workspace": object.union(with_profile(["supacloud.full"], null), {"profile_requested": "p-9"}),
	"invalid edition": object.union(with_profile(["supacloud.full"], null), {"edition": "gold"}),
}

test_matrix_gated_sessions_list_nothing if {
	listed := {n: c |
		some n, base in matrix_gated_sessions
		c := count(supacloud.visible_tools) with input as listing(base)
	}
	listed == {"profile not in workspace": 0, "invalid edition": 0}
}

# valid_arguments are arguments a call may carry for the session: a slug from
# the script_allowlist when there is a non-empty one.
valid_arguments(base) := {"slug": min({s | some s in base.profile.script_allowlist})} if {
	is_array(base.profile.script_allowlist)
	count(base.profile.script_allowlist) > 0
} else := {"slug": "any-script"}

# matrix_row is what the matrix finds for one session: how many tools
# tools/list shows, and the catalog tools that break listed <=> callable
# (empty when it holds): for every catalog tool, the tool is in
# visible_tools iff the decision for that tool is visible, a call with
# valid arguments is allowed iff visible, and a denial always has a reason
# (an allowed call none).
matrix_row(base) := [count(listed), broken] if {
	listed := supacloud.visible_tools with input as listing(base)
	arguments := valid_arguments(base)
	broken := {tool.name |
		some tool in catalog
		d := supacloud.decision with input as object.union(base, {"tool": tool, "arguments": arguments, "resource": question_gate})
		not listed_agrees(tool.name in listed, d)
	}
}

# listed_agrees holds when a tool's listing (is_listed) and its decision d
# agree.
listed_agrees(is_listed, d) if {
	is_listed == d.visible
	d.allow == d.visible
	no_reasons := count(d.reasons) == 0
	no_reasons == d.allow
}

# listed_iff_callable holds when no catalog tool breaks listed <=> callable
# for the session base.
listed_iff_callable(base) if {
	[_, broken] := matrix_row(base)
	broken == set()
}

# matrix_failures are the sessions of group whose row differs from what
# they should find: their listing's size and the tools that break the
# property; {} when the whole group holds.
matrix_failures(group) := {name: row |
	some name, [base, listed] in group
	row := matrix_row(base)
	row != [listed, set()]
}

# Each matrix test evaluates its whole group in one comprehension and asserts
# that no session breaks the property or lists another number of tools than
# it should; the failure names the session, its listing's size and the
# tools that break it (opa test -v --var-values shows it). A per-case
# test_x[name] rule would be traced on every run, at several times the cost
# of the evaluation itself (docs/policy.md#testing-a-change).
test_listed_iff_callable_grants if matrix_failures(matrix_grant_sessions) == {}

test_listed_iff_callable_profiles if matrix_failures(matrix_profile_sessions) == {}

test_listed_iff_callable_roles if matrix_failures(matrix_role_sessions) == {}

test_listed_iff_callable_scripts if matrix_failures(matrix_script_sessions) == {}

test_listed_iff_callable_gates if matrix_failures(matrix_gate_sessions) == {}

# The matrix covers every session, and does not pass vacuously: some
# sessions list every tool, some a few, some none.
test_matrix_lists_something_and_nothing if {
	count(matrix_sessions) == 12
	sizes := {listed | some [_, listed] in matrix_sessions}
	sizes == {0, 8, 12, 16, 39, 66, 71}
}

# The matrix is not vacuous: a listing that leaves out a tool a call may
# use, or shows one no call may use, breaks the property at that tool
# (over a one-tool catalog, so the check costs two decisions; the same
# sessions hold with the real listing).
test_matrix_catches_a_broken_listing if {
	deploy := [t | some t in catalog; t.name == "app.deploy"]
	full := with_profile(["supacloud.full"], null)
	none := with_profile([], null)
	matrix_row(full) == [1, set()] with catalog as deploy
	matrix_row(none) == [0, set()] with catalog as deploy
	matrix_row(full) == [0, {"app.deploy"}] with catalog as deploy with supacloud.visible_tools as set()
	matrix_row(none) == [1, {"app.deploy"}] with catalog as deploy with supacloud.visible_tools as {"app.deploy"}
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

test_bench_inputs if {
	failing := {note | some note, tc in bench_cases; not bench_inputs_case(tc)}
	failing == set()
}

# bench_inputs_case holds for one case of test_bench_inputs.
bench_inputs_case(tc) if supacloud.decision.allow == tc.allow with input as tc.input

test_bench_listings if {
	count(supacloud.visible_tools) == 71 with input as bench_list
	count(supacloud.visible_tools) == 59 with input as bench_list_read
}
