# The action guard (docs/requirements.md#cc-action-classes and
# docs/requirements.md#cc-approval): a tool that declares a non-empty set of action classes
# (the four rig use-tools and rig_close) is refused in every read-only mode,
# and in chat it runs only on the guard's verdict. input.guard.decision is
# that verdict for this call: allow runs it, prompt needs a person's
# approval first (obligation approval_required), deny refuses it. Without a
# verdict a person must decide (prompt); a verdict that is not one of the
# three refuses the call (fail closed).
package ccserver

action_tool(tool) if count(tool.action_classes) > 0

read_only_refused(tool) if {
	action_tool(tool)
	mode in read_only_modes
}

guard_decision := "prompt" if {
	not input.guard
} else := input.guard.decision if {
	input.guard.decision in guard_decisions
} else := "deny"

guard_denied if {
	action_tool(input.tool)
	guard_decision == "deny"
}

guard_prompts if {
	action_tool(input.tool)
	guard_decision == "prompt"
}

deny contains {
	"code": "action.read_only_mode",
	"message": sprintf("tool %s declares the action classes %s, and %s mode is read-only, so it is refused; continue in chat mode to control a rig", [input.tool.name, concat(", ", sort(input.tool.action_classes)), mode]),
} if {
	session_ok
	tool_valid(input.tool)
	read_only_refused(input.tool)
}

deny contains {
	"code": "action.guard_denied",
	"message": sprintf("the action guard refused this call of %s (action classes %s)%s; change the call or ask the operator to adjust the guard rules", [input.tool.name, concat(", ", sort(input.tool.action_classes)), guard_detail]),
} if {
	session_ok
	tool_visible(input.tool)
	guard_denied
}

default guard_detail := ""

guard_detail := sprintf(": %s", [input.guard.reason]) if {
	is_string(input.guard.reason)
	input.guard.reason != ""
}
