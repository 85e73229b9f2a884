# The explanation of one tools/call decision, for people (mcpgate policy
# explain, POST /admin/v1/explain): data.supacloud.explain. It is built from
# the rules the decision uses (session.rego, profile.rego, allowlist.rego,
# carveout.rego, deploy.rego, gates.rego, coordinator.rego,
# precedence.rego), evaluated on the same input, so what it shows is what
# the policy did, not a second account of it. The gateway never evaluates
# it on the request path.
package supacloud

# explain is, for the tools/call input:
# {"decision": the decision document (decision.rego),
#  "decided_by": {"rule", "gate", "code"}: the rule that decided it,
#  "gates": [{"gate", "rule", "passed", "denies_with"}], in the order the
#            policy checks them,
#  "profile": {"source", "label", "allowlist"} (agents) or null,
#  "grant": what grants the tool, or would (explain_grant),
#  "permissions": [the precedence chain of each permission key the tool
#                  reads (explain_permission)],
#  "all_permissions": [the same for every permission key known, whatever
#                      the tool reads (explain_all_permissions)],
#  "edition": {"name", "enterprise"}}.
explain := {
	"decision": decision,
	"decided_by": explain_decided_by,
	"gates": explain_gates,
	"profile": explain_profile,
	"grant": explain_grant,
	"permissions": explain_permissions,
	"all_permissions": explain_all_permissions,
	"edition": {"name": explain_edition, "enterprise": explain_enterprise},
}

# explain_edition and explain_perms read input.edition and
# input.permissions, never the whole input, so the gateway can still tell
# which arguments the bundle reads (gateway/policy, argumentUse).
default explain_edition := null

explain_edition := input.edition

default explain_perms := {}

explain_perms := input.permissions if is_object(input.permissions)

default explain_enterprise := false

explain_enterprise if enterprise_edition

# explain_passed names the gates that pass for this input.
explain_passed contains "edition" if edition_valid

explain_passed contains "principal" if principal_supported

explain_passed contains "member" if actor_member

explain_passed contains "task_known" if task_known

explain_passed contains "task_running" if task_running

explain_passed contains "profile" if profile_resolved

explain_passed contains "workspace" if coordinator_session_ok

explain_passed contains "tool" if tool_valid(input.tool)

explain_passed contains "role" if tier_role_ok(data.supacloud.grants.tiers[input.tool.tier])

explain_passed contains "grant" if input_tool_granted

explain_passed contains "scope" if coordinator_reaches(input.tool)

explain_passed contains "script" if {
	arguments_ok
	script_listable(input.tool)
}

explain_passed contains "human_gate" if not human_gate_refused

# explain_gate_catalog describes each gate: the rule that checks it and the
# reason code it denies with.
explain_gate_catalog := {
	"edition": {"rule": "data.supacloud.edition_valid", "denies_with": "edition.invalid"},
	"principal": {"rule": "data.supacloud.principal_supported", "denies_with": "principal.unsupported"},
	"member": {"rule": "data.supacloud.actor_member", "denies_with": "actor.not_member"},
	"task_known": {"rule": "data.supacloud.task_known", "denies_with": "task.unknown"},
	"task_running": {"rule": "data.supacloud.task_running", "denies_with": "task.not_running"},
	"profile": {"rule": "data.supacloud.active_profile", "denies_with": "profile.not_in_workspace"},
	"workspace": {"rule": "data.supacloud.coordinator_session_ok", "denies_with": "coordinator.no_workspace"},
	"tool": {"rule": "data.supacloud.tool_valid", "denies_with": "input.invalid"},
	"role": {"rule": "data.supacloud.tier_role_ok", "denies_with": "deploy.role_required or role.viewer_read_only"},
	"grant": {"rule": "data.supacloud.tool_granted", "denies_with": "allowlist.missing_grant or script.not_granted"},
	"scope": {"rule": "data.supacloud.coordinator_reaches", "denies_with": "scope.missing"},
	"script": {"rule": "data.supacloud.arguments_ok", "denies_with": "script.slug_not_allowed"},
	"human_gate": {"rule": "data.supacloud.human_gate_refused", "denies_with": "approval.person_required"},
}

