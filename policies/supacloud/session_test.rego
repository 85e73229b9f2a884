package supacloud_test

import data.supacloud

# Principal kind and task gates: each case changes one field of a healthy
# session and names the single reason code expected (none when allowed).
session_cases := {
	"agent running task": {"patch": {}, "codes": []},
	"coordinator without scopes": {"patch": {"principal": {"kind": "coordinator"}}, "codes": ["scope.missing"]},
	"coordinator with mcp:read": {"patch": {"principal": {"kind": "coordinator", "scopes": ["mcp:read"]}}, "codes": []},
	"unknown kind": {"patch": {"principal": {"kind": "robot"}}, "codes": ["principal.unsupported"]},
	"task completed": {"patch": {"task": {"status": "completed"}}, "codes": ["task.not_running"]},
	"task failed": {"patch": {"task": {"status": "failed"}}, "codes": ["task.not_running"]},
	"task cancelled": {"patch": {"task": {"status": "cancelled"}}, "codes": ["task.not_running"]},
	"task of another session": {"patch": {"task": {"id": "t-2"}}, "codes": ["task.unknown"]},
	"member is not an object": {"patch": {"member": null}, "codes": ["actor.not_member"]},
}

test_session_gates if {
	failing := {note | some note, tc in session_cases; not session_gates_case(tc)}
	failing == set()
}

# session_gates_case holds for one case of test_session_gates.
session_gates_case(tc) if {
	inp := object.union(call(session, "memory.search", {}), tc.patch)
	d := supacloud.decision with input as inp
	codes(d) == tc.codes
	expected_allow := count(tc.codes) == 0
	d.allow == expected_allow
}

test_task_absent_is_unknown if {
	inp := object.remove(call(session, "memory.search", {}), ["task"])
	d := supacloud.decision with input as inp
	codes(d) == ["task.unknown"]
	contains(d.reasons[0].message, "task t-1 of workspace ws-1 is not registered with the gateway")
}

test_principal_missing_is_unsupported if {
	inp := object.remove(call(session, "memory.search", {}), ["principal"])
	d := supacloud.decision with input as inp
	codes(d) == ["principal.unsupported"]
}

# Membership gate (docs/requirements.md#precedence: permissions are
# resolved per workspace user): a JWT whose sub is not a member of its
# workspace gets no tool, the always-on baseline included.
test_non_member_is_refused_every_tool if {
	failing := {name | some name in ["memory.search", "project.get", "workflow.trigger", "script.run", "app.deploy"]; not non_member_is_refused_every_tool_case(name)}
	failing == set()
}

# non_member_is_refused_every_tool_case holds for one case of test_non_member_is_refused_every_tool.
non_member_is_refused_every_tool_case(name) if {
	inp := object.remove(call(with_profile(["supacloud.full"], null), name, {"slug": "x"}), ["member"])
	d := supacloud.decision with input as inp
	codes(d) == ["actor.not_member"]
	d.allow == false
	d.visible == false
}

test_non_member_message_names_user_and_workspace if {
	inp := object.remove(call(session, "memory.search", {}), ["member"])
	d := supacloud.decision with input as inp
	startswith(d.reasons[0].message, "user u-1 is not a member of workspace ws-1, so every tool is denied")
}

test_non_member_lists_nothing if {
	inp := object.remove(listing(with_profile(["supacloud.full"], null)), ["member"])
	count(supacloud.visible_tools) == 0 with input as inp
}

test_non_member_masks_task_and_profile_reasons if {
	# a non-member learns nothing about the workspace's tasks and profiles
	inp := object.remove(
		object.union(call(session, "memory.search", {}), {"task": {"status": "completed"}, "profile_requested": "p-9"}),
		["member"],
	)
	d := supacloud.decision with input as inp
	codes(d) == ["actor.not_member"]
}

test_coordinator_has_no_agent_gates if {
	# a coordinator has no task, member or profile: none of the agent gates
	# applies, and its scopes alone decide
	inp := call(coordinator(["mcp:read"]), "memory.search", {})
	d := supacloud.decision with input as inp
	d.allow
	codes(d) == []
}

test_unsupported_kind_message if {
	inp := object.union(call(session, "memory.search", {}), {"principal": {"kind": "robot"}})
	d := supacloud.decision with input as inp
	codes(d) == ["principal.unsupported"]
	contains(d.reasons[0].message, `"robot"`)
}

