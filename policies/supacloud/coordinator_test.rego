package supacloud_test

import data.supacloud

read_level := {
	"run.list", "run.get", "run.events", "tasks.list_active", "tasks.get",
	"backlog.list", "backlog.get", "approvals.list",
	"memory.search", "memory.get", "memory.list_recent",
	"docs.search", "docs.get", "spec.get",
}

ops_level := {
	"workflow.trigger", "task.create", "task.cancel", "task.intervene",
	"approval.decide", "run.rerun_node",
	"schedule.create", "schedule.update", "schedule.pause", "schedule.resume",
}

# The scope matrix (docs/requirements.md#external-tools-list): tools/list shows exactly the tools the
# scopes reach, and each of them is callable; every other tool is neither.
scope_matrix := {
	"read": {"scopes": ["mcp:read"], "tools": read_level},
	"ops": {"scopes": ["mcp:ops"], "tools": ops_level},
	"read and ops": {"scopes": ["mcp:read", "mcp:ops"], "tools": (read_level | ops_level)},
	"management only": {"scopes": ["management:read"], "tools": set()},
	"none": {"scopes": [], "tools": set()},
	"unknown scope": {"scopes": ["mcp:deploy"], "tools": set()},
	"scopes not an array": {"scopes": "mcp:read", "tools": set()},
}

# The listing of every scope set of the matrix, in one comprehension
# (decision_test.rego says why).
test_coordinator_lists_its_scopes if {
	failing := {note: listed |
		some note, tc in scope_matrix
		listed := supacloud.visible_tools with input as listing(coordinator(tc.scopes))
		listed != tc.tools
	}
	failing == {}
}

# Listed <=> callable (matrix_row, decision_test.rego) for one scope set of
# each rule path: scopes that reach tools (both levels, so the union, the
# excluded deploy tier and the tools no scope names are all met), a scope
# the grants do not name (as are no scopes and management:read: nothing
# to look up reaches a tool), and scopes that are not an array. Their
# listings are asserted above; the ones that reach nothing are in a test
# of their own so the two run in parallel.
test_coordinator_listed_iff_callable_reaching if coordinator_matrix_failures({"read and ops"}) == {}

test_coordinator_listed_iff_callable_reaching_nothing if {
	coordinator_matrix_failures({"unknown scope", "scopes not an array"}) == {}
}

# coordinator_matrix_failures are the notes whose matrix_row differs from
# their scope_matrix entry's: its tools listed, none broken (a note not in
# scope_matrix fails too: it expects a tool that no scopes list).
coordinator_matrix_failures(notes) := {note: row |
	some note in notes
	tc := object.get(scope_matrix, note, {"scopes": [], "tools": {"a note of scope_matrix"}})
	row := matrix_row(coordinator(tc.scopes))
	row != [count(tc.tools), set()]
}

test_coordinator_never_reaches_deploy if {
	failing := {name | some name in deploy_names; not coordinator_never_reaches_deploy_case(name)}
	failing == set()
}

# coordinator_never_reaches_deploy_case holds for one case of test_coordinator_never_reaches_deploy.
coordinator_never_reaches_deploy_case(name) if {
	d := supacloud.decision with input as call(coordinator(["mcp:read", "mcp:ops", "management:read"]), name, {})
	not d.allow
	not d.visible
	codes(d) == ["scope.missing"]
}

test_excluded_tier_wins_over_scope_data if {
	# even a scope map that lists a deploy tool does not reach it
	inp := call(coordinator(["mcp:ops"]), "app.deploy", {})
	grants := object.union(supacloud.grants, {"coordinator": {"scopes": {"mcp:ops": ["app.deploy"]}}})
	d := supacloud.decision with input as inp with data.supacloud.grants as grants
	not d.visible
}

test_scope_message_names_scopes if {
	d := supacloud.decision with input as call(coordinator(["mcp:read"]), "task.create", {})
	contains(d.reasons[0].message, "tool task.create is not reachable with this API token's scopes (mcp:read)")
}

test_scope_message_without_scopes if {
	d := supacloud.decision with input as call(coordinator([]), "task.create", {})
	contains(d.reasons[0].message, "(no scopes)")
}

test_coordinator_without_workspace_lists_nothing if {
	inp := object.union(listing(coordinator(["mcp:read"])), {"principal": {"workspace_id": ""}})
	count(supacloud.visible_tools) == 0 with input as inp
}

test_coordinator_ignores_agent_profile_grants if {
	# a coordinator input that somehow carries a profile gains nothing from it
	inp := object.union(coordinator(["mcp:read"]), {"profile_requested": "p-1", "profile": profile("p-1", ["supacloud.full"], null)})
	listed := supacloud.visible_tools with input as listing(inp)
	listed == read_level
}

test_coordinator_invalid_edition if {
	d := supacloud.decision with input as object.union(call(coordinator(["mcp:read"]), "run.list", {}), {"edition": "gold"})
	codes(d) == ["edition.invalid"]
}
