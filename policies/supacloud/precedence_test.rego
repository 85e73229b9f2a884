package supacloud_test

import data.supacloud

# perms builds input.permissions from the four links; null drops a link.
perms(user, seat, workspace, plan) := {k: v |
	some k, v in {
		"user_overrides": user,
		"seat_type": seat,
		"workspace_overrides": workspace,
		"org_plan": plan,
	}
	v != null
}

seat(enterprise_only, permissions) := {"name": "s", "enterprise_only": enterprise_only, "permissions": permissions}

plan(permissions) := {"name": "team", "permissions": permissions}

# Precedence (docs/requirements.md#precedence): user override -> seat type
# -> workspace override -> org plan -> default, first defined wins, capped by
# the edition. Each case resolves one key.
precedence_cases := {
	"user override wins over all": {
		"edition": "community", "key": "k",
		"permissions": perms({"k": false}, seat(false, {"k": true}), {"k": true}, plan({"k": true})),
		"expected": false,
	},
	"user override true over seat false": {
		"edition": "community", "key": "k",
		"permissions": perms({"k": true}, seat(false, {"k": false}), {}, plan({})),
		"expected": true,
	},
	"seat type when no user override": {
		"edition": "community", "key": "k",
		"permissions": perms({}, seat(false, {"k": false}), {"k": true}, plan({"k": true})),
		"expected": false,
	},
	"seat type true over workspace false": {
		"edition": "community", "key": "k",
		"permissions": perms({}, seat(false, {"k": true}), {"k": false}, plan({})),
		"expected": true,
	},
	"workspace override when no seat value": {
		"edition": "community", "key": "k",
		"permissions": perms({}, seat(false, {"other": true}), {"k": false}, plan({"k": true})),
		"expected": false,
	},
	"workspace override when no seat type": {
		"edition": "community", "key": "k",
		"permissions": perms({}, null, {"k": true}, plan({"k": false})),
		"expected": true,
	},
	"org plan when nothing above": {
		"edition": "community", "key": "k",
		"permissions": perms({}, seat(false, {}), {}, plan({"k": true})),
		"expected": true,
	},
	"org plan false over default true": {
		"edition": "community", "key": "workspace.budget.view",
		"permissions": perms({}, seat(false, {}), {}, plan({"workspace.budget.view": false})),
		"expected": false,
	},
	"default when nothing defines the key": {
		"edition": "community", "key": "workspace.plan.view",
		"permissions": perms({}, null, {}, null),
		"expected": true,
	},
	"undefined everywhere is false": {
		"edition": "community", "key": "no.such.key",
		"permissions": perms({}, seat(false, {}), {}, plan({})),
		"expected": false,
	},
	"no permissions at all": {
		"edition": "community", "key": "k",
		"permissions": null,
		"expected": false,
	},
	"non-boolean override is skipped": {
		"edition": "community", "key": "k",
		"permissions": perms({"k": "yes"}, seat(false, {"k": 1}), {"k": null}, plan({"k": true})),
		"expected": true,
	},
	"enterprise-only seat ignored on community": {
		"edition": "community", "key": "k",
		"permissions": perms({}, seat(true, {"k": true}), {"k": false}, plan({})),
		"expected": false,
	},
	"enterprise-only seat honoured on enterprise": {
		"edition": "enterprise", "key": "k",
		"permissions": perms({}, seat(true, {"k": true}), {"k": false}, plan({})),
		"expected": true,
	},
	"enterprise-only key false on community despite user override": {
		"edition": "community", "key": "sso.configure",
		"permissions": perms({"sso.configure": true}, seat(false, {"sso.configure": true}), {"sso.configure": true}, plan({"sso.configure": true})),
		"expected": false,
	},
	"enterprise-only key via seat on community": {
		"edition": "community", "key": "audit.export",
		"permissions": perms({}, seat(true, {"audit.export": true}), {}, plan({})),
		"expected": false,
	},
	"enterprise-only key resolves on enterprise": {
		"edition": "enterprise", "key": "sso.configure",
		"permissions": perms({"sso.configure": true}, null, {}, null),
		"expected": true,
	},
	"enterprise-only key can be denied on enterprise": {
		"edition": "enterprise", "key": "audit.export",
		"permissions": perms({"audit.export": false}, null, {}, plan({"audit.export": true})),
		"expected": false,
	},
}

test_permission_precedence if {
	failing := {note | some note, tc in precedence_cases; not permission_precedence_case(tc)}
	failing == set()
}

# permission_precedence_case holds for one case of test_permission_precedence.
permission_precedence_case(tc) if {
	inp := {"edition": tc.edition, "permissions": tc.permissions}
	supacloud.permission(tc.key) == tc.expected with input as inp
}

# Redaction obligation for workspace.info: every field whose permission
# resolves false, sorted; nothing for other tools.
redaction_cases := {
	"defaults redact nothing": {"tool": "workspace.info", "user": {}, "workspace": {}, "redact": []},
	"budget hidden by user override": {
		"tool": "workspace.info", "user": {"workspace.budget.view": false}, "workspace": {},
		"redact": ["budget_remaining"],
	},
	"members and plan hidden by workspace override": {
		"tool": "workspace.info", "user": {},
		"workspace": {"workspace.plan.view": false, "workspace.members.view": false},
		"redact": ["member_count", "plan_tier"],
	},
	"all three hidden, sorted": {
		"tool": "workspace.info",
		"user": {"workspace.plan.view": false, "workspace.budget.view": false},
		"workspace": {"workspace.members.view": false},
		"redact": ["budget_remaining", "member_count", "plan_tier"],
	},
	"user override re-opens a workspace denial": {
		"tool": "workspace.info", "user": {"workspace.budget.view": true},
		"workspace": {"workspace.budget.view": false}, "redact": [],
	},
	"other tools are never redacted": {
		"tool": "project.get", "user": {"workspace.budget.view": false}, "workspace": {},
		"redact": [],
	},
}

test_redaction if {
	failing := {note | some note, tc in redaction_cases; not redaction_case(tc)}
	failing == set()
}

# redaction_case holds for one case of test_redaction.
redaction_case(tc) if {
	base := object.union(session, {"permissions": {"user_overrides": tc.user, "workspace_overrides": tc.workspace}})
	d := supacloud.decision with input as call(base, tc.tool, {})
	d.allow
	d.obligations.redact == tc.redact
}
