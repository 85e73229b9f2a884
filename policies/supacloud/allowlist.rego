# Gate 2, the MCP capability allowlist
# (docs/requirements.md#two-gates, docs/requirements.md#tiers). Every rule here takes
# the tool object {"name", "tier", "carve_out"} so tools/call (decision) and
# tools/list (visible_tools) share one definition. Each check is a set or
# object lookup: tools/list runs them for all 71 tools.
package supacloud

# tool_valid holds when the tool object has a string name and a tier that
# data.supacloud.grants.tiers knows; anything else is denied (input.invalid)
# rather than guessed at. tool_visible (decision.rego) makes the same checks.
tool_valid(tool) if {
	is_string(tool.name)
	data.supacloud.grants.tiers[tool.tier]
}

# tool_granted holds when the active allowlist grants the tool; tier is
# data.supacloud.grants.tiers[tool.tier], looked up once by the caller.
# Bodies run likeliest first and stop at the first that holds:
#   the tier wildcard (supacloud.read.* ...) grants every tool of the tier
#   except carve-outs (carveout.rego);
#   supacloud.full grants everything;
#   an always-on tier (the baseline) is granted whatever the allowlist holds,
#   except carve-outs;
#   the exact name or supacloud.<tool-name> grant that tool;
#   a group wildcard (supacloud.conversation.*) grants the tools data lists
#   for it, except carve-outs.
tool_granted(tool, tier) if {
	allowlist[tier.wildcard]
	not carve_out(tool)
}

tool_granted(_, _) if allowlist[data.supacloud.grants.full]

tool_granted(tool, tier) if {
	tier.always_on == true
	not carve_out(tool)
}

tool_granted(tool, _) if allowlist[tool.name]

tool_granted(tool, _) if allowlist[concat("", [data.supacloud.grants.tool_prefix, tool.name])]

tool_granted(tool, _) if {
	some wildcard, names in data.supacloud.grants.group_wildcards
	allowlist[wildcard]
	tool.name in names
	not carve_out(tool)
}

# input_tool_granted applies tool_granted to input.tool, for the reasons.
input_tool_granted if tool_granted(input.tool, data.supacloud.grants.tiers[input.tool.tier])

# needed_grant is the tier wildcard that would grant the tool, for messages
# (carve-outs have their own message in carveout.rego).
needed_grant(tool) := data.supacloud.grants.tiers[tool.tier].wildcard

# missing_grant_message explains a missing grant and what to add.
missing_grant_message(tool) := sprintf(
	"tool %s needs %s in the agent profile; %s grants %s (add %s or %s%s to the profile, or use a profile that grants it)",
	[
		tool.name, needed_grant(tool), profile_label, granted_text,
		needed_grant(tool), data.supacloud.grants.tool_prefix, tool.name,
	],
) if {
	profile_source != "fallback"
} else := sprintf(
	"tool %s needs %s: %s and workspace %s has no default profile; the read-only fallback grants %s (set a workspace default profile or start the task with an agent profile that grants %s)",
	[tool.name, needed_grant(tool), fallback_cause, workspace_id, granted_text, needed_grant(tool)],
)

# tool_text renders input.tool for messages ("null" when absent). It reads
# input.tool, never the whole input, so the gateway's decision cache can tell
# which arguments a decision depends on (gateway/policy, argumentUse).
default tool_text := "null"

tool_text := json.marshal(input.tool)

deny contains {"code": "input.invalid", "message": msg} if {
	session_ok
	not tool_valid(input.tool)
	msg := sprintf(
		"the policy input names no valid tool (got %s; a tool needs a string name and a tier among %s); this is a gateway bug, report it to the operator",
		[tool_text, concat(", ", object.keys(data.supacloud.grants.tiers))],
	)
}

deny contains {"code": "allowlist.missing_grant", "message": missing_grant_message(input.tool)} if {
	agent_session_ok
	tool_valid(input.tool)
	not carve_out(input.tool)
	not input_tool_granted
}