# explain_gate_order is the order the policy checks the gates in for the
# principal's kind (session.rego and coordinator.rego; then the tool rules).
explain_gate_order := [
	"edition", "principal", "member", "task_known", "task_running", "profile",
	"tool", "role", "grant", "script", "human_gate",
] if {
	principal_agent
} else := [
	"edition", "principal", "workspace", "tool", "scope", "human_gate",
] if {
	principal_coordinator
} else := ["edition", "principal"]

explain_gates := [object.union(explain_gate_catalog[g], {"gate": g, "passed": g in explain_passed}) |
	some g in explain_gate_order
]

# explain_decided_by is data.supacloud.allow for an allowed call, else the
# first gate that failed, with the reason code the decision gave.
explain_decided_by := {"rule": "data.supacloud.allow", "gate": null, "code": null} if {
	allow
} else := {"rule": g.rule, "gate": g.gate, "code": reasons[0].code} if {
	g := [f | some f in explain_gates; not f.passed][0]
} else := {"rule": "data.supacloud.deny", "gate": null, "code": reasons[0].code}

# explain_profile is the profile that governs an agent session and where it
# came from; null for other principals or when none resolves.
explain_profile := {
	"source": profile_source,
	"label": profile_label,
	"id": object.get(active_profile, "id", ""),
	"allowlist": sort(allowlist),
	"script_allowlist": object.get(active_profile, "script_allowlist", null),
} if {
	principal_agent
	profile_resolved
} else := null

# explain_grant says what grants the tool (agents: allowlist entries;
# coordinators: token scopes), or what would.
explain_grant := explain_agent_grant if {
	principal_agent
	tool_valid(input.tool)
} else := explain_coordinator_grant if {
	principal_coordinator
	tool_valid(input.tool)
} else := null

# explain_candidates are the allowlist entries that could grant input.tool:
# its tier wildcard, the full grant, its exact name, its prefixed name and
# the group wildcards that list it.
explain_candidates contains data.supacloud.grants.tiers[input.tool.tier].wildcard

explain_candidates contains data.supacloud.grants.full

explain_candidates contains input.tool.name

explain_candidates contains concat("", [data.supacloud.grants.tool_prefix, input.tool.name])

explain_candidates contains wildcard if {
	some wildcard, names in data.supacloud.grants.group_wildcards
	input.tool.name in names
}

# explain_would_grant are the candidates that grant input.tool on their own
# (tool_granted with an allowlist of just that entry).
explain_would_grant contains entry if {
	some entry in explain_candidates
	tool_granted(input.tool, data.supacloud.grants.tiers[input.tool.tier]) with data.supacloud.allowlist as {entry}
}

explain_always_on if {
	data.supacloud.grants.tiers[input.tool.tier].always_on == true
	not carve_out(input.tool)
}

explain_agent_grant := {
	"kind": "allowlist",
	"tier": input.tool.tier,
	"always_on": explain_always_on_value,
	"carve_out": explain_carve_out_value,
	"roles": data.supacloud.grants.tiers[input.tool.tier].roles,
	"granted_by": sort([e | some e in explain_would_grant; allowlist[e]]),
	"would_grant": sort(explain_would_grant),
}

default explain_always_on_value := false

explain_always_on_value if explain_always_on

default explain_carve_out_value := false

explain_carve_out_value if carve_out(input.tool)

explain_coordinator_grant := {
	"kind": "scopes",
	"tier": input.tool.tier,
	"excluded_tier": input.tool.tier in data.supacloud.grants.coordinator.excluded_tiers,
	"granted_by": sort([s | some s in explain_reaching_scopes; s in explain_scopes]),
	"would_grant": sort(explain_reaching_scopes),
}

explain_scopes := input.principal.scopes if {
	is_array(input.principal.scopes)
} else := []

