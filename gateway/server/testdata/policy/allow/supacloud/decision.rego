# A bundle that allows every call: the reload tests swap it for its twin.
package supacloud

allow := true

decision := {"allow": allow, "visible": allow, "tier": "read", "reasons": reasons}

reasons := [] if allow

reasons := [{"code": "test.allow", "message": "decided by rev-allow"}] if not allow

visible_tools := [t.name | some t in input.tools; allow]
