# A bundle that denies every call: the reload tests swap it for its twin.
package supacloud

allow := false

decision := {"allow": allow, "visible": allow, "tier": "read", "reasons": reasons}

reasons := [] if allow

reasons := [{"code": "test.deny", "message": "decided by rev-deny"}] if not allow

visible_tools := [t.name | some t in input.tools; allow]
