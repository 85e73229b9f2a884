package supacloud_test

import data.supacloud

# script.run carve-out (docs/requirements.md#script-run-carve-out): which entries grant it, and how the
# profile's script_allowlist restricts the slug. "visible" is what
# tools/list shows, "allow" what the call with that slug gets.
carve_out_cases := {
	"supacloud.script.run grants": {
		"allowlist": ["supacloud.script.run"], "scripts": null, "arguments": {"slug": "s"},
		"visible": true, "allow": true, "codes": [],
	},
	"exact name grants": {
		"allowlist": ["script.run"], "scripts": null, "arguments": {"slug": "s"},
		"visible": true, "allow": true, "codes": [],
	},
	"full grants": {
		"allowlist": ["supacloud.full"], "scripts": null, "arguments": {"slug": "s"},
		"visible": true, "allow": true, "codes": [],
	},
	"ops wildcard does not grant": {
		"allowlist": ["supacloud.ops.*"], "scripts": null, "arguments": {"slug": "s"},
		"visible": false, "allow": false, "codes": ["script.not_granted"],
	},
	"all four wildcards do not grant": {
		"allowlist": ["supacloud.read.*", "supacloud.ops.*", "supacloud.scaffold.*", "supacloud.deploy.*"],
		"scripts": null, "arguments": {"slug": "s"},
		"visible": false, "allow": false, "codes": ["script.not_granted"],
	},
	"slug in script_allowlist": {
		"allowlist": ["supacloud.script.run"], "scripts": ["a", "b"], "arguments": {"slug": "b"},
		"visible": true, "allow": true, "codes": [],
	},
	"slug not in script_allowlist": {
		"allowlist": ["supacloud.script.run"], "scripts": ["a", "b"], "arguments": {"slug": "c"},
		"visible": true, "allow": false, "codes": ["script.slug_not_allowed"],
	},
	"slug missing with script_allowlist": {
		"allowlist": ["supacloud.script.run"], "scripts": ["a"], "arguments": {},
		"visible": true, "allow": false, "codes": ["script.slug_not_allowed"],
	},
	"slug not a string": {
		"allowlist": ["supacloud.script.run"], "scripts": ["a"], "arguments": {"slug": ["a"]},
		"visible": true, "allow": false, "codes": ["script.slug_not_allowed"],
	},
	"empty script_allowlist allows no script": {
		"allowlist": ["supacloud.script.run"], "scripts": [], "arguments": {"slug": "a"},
		"visible": false, "allow": false, "codes": ["script.slug_not_allowed"],
	},
	"full with script_allowlist still checks the slug": {
		"allowlist": ["supacloud.full"], "scripts": ["a"], "arguments": {"slug": "z"},
		"visible": true, "allow": false, "codes": ["script.slug_not_allowed"],
	},
	"null script_allowlist allows any slug": {
		"allowlist": ["supacloud.script.run"], "scripts": null, "arguments": {"slug": "anything"},
		"visible": true, "allow": true, "codes": [],
	},
}

test_carve_out if {
	failing := {note | some note, tc in carve_out_cases; not carve_out_case(tc)}
	failing == set()
}

# carve_out_case holds for one case of test_carve_out.
carve_out_case(tc) if {
	d := supacloud.decision with input as call(with_profile(tc.allowlist, tc.scripts), "script.run", tc.arguments)
	d.visible == tc.visible
	d.allow == tc.allow
	codes(d) == tc.codes
	listed := supacloud.visible_tools with input as listing(with_profile(tc.allowlist, tc.scripts))
	is_listed := "script.run" in listed
	is_listed == tc.visible
}

test_absent_script_allowlist_is_no_restriction if {
	base := object.union(session, {"profile": object.remove(profile("p-1", ["script.run"], null), ["script_allowlist"])})
	supacloud.decision.allow with input as call(base, "script.run", {"slug": "x"})
}

test_script_allowlist_ignored_for_other_tools if {
	d := supacloud.decision with input as call(with_profile(["supacloud.ops.*"], []), "workflow.trigger", {})
	d.allow
}

test_catalog_without_flag_still_a_carve_out if {
	inp := object.union(with_profile(["supacloud.ops.*"], null), {"tool": {"name": "script.run", "tier": "ops"}})
	d := supacloud.decision with input as inp
	codes(d) == ["script.not_granted"]
}

test_not_granted_message_names_ops_wildcard if {
	d := supacloud.decision with input as call(with_profile(["supacloud.ops.*"], null), "script.run", {"slug": "a"})
	contains(d.reasons[0].message, "supacloud.ops.* does not include script.run")
	contains(d.reasons[0].message, "needs supacloud.script.run (or supacloud.full)")
	contains(d.reasons[0].message, "profile bot-p-1 (p-1) grants supacloud.ops.*")
}

test_slug_message_names_slug_and_list if {
	d := supacloud.decision with input as call(with_profile(["script.run"], ["b", "a"]), "script.run", {"slug": "c"})
	contains(d.reasons[0].message, `may not run script "c"`)
	contains(d.reasons[0].message, "allows only a, b")
}

test_empty_script_allowlist_message if {
	d := supacloud.decision with input as call(with_profile(["script.run"], []), "script.run", {"slug": "c"})
	contains(d.reasons[0].message, "script_allowlist of profile bot-p-1 (p-1) is empty")
}

test_slug_message_without_slug if {
	d := supacloud.decision with input as call(with_profile(["script.run"], ["a"]), "script.run", {})
	contains(d.reasons[0].message, "may not run a script without a string slug argument")
}

# A carve-out is never granted by a tier: not by the tier wildcard, not by an
# always-on tier, not by a group wildcard.
carve_out_tier_cases := {
	"always-on tier": {"tool": {"name": "memory.exec", "tier": "baseline", "carve_out": true}, "allowlist": []},
	"tier wildcard": {"tool": {"name": "report.exec", "tier": "read", "carve_out": true}, "allowlist": ["supacloud.read.*"]},
	"group wildcard": {"tool": {"name": "conversation.get", "tier": "read", "carve_out": true}, "allowlist": ["supacloud.conversation.*"]},
}

test_carve_out_never_granted_by_tier if {
	failing := {note | some note, tc in carve_out_tier_cases; not carve_out_never_granted_by_tier_case(tc)}
	failing == set()
}

# carve_out_never_granted_by_tier_case holds for one case of test_carve_out_never_granted_by_tier.
carve_out_never_granted_by_tier_case(tc) if {
	inp := object.union(with_profile(tc.allowlist, null), {"tool": tc.tool, "arguments": {"slug": "a"}})
	d := supacloud.decision with input as inp
	codes(d) == ["script.not_granted"]
	count(supacloud.visible_tools) == 8 with input as object.union(with_profile(tc.allowlist, null), {"tools": array.concat(
		[t | some t in catalog; t.tier == "baseline"],
		[tc.tool],
	)})
}

scripts_runnable_cases := {
	"null list": {"scripts": null, "runnable": true},
	"non-empty list": {"scripts": ["a"], "runnable": true},
	"empty list": {"scripts": [], "runnable": false},
	"not a list": {"scripts": "a", "runnable": false},
}

test_scripts_runnable if {
	failing := {note | some note, tc in scripts_runnable_cases; not scripts_runnable_case(tc)}
	failing == set()
}

# scripts_runnable_case holds for one case of test_scripts_runnable.
scripts_runnable_case(tc) if {
	runnable := {true | supacloud.scripts_runnable} with input as with_profile(["script.run"], tc.scripts)
	actual := count(runnable) == 1
	actual == tc.runnable
}
