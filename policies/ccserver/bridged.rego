# Bridged tools (docs/requirements.md#bridged-tools) of the cc_server
# surface: sent like catalog entries, with input.tool.upstream and the
# upstream's annotations as input.tool.upstream_annotations (its claims,
# never read as a grant); the group is the upstreams file's.
package ccserver

# bridged_tools overrides, per bridged tool (by its listed name), the
# "group", "action_classes" and "data_labels" the gateway sends (each
# optional), e.g. putting a browser upstream's tool under the action
# guard: {"browser.open": {"group": "rigs", "action_classes": ["networkEgress"]}}.
bridged_tools := {}
