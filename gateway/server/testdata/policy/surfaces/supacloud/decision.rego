# A bundle that allows every call on both surfaces and explains it: the tests of a reload of every surface (and of explain following it) use it.
package supacloud

allow := true

decision := {"allow": allow, "visible": allow, "tier": "read", "reasons": reasons}

reasons := [] if allow

reasons := [{"code": "test.allow", "message": "decided by rev-allow"}] if not allow

visible_tools := [t.name | some t in input.tools; allow]

explain := {"decided_by": {"gate": "test", "code": "test.allow", "rule": "allow"}}
