# The script.run carve-out
# (docs/requirements.md#script-run-carve-out): scripts bind to workspace resources and secrets at runtime, so
# supacloud.ops.* does not grant them. Only supacloud.full, the exact name
# or supacloud.<tool-name> do (tool_granted in allowlist.rego skips the tier,
# always-on and group grants for carve-outs). A non-null script_allowlist on the
# active profile (profile.rego) further restricts the slugs script.run may
# execute; an empty one allows none.
package supacloud

# carve_out holds for a tool the catalog flags as a carve-out, or that
# data.supacloud.grants.carve_out_tools names (so a catalog that forgets the
# flag still fails closed).
carve_out(tool) if tool.carve_out == true

carve_out(tool) if tool.name in data.supacloud.grants.carve_out_tools

# scripts_runnable holds when the active profile lets script.run run some
# script: no script_allowlist, or a non-empty array of slugs.
scripts_runnable if scripts_unrestricted

scripts_runnable if {
	is_array(active_profile.script_allowlist)
	count(active_profile.script_allowlist) > 0
}

# script_listable decides visibility in tools/list, where the slug is not yet
# known: a carve-out is listed unless the profile allows no script at all.
script_listable(_) if scripts_unrestricted

script_listable(tool) if not carve_out(tool)

script_listable(_) if scripts_runnable

# arguments_ok checks the call's arguments (tools/call only): with a
# script_allowlist, input.arguments.slug of a carve-out must be in it.
arguments_ok if scripts_unrestricted

arguments_ok if not carve_out(input.tool)

arguments_ok if {
	is_array(active_profile.script_allowlist)
	input.arguments.slug in active_profile.script_allowlist
}

# slug_text names the requested script for messages.
slug_text := sprintf("script %s", [json.marshal(input.arguments.slug)]) if {
	is_string(input.arguments.slug)
} else := "a script without a string slug argument"

deny contains {"code": "script.not_granted", "message": msg} if {
	agent_session_ok
	tool_valid(input.tool)
	carve_out(input.tool)
	not input_tool_granted
	msg := sprintf(
		"tool %s needs %s%s (or %s) in the agent profile; %s does not include %s because scripts can reach workspace resources and secrets; %s grants %s (add %s%s to the profile to allow scripts)",
		[
			input.tool.name, data.supacloud.grants.tool_prefix, input.tool.name,
			data.supacloud.grants.full, data.supacloud.grants.tiers[input.tool.tier].wildcard,
			input.tool.name, profile_label, granted_text,
			data.supacloud.grants.tool_prefix, input.tool.name,
		],
	)
}

deny contains {"code": "script.slug_not_allowed", "message": msg} if {
	agent_session_ok
	tool_valid(input.tool)
	carve_out(input.tool)
	input_tool_granted
	not scripts_runnable
	msg := sprintf(
		"tool %s may run no script: the script_allowlist of %s is empty (or not a list of slugs); add the script's slug to the profile's script_allowlist",
		[input.tool.name, profile_label],
	)
}

deny contains {"code": "script.slug_not_allowed", "message": msg} if {
	agent_session_ok
	tool_valid(input.tool)
	carve_out(input.tool)
	input_tool_granted
	scripts_runnable
	not arguments_ok
	msg := sprintf(
		"tool %s may not run %s: the script_allowlist of %s allows only %s; run one of those or add the slug to the profile's script_allowlist",
		[input.tool.name, slug_text, profile_label, concat(", ", sort(active_profile.script_allowlist))],
	)
}
