package supacloud_test

import data.supacloud

# approval.decide decides only question gates, for agents and coordinators
# alike (docs/requirements.md#human-gates; docs/requirements.md#external-human-gates).
gate_principals := {
	"coordinator": coordinator(["mcp:ops"]),
	"agent": with_profile(["supacloud.ops.*"], null),
}

gate_classes := {
	"question": true,
	"tool": false,
	"visual": false,
	"tier_change": false,
	"workflow_human_gate": false,
}

test_gate_classes if {
	failing := {concat("/", [who, class]) |
		some who, base in gate_principals
		some class, allowed in gate_classes
		not gate_classes_case(base, class, allowed)
	}
	failing == set()
}

# gate_classes_case holds for one case of test_gate_classes.
gate_classes_case(base, class, allowed) if {
	inp := object.union(
		call(base, "approval.decide", {"approval_id": "apr-1"}),
		{"resource": {"kind": "approval", "id": "apr-1", "gate_class": class}},
	)
	d := supacloud.decision with input as inp
	d.allow == allowed
	d.visible
	expected := [c | not allowed; c := "approval.person_required"]
	codes(d) == expected
}

test_gate_message_says_a_person_decides if {
	inp := object.union(
		call(coordinator(["mcp:ops"]), "approval.decide", {}),
		{"resource": {"kind": "approval", "id": "apr-7", "gate_class": "tool"}},
	)
	d := supacloud.decision with input as inp
	contains(d.reasons[0].message, "approval apr-7 is a tool gate")
	contains(d.reasons[0].message, "a person must decide it")
}

test_unclassified_gate_is_refused if {
	failing := {note |
		some note, resource in {
			"no resource": null,
			"no class": {"kind": "approval", "id": "apr-9"},
		}
		not unclassified_gate_is_refused_case(resource)
	}
	failing == set()
}

# unclassified_gate_is_refused_case holds for one case of test_unclassified_gate_is_refused.
unclassified_gate_is_refused_case(resource) if {
	base := call(coordinator(["mcp:ops"]), "approval.decide", {"approval_id": "apr-9"})
	inp := object.union(base, {"resource": resource})
	d := supacloud.decision with input as inp
	not d.allow
	codes(d) == ["approval.person_required"]
	contains(d.reasons[0].message, "could not be classified")
}

test_gate_rule_leaves_other_tools_alone if {
	d := supacloud.decision with input as call(coordinator(["mcp:ops"]), "task.cancel", {})
	d.allow
}

test_hidden_decide_reports_the_scope_not_the_gate if {
	d := supacloud.decision with input as call(coordinator(["mcp:read"]), "approval.decide", {})
	codes(d) == ["scope.missing"]
}