# explain_reaching_scopes are the scopes whose reach lists input.tool
# (none for a tool of an excluded tier or a carve-out).
explain_reaching_scopes contains scope if {
	some scope, names in data.supacloud.grants.coordinator.scopes
	input.tool.name in names
	coordinator_reaches(input.tool) with input.principal.scopes as [scope]
}

# explain_permissions resolves each permission key the tool reads (its
# redactions, data.supacloud.permissions.redactions), sorted by field.
explain_permissions := [explain_permission(field, key) |
	some field in sort(object.keys(object.get(data.supacloud.permissions.redactions, input.tool.name, {})))
	key := data.supacloud.permissions.redactions[input.tool.name][field]
]

# explain_all_permissions resolves every permission key known
# (explain_known_keys), sorted by key, whatever tool is explained: the
# member's whole precedence table. field is the result field of the
# explained tool that the key keeps, or null when the tool reads no such
# key.
explain_all_permissions := [explain_permission(explain_key_field(key), key) |
	some key in sort(explain_known_keys)
]

# explain_known_keys are the keys with a default, the enterprise-only
# keys, and every key an override, the seat type or the org plan of the
# input sets.
explain_known_keys contains key if some key, _ in data.supacloud.permissions.defaults

explain_known_keys contains key if some key in data.supacloud.permissions.enterprise_only

explain_known_keys contains key if {
	some path in [["user_overrides"], ["seat_type", "permissions"], ["workspace_overrides"], ["org_plan", "permissions"]]
	links := explain_value(path)
	is_object(links)
	some key, _ in links
}

# explain_key_field is the first (sorted) result field of input.tool that
# key keeps, or null.
explain_key_field(key) := fields[0] if {
	fields := sort([field |
		some field, k in object.get(data.supacloud.permissions.redactions, input.tool.name, {})
		k == key
	])
	count(fields) > 0
} else := null

# explain_permission shows the precedence chain of key as this input
# holds it (user override -> seat type -> workspace override -> org plan
# -> default; precedence.rego), the resolved value (permission, the rule
# the decision uses), the link that decided it and whether the edition cap
# forced it false.
explain_permission(field, key) := {
	"field": field,
	"key": key,
	"value": permission(key),
	"redacted": explain_redacted(key),
	"edition_capped": explain_capped(key),
	"decided_by": explain_link(key),
	"chain": [
		{"link": "user_override", "value": explain_value(["user_overrides", key])},
		{
			"link": "seat_type", "name": explain_value(["seat_type", "name"]),
			"applies": explain_seat_applies, "value": explain_value(["seat_type", "permissions", key]),
		},
		{"link": "workspace_override", "value": explain_value(["workspace_overrides", key])},
		{
			"link": "org_plan", "name": explain_value(["org_plan", "name"]),
			"value": explain_value(["org_plan", "permissions", key]),
		},
		{"link": "default", "value": object.get(data.supacloud.permissions.defaults, key, null)},
	],
}

default explain_redacted(_) := false

explain_redacted(key) if not permission(key)

explain_value(path) := object.get(explain_perms, path, null)

default explain_capped(_) := false

explain_capped(key) if {
	enterprise_only_keys[key]
	not enterprise_edition
}

default explain_seat_applies := false

explain_seat_applies if seat_type_applies

# explain_link names the link of the chain that decided key, in the order
# permission_chain (precedence.rego) reads them; precedence_test.rego
# and explain_test.rego check that the two agree.
explain_link(key) := "edition" if {
	explain_capped(key)
} else := "user_override" if {
	is_boolean(explain_value(["user_overrides", key]))
} else := "seat_type" if {
	seat_type_applies
	is_boolean(explain_value(["seat_type", "permissions", key]))
} else := "workspace_override" if {
	is_boolean(explain_value(["workspace_overrides", key]))
} else := "org_plan" if {
	is_boolean(explain_value(["org_plan", "permissions", key]))
} else := "default" if {
	is_boolean(data.supacloud.permissions.defaults[key])
} else := "none"
