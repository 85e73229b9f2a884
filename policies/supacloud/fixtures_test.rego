# Shared fixtures for the supacloud tests: the 71-tool catalog of docs/requirements.md#tiers
# and input builders. Tests override only the fields they are about.
package supacloud_test

# catalog is the SupaCloud MCP tool surface of docs/requirements.md#tiers: 8 baseline, 31 read,
# 20 ops, script.run (ops, carve-out), 6 scaffold and 5 deploy tools.
catalog := array.concat(
	array.concat(
		[{"name": n, "tier": "baseline", "carve_out": false} | some n in baseline_names],
		[{"name": n, "tier": "read", "carve_out": false} | some n in read_names],
	),
	array.concat(
		array.concat(
			[{"name": n, "tier": "ops", "carve_out": false} | some n in ops_names],
			[{"name": "script.run", "tier": "ops", "carve_out": true}],
		),
		array.concat(
			[{"name": n, "tier": "scaffold", "carve_out": false} | some n in scaffold_names],
			[{"name": n, "tier": "deploy", "carve_out": false} | some n in deploy_names],
		),
	),
)

baseline_names := [
	"delegate_subtask", "get_subtask_result", "cancel_subtask", "memory.search",
	"memory.get", "memory.list_recent", "memory.propose_review", "outcome.recent_for_profile",
]

read_names := [
	"workspace.info", "projects.list", "project.get", "tasks.list_active", "tasks.get",
	"runners.status", "schedules.list", "resources.list", "apps.list", "app.get",
	"workflows.list", "workflow.get", "app.migration.list", "run.list", "run.get",
	"run.events", "approvals.list", "backlog.list", "backlog.get", "app.files.list",
	"app.files.get", "script.get", "script.list", "app.builds.list", "issue.get",
	"issue.list", "conversation.get", "conversation.list", "docs.search", "docs.get",
	"spec.get",
]

ops_names := [
	"workflow.trigger", "schedule.create", "schedule.update", "schedule.pause",
	"schedule.resume", "repo_sync.trigger", "issue.comment", "issue.transition",
	"pr.create", "conversation.reply", "conversation.assign", "conversation.resolve",
	"conversation.handoff", "task.create", "task.cancel", "task.intervene",
	"approval.decide", "run.rerun_node", "permission.grant", "permission.revoke",
]

scaffold_names := [
	"scaffold.script.propose", "scaffold.app.propose", "scaffold.app.file_upsert.propose",
	"scaffold.workflow.propose", "task.create_for_app_scaffold", "task.create_for_script_scaffold",
]

deploy_names := ["app.deploy", "app.undeploy", "app.pause", "app.resume", "app.migration.apply"]

# tool_by_name indexes the catalog.
tool_by_name[t.name] := t if some t in catalog

# profile builds an agent profile of workspace ws-1.
profile(id, allowlist, script_allowlist) := {
	"id": id,
	"name": concat("", ["bot-", id]),
	"allowlist": allowlist,
	"script_allowlist": script_allowlist,
}

# session is a healthy community session of user u-1 (role owner) running
# task t-1 with profile p-1 granting supacloud.read.*; no tool yet.
session := {
	"edition": "community",
	"principal": {"kind": "agent", "sub": "u-1", "workspace_id": "ws-1", "task_id": "t-1"},
	"task": {"id": "t-1", "status": "running"},
	"member": {"role": "owner", "seat_type": "pro"},
	"profile_requested": "p-1",
	"profile": profile("p-1", ["supacloud.read.*"], null),
	"permissions": {
		"user_overrides": {},
		"seat_type": {"name": "pro", "enterprise_only": false, "permissions": {}},
		"workspace_overrides": {},
		"org_plan": {"name": "team", "permissions": {}},
	},
}

# with_profile is session with the requested profile p-1 granting allowlist.
with_profile(allowlist, script_allowlist) := object.union(
	session,
	{"profile": profile("p-1", allowlist, script_allowlist)},
)

# call is a tools/call input: base plus the catalog tool named name.
call(base, name, arguments) := object.union(base, {"tool": tool_by_name[name], "arguments": arguments})

# listing is a tools/list input: base plus the whole catalog.
listing(base) := object.union(base, {"tools": catalog})

# codes is the list of reason codes of a decision.
codes(decision) := [r.code | some r in decision.reasons]

# bench_call is a realistic tools/call input for `opa bench` (bench.sh).
bench_call := call(
	with_profile(["supacloud.read.*", "supacloud.ops.*", "supacloud.script.run"], ["nightly-report", "cleanup"]),
	"script.run",
	{"slug": "nightly-report"},
)

# bench_list is a realistic tools/list input for `opa bench` (bench.sh).
bench_list := listing(with_profile(["supacloud.full"], null))

# bench_read is a common tools/call: a read tool under a read profile.
bench_read := call(with_profile(["supacloud.read.*"], null), "project.get", {"id": "pr-1"})

# bench_denied is a denied tools/call, which builds the reasons.
bench_denied := call(with_profile(["supacloud.read.*"], null), "app.deploy", {})

# bench_list_read is a tools/list under a read and ops profile of a member:
# the denied tools walk every grant rule.
bench_list_read := listing(object.union(
	with_profile(["supacloud.read.*", "supacloud.ops.*"], null),
	{"member": {"role": "member"}},
))

# coordinator is an external coordinator of workspace ws-1 holding an scmt_
# token with scopes (docs/requirements.md#external-gateway); it has no task, member or profile.
coordinator(scopes) := {
	"edition": "community",
	"principal": {"kind": "coordinator", "sub": "token:0123456789abcdef", "workspace_id": "ws-1", "task_id": "", "scopes": scopes},
	"profile_requested": "",
	"permissions": {"user_overrides": {}, "workspace_overrides": {}},
}

# question_gate is the resource of an approval.decide call on a question
# gate, the only class a machine may decide.
question_gate := {"kind": "approval", "id": "apr-1", "gate_class": "question"}