# A task in a terminal status is refused with a message that names the
# status and says what to do.
test_not_running_message_names_status if {
	failing := {status | some status in ["completed", "failed", "cancelled"]; not not_running_message_names_status_case(status)}
	failing == set()
}

# not_running_message_names_status_case holds for one case of test_not_running_message_names_status.
not_running_message_names_status_case(status) if {
	inp := object.union(call(session, "memory.search", {}), {"task": {"status": status}})
	d := supacloud.decision with input as inp
	d.reasons[0].message == sprintf(
		"task t-1 is %s; calls of a %s task are refused, so every tool is denied; start a new task (a session token with a new task_id) to call tools",
		[status, status],
	)
}

test_not_running_message_survives_an_odd_status if {
	inp := object.union(call(session, "memory.search", {}), {"task": {"status": 7}})
	d := supacloud.decision with input as inp
	startswith(d.reasons[0].message, "task t-1 is 7; calls of a 7 task are refused")
}

test_not_running_message_survives_no_status if {
	inp := object.union(object.remove(call(session, "memory.search", {}), ["task"]), {"task": {"id": "t-1"}})
	d := supacloud.decision with input as inp
	d.reasons[0].code == "task.not_running"
	startswith(d.reasons[0].message, "task t-1 is (no status); ")
}

test_session_gate_lists_nothing if {
	failing := {note: listed |
		some note, patch in {
			"coordinator": {"principal": {"kind": "coordinator"}},
			"task completed": {"task": {"status": "completed"}},
		}
		listed := supacloud.visible_tools with input as object.union(listing(with_profile(["supacloud.full"], null)), patch)
		count(listed) != 0
	}
	failing == {}
}

test_messages_survive_a_bare_principal if {
	inp := object.union(
		object.remove(call(session, "project.get", {}), ["principal"]),
		{"principal": {"kind": "agent"}},
	)
	d := supacloud.decision with input as inp
	codes(d) == ["task.unknown"]
	contains(d.reasons[0].message, "task (unknown task) of workspace (unknown workspace) is not registered")
}

test_deploy_message_survives_a_missing_sub if {
	base := object.union(with_profile(["supacloud.deploy.*"], null), {"member": {"role": "viewer"}})
	inp := object.union(
		object.remove(call(base, "app.deploy", {}), ["principal"]),
		{"principal": {"kind": "agent", "workspace_id": "ws-1", "task_id": "t-1"}},
	)
	d := supacloud.decision with input as inp
	codes(d) == ["deploy.role_required"]
	contains(d.reasons[0].message, `user (unknown user) has role "viewer" in workspace ws-1`)
}

# session_ok spells out the gate expressions for speed; it must agree with
# the gate rules the reasons come from, for every gate broken alone.
gate_agreement_cases := {
	"healthy": {},
	"edition": {"edition": "gold"},
	"principal": {"principal": {"kind": "robot"}},
	"member": {"member": null},
	"task id": {"task": {"id": "t-9"}},
	"task status": {"task": {"status": "failed"}},
	"profile": {"profile_requested": "p-9"},
	"no profile requested field": {"profile_requested": null},
}

test_session_ok_agrees_with_gates if {
	failing := {note | some note, patch in gate_agreement_cases; not session_ok_agrees_with_gates_case(patch)}
	failing == set()
}

# session_ok_agrees_with_gates_case holds for one case of test_session_ok_agrees_with_gates.
session_ok_agrees_with_gates_case(patch) if {
	inp := object.union(session, patch)
	passing := {g | some g in gate_names; gate_holds(g)} with input as inp
	ok := {true | supacloud.agent_session_ok} with input as inp
	all_pass := count(passing) == count(gate_names)
	session_passes := count(ok) == 1
	all_pass == session_passes
	expected := count(patch) == 0
	session_passes == expected
}

gate_names := ["edition", "principal", "member", "task", "running", "profile"]

gate_holds("edition") if supacloud.edition_valid

gate_holds("principal") if supacloud.principal_supported

gate_holds("member") if supacloud.actor_member

gate_holds("task") if supacloud.task_known

gate_holds("running") if supacloud.task_running

gate_holds("profile") if supacloud.profile_resolved
