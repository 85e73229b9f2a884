# The grant catalog as data: which allowlist entries grant which tools, the
# read-only fallback profile, the tools that need confirmation, and the
# permission defaults. Rules read it as data.supacloud.grants and
# data.supacloud.permissions; change a grant here without touching the rules.
#
# It is Rego rather than a data.json so that it lands at data.supacloud
# whichever folder OPA is given: `opa test policies/` and
# `opa test policies/supacloud` see the same bundle.
package supacloud

# grants: the editions, principal kinds and task status the gates accept, the
# reach of external coordinators' API token scopes (coordinator), the gates a
# machine may decide (human_gates), the
# five tiers (wildcard, always on, member roles required;
# docs/requirements.md#tiers), the full grant, the tool prefix for
# supacloud.<tool-name>, the group wildcards, the carve-out tools, the
# read-only fallback profile (docs/requirements.md#profile-less-tasks) and the tools whose call needs a
# confirmation (docs/requirements.md#deploy-confirmation).
grants := {
	"editions": ["community", "enterprise"],
	"principal_kinds": ["agent", "coordinator"],
	"running_status": "running",
	# External coordinators (docs/requirements.md#api-tokens): each scmt_ token scope
	# reaches exactly these tools; a tool of an excluded tier is never
	# reachable, whatever the scope lists (docs/requirements.md#external-tools-list: the deploy level
	# is never reachable externally). docs.search, docs.get and spec.get
	# carry no tenant data and are read with mcp:read
	# (docs/requirements.md#external-tools-list). management:read reaches no tool: it
	# reads the admin API.
	"coordinator": {
		"scopes": {
			"mcp:read": [
				"run.list", "run.get", "run.events", "tasks.list_active", "tasks.get",
				"backlog.list", "backlog.get", "approvals.list",
				"memory.search", "memory.get", "memory.list_recent",
				"docs.search", "docs.get", "spec.get",
			],
			"mcp:ops": [
				"workflow.trigger", "task.create", "task.cancel", "task.intervene",
				"approval.decide", "run.rerun_node",
				"schedule.create", "schedule.update", "schedule.pause", "schedule.resume",
			],
		},
		"excluded_tiers": ["deploy"],
	},
	# Gates a machine may decide (docs/requirements.md#human-gates,
	# docs/requirements.md#external-human-gates): the tools that decide a gate, and the gate classes they may decide.
	# Every other class (tool, visual, tier_change, workflow human gates) and
	# a gate whose class is unknown waits for a person. The class comes from
	# input.resource.gate_class, which the gateway resolves through the
	# adapter, never from the caller's arguments.
	"human_gates": {
		"tools": ["approval.decide"],
		"machine_decidable_classes": ["question"],
	},
	"tiers": {
		"baseline": {"wildcard": "supacloud.*", "always_on": true, "roles": null},
		"read": {"wildcard": "supacloud.read.*", "always_on": false, "roles": null},
		"ops": {"wildcard": "supacloud.ops.*", "always_on": false, "roles": null},
		"scaffold": {"wildcard": "supacloud.scaffold.*", "always_on": false, "roles": null},
		"deploy": {"wildcard": "supacloud.deploy.*", "always_on": false, "roles": ["owner", "admin"]},
	},
	"full": "supacloud.full",
	# write_tiers are the tiers whose tools change state (docs/requirements.md#tiers: the ops
	# tier is "Write tools", scaffold creates proposals and spawns tasks,
	# deploy changes deployments); a viewer calls none of them.
	"write_tiers": ["ops", "scaffold", "deploy"],
	"tool_prefix": "supacloud.",
	"group_wildcards": {"supacloud.conversation.*": ["conversation.get", "conversation.list"]},
	"carve_out_tools": ["script.run"],
	"fallback_profile": {
		"id": "",
		"name": "read-only fallback",
		"allowlist": ["supacloud.read.*"],
		"script_allowlist": [],
	},
	"confirmation_tools": ["app.deploy", "app.migration.apply"],
}

# permissions: the last step of the precedence chain (defaults), the keys
# only the enterprise edition grants, and the redaction map (result field ⇒
# the permission key that keeps it).
permissions := {
	"defaults": {
		"workspace.budget.view": true,
		"workspace.members.view": true,
		"workspace.plan.view": true,
	},
	"enterprise_only": ["sso.configure", "audit.export"],
	"redactions": {"workspace.info": {
		"budget_remaining": "workspace.budget.view",
		"member_count": "workspace.members.view",
		"plan_tier": "workspace.plan.view",
	}},
}
