# The cc_server twin of supacloud/decision.rego: every call allowed.
package ccserver

decision := {"allow": true, "visible": true, "tier": "read", "reasons": []}

visible_tools := [t.name | some t in input.tools]
