# The mode policy (docs/requirements.md#cc-modes): chat reaches
# every registered tool, the other modes their curated allowlist
# (modes.rego), and every mode the three always-allowed sets. A blocked
# call returns the reason.
package ccserver

# mode_allows holds when the session's mode reaches the tool by name.
mode_allows(_) if mode_tool_policy[mode].all

mode_allows(tool) if {
	some set_name
	tool.name in always_allowed[set_name]
}

mode_allows(tool) if tool.name in mode_tool_policy[mode].tools

# own_ticket_tool holds for a tool the mode allows only on the run's own
# ticket, which the credential names (ticket_id claim).
own_ticket_tool(tool) if {
	not mode_allows(tool)
	tool.name in mode_tool_policy[mode].own_ticket_tools
}

run_ticket := input.principal.ticket_id if {
	is_string(input.principal.ticket_id)
	input.principal.ticket_id != ""
}

# mode_visible: the mode reaches the tool, or it is an own-ticket tool and
# the run has a ticket.
mode_visible(tool) if mode_allows(tool)

mode_visible(tool) if {
	own_ticket_tool(tool)
	run_ticket
}

# own_ticket_refused: an own-ticket tool called on another ticket, or on
# none (fail closed: the argument's absence is not the run's ticket).
own_ticket_refused if {
	own_ticket_tool(input.tool)
	not own_ticket_named
}

own_ticket_named if input.arguments.ticket_id == run_ticket

# ticket_argument names the call's ticket_id argument for messages.
default ticket_argument := "(none)"

ticket_argument := sprintf("%v", [input.arguments.ticket_id])

deny contains {
	"code": "mode.tool_not_allowed",
	"message": sprintf("tool %s is not available in %s mode (the mode's allowlist does not include it); call list_my_tools to see what this conversation may call now, or continue in a mode that allows it", [input.tool.name, mode]),
} if {
	session_ok
	tool_valid(input.tool)
	not mode_visible(input.tool)
	not own_ticket_tool(input.tool)
}

deny contains {
	"code": "mode.own_ticket_only",
	"message": sprintf("in %s mode tool %s may only act on this run's own ticket, and %s", [mode, input.tool.name, own_ticket_detail]),
} if {
	session_ok
	tool_valid(input.tool)
	own_ticket_tool(input.tool)
	not mode_visible(input.tool)
}

deny contains {
	"code": "mode.own_ticket_only",
	"message": sprintf("in %s mode tool %s may only act on this run's own ticket %s, not on %v; pass ticket_id %s", [mode, input.tool.name, run_ticket, ticket_argument, run_ticket]),
} if {
	session_ok
	tool_valid(input.tool)
	mode_visible(input.tool)
	own_ticket_refused
}

own_ticket_detail := "this conversation's credential names no ticket; close the ticket from the run that owns it"
