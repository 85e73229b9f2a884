package supacloud_test

import data.supacloud

# A bridged tool as the gateway sends it: its upstream, its tier from the
# upstreams file, the upstream's annotations (a claim, never a grant).
bridged_tool := {
	"name": "github.list_issues", "tier": "ops", "carve_out": false,
	"upstream": "github", "upstream_annotations": {"readOnlyHint": true},
}

bridged_call(base) := object.union(base, {"tool": bridged_tool, "arguments": {}})

test_bridged_upstream_wildcard_grants if {
	supacloud.decision.allow with input as bridged_call(with_profile(["supacloud.github.*"], null))
}

test_bridged_other_upstream_wildcard_does_not_grant if {
	not supacloud.decision.allow with input as bridged_call(with_profile(["supacloud.gitlab.*"], null))
}

test_bridged_prefixed_name_grants if {
	supacloud.decision.allow with input as bridged_call(with_profile(["supacloud.github.list_issues"], null))
}

# readOnlyHint is the upstream's claim: the read wildcard does not grant an
# ops-tier bridged tool however the upstream annotates it.
test_bridged_annotations_are_not_the_tier if {
	not supacloud.decision.allow with input as bridged_call(with_profile(["supacloud.read.*"], null))
}

test_bridged_tier_wildcard_grants if {
	supacloud.decision.allow with input as bridged_call(with_profile(["supacloud.ops.*"], null))
}

test_bridged_listed_iff_callable if {
	base := with_profile(["supacloud.github.*"], null)
	supacloud.visible_tools["github.list_issues"] with input as object.union(base, {"tools": [bridged_tool]})
}

test_bridged_coordinator_unreached_without_policy_data if {
	not supacloud.decision.allow with input as object.union(coordinator(["mcp:read", "mcp:ops"]), {"tool": bridged_tool, "arguments": {}})
}

test_bridged_coordinator_reached_through_policy_data if {
	supacloud.decision.allow with input as object.union(coordinator(["mcp:read"]), {"tool": bridged_tool, "arguments": {}})
		with supacloud.bridged_tools as {"github.list_issues": {"coordinator_scopes": ["mcp:read"]}}
}
