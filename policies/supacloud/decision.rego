# The decision document the gateway evaluates: data.supacloud.decision for one
# tools/call (input.tool) and data.supacloud.visible_tools for tools/list
# (input.tools). Both use tool_visible, so a tool is listed iff a call with
# valid arguments would be allowed (docs/architecture.md, Invariants: listed <=> callable).
package supacloud

# tool_visible is the per-tool half of visibility, for a session that passed
# session_ok (every caller checks that first, once). For an agent session:
# the tool has a string name and a known tier (as tool_valid), its tier's
# role check passes, the allowlist grants it, and it is not a carve-out the
# profile cannot use. For a coordinator: one of its token's scopes reaches
# the tool (coordinator_reaches, coordinator.rego).
tool_visible(tool) if {
	agent_session_ok
	is_string(tool.name)
	tier := data.supacloud.grants.tiers[tool.tier]
	tier_role_ok(tier)
	tool_granted(tool, tier)
	script_listable(tool)
}

tool_visible(tool) if {
	coordinator_session_ok
	coordinator_reaches(tool)
}

# visible says whether input.tool would be listed by tools/list.
default visible := false

visible if {
	session_ok
	tool_visible(input.tool)
}

# allow says whether the tools/call may be dispatched: visible, the
# arguments pass the checks a call can fail (the script slug), and the call
# does not decide a gate that only a person may decide (gates.rego).
default allow := false

allow if {
	session_ok
	tool_visible(input.tool)
	arguments_ok
	not human_gate_refused
}

# tier is input.tool.tier, "" when the input has no string tier.
default tier := ""

tier := input.tool.tier if is_string(input.tool.tier)

# notice_list is notices (profile.rego) sorted; empty for most sessions.
notice_list := sort(notices)

# reasons is deny sorted (by code, then message), then the notices, so a
# denial's first reason is always why it was denied; for an allowed call
# only the notices, and deny is only evaluated for denied calls. If a
# denial somehow produced no reason, one is supplied so a deny never comes
# without an explanation.
reasons := notice_list if {
	allow
} else := array.concat(sort(deny), notice_list) if {
	count(deny) > 0
} else := [{
	"code": "input.invalid",
	"message": "the policy denied the call without a specific reason; the input is malformed, report it to the operator",
}]

# decision is the answer for one tools/call, defined for every input:
# {"allow": bool, "visible": bool, "tier": string,
#  "reasons": [{"code", "message"}], the denials sorted, then the notices
#             sorted; only the notices when allowed (usually none),
#  "obligations": {"redact": [field], sorted,
#                  "confirmation_required": bool,
#                  "relay": {"kinds": [kind], "secret_words": [word]},
#                  "approval_required": bool, "approval_because": [code],
#                  "flow_reads": [label]}}.
# Obligations only bind allowed calls: redact (precedence.rego) lists the
# result fields to remove; confirmation_required is true for a tool in
# data.supacloud.grants.confirmation_tools (app.deploy, app.migration.apply;
# docs/requirements.md#deploy-confirmation); relay (relay.rego) says which
# upstream-initiated messages reach the caller during the call;
# approval_required asks for a person's approval of this exact call
# (flow.rego: an egress after a sensitive read) and flow_reads are the
# labels the gateway records in the session's history. A denied
# call carries none of them.
# The allowed branch comes first and skips the denial rules.
decision := {
	"allow": true,
	"visible": true,
	"tier": input.tool.tier,
	"reasons": notice_list,
	"obligations": {
		"redact": redact,
		"confirmation_required": input.tool.name in data.supacloud.grants.confirmation_tools,
		"relay": relay,
		"approval_required": count(approval_because) > 0,
		"approval_because": sort(approval_because),
		"flow_reads": flow_reads,
	},
} if {
	allow
} else := {
	"allow": false,
	"visible": visible,
	"tier": tier,
	"reasons": reasons,
	"obligations": {
		"redact": [],
		"confirmation_required": false,
	},
}

# visible_tools is the set of names in input.tools (tools/list) that
# tool_visible admits.
visible_tools contains tool.name if {
	session_ok
	some tool in input.tools
	tool_visible(tool)
}
