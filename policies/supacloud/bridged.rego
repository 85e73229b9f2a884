# Bridged tools (docs/requirements.md#bridged-tools): the tools of the MCP
# servers MCPGATE_UPSTREAMS_FILE bridges into this surface. The gateway
# sends one like a catalog tool, with its upstream's name as
# input.tool.upstream and the upstream's annotations as
# input.tool.upstream_annotations (its claims: no rule here reads them as a
# grant). Its tier is the upstreams file's unless bridged_tools says
# otherwise.
package supacloud

# bridged_tools overrides, per bridged tool (by its listed name), what the
# gateway tells the policy of it: "tier", "group", "action_classes",
# "data_labels" (each optional; the gateway applies them before every
# decision and listing). "coordinator_scopes" lists the API token scopes
# through which an external coordinator on /api/mcp reaches it; without an
# entry no coordinator reaches a bridged tool. Example:
#   bridged_tools := {"github.list_issues": {"tier": "read", "coordinator_scopes": ["mcp:read"]}}
bridged_tools := {}

# The upstream wildcard supacloud.<upstream>.* grants every tool of that
# upstream (gateway/upstreams refuses an upstream named like a tier or
# group wildcard, so it never widens one of those).
tool_granted(tool, _) if {
	is_string(tool.upstream)
	allowlist[concat("", [data.supacloud.grants.tool_prefix, tool.upstream, ".*"])]
}

# A coordinator reaches a bridged tool only through bridged_tools.
coordinator_tools contains name if {
	is_array(input.principal.scopes)
	some scope in input.principal.scopes
	some name, entry in bridged_tools
	scope in object.get(entry, "coordinator_scopes", [])
}
