package supacloud_test

import data.supacloud

# Gate 1 (docs/requirements.md#edition): only community and enterprise run; anything else denies every
# tool, the baseline included, with the single reason edition.invalid.
edition_cases := {
	"community": {"edition": "community", "valid": true},
	"enterprise": {"edition": "enterprise", "valid": true},
	"empty": {"edition": "", "valid": false},
	"capitalised": {"edition": "Community", "valid": false},
	"unknown word": {"edition": "premium", "valid": false},
	"number": {"edition": 1, "valid": false},
	"null": {"edition": null, "valid": false},
}

test_edition_gate if {
	failing := {note | some note, tc in edition_cases; not edition_gate_case(tc)}
	failing == set()
}

# edition_gate_case holds for one case of test_edition_gate.
edition_gate_case(tc) if {
	inp := object.union(call(session, "memory.search", {}), {"edition": tc.edition})
	d := supacloud.decision with input as inp
	d.allow == tc.valid
	d.visible == tc.valid
	codes(d) == expected_edition_codes(tc.valid)
}

test_edition_missing_denies_with_message if {
	inp := object.remove(call(session, "memory.search", {}), ["edition"])
	d := supacloud.decision with input as inp
	not d.allow
	codes(d) == ["edition.invalid"]
	contains(d.reasons[0].message, "SUPACLOUD_EDITION")
}

test_edition_invalid_lists_nothing if {
	inp := object.union(listing(with_profile(["supacloud.full"], null)), {"edition": "premium"})
	count(supacloud.visible_tools) == 0 with input as inp
}

test_edition_invalid_masks_later_gates if {
	inp := object.union(call(session, "project.get", {}), {
		"edition": "premium",
		"principal": {"kind": "coordinator"},
	})
	d := supacloud.decision with input as inp
	codes(d) == ["edition.invalid"]
}

test_edition_message_names_value if {
	inp := object.union(call(session, "project.get", {}), {"edition": "premium"})
	d := supacloud.decision with input as inp
	contains(d.reasons[0].message, `"premium"`)
	contains(d.reasons[0].message, "community or enterprise")
}

expected_edition_codes(true) := []

expected_edition_codes(false) := ["edition.invalid"]
