# The deploy role check (docs/requirements.md#deploy-role; docs/requirements.md#deploy-role):
# deploy-tier tools need the allowlist grant AND the acting user must be an
# owner or admin of the workspace (data.supacloud.grants.tiers.deploy.roles),
# the same check the Deployment service applies to HTTP requests. Both must
# pass.
package supacloud

# tier_role_ok holds when the tier (an entry of data.supacloud.grants.tiers)
# needs no role ("roles": null), or the acting user's role
# (input.member.role) is one of its roles.
tier_role_ok(tier) if tier.roles == null

tier_role_ok(tier) if input.member.role in tier.roles

# role_text describes the actor's role in the workspace for messages. A
# non-member never gets here: session_ok (actor_member) refuses it first.
role_text := sprintf("user %s has role %s in workspace %s", [
	actor,
	json.marshal(object.get(input.member, "role", null)),
	workspace_id,
])

deny contains {"code": "deploy.role_required", "message": msg} if {
	agent_session_ok
	tool_valid(input.tool)
	roles := data.supacloud.grants.tiers[input.tool.tier].roles
	not tier_role_ok(data.supacloud.grants.tiers[input.tool.tier])
	msg := sprintf(
		"tool %s is a %s-tier tool and needs the acting user to be %s of the workspace; %s (ask a workspace owner to raise the role, or run the task as a user who holds one of these roles)",
		[input.tool.name, input.tool.tier, concat(" or ", roles), role_text],
	)
}
