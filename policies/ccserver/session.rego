# The session gates: who calls (principal.kind, principal.sub) and in which
# conversation mode (principal.mode, default chat). They are reported one
# at a time, principal first, and only when they fail is nothing else said.
package ccserver

principal_ok if {
	input.principal.kind in principal_kinds
	is_string(input.principal.sub)
	input.principal.sub != ""
}

# mode is the session's conversation mode: the claim when it is a known
# mode, default_mode when the claim is absent or empty, undefined otherwise.
mode := default_mode if {
	not input.principal.mode
} else := default_mode if {
	input.principal.mode == ""
} else := input.principal.mode if {
	input.principal.mode in modes
}

session_ok if {
	principal_ok
	mode
}

deny contains {
	"code": "principal.unsupported",
	"message": sprintf("principal kind %v with subject %v cannot use cc_server tools; sign in with a cc_server credential (a user or agent token that names its subject)", [
		principal_field("kind"),
		principal_field("sub"),
	]),
} if {
	not principal_ok
}

# principal_field names a principal field for messages, "(none)" when absent.
principal_field(name) := sprintf("%v", [input.principal[name]]) if {
	input.principal[name]
} else := "(none)"

deny contains {
	"code": "mode.unknown",
	"message": sprintf("conversation mode %v is not one of chat, plan, review, orchestrate; every tool is refused until the credential carries a known mode (or none, for chat)", [input.principal.mode]),
} if {
	principal_ok
	not mode
}

# pinned_workspace is the workspace a server-started agent is bound to
# (the workspace_id claim); undefined for a credential without one.
pinned_workspace := input.principal.workspace_id if {
	is_string(input.principal.workspace_id)
	input.principal.workspace_id != ""
}

# memberships are the workspaces the user is a member of (strings only).
memberships contains ws if {
	some ws in input.memberships
	is_string(ws)
}
