# Human gates (docs/requirements.md#human-gates; docs/requirements.md#external-human-gates): a tool that
# decides a waiting gate (data.supacloud.grants.human_gates.tools) may only
# decide question-class task gates. Tool, visual and tier_change gates, and
# every workflow human gate, exist to put a person in the loop, so a machine
# (an in-app agent or an external coordinator) may not answer them. The
# gate's class is input.resource.gate_class, which the gateway looks up
# through the adapter for the approval the call names; a gate whose class
# is unknown (no such approval, or an adapter that cannot tell) is refused
# too (fail closed).
package supacloud

# human_gate_refused holds when the call decides a gate a machine may not
# decide.
human_gate_refused if {
	input.tool.name in data.supacloud.grants.human_gates.tools
	not machine_decidable
}

# machine_decidable holds when the addressed gate's class is one a machine
# may decide.
machine_decidable if input.resource.gate_class in data.supacloud.grants.human_gates.machine_decidable_classes

# gate_id names the addressed gate for messages.
default gate_id := "(unknown approval)"

gate_id := input.resource.id if is_string(input.resource.id)

# gate_message says why the gate is refused and what to do.
gate_message := sprintf(
	"approval %s is a %s gate: it exists so that a person decides, so a machine may not answer it; a person must decide it in SupaCloud (tell a workspace member that a human decision is needed). %s decides only %s gates",
	[gate_id, input.resource.gate_class, input.tool.name, concat(", ", data.supacloud.grants.human_gates.machine_decidable_classes)],
) if {
	is_string(input.resource.gate_class)
} else := sprintf(
	"approval %s could not be classified (it is not a waiting gate of this workspace, or the backend cannot tell its class), so a machine may not decide it; check the id with approvals.list, or ask a person to decide it",
	[gate_id],
)

deny contains {"code": "approval.person_required", "message": gate_message} if {
	session_ok
	tool_visible(input.tool)
	arguments_ok
	human_gate_refused
}
