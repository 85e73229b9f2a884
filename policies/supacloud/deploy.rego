# The deploy role check (docs/requirements.md#deploy-role; docs/requirements.md#deploy-role):
# deploy-tier tools need the allowlist grant AND the acting user must be an
# owner or admin of the workspace (data.supacloud.grants.tiers.deploy.roles),
# the same check the Deployment service applies to HTTP requests. Both must
# pass.
package supacloud

# tier_role_ok holds when the tier (an entry of data.supacloud.grants.tiers)
# admits the acting user's role (input.member.role): its own roles check
# passes (tier_roles_admit) and it is not a write tier called by a viewer
# (viewer_refused).
tier_role_ok(tier) if {
	tier_roles_admit(tier)
	not viewer_refused(tier)
}

# tier_roles_admit holds when the tier needs no role ("roles": null), or
# the acting user's role is one of its roles.
tier_roles_admit(tier) if tier.roles == null

tier_roles_admit(tier) if input.member.role in tier.roles

# viewer_refused: a viewer reads and never writes, whatever the profile
# grants, so every tier of data.supacloud.grants.write_tiers (ops, the
# script.run carve-out in it, scaffold, deploy) is refused to a viewer.
viewer_refused(tier) if {
	input.member.role == "viewer"
	some name in data.supacloud.grants.write_tiers
	data.supacloud.grants.tiers[name] == tier
}

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
	not tier_roles_admit(data.supacloud.grants.tiers[input.tool.tier])
	msg := sprintf(
		"tool %s is a %s-tier tool and needs the acting user to be %s of the workspace; %s (ask a workspace owner to raise the role, or run the task as a user who holds one of these roles)",
		[input.tool.name, input.tool.tier, concat(" or ", roles), role_text],
	)
}

# A viewer never calls a write tier, even with a profile that grants it
# (the deploy role check speaks first for deploy tools, which a viewer
# fails anyway).
deny contains {"code": "role.viewer_read_only", "message": msg} if {
	agent_session_ok
	tool_valid(input.tool)
	tier := data.supacloud.grants.tiers[input.tool.tier]
	tier_roles_admit(tier)
	viewer_refused(tier)
	msg := sprintf(
		"tool %s is a %s-tier tool, which writes, and a viewer never calls write tools whatever the profile grants; %s (ask a workspace owner to make the user a member, or run the task as a user who is one)",
		[input.tool.name, input.tool.tier, role_text],
	)
}
