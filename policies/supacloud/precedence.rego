# Permission precedence (docs/requirements.md#precedence): for a key, the
# first link that defines it wins:
#   user override -> seat type -> workspace override -> org plan -> default
# capped by the edition (docs/requirements.md#edition): an enterprise-only key is
# false on any instance that is not enterprise, and an enterprise-only seat
# type is skipped there entirely, so a seat never unlocks an edition-locked
# feature. A key undefined everywhere is false. Non-boolean values count as
# undefined. The result drives the redaction obligation of workspace.info.
package supacloud

# enterprise_only_keys are permission keys only an enterprise instance grants.
enterprise_only_keys := {k | some k in data.supacloud.permissions.enterprise_only}

# seat_type_applies holds when the member has a seat type that this edition
# honours.
seat_type_applies if {
	is_object(input.permissions.seat_type)
	not seat_type_locked
}

seat_type_locked if {
	input.permissions.seat_type.enterprise_only == true
	not enterprise_edition
}

# permission(key) is the resolved boolean for a permission key such as
# "workspace.budget.view".
permission(key) := false if {
	enterprise_only_keys[key]
	not enterprise_edition
} else := permission_chain(key)

# permission_chain walks the precedence chain; each link only counts when it
# holds a boolean for the key.
permission_chain(key) := v if {
	v := input.permissions.user_overrides[key]
	is_boolean(v)
} else := v if {
	seat_type_applies
	v := input.permissions.seat_type.permissions[key]
	is_boolean(v)
} else := v if {
	v := input.permissions.workspace_overrides[key]
	is_boolean(v)
} else := v if {
	v := input.permissions.org_plan.permissions[key]
	is_boolean(v)
} else := v if {
	v := data.supacloud.permissions.defaults[key]
	is_boolean(v)
} else := false

# redact lists, sorted, the result fields of the called tool whose permission
# resolves false (data.supacloud.permissions.redactions, e.g. workspace.info:
# budget_remaining <- workspace.budget.view). Empty for every other tool;
# the decision carries it for allowed calls.
redact := sort([field |
	some field, key in data.supacloud.permissions.redactions[input.tool.name]
	not permission(key)
])
